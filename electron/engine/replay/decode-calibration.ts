/**
 * A draft model's round costs as a real decode pays them. The cost curve (cost-curve.ts) times the target's calls one
 * after another and the draft's apart; a decode makes them in turn — each model's call follows the other's, which
 * costs it more (caches, the other's idle threads) — and also pays what the decoder does around each call (reading
 * the k distributions, the draft's sampling and entropies, the commit). So one short `sd` decode of the measured
 * contexts, timed round by round with the costs' clock, is priced with the costs as measured:
 *
 *   s = Σ_rounds measured ms / Σ_rounds (draftCalls · c_D + midCalls · c_M + c_T(proposed + 1))
 *
 * over its rounds after the first (the first one evaluates the prompt, which prefill prices), and the draft's round
 * costs are scaled by s: c_D ← s · c_D, c_T(k) ← s · c_T(k) for k ≥ 2. c_T(1) is not (a target-only round follows
 * no draft call): it is calibrated apart, by an `ar` decode (calibrateSingle). One scale for both terms
 * is a choice: a decode's wall time cannot tell them apart, and the decode's rounds (γ = 4, mostly k = 5) carry both
 * in the proportion most candidates' rounds do; a draft call is a tenth of such a round here, so what one scale
 * misattributes between the terms moves another γ's price by a per cent or two.
 *
 * A parallel round (PEARL: its draft drafts while the target verifies) is priced as max(o · c_D, c_T(n)) for its
 * overlapped part (cost-curve.ts); how much more running both at once costs than the longer alone — contention for the
 * cores or the device, the hand-offs — is s‖, from a short real `pearl` decode priced with the `sd`-calibrated costs:
 *
 *   s‖ = (Σ_rounds measured ms − Σ_rounds the rounds' parts drafted alone) / Σ_rounds max(o · c_D, c_T(n))
 *
 * Measured on this project's 2-core VM (inflated stories target ← 260K draft, greedy, top-k 64, one process): real
 * verifications of 5 positions 23.0–24.0 ms against 21.3–22.7 ms timed after draft calls, draft calls 0.65–0.77 ms
 * against 0.51–0.63 ms timed after verifications and 0.44–0.57 ms timed apart.
 */
import { decodeOnce } from '../methods/decode-once'
import { prepare } from '../methods/prepare'
import type { LanguageModel } from '../model/types'
import type { Decoder, DecoderModels, StepRecord } from '../decoders/types'
import { nonDecreasing } from './isotonic'
import { measurePrefill, roundCost, withDefaults, type CostCurve, type CurveMeasurement } from './cost-curve'
import { kindOfStep } from './predict'
import { hierChenParams } from './candidates'

/** The draft length of the calibrating decode: the catalog's default γ, the rounds most candidates make. */
export const CALIBRATION_GAMMA = 4

/** Decodes of the measured contexts whose rounds are pooled, and their length at most (each ~1 s on the VM above). */
export const CALIBRATION_DECODES = 2
export const CALIBRATION_TOKENS = 128

export interface RoundCalibration {
  /** s: measured round time over its price. */
  scale: number
  /** Rounds it was measured on (after each decode's first). */
  rounds: number
}

/** A decode's rounds with their measured ms (the clock between one round's step record and the next). */
export interface TimedRound {
  record: StepRecord
  ms: number
}

/** s from timed rounds priced with `costs` (a hierarchy's mid-model calls at c_M); null without a round that drafted. */
export function calibrationOf(rounds: readonly TimedRound[], costs: CostCurve): RoundCalibration | null {
  const drafted = rounds.filter((r) => r.record.index > 0 && r.record.proposed > 0)
  const cost = roundCost(costs)
  const priced = drafted.reduce((sum, r) => sum + cost(kindOfStep(r.record)), 0)
  if (drafted.length === 0 || priced <= 0) return null
  return { scale: drafted.reduce((sum, r) => sum + r.ms, 0) / priced, rounds: drafted.length }
}

/** s‖ from timed parallel rounds priced with `costs` (the header); null without a parallel round after the first. */
export function overlapCalibrationOf(rounds: readonly TimedRound[], costs: CostCurve): RoundCalibration | null {
  const parallel = rounds.map((r) => ({ r, kind: kindOfStep(r.record) })).filter(({ r, kind }) => r.record.index > 0 && kind.overlap)
  const alone = roundCost({ ...costs, overlapScale: 0 })
  const whole = roundCost({ ...costs, overlapScale: 1 })
  const together = parallel.reduce((sum, { kind }) => sum + whole(kind) - alone(kind), 0)
  if (parallel.length === 0 || together <= 0) return null
  const measured = parallel.reduce((sum, { r, kind }) => sum + r.ms - alone(kind), 0)
  return { scale: measured / together, rounds: parallel.length }
}

/**
 * s‖ of `draft` beside `target`: CALIBRATION_DECODES `pearl` decodes (γ = CALIBRATION_GAMMA) of the measurement's
 * prompt, timed round by round and priced with `costs` (the draft's `sd`-calibrated costs); null when none overlapped.
 */
export async function calibrateOverlap(target: LanguageModel, draft: LanguageModel, measurement: CurveMeasurement, costs: CostCurve): Promise<RoundCalibration | null> {
  const decoder = prepare('pearl', { gamma: CALIBRATION_GAMMA, params: {} }).newRun()
  return overlapCalibrationOf(await timedRounds(decoder, { target, draft }, measurement, CALIBRATION_DECODES), costs)
}

/** The round costs scaled by s; c_T(1) is kept (and the curve kept non-decreasing: s may be below 1). */
export function calibrated(costs: CostCurve, calibration: RoundCalibration): CostCurve {
  const [single, ...rest] = costs.targetMs
  const mid = costs.midMs === undefined ? {} : { midMs: costs.midMs * calibration.scale }
  return { targetMs: nonDecreasing([single, ...rest.map((ms) => ms * calibration.scale)]), draftMs: costs.draftMs * calibration.scale, ...mid }
}

/**
 * The decode a calibration times: `sd` at CALIBRATION_GAMMA with a draft; with a mid model, Chen's hierarchy at the
 * shape given (its rounds pay three models' calls in turn, and the decoder's chain between them).
 */
export type CalibrationDecode = { mid?: undefined } | { mid: LanguageModel; shape: { m: number; n: number } }

/**
 * Runs CALIBRATION_DECODES `sd` decodes (γ = CALIBRATION_GAMMA; `calibrating`: hier-chen with its mid model) of the
 * measurement's prompt, as long as its output up to CALIBRATION_TOKENS, timing every round with the measurement's
 * clock, and returns s for `costs` (null when no round drafted).
 */
export async function calibrateRounds(target: LanguageModel, draft: LanguageModel, measurement: CurveMeasurement, costs: CostCurve, calibrating: CalibrationDecode = {}): Promise<RoundCalibration | null> {
  const decoder = calibrating.mid
    ? prepare('hier-chen', { gamma: 1, params: hierChenParams(calibrating.shape) }).newRun()
    : prepare('sd', { gamma: CALIBRATION_GAMMA, params: {} }).newRun()
  const models = calibrating.mid ? { target, draft, mid: calibrating.mid } : { target, draft }
  return calibrationOf(await timedRounds(decoder, models, measurement, CALIBRATION_DECODES), costs)
}

/** s₁ from an `ar` decode's timed tokens: their mean ms over c_T(1), each decode's first (the prompt's) left out. */
export function singleCalibrationOf(rounds: readonly TimedRound[], costs: CostCurve): RoundCalibration | null {
  const tokens = rounds.filter((r) => r.record.index > 0)
  if (tokens.length === 0 || !(costs.targetMs[0] > 0)) return null
  return { scale: tokens.reduce((sum, r) => sum + r.ms, 0) / (tokens.length * costs.targetMs[0]), rounds: tokens.length }
}

/**
 * What a decode pays outside its rounds after the first and its prompt's processing: opening and closing its sessions
 * and whatever else happens before its first token and after its last — the decode's wall time less those rounds
 * and the prompt's evaluation timed apart (`prefillMs`); never below 0. A prediction that prices rounds and prompts
 * alone misses it: on an H100 an `ar` cell of 128 tokens took 6–21 ms more than its steps and its prompt, 4–14 % of
 * the cell (performance.md, "The patched build on an H100"); on the 2-core CPU 0.1–0.5 ms of a second.
 */
export function outsideOf(rounds: readonly TimedRound[], wallMs: number, prefillMs: number): number {
  const later = rounds.filter((r) => r.record.index > 0).reduce((sum, r) => sum + r.ms, 0)
  return Math.max(0, wallMs - later - prefillMs)
}

export interface SingleCalibration extends RoundCalibration {
  /** outsideOf the calibrating `ar` decode, ms per decode. */
  outsideMs: number
}

/**
 * c_T(1) as an `ar` decode pays it: one `ar` decode of the measurement's prompt, as long as its output up to
 * CALIBRATION_TOKENS, timed token by token, gives s₁ for c_T(1) (singleCalibrationOf). The curve's calls are timed
 * one after another over a minute or so and the drafts' rounds are calibrated by real decodes; c_T(1) alone would
 * otherwise keep whatever the machine was doing while it was timed — measured on this project's VM, one advice's
 * c_T(1) of 12.0 ms against 8.0–8.8 ms in the advices around it, and `ar` predicted at 81.7 tok/s against 114.6
 * measured, while its speculative arms, calibrated, were within 8 %. The same decode, timed whole, gives what a
 * decode pays outside its rounds (outsideOf; its prompt evaluated once more, apart, for the subtraction).
 */
export async function calibrateSingle(target: LanguageModel, measurement: CurveMeasurement, costs: CostCurve): Promise<SingleCalibration | null> {
  const walls: number[] = []
  const rounds = await timedRounds(prepare('ar', { gamma: 1, params: {} }).newRun(), { target }, measurement, 1, walls)
  const single = singleCalibrationOf(rounds, costs)
  if (!single) return null
  const m = withDefaults(measurement)
  const prefillMs = await measurePrefill(target, [m.sequence.slice(0, m.promptLength)], m.warp, { clock: m.clock })
  return { ...single, outsideMs: outsideOf(rounds, walls[0]!, prefillMs) }
}

/**
 * `decodes` decodes of the measurement's prompt by `decoder` on `models`, each round timed with the measurement's
 * clock; `walls` (when given) receives each decode's whole time, from before it opens its sessions to after it closes them.
 */
async function timedRounds(decoder: () => Decoder, models: DecoderModels, measurement: CurveMeasurement, decodes: number, walls?: number[]): Promise<TimedRound[]> {
  const m = withDefaults(measurement)
  const rounds: TimedRound[] = []
  for (let decode = 0; decode < decodes; decode++) {
    const started = m.clock()
    let last = started
    await decodeOnce({
      decoder: decoder(),
      models,
      promptTokens: m.sequence.slice(0, m.promptLength),
      maxTokens: Math.min(CALIBRATION_TOKENS, m.sequence.length - m.promptLength),
      warp: m.warp,
      seed: 0,
      stream: decode,
      onEvent: (event) => {
        if (event.type !== 'step') return
        const now = m.clock()
        rounds.push({ record: event.record, ms: now - last })
        last = now
      }
    })
    walls?.push(m.clock() - started)
  }
  return rounds
}
