/**
 * The drafting step of the speculative decoder (decoders/speculative.ts) as a seam. A Drafter proposes x_1..x_k to
 * follow the committed sequence, each with the law q_i it was drawn from; the decoder verifies them against the
 * target in one batched call (sampling/verify.ts) whatever proposed them. The draft model is one drafter
 * (`modelDrafter`, speculative.ts); model-free drafters (prompt lookup and llama.cpp's n-gram maps, engine/lookup/)
 * look the tokens up in the prompt + output and plug in through `lookupDrafter`; `chainDrafter` asks several in
 * priority order as llama.cpp chains speculative types (`sd+ngram`: ngram-simple, else the draft model).
 *
 * Why a model-free proposal is lossless: a looked-up token is deterministic given the committed prefix (and, for
 * llama.cpp's ngram-map, given earlier verdicts — never the coming draws), i.e. q = δ(x), a point mass. Verification
 * accepts it with probability min(1, p(x)/q(x)) = p(x) and on rejection samples norm(max(0, p − δ_x)), which is p
 * with x removed and renormalised; so the emitted token y has P(y = x) = p(x) and, for y ≠ x,
 * P(y) = (1 − p(x))·p(y)/(1 − p(x)) = p(y): exactly the target's warped law. Greedy accepts iff x = argmax p and
 * corrects with argmax p, so the text equals `ar`'s. This is what `verifyDraft` does when q is a one-token
 * distribution — no separate verifier. (llama.cpp and Hugging Face verify a lookup draft by sample-and-match — draw
 * y ~ p, keep x iff y = x — which has the same law.)
 */
import type { LanguageModel } from '../model/types'
import type { DraftLengthPolicy, DraftStop } from '../policies/types'
import type { Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { now } from './session-sync'
import type { DecodeRequest, DecoderModels, Provenance } from './types'

/** Free-form facts about how a proposal was found (match length, where it matched …): the step record's decision. */
export type ProposalFacts = Record<string, number | string | boolean | null>

export interface Proposal {
  tokens: number[]
  /** q_i, the law x_i was drawn from and is verified against: the draft model's warped q, or δ(x_i). */
  distributions: Distribution[]
  /** H(q_i) in nats of the kind the policy asked for (0 for a point mass). */
  entropies: number[]
  /** Draft-model forward calls (0 for a model-free drafter) and the time drafting took. */
  calls: number
  ms: number
  stoppedBy: DraftStop
  /** Merged into the step record's decision (absent for the draft model: its records are unchanged). */
  facts?: ProposalFacts
  /** What an accepted token of this proposal is: `ngram` for a lookup; absent = `draft` (the draft model). */
  provenance?: Provenance
  /** Tokens drafted behind the proposal when they are not the proposed tokens themselves (sd-uad drafts in its own vocabulary). */
  drafted?: number
}

export interface DraftRound {
  /** Prompt + committed output; its last token is the one just committed. */
  sequence: readonly number[]
  /** The policy's cap for this round and the cap after the --max-tokens budget (limit ≤ cap). */
  cap: number
  limit: number
  greedy: boolean
  rng: Prng
}

/** What the verifier and the output made of the last proposal. */
export interface DraftOutcome {
  /** γ of the proposal, and how many of its leading tokens the verifier kept. */
  proposed: number
  accepted: number
  /** The tokens the output took this round: the accepted prefix and the closing token, cut by the stopping rules. */
  emitted: readonly number[]
}

/** What a drafter can say only after the commit (sd-uad: how much of its text reached the output). */
export interface DraftSettlement {
  /** Replaces the proposal's facts in the step record. */
  facts?: ProposalFacts
  /** Drafted tokens that reached the output, when they are not the accepted proposed tokens (Proposal.drafted). */
  acceptedDrafted?: number
}

/**
 * One prompt's drafter: HF's candidate generator (generation/candidate_generator.py: `get_candidates`,
 * `update_candidate_strategy`), llama.cpp's common_speculative_draft / common_speculative_accept.
 */
export interface DrafterSession {
  propose(round: DraftRound): Promise<Proposal>
  /** Every round's outcome, after the commit (a drafter that keeps the committed text in step, or learns from verdicts). */
  update?(outcome: DraftOutcome): DraftSettlement | void
  dispose(): Promise<void>
}

export interface Drafter {
  /** The stage the decoder's step records carry: 'sd' for the draft model, the method id for a model-free or chained drafter. */
  readonly stage: string
  /** Opened once per prompt, after the target's session. */
  open(models: DecoderModels, request: DecodeRequest, policy: DraftLengthPolicy): Promise<DrafterSession>
}

/** Where a round's drafting must stop: the policy's tests and cap, the --max-tokens budget, the end of generation. */
export interface DraftBounds {
  policy: DraftLengthPolicy
  cap: number
  limit: number
  model: LanguageModel
}

/**
 * Appends a drafted token (drawn from `distribution`; `entropy` of the kind the policy asked for) and records why
 * drafting stops after it, if it does: the policy's own test, its cap, or the engine (the budget, an
 * end-of-generation token — nothing after it can be kept). True when drafting stops.
 */
export function appendDrafted(proposal: Proposal, token: number, distribution: Distribution, entropy: number, bounds: DraftBounds): boolean {
  proposal.tokens.push(token)
  proposal.distributions.push(distribution)
  proposal.entropies.push(entropy)
  const position = proposal.tokens.length
  proposal.stoppedBy = bounds.policy.shouldStop({ position, token, distribution, entropy })
    ? 'policy'
    : position >= bounds.cap
      ? 'cap'
      : position >= bounds.limit || bounds.model.isEndOfGeneration(token)
        ? 'engine'
        : null
  return proposal.stoppedBy !== null
}

/** δ(x): the law of a deterministic proposal. */
export function pointMass(token: number): Distribution {
  return { ids: Int32Array.of(token), probs: Float64Array.of(1) }
}

/** What a model-free drafter found for one round. */
export interface LookupResult {
  /** The tokens proposed to follow the sequence ([] when nothing matched). */
  tokens: number[]
  facts: ProposalFacts
}

/** One prompt's model-free drafter state (a prompt lookup, an n-gram map). */
export interface TokenLookup {
  /** At most `limit` tokens to follow `sequence` (prompt + output, the last token just committed). */
  propose(sequence: readonly number[], limit: number): LookupResult
  /** How many of the last non-empty proposal the verifier accepted (llama.cpp's accepted-token statistics). */
  accepted?(accepted: number): void
}

/**
 * A model-free drafter: `start` makes the prompt's lookup state; each round the looked-up tokens are proposed as
 * point masses, cut where the policy stops, at the cap, at the --max-tokens budget and after an end-of-generation
 * token (as the draft model's drafts are). stoppedBy 'drafter' = the lookup had no more tokens to give.
 */
export function lookupDrafter(stage: string, start: (promptTokens: readonly number[], target: LanguageModel) => TokenLookup): Drafter {
  return {
    stage,
    async open(models, request, policy) {
      const target = models.target
      const lookup = start(request.promptTokens, target)
      return {
        async propose({ sequence, cap, limit }) {
          const started = now()
          const found = lookup.propose(sequence, limit)
          const proposal: Proposal = { tokens: [], distributions: [], entropies: [], calls: 0, ms: 0, stoppedBy: null, facts: found.facts, provenance: 'ngram' }
          const bounds = { policy, cap, limit, model: target }
          for (const token of found.tokens) {
            if (proposal.tokens.length >= limit || appendDrafted(proposal, token, pointMass(token), 0, bounds)) break
          }
          if (proposal.tokens.length > 0 && proposal.stoppedBy === null) proposal.stoppedBy = 'drafter'
          proposal.ms = now() - started
          return proposal
        },
        update: ({ proposed, accepted }) => {
          if (proposed > 0) lookup.accepted?.(accepted)
        },
        dispose: async () => {}
      }
    }
  }
}

/** One link of a chained drafter: the name its rounds are recorded under (`decision.source`) and the drafter. */
export interface ChainLink {
  source: string
  drafter: Drafter
}

/**
 * Drafters chained as llama.cpp chains speculative types (common/speculative.cpp: `common_speculative_init` lists the
 * enabled types in priority order — the n-gram types before `draft-simple` — and `common_speculative_draft` asks them
 * in that order, the first non-empty draft wins and `impl_last` remembers who made it; `common_speculative_accept`
 * tells only that one the verdict). Each round the links are asked in order and the first non-empty proposal is the
 * round's, with `decision.source` naming its link and the facts of every link asked; the verifier's verdict goes
 * to that link alone. One round, one source: its q (δ(x) for a lookup, the draft's warped q for the model) is the
 * law its tokens were drawn from, so the sd verifier stays exact. All links get the round's cap and --max-tokens
 * limit. llama.cpp truncates whichever draft won to dp.n_max, which llama-server sets to the slot's remaining budget
 * (tools/server/server-context.cpp `get_n_draft_max`), so there only the draft model's own `--spec-draft-n-max`
 * bounds its drafts and an n-gram draft runs to its `size_m`; sharing the policy's cap across links is the chain's
 * choice (sd+ngram: one draft length γ for both sources, catalog.ts says so).
 */
export function chainDrafter(stage: string, links: readonly ChainLink[]): Drafter {
  if (links.length === 0) throw new RangeError('chainDrafter: no drafter to chain')
  return {
    stage,
    async open(models, request, policy) {
      const sessions: DrafterSession[] = []
      try {
        for (const link of links) sessions.push(await link.drafter.open(models, request, policy))
      } catch (error) {
        for (const session of sessions) await session.dispose()
        throw error
      }
      let last: DrafterSession | null = null
      return {
        async propose(round) {
          last = null
          const facts: ProposalFacts = {}
          let ms = 0
          let proposal: Proposal | null = null
          for (const [i, session] of sessions.entries()) {
            proposal = await session.propose(round)
            ms += proposal.ms
            Object.assign(facts, proposal.facts)
            if (proposal.tokens.length > 0) {
              last = session
              facts.source = links[i].source
              break
            }
          }
          if (last === null) facts.source = null
          return { ...proposal!, ms, facts }
        },
        update: (outcome) => last?.update?.(outcome),
        async dispose() {
          for (const session of sessions) await session.dispose()
        }
      }
    }
  }
}
