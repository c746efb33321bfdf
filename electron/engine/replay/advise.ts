/**
 * The setup advisor's core: every candidate configuration replayed on one trace and priced with measured costs,
 * ranked by predicted tokens per second. A greedy trace replays each candidate exactly (replay/replay.ts); a sampled
 * trace gives expected values (replay/expected-replay.ts). `ar` is always priced too: it is the speedup baseline.
 *
 * Costs: c_T(k) of the target (replay/cost-curve.ts) and, per traced draft, its time per drafted token — with the
 * warped top-k transfer, and with every logit transferred (`fullEntropyMs`), which a policy reading the
 * whole-vocabulary entropy (svip's default) makes the draft pay; a mid model's c(k) for the batches its calls
 * evaluate (`batchMs`).
 * A candidate the trace cannot replay (a method outside the replayable set, a rollout shorter than its drafts) is
 * listed with its reason rather than guessed.
 */
import { isGreedy } from '../sampling/warp'
import { prepare } from '../methods/prepare'
import { targetCost, type CostCurve } from './cost-curve'
import { calibrated } from './decode-calibration'
import { readsFullEntropy, replayExpected } from './expected-replay'
import { arSummary, predict, summaryOfExpected, summaryOfSteps, withPrefill, type Prediction, type ReplaySummary } from './predict'
import { replayGreedy, type Candidate, type LiveModels } from './replay'
import { acceptanceOfRounds } from './round-acceptance'
import type { Trace } from './trace'

export interface DraftCost {
  /** ms per drafted token (warped top-k transfer). */
  ms: number
  /** ms per drafted token with every logit transferred; absent = unmeasured (then `ms`). */
  fullEntropyMs?: number
  /**
   * c_T(k), k = 1 … K, when this draft's rounds pay another verification cost than the target's curve alone
   * (decode-calibration.ts: scaled to what real decodes with this draft paid); absent: CostTable.targetMs.
   */
  targetMs?: number[]
  /**
   * c(k), k = 1 … K, ms: this model's time to evaluate k tokens in one call, where it is the mid model M_q2 of a
   * three-model candidate (its calls evaluate batches); absent for a draft used as a draft only.
   */
  batchMs?: number[]
  /**
   * By the name of a small draft it forms a hierarchy with: s of real hier-chen decodes of that pair
   * (decode-calibration.ts), which scales the pair's apart costs — c_D, c_M and c_T(k ≥ 2) — for every hier-chen
   * candidate of the pair. Absent: the pair was not calibrated (its candidates keep the small draft's `sd` scale).
   */
  hierarchyScale?: Record<string, number>
  /**
   * s‖: what a parallel round (PEARL) with this draft costs over the longer of its draft calls and its verification
   * (cost-curve.ts, decode-calibration.ts calibrateOverlap). Absent: not calibrated (no parallel candidate; then 1).
   */
  overlapScale?: number
  /**
   * s: how much more than c_D and c_T(k ≥ 2) timed apart a real decode's rounds with this draft took; `ms` and
   * `targetMs` are already scaled by it (decode-calibration.ts). Absent: not calibrated (a draft of another
   * vocabulary, or a decode that drafted nothing).
   */
  roundScale?: number
}

export interface CostTable {
  /** c_T(k), k = 1 … K, ms; c_T(1) as an `ar` decode paid it where `singleScale` is set. */
  targetMs: number[]
  /** s₁: a real `ar` decode's ms per token over c_T(1) as timed in the curve (decode-calibration.ts calibrateSingle); absent: not calibrated. */
  singleScale?: number
  /**
   * What each decode pays outside its rounds and its prompt's processing (decode-calibration.ts outsideOf, from the
   * calibrating `ar` decode), ms per prompt, added to every candidate and to `ar`. Absent: left out.
   */
  decodeOutsideMs?: number
  /** By traced draft name. */
  drafts: Record<string, DraftCost>
  /**
   * Σ over the trace's prompts of evaluating each prompt in one call (cost-curve.ts measurePrefill): the target's
   * and each draft's. Absent: prompt processing is left out of every prediction.
   */
  prefillMs?: { target: number; drafts: Record<string, number> }
  /**
   * c_T(1) at the threads the target evaluates batches with, when they differ from its single-token threads (a
   * thread plan): a first round that sends drafts evaluates the prompt in its batch call. Absent: targetMs[0].
   */
  batchSingleMs?: number
}

export interface Verdict {
  candidate: Candidate
  /** 'replayed' (greedy: the rounds themselves) or 'expected' (sampling: expected values). */
  mode: 'replayed' | 'expected'
  prediction: Prediction | null
  /** Why it could not be replayed; null when it was. */
  error: string | null
  /** The cost table (thread plan) that priced it, when several were compared (rankPlans). */
  plan?: string
}

/** A candidate replayed once, ready to be priced under any cost table. */
export interface Replayed {
  candidate: Candidate
  mode: 'replayed' | 'expected'
  summary: ReplaySummary | null
  /** Whether its draft reads the whole-vocabulary entropy (svip's default: every logit transferred). */
  draftFullEntropy: boolean
  error: string | null
  /**
   * Acceptance per draft position of its rounds (round-acceptance.ts), for candidates whose draft has another
   * vocabulary (the profile reads it there); absent otherwise.
   */
  acceptance?: (number | null)[]
}

/** Draft positions the profile reports (replay/profile.ts). */
export const PROFILE_POSITIONS = 8

export const AR_CANDIDATE: Candidate = { method: 'ar', gamma: 1, params: {}, draft: null }

/** A hier-chen candidate's (m, n), the catalog's defaults filled in: m mid-model guesses, each after n small ones. */
export function hierarchyShapeOf(candidate: Candidate): { m: number; n: number } {
  const params = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).params
  return { m: Number(params['chen.m']), n: Number(params['chen.n']) }
}

/** The tokens one mid-model call of a three-model candidate evaluates: hier-chen's n small guesses and the token before them. */
export const midBatchOf = (candidate: Candidate): number => hierarchyShapeOf(candidate).n + 1

function curveFor(costs: CostTable, candidate: Candidate, fullEntropy: boolean): CostCurve {
  const draft = candidate.draft === null ? undefined : costs.drafts[candidate.draft]
  if (candidate.draft !== null && !draft) throw new Error(`no cost measured for the draft '${candidate.draft}'`)
  const draftMs = draft ? (fullEntropy ? (draft.fullEntropyMs ?? draft.ms) : draft.ms) : 0
  const overlap = draft?.overlapScale === undefined ? {} : { overlapScale: draft.overlapScale }
  const curve: CostCurve = { targetMs: draft?.targetMs ?? costs.targetMs, draftMs, ...overlap }
  if (!candidate.mid) return curve
  const mid = costs.drafts[candidate.mid]
  if (!mid?.batchMs) throw new Error(`no batch cost measured for the mid model '${candidate.mid}'`)
  const midMs = targetCost({ targetMs: mid.batchMs, draftMs: 0 }, midBatchOf(candidate))
  const scale = candidate.draft === null ? undefined : mid.hierarchyScale?.[candidate.draft]
  if (scale === undefined || !draft) return { ...curve, midMs }
  // The pair's own calibration replaces the small draft's `sd` one: every call of its rounds scaled from apart.
  const apart = { targetMs: costs.targetMs, draftMs: draftMs / (draft.roundScale ?? 1), midMs }
  return calibrated(apart, { scale, rounds: 0 })
}

/**
 * The prediction with prompt processing (CostTable.prefillMs) and each decode's time outside its rounds
 * (CostTable.decodeOutsideMs) in. A prompt's first target call evaluates the prompt
 * with the round's tokens: c(prompt + k − 1) = c(prompt) + c(k) − c(1) for a cost affine in the tokens, c(1) taken at
 * the threads of that call (batchSingleMs when the first round sends drafts, c_T(1) when it is target-only, as ar's).
 * The draft's first call is the prompt alone: c_D(prompt) − c_D.
 */
function withPrompts(prediction: Prediction, summary: ReplaySummary, trace: Trace, candidate: Candidate, costs: CostTable, curve: CostCurve): Prediction {
  const prompts = trace.prompts.length
  // Every decode, ar's too, also pays what it does outside its rounds and its prompt (CostTable.decodeOutsideMs).
  const outside = prompts * (costs.decodeOutsideMs ?? 0)
  const prefill = costs.prefillMs
  if (!prefill) return outside > 0 ? withPrefill(prediction, outside, 0) : prediction
  const batchSingle = costs.batchSingleMs ?? curve.targetMs[0]
  const targetExtra = prefill.target - summary.firstBatchRounds * batchSingle - (prompts - summary.firstBatchRounds) * curve.targetMs[0]
  const draftPrefill = candidate.draft === null ? undefined : prefill.drafts[candidate.draft]
  const midPrefill = candidate.mid ? prefill.drafts[candidate.mid] : undefined
  const draftExtra = (draftPrefill === undefined ? 0 : draftPrefill - prompts * curve.draftMs) + (midPrefill === undefined ? 0 : midPrefill - prompts * (curve.midMs ?? 0))
  return withPrefill(prediction, targetExtra + outside, draftExtra, prefill.target - prompts * curve.targetMs[0] + outside)
}

/**
 * Replays `candidate` on `trace`: greedy traces exactly, sampled traces in expectation. A draft of another vocabulary
 * (TracedModel.foreign) replays with the live draft in `live` (replay/replay.ts), under greedy decoding only: under
 * sampling the decoders' output is a fresh draw that leaves the trace, and no expected-value model of the
 * cross-vocabulary drafters exists — such a candidate is listed with that reason, never guessed.
 */
export async function replayCandidate(trace: Trace, candidate: Candidate, live?: LiveModels): Promise<Replayed> {
  const mode = isGreedy(trace.warp) ? 'replayed' : 'expected'
  const foreign = candidate.draft !== null && trace.drafts[candidate.draft]?.foreign === true
  try {
    if (candidate.method === 'ar') return { candidate, mode, summary: arSummary(trace.prompts.reduce((n, p) => n + p.tokens.length, 0)), draftFullEntropy: false, error: null }
    if (foreign && mode !== 'replayed') throw new Error(`${candidate.draft} has another vocabulary: its ${candidate.method} rounds are replayed under greedy decoding only (--temperature 0); not predicted under sampling`)
    if (mode === 'replayed') {
      const prompts = await replayGreedy(trace, candidate, live)
      const steps = prompts.flatMap((p) => p.steps)
      const acceptance = foreign ? { acceptance: acceptanceOfRounds(steps, PROFILE_POSITIONS) } : {}
      return { candidate, mode, summary: summaryOfSteps(steps), draftFullEntropy: prompts.some((p) => p.draftFullEntropy), error: null, ...acceptance }
    }
    return sampledReplay(trace, candidate)
  } catch (error) {
    return { candidate, mode, summary: null, draftFullEntropy: false, error: error instanceof Error ? error.message : String(error) }
  }
}

/** `candidate`'s expected rounds on a sampled trace (replay/expected-replay.ts); throws what that refuses. */
export function sampledReplay(trace: Trace, candidate: Candidate): Replayed {
  return { candidate, mode: 'expected', summary: summaryOfExpected(replayExpected(trace, candidate)), draftFullEntropy: readsFullEntropy(candidate), error: null }
}

/** A replayed candidate priced with one cost table. */
export function price(replayed: Replayed, trace: Trace, costs: CostTable, plan?: string): Verdict {
  const { candidate, mode, summary, error } = replayed
  const verdict: Verdict = { candidate, mode, prediction: null, error, ...(plan === undefined ? {} : { plan }) }
  if (!summary) return verdict
  try {
    const curve = curveFor(costs, candidate, replayed.draftFullEntropy)
    return { ...verdict, prediction: withPrompts(predict(summary, curve), summary, trace, candidate, costs, curve) }
  } catch (failure) {
    return { ...verdict, error: failure instanceof Error ? failure.message : String(failure) }
  }
}

const speed = (v: Verdict) => v.prediction?.tokensPerSecond ?? -1

/** Fastest predicted first; those that could not be priced last, in the given order. */
export function fastestFirst(verdicts: readonly Verdict[]): Verdict[] {
  return verdicts.map((v, i) => ({ v, i })).sort((a, b) => speed(b.v) - speed(a.v) || a.i - b.i).map(({ v }) => v)
}

/** `ar` and every candidate, replayed once each (`live`: the models a foreign draft's candidates replay with). */
export async function replayAll(trace: Trace, candidates: readonly Candidate[], live?: LiveModels): Promise<Replayed[]> {
  const replayed: Replayed[] = []
  for (const candidate of [AR_CANDIDATE, ...candidates.filter((c) => c.method !== 'ar')]) replayed.push(await replayCandidate(trace, candidate, live))
  return replayed
}

/** `ar` and every candidate, fastest predicted first; those that could not be replayed last, in the given order. */
export async function rankCandidates(trace: Trace, candidates: readonly Candidate[], costs: CostTable, live?: LiveModels): Promise<Verdict[]> {
  return fastestFirst((await replayAll(trace, candidates, live)).map((r) => price(r, trace, costs)))
}

/**
 * Each foreign draft's acceptance per position, from the rounds of its sd-tli candidate with the longest draft
 * (sd-tli proposes one target token per draft position; sd-uad's proposals are re-tokenised text), else of any of
 * its cross-vocabulary candidates.
 */
export function roundAcceptanceByDraft(replayed: readonly Replayed[]): Record<string, (number | null)[]> {
  const out: Record<string, { acceptance: (number | null)[]; rank: number }> = {}
  for (const r of replayed) {
    if (!r.acceptance || r.candidate.draft === null) continue
    const rank = (r.candidate.method === 'sd-tli' ? 1000 : 0) + r.candidate.gamma
    const best = out[r.candidate.draft]
    if (!best || rank > best.rank) out[r.candidate.draft] = { acceptance: r.acceptance, rank }
  }
  return Object.fromEntries(Object.entries(out).map(([name, { acceptance }]) => [name, acceptance]))
}

/**
 * Each replayed candidate priced under every named cost table (thread plans), keeping its fastest; then fastest
 * first. `ar` gets its own best plan, and each candidate's speedup is against ar under the candidate's plan.
 */
export function rankPlans(replayed: readonly Replayed[], trace: Trace, plans: readonly { plan: string; costs: CostTable }[]): Verdict[] {
  if (plans.length === 0) throw new RangeError('rankPlans needs at least one cost table')
  return fastestFirst(replayed.map((r) => plans.map(({ plan, costs }) => price(r, trace, costs, plan)).reduce((best, v) => (speed(v) > speed(best) ? v : best))))
}
