/**
 * The speculative round, once (Leviathan et al. 2023, Alg. 1; SVIP App. A Alg. 6): draft a chain, let the target score
 * it in ONE batched call, verify, commit, record. Its three seams:
 *   drafter    what proposes the chain (decoders/drafter.ts: the draft model, the n-gram family, chains of them,
 *              sd-tli's intersection-restricted draft, sd-uad's re-tokenised draft)
 *   policy     how long the chain may be (policies/: fixed γ, heuristics, entropy stops, adaptive γ)
 *   verifier   which rule decides the verdict (decoders/verifier.ts: standard, sample-then-match, synthetic)
 * The speculative decoder (speculative.ts) composes a round from them: sd, the draft-length policies, the n-gram
 * family, sd+ngram, sd-tli and sd-uad. PEARL (parallel-drafting.ts) runs its own round body through the same loop,
 * counters and tail; `ar`, the hierarchies, sd-tree, beam and dsbd keep their round bodies and share the loop or the
 * tail (their headers say why).
 *
 * Terms:
 *   round            one target verification: everything between two step records (an `ar` token is a round too)
 *   step             a round's index in the decode, 0-based; token events carry it
 *   proposal         x_1..x_γ with the laws q_i they were drawn from, in the target's vocabulary
 *   γ (proposed)     how many tokens the round proposed to the verifier (0: the target decodes alone)
 *   n (accepted)     how many leading proposed tokens the verifier kept
 *   closing token    the token after the accepted prefix: a correction (`resampled`, after a rejection) or a bonus
 *                    (`bonus`, the whole chain passed); none when γ = 0 (the target's own token, `target`)
 *   emitted          tokens the output took (end-of-generation and --max-tokens cut the round's candidates)
 *   drafted          draft-model (or lookup) tokens behind the proposal: σ's denominator (`draftTokens`); sd-uad
 *                    drafts in its own vocabulary, so its drafted count differs from γ
 *   accepted drafted of the drafted tokens, those that reached the output: σ's numerator (`acceptedDraftTokens`)
 *   phases           draft (the drafter's model time and its bookkeeping), verify (the target's batched call),
 *                    total (the whole round; total − draft − verify is engine overhead)
 * Acceptance per position is a fold of the rounds' (γ, n) (metrics/positions.ts), so the counters below are all a
 * round has to keep.
 */
import type { ModelSession } from '../model/types'
import type { Distribution } from '../sampling/distribution'
import type { Verdict } from '../sampling/verify'
import type { OutputBuffer } from './output'
import { evaluatePending, now, rewindTo } from './session-sync'
import type { DecodeEvent, DecodeRequest, Provenance, StepRecord } from './types'

/** A token the round offers the output, with where it came from. */
export interface Candidate {
  token: number
  provenance: Provenance
}

/**
 * Runs rounds until the output is done, the request is cancelled or `ended` says so (a beam decoder's beams all
 * finished), then says why the output ended; `release` frees the decode's sessions however the loop ends (done,
 * cancelled, thrown, or the consumer stopped reading).
 */
export async function* runRounds(
  output: OutputBuffer,
  request: DecodeRequest,
  round: (step: number) => AsyncIterable<DecodeEvent>,
  release: () => Promise<void>,
  ended: () => boolean = () => false
): AsyncGenerator<DecodeEvent> {
  try {
    for (let step = 0; !output.done && !ended(); step++) {
      if (output.cancelledBy(request.signal)) break
      yield* round(step)
    }
    yield { type: 'done', stopReason: output.stopReason ?? 'max-tokens' }
  } finally {
    await release()
  }
}

/** A round's tail: the tokens it committed, then its step record (consumers fold a round when its record arrives). */
export function* emitRound(events: readonly DecodeEvent[], record: StepRecord): Generator<DecodeEvent> {
  yield* events
  yield { type: 'step', record }
}

/** A phase's forward calls and their time (a drafter's, a hierarchy level's). */
export interface PhaseTally {
  calls: number
  ms: number
}

/** One forward call — `pending`, then `extra`, on `session` (session-sync.ts) — counted and timed on `tally`. */
export async function countedCall(session: ModelSession, pending: readonly number[], tally: PhaseTally, extra: readonly number[] = []): Promise<Distribution[]> {
  const started = now()
  const laws = await evaluatePending(session, pending, extra)
  tally.ms += now() - started
  tally.calls += 1
  return laws
}

/** The target scores the position after the committed `sequence` and the `chain` after it, in one call, timed. */
export async function scoreChain(target: ModelSession, sequence: readonly number[], chain: readonly number[]): Promise<{ p: Distribution[]; ms: number }> {
  const pending = await rewindTo(target, sequence)
  const started = now()
  const p = await evaluatePending(target, pending, chain)
  return { p, ms: now() - started }
}

/** The closing token's kind: a correction after a rejection, a bonus after a full chain, none without a chain. */
export function closingOf(proposed: number, rejected: boolean): 'resampled' | 'bonus' | null {
  return proposed === 0 ? null : rejected ? 'resampled' : 'bonus'
}

/** What the output is offered: the accepted prefix (as `provenance`), then the verdict's next token. */
export function verdictCandidates(chain: readonly number[], verdict: Verdict, provenance: Provenance): Candidate[] {
  const candidates: Candidate[] = chain.slice(0, verdict.accepted).map((token) => ({ token, provenance }))
  candidates.push({ token: verdict.next, provenance: closingOf(chain.length, verdict.rejected) ?? 'target' })
  return candidates
}

/** What a round counted, in the words of the terms above. */
export interface RoundCounts {
  proposed: number
  accepted: number
  closing: 'resampled' | 'bonus' | null
  emitted: number
  /** Default: the proposed tokens (a drafter that drafts in the target's vocabulary). */
  drafted?: number
  /** Default: the accepted tokens the output took. */
  acceptedDrafted?: number
  draftCalls: number
  draftMs: number
  verifyMs: number
}

/** The step record's counters of a one-target-call round: the only place they are derived. */
export function roundCounters(counts: RoundCounts): Pick<
  StepRecord,
  'proposed' | 'accepted' | 'resampled' | 'bonus' | 'emitted' | 'draftTokens' | 'acceptedDraftTokens' | 'targetCalls' | 'draftCalls' | 'draftMs' | 'verifyMs'
> {
  return {
    proposed: counts.proposed,
    accepted: counts.accepted,
    resampled: counts.closing === 'resampled',
    bonus: counts.closing === 'bonus',
    emitted: counts.emitted,
    draftTokens: counts.drafted ?? counts.proposed,
    acceptedDraftTokens: counts.acceptedDrafted ?? Math.min(counts.accepted, counts.emitted),
    targetCalls: 1,
    draftCalls: counts.draftCalls,
    draftMs: counts.draftMs,
    verifyMs: counts.verifyMs
  }
}

/** The token ids of a round's committed events. */
export const emittedTokens = (events: readonly DecodeEvent[]): number[] => events.flatMap((event) => (event.type === 'token' ? [event.token] : []))
