/**
 * The cost curve a replay is priced with: c_T(k), the target's time to evaluate k positions in one forward call
 * (k = 1 … K; a verification of γ drafts is k = γ + 1, an `ar` step k = 1), and c_D, the draft model's time per
 * drafted token (one forward call each). Measured through the ModelSession seam the decoders use, so the top-k
 * transfer the engine pays is included; like experiments/raw-timings.ts, each cost is the mean over prefixes spread
 * across the decoded range (attention grows with the context) of the median over repeats after a warm-up.
 *
 *   cost of a round = draftCalls · c_D + midCalls · c_M + c_T(proposed + 1)
 *
 * (c_M: a three-model method's mid model per call, at the batch its calls evaluate.) A parallel round (PEARL,
 * `sd.parallel`: expected.ts Overlap) drafts o of its calls while the target evaluates n positions:
 *
 *   cost of a parallel round = (draftCalls − o) · c_D + s‖ · max(o · c_D, c_T(n))
 *
 * with s‖ (`overlapScale`) what running the two models at once costs over the longer of them alone — contention for
 * cores, memory bandwidth or the GPU, and the hand-offs between them —, measured by a real PEARL decode
 * (decode-calibration.ts); 1 where none was.
 *
 * A draft's c_D and the c_T(k ≥ 2) its rounds pay are then scaled to what real decodes' rounds cost
 * (decode-calibration.ts): timed calls leave out what a decode does between them.
 *
 * Prompt processing (`measurePrefill`): a run's first call evaluates the whole prompt with the round's tokens, so
 * it adds c(prompt) − c(1) to the target's first call and to the draft's (replay/predict.ts `withPrefill`); exact
 * when a call's cost is affine in its tokens. The measured c_T is made
 * non-decreasing in k (replay/isotonic.ts): a dip is noise, and a prediction must not prefer a γ for it.
 */
import type { LanguageModel, ModelSession, SessionOptions } from '../model/types'
import type { WarpConfig } from '../sampling/warp'
import type { RoundCost } from './expected'
import { median } from '../stats/bootstrap'
import { nonDecreasing } from './isotonic'

export interface CostCurve {
  /** targetMs[k − 1] = c_T(k), ms, for k = 1 … targetMs.length. */
  targetMs: number[]
  /** c_D: ms per draft forward call of one token; 0 without a draft model. */
  draftMs: number
  /**
   * c_M: ms per mid-model call of a three-model method, at the batch it evaluates (hier-chen's n small guesses and
   * the token before them: c_M(n + 1)); absent without a mid model.
   */
  midMs?: number
  /** s‖ of a parallel round (the header); absent: 1. */
  overlapScale?: number
}

/** c_T(k) for any k ≥ 1: measured up to K, then extended along the last measured slope. */
export function targetCost(curve: CostCurve, k: number): number {
  const measured = curve.targetMs
  if (k < 1 || measured.length === 0) throw new RangeError(`c_T(k) needs k ≥ 1 and a measured curve, got k = ${k}`)
  if (k <= measured.length) return measured[k - 1]
  const last = measured[measured.length - 1]
  const slope = measured.length > 1 ? Math.max(0, last - measured[measured.length - 2]) : last
  return last + slope * (k - measured.length)
}

export function roundCost(curve: CostCurve): RoundCost {
  return ({ proposed, draftCalls, midCalls = 0, overlap }) => {
    const mid = midCalls * (curve.midMs ?? 0)
    if (!overlap) return draftCalls * curve.draftMs + mid + targetCost(curve, proposed + 1)
    const together = Math.max(overlap.draftCalls * curve.draftMs, targetCost(curve, overlap.positions))
    return (draftCalls - overlap.draftCalls) * curve.draftMs + mid + (curve.overlapScale ?? 1) * together
  }
}

export interface CurveMeasurement {
  /** Prompt + output of a real decode: the contexts the costs are taken at. */
  sequence: readonly number[]
  promptLength: number
  warp: WarpConfig
  /** K: the largest k measured (default 16). */
  maxPositions?: number
  /** Prefixes the costs are averaged over (default 3) and timed repeats per cost after one warm-up (default 5; their median). */
  points?: number
  repeats?: number
  /** The draft session's options (fullEntropy when the replayed policy reads it: it costs a full logit transfer). */
  draftOptions?: SessionOptions
  /** Keep the raw measurements (default false: c_T made non-decreasing). */
  raw?: boolean
  /** Milliseconds now (default performance.now; tests pass a fake clock). */
  clock?: () => number
}

/**
 * Ms of appending `seq[cut, cut + k)` (every position's distribution) after the cached prefix `seq[0, cut)`, for
 * k = 1 … K: element k − 1 is the median over `repeats` rounds after a warm-up round. Each round times every k once,
 * so drifting load on a shared machine shifts all k alike instead of bending the curve; the median, not the mean,
 * so that one call held up by the machine (a descheduled thread) does not move a cost that every round is priced
 * with — measured on this project's 2-core VM, c_T(1) from means of 3 rounds moved 8.8–11.4 ms between advices
 * while real `ar` tokens took 9.2–10.2 ms.
 */
async function timeAppends(session: ModelSession, sequence: readonly number[], cut: number, maxK: number, repeats: number, clock: () => number): Promise<number[]> {
  await session.truncate(0)
  await session.append(sequence.slice(0, cut), cut)
  const samples = Array.from({ length: maxK }, () => [] as number[])
  for (let round = 0; round <= repeats; round++)
    for (let k = 1; k <= maxK; k++) {
      const started = clock()
      await session.append(sequence.slice(cut, cut + k), 0)
      if (round > 0) samples[k - 1].push(clock() - started)
      await session.truncate(cut)
    }
  return samples.map(median)
}

/** The prefix lengths: midpoints of `points` equal slices of the output that leave room for K more tokens. */
export function cuts(m: Required<Pick<CurveMeasurement, 'points'>> & CurveMeasurement, room: number): number[] {
  const generated = Math.max(0, m.sequence.length - m.promptLength - room)
  return Array.from({ length: m.points }, (_, i) => m.promptLength + Math.floor(((i + 0.5) / m.points) * generated))
}

/** c_D: mean ms of one draft forward call of one token (with `options`) at the measurement's prefixes. */
export async function measureDraftCost(draft: LanguageModel, measurement: CurveMeasurement, options?: SessionOptions): Promise<number> {
  const m = withDefaults(measurement)
  const at = cuts(m, m.maxPositions)
  const session = await draft.createSession(m.warp, options)
  let ms = 0
  try {
    for (const cut of at) ms += (await timeAppends(session, m.sequence, cut, 1, m.repeats, m.clock))[0] / at.length
  } finally {
    await session.dispose()
  }
  return ms
}

/** The measurement with its defaults filled in; refused when the sequence has fewer than K tokens after the prompt. */
export function withDefaults(measurement: CurveMeasurement) {
  const m = { maxPositions: 16, points: 3, repeats: 5, clock: () => performance.now(), raw: false, ...measurement }
  if (m.sequence.length < m.promptLength + m.maxPositions) throw new RangeError(`the sequence needs at least ${m.maxPositions} tokens after the prompt`)
  return m
}

export async function measureCostCurve(target: LanguageModel, draft: LanguageModel | null, measurement: CurveMeasurement): Promise<CostCurve> {
  const m = withDefaults(measurement)
  const at = cuts(m, m.maxPositions)
  const targetMs = new Array<number>(m.maxPositions).fill(0)
  const session = await target.createSession(m.warp)
  try {
    for (const cut of at) (await timeAppends(session, m.sequence, cut, m.maxPositions, m.repeats, m.clock)).forEach((ms, k) => (targetMs[k] += ms / at.length))
  } finally {
    await session.dispose()
  }
  const draftMs = draft ? await measureDraftCost(draft, measurement, m.draftOptions) : 0
  return { targetMs: m.raw ? targetMs : nonDecreasing(targetMs), draftMs }
}

/** Σ over `prompts` of the ms of evaluating each whole prompt in one call (a fresh cache each), mean of `repeats`. */
export async function measurePrefill(
  model: LanguageModel,
  prompts: readonly (readonly number[])[],
  warp: WarpConfig,
  { repeats = 1, clock = () => performance.now(), options }: { repeats?: number; clock?: () => number; options?: SessionOptions } = {}
): Promise<number> {
  const session = await model.createSession(warp, options)
  let total = 0
  try {
    for (let round = 0; round < repeats; round++)
      for (const prompt of prompts) {
        await session.truncate(0)
        const started = clock()
        await session.append(prompt, prompt.length - 1)
        total += clock() - started
      }
  } finally {
    await session.dispose()
  }
  return total / repeats
}
