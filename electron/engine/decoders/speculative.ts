/**
 * `sd`: speculative decoding (Leviathan et al. 2023; Chen et al. 2023), as SVIP Appendix A Algorithm 6 writes it:
 * the draft proposes x_1..x_γ from q (one forward call each), the target scores all γ+1 positions in ONE batched
 * call, Verify/Correct (sampling/verify.ts) keep the accepted prefix plus a correction or a bonus token.
 * The draft length comes from a DraftLengthPolicy, so every adaptive method reuses this loop; drafting also
 * stops at an end-of-generation token (nothing after it can be kept). Lossless: the output is distributed as the
 * target's warped distribution whatever the policy decides, because each decision depends only on draft-side
 * information and every drafted token is verified exactly.
 * What drafts is a Drafter (decoders/drafter.ts): the draft model (`modelDrafter`, the default), or a model-free
 * drafter whose proposals are point masses q = δ(x) — prompt lookup and llama.cpp's n-gram maps (engine/lookup/),
 * verified by the same Verify/Correct (accept with p(x), correct from norm(max(0, p − δ))) — or a cross-vocabulary
 * drafter (sd-tli.ts, sd-uad.ts). A drafter that finds nothing proposes γ = 0: the round is the target's own token,
 * drawn from p as a verdict on an empty chain. The verifier is the third seam (decoders/verifier.ts); the round's
 * loop, tail and counters are round.ts's.
 */
import type { LanguageModel, ModelSession } from '../model/types'
import type { DraftLengthPolicy, EntropySource, PolicyExplanation, VerificationOutcome } from '../policies/types'
import { argmax, entropy, sample, type Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { isGreedy } from '../sampling/warp'
import { targetOnlyRound } from './autoregressive'
import { appendDrafted, type Drafter, type DrafterSession, type Proposal, type ProposalFacts } from './drafter'
import { OutputBuffer } from './output'
import { closingOf, countedCall, emitRound, emittedTokens, roundCounters, runRounds, scoreChain, verdictCandidates } from './round'
import { now, rewindTo } from './session-sync'
import { stepRecord } from './step-record'
import type { Decoder, DecodeEvent, DecodeRequest, DecoderModels } from './types'
import { chainVerifier, rejectionSampling, type ExactRule } from './verifier'

/**
 * Draft up to `limit` tokens (the policy's `cap`, or less when the --max-tokens budget is nearer), asking the policy
 * after each whether to stop, and record why drafting stopped.
 */
async function draftTokens(
  session: ModelSession,
  sequence: readonly number[],
  cap: number,
  limit: number,
  policy: DraftLengthPolicy,
  model: LanguageModel,
  greedy: boolean,
  rng: Prng
): Promise<Proposal> {
  const draft: Proposal = { tokens: [], distributions: [], entropies: [], calls: 0, ms: 0, stoppedBy: null }
  const bounds = { policy, cap, limit, model }
  let pending = await rewindTo(session, sequence)
  for (;;) {
    const [q] = await countedCall(session, pending, draft)
    const token = greedy ? argmax(q) : sample(q, rng)
    if (appendDrafted(draft, token, q, draftEntropy(q, policy.entropy ?? 'warped', model), bounds)) return draft
    pending = [token]
  }
}

/** The entropy of a drafted token that the policy thresholds (and the step record keeps): see EntropySource. */
function draftEntropy(q: Distribution, source: EntropySource, model: LanguageModel): number {
  if (source === 'warped') return entropy(q)
  if (q.fullEntropy === undefined)
    throw new Error(`${model.info.path}: the draft session returned no full-vocabulary entropy (createSession option fullEntropy)`)
  return q.fullEntropy
}

/** The draft model as a Drafter: draws x_i ~ q_i one forward call at a time (`draftTokens`). */
export const modelDrafter: Drafter = {
  stage: 'sd',
  async open(models, request, policy) {
    const draftModel = models.draft
    if (!draftModel) throw new Error('speculative decoding needs a draft model')
    const session = await draftModel.createSession(request.warp, { fullEntropy: policy.entropy === 'full' })
    return {
      propose: ({ sequence, cap, limit, greedy, rng }) => draftTokens(session, sequence, cap, limit, policy, draftModel, greedy, rng),
      dispose: () => session.dispose()
    }
  }
}

/** The target's session and the drafter's, opened in that order; the target's is closed again if the drafter fails. */
export async function openSessions(
  models: DecoderModels,
  request: DecodeRequest,
  policy: DraftLengthPolicy,
  drafter: Drafter
): Promise<{ target: ModelSession; drafts: DrafterSession; release: () => Promise<void> }> {
  const target = await models.target.createSession(request.warp)
  let drafts: DrafterSession
  try {
    drafts = await drafter.open(models, request, policy)
  } catch (error) {
    await target.dispose()
    throw error
  }
  const release = async () => {
    await drafts.dispose()
    await target.dispose()
  }
  return { target, drafts, release }
}

/**
 * The speculative decoder: every round is round.ts's draft → score → verify → commit with its three seams — the
 * policy caps the chain, the drafter proposes it, the verifier (`exact`, or synthetic acceptance when the request
 * asks) judges it.
 */
export function speculativeDecoder(policy: DraftLengthPolicy, drafter: Drafter = modelDrafter, exact: ExactRule = rejectionSampling): Decoder {
  return async function* speculative(models: DecoderModels, request: DecodeRequest): AsyncGenerator<DecodeEvent> {
    const { target, drafts, release } = await openSessions(models, request, policy, drafter)
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
    const verify = chainVerifier(request, exact)
    const greedy = isGreedy(request.warp)
    policy.startPrompt?.(request.promptTokens)
    yield* runRounds(output, request, round, release)

    /** One round; a policy's γ = 0 lets the target decode alone, a drafter's empty proposal is verified as γ = 0. */
    async function* round(step: number): AsyncGenerator<DecodeEvent> {
      const started = now()
      const cap = policy.draftLength()
      const limit = Math.min(cap, request.maxTokens - output.tokens.length)
      if (limit <= 0) return yield* targetOnlyPolicyRound(target, output, step, request, policy)
      const proposal = await drafts.propose({ sequence: output.sequence, cap, limit, greedy, rng: request.rng })
      const scored = await scoreChain(target, output.sequence, proposal.tokens)
      const verdict = verify(proposal.tokens, proposal.distributions, scored.p)
      const events = output.commit(verdictCandidates(proposal.tokens, verdict, proposal.provenance ?? 'draft'), step)
      const emitted = emittedTokens(events)
      const settling = now()
      const settled = drafts.update?.({ proposed: proposal.tokens.length, accepted: verdict.accepted, emitted }) ?? undefined
      const draftMs = proposal.ms + (now() - settling)
      policy.update(policyOutcome(proposal, verdict.accepted, emitted, draftMs, scored.ms))
      const explanation = policy.explain()
      const record = stepRecord({
        index: step,
        stage: drafter.stage,
        ...roundCounters({
          proposed: proposal.tokens.length,
          accepted: verdict.accepted,
          closing: closingOf(proposal.tokens.length, verdict.rejected),
          emitted: events.length,
          drafted: proposal.drafted,
          acceptedDrafted: settled?.acceptedDrafted,
          draftCalls: proposal.calls,
          draftMs,
          verifyMs: scored.ms
        }),
        draftEntropies: proposal.entropies,
        threshold: explanation.threshold,
        decision: withFacts(explanation.decision, settled?.facts ?? proposal.facts),
        totalMs: now() - started
      })
      yield* emitRound(events, record)
    }
  }
}

/** What the policy hears after a verified chain (its `update`). */
export function policyOutcome(chain: Proposal, accepted: number, emitted: readonly number[], draftMs: number, verifyMs: number): VerificationOutcome {
  return {
    stoppedBy: chain.stoppedBy,
    proposed: chain.tokens.length,
    accepted,
    draftEntropies: chain.entropies,
    draftTokens: chain.tokens,
    emittedTokens: emitted,
    draftMs,
    verifyMs
  }
}

/** The policy's decision with what a model-free drafter found (match length, position …); the policy's alone otherwise. */
function withFacts(decision: PolicyExplanation['decision'], facts: ProposalFacts | undefined): PolicyExplanation['decision'] {
  return facts === undefined ? decision : { ...(decision ?? {}), ...facts }
}

/**
 * A policy chose γ = 0: the target decodes one token alone. The policy still hears the outcome (nothing proposed) so
 * state machines can leave 0 again, and the round's record carries the explanation the policy decided the round by.
 */
export async function* targetOnlyPolicyRound(
  target: ModelSession,
  output: OutputBuffer,
  step: number,
  request: DecodeRequest,
  policy: DraftLengthPolicy
): AsyncGenerator<DecodeEvent> {
  const explanation = policy.explain()
  for await (const event of targetOnlyRound(target, output, step, request, 'target-only')) {
    if (event.type === 'step') {
      policy.update({
        stoppedBy: null,
        proposed: 0,
        accepted: 0,
        draftEntropies: [],
        draftTokens: [],
        emittedTokens: output.tokens.slice(-event.record.emitted),
        draftMs: 0,
        verifyMs: event.record.verifyMs
      })
      yield { type: 'step', record: { ...event.record, threshold: explanation.threshold, decision: explanation.decision } }
    } else yield event
  }
}
