/**
 * `pearl` and the `parallel` option of `sd` and the draft-model policies: the draft drafts WHILE the target
 * verifies. PEARL (Liu et al., "PEARL: Parallel Speculative Decoding with Adaptive Draft Length", ICLR 2025; its
 * authors' `parallel_speculative_decoding`, src/engine.py) runs two kinds of round, each costing max(draft, target)
 * instead of their sum:
 * - post-verify: x_1..x_k wait, drafted but unverified. The target scores them in one batched call while the draft
 *   drafts y_1..y_m after them, assuming all of x will be accepted. Verification tests x_1..x_k and then y_1 against
 *   p_{k+1}, where sd would draw a bonus token there. All accepted: x and y_1 are committed and y_2..y_m wait for the
 *   next round (the draft never stopped). A rejection: accepted prefix + correction from norm(max(0, p − q)), and y is
 *   dropped.
 * - pre-verify (PEARL only): nothing waits, after a rejection. The draft drafts x_1..x_k while the target scores the
 *   one position after the committed sequence; x_1 is tested against it. Rejected: the correction is committed.
 *   Accepted: x_1 is committed and x_2..x_k wait for a post-verify round.
 * The `parallel` option of sd and the policies is post-verify alone: after a rejection the draft drafts its window
 * first, with the target idle, as sd does, and the next round verifies it with the draft working on.
 *
 * Lossless: every committed draft token passed the exact test against its own q (sampling/verify.ts verifyPrefix),
 * every rejection is corrected from the residual, and what is drafted during a verification depends only on the
 * draft's side (the tokens before it and the policy's state), never on the verdict being computed. Using y_1 in
 * place of the bonus token is the sd test of one more draft token (marginal p). Greedy: the text equals `ar`'s.
 *
 * Choices where the paper leaves room:
 * - The draft length policy caps every drafted window (PEARL's γ is the fixed policy `--gamma`). A window drafted
 *   during a verification uses the cap in force when it was drafted: the policy hears the verdict afterwards. Every
 *   verification is one policy update (proposed = the tokens tested).
 * - A window ending in an end-of-generation token, or reaching the --max-tokens budget, gets no look-ahead.
 * - Threads: the target's verification keeps its phase's threads (--batch-threads) while the draft runs on
 *   --threads: on a machine with fewer cores than both, pass --batch-threads so that they add up to the cores.
 *
 * Its own round body: a round verifies a window drafted during the previous verification, without a bonus position,
 * and may close with a look-ahead draft token — not round.ts's draft-then-verify chain. The loop, the verifier choice
 * (prefix verifiers, verifier.ts), the counters and the tail are round.ts's.
 */
import type { DraftLengthPolicy } from '../policies/types'
import { withBonus, type PrefixVerdict } from '../sampling/verify'
import { isGreedy } from '../sampling/warp'
import type { DraftRound, Proposal } from './drafter'
import { OutputBuffer } from './output'
import { emitRound, emittedTokens, roundCounters, runRounds, scoreChain, type Candidate } from './round'
import { now } from './session-sync'
import { modelDrafter, openSessions, policyOutcome, targetOnlyPolicyRound } from './speculative'
import { stepRecord } from './step-record'
import type { DecodeEvent, DecodeRequest, DecoderModels, Decoder } from './types'
import { prefixVerifier, type ExactPrefixRule } from './verifier'


export interface ParallelDraftingOptions {
  /** PEARL's pre-verify rounds after a rejection (`pearl`); false: the draft drafts alone then (`sd.parallel`). */
  preVerify: boolean
  verifyPrefix?: ExactPrefixRule
}

/** What one round verified and committed, for the policy and the step record. */
interface RoundOutcome {
  kind: 'pre-verify' | 'post-verify'
  tested: Proposal
  verdict: PrefixVerdict
  /** The bonus token when every tested token was accepted and nothing was drafted after them; else null. */
  bonus: number | null
  draftMs: number
  draftCalls: number
  verifyMs: number
  /** Tokens drafted during this verification and carried to the next round. */
  carried: number
  /** Of `draftCalls`, those made while the target verified (the rest were drafted alone, before it). */
  overlapCalls: number
  /** Positions the verification evaluated: the committed token the target has not seen, and the waiting drafts. */
  positions: number
}

/** The first `n` tokens of a proposal (with their q and entropies), or the rest after them. */
function head(proposal: Proposal, n: number): Proposal {
  return { ...proposal, tokens: proposal.tokens.slice(0, n), distributions: proposal.distributions.slice(0, n), entropies: proposal.entropies.slice(0, n) }
}
function tail(proposal: Proposal, n: number): Proposal | null {
  if (proposal.tokens.length <= n) return null
  return { ...proposal, tokens: proposal.tokens.slice(n), distributions: proposal.distributions.slice(n), entropies: proposal.entropies.slice(n), calls: 0, ms: 0 }
}
function concat(a: Proposal, b: Proposal): Proposal {
  return { ...a, tokens: [...a.tokens, ...b.tokens], distributions: [...a.distributions, ...b.distributions], entropies: [...a.entropies, ...b.entropies] }
}

export function parallelDraftingDecoder(policy: DraftLengthPolicy, options: ParallelDraftingOptions): Decoder {
  const stage = options.preVerify ? 'pearl' : 'sd'
  return async function* parallelDrafting(models: DecoderModels, request: DecodeRequest): AsyncGenerator<DecodeEvent> {
    const { target, drafts, release } = await openSessions(models, request, policy, modelDrafter)
    const greedy = isGreedy(request.warp)
    const verify = prefixVerifier(request, options.verifyPrefix)
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
    const budget = () => request.maxTokens - output.tokens.length
    const draftRound = (sequence: readonly number[], cap: number, limit: number): DraftRound => ({ sequence, cap, limit, greedy, rng: request.rng })
    policy.startPrompt?.(request.promptTokens)

    /** PEARL pre-verify: draft x_1..x_k ‖ the target scores the next position; test x_1 alone. */
    const preVerify = async (cap: number, limit: number): Promise<{ outcome: RoundOutcome; waiting: Proposal | null }> => {
      const sequence = output.sequence
      const [scored, drafted] = await Promise.all([scoreChain(target, sequence, []), drafts.propose(draftRound(sequence, cap, limit))])
      const tested = head(drafted, 1)
      const verdict = verify(tested.tokens, tested.distributions, scored.p)
      const waiting = verdict.correction === null ? tail(drafted, 1) : null
      const outcome: RoundOutcome = {
        kind: 'pre-verify',
        tested,
        verdict,
        bonus: null,
        draftMs: drafted.ms,
        draftCalls: drafted.calls,
        verifyMs: scored.ms,
        carried: waiting?.tokens.length ?? 0,
        overlapCalls: drafted.calls,
        positions: 1
      }
      return { outcome, waiting }
    }

    /** Post-verify: the target scores the waiting x_1..x_k ‖ the draft drafts y after them; test x, then y_1. */
    const postVerify = async (waiting: Proposal, draftedAlone: { ms: number; calls: number }): Promise<{ outcome: RoundOutcome; waiting: Proposal | null }> => {
      const sequence = output.sequence
      const last = waiting.tokens[waiting.tokens.length - 1]
      const cap = policy.draftLength()
      const limit = models.target.isEndOfGeneration(last) ? 0 : Math.min(cap, budget() - waiting.tokens.length)
      const lookahead = limit > 0 ? drafts.propose(draftRound([...sequence, ...waiting.tokens], cap, limit)) : Promise.resolve(null)
      const [scored, ahead] = await Promise.all([scoreChain(target, sequence, waiting.tokens), lookahead])
      const tested = ahead && ahead.tokens.length > 0 ? concat(waiting, head(ahead, 1)) : waiting
      const verdict = verify(tested.tokens, tested.distributions, scored.p)
      const allAccepted = verdict.correction === null
      const bonus = allAccepted && tested === waiting ? withBonus(verdict, scored.p, greedy, request.rng).next : null
      const next = allAccepted && ahead && tested !== waiting ? tail(ahead, 1) : null
      const outcome: RoundOutcome = {
        kind: 'post-verify',
        tested,
        verdict,
        bonus,
        draftMs: draftedAlone.ms + (ahead?.ms ?? 0),
        draftCalls: draftedAlone.calls + (ahead?.calls ?? 0),
        verifyMs: scored.ms,
        carried: next?.tokens.length ?? 0,
        overlapCalls: ahead?.calls ?? 0,
        positions: waiting.tokens.length + 1
      }
      return { outcome, waiting: next }
    }

    let waiting: Proposal | null = null
    yield* runRounds(output, request, round, release)

    /** A post-verify round when drafts wait, else a fresh window: PEARL's pre-verify, or drafted alone first. */
    async function* round(step: number): AsyncGenerator<DecodeEvent> {
      const started = now()
      let result: { outcome: RoundOutcome; waiting: Proposal | null }
      if (waiting !== null) {
        result = await postVerify(waiting, { ms: 0, calls: 0 })
      } else {
        const cap = policy.draftLength()
        const limit = Math.min(cap, budget())
        if (limit <= 0) return yield* targetOnlyPolicyRound(target, output, step, request, policy)
        if (options.preVerify) {
          result = await preVerify(cap, limit)
        } else {
          const drafted = await drafts.propose(draftRound(output.sequence, cap, limit))
          result = await postVerify(drafted, drafted)
        }
      }
      waiting = result.waiting
      yield* commitRound(result.outcome, step, started)
    }

    /** Commits a round's accepted tokens and correction or bonus, tells the policy, and records the step. */
    function* commitRound(outcome: RoundOutcome, step: number, started: number): Generator<DecodeEvent> {
      const { tested, verdict } = outcome
      const candidates: Candidate[] = tested.tokens.slice(0, verdict.accepted).map((token) => ({ token, provenance: 'draft' }))
      if (verdict.correction !== null) candidates.push({ token: verdict.correction, provenance: 'resampled' })
      if (outcome.bonus !== null) candidates.push({ token: outcome.bonus, provenance: 'bonus' })
      const events = output.commit(candidates, step)
      policy.update(policyOutcome(tested, verdict.accepted, emittedTokens(events), outcome.draftMs, outcome.verifyMs))
      const explanation = policy.explain()
      const record = stepRecord({
        index: step,
        stage,
        ...roundCounters({
          proposed: tested.tokens.length,
          accepted: verdict.accepted,
          // A window whose look-ahead token passed closes with neither: that token is a draft token.
          closing: verdict.correction !== null ? 'resampled' : outcome.bonus !== null ? 'bonus' : null,
          emitted: events.length,
          draftCalls: outcome.draftCalls,
          draftMs: outcome.draftMs,
          verifyMs: outcome.verifyMs
        }),
        draftEntropies: tested.entropies,
        threshold: explanation.threshold,
        // overlapCalls and positions: what the advisor prices a parallel round by (replay/predict.ts kindOfStep).
        decision: { ...(explanation.decision ?? {}), verify: outcome.kind, carried: outcome.carried, overlapCalls: outcome.overlapCalls, positions: outcome.positions },
        totalMs: now() - started
      })
      yield* emitRound(events, record)
    }
  }
}
