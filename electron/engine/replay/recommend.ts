/**
 * The setup advisor's recommendation, from MEASUREMENTS (not predictions): among the configurations measured in
 * one interleaved run beside `ar`, the fastest whose 95 % speedup interval lies wholly above 1.0 (low > 1). A
 * median above 1 is not enough: on a noisy machine it may be chance, and deploying speculation that does not pay
 * costs memory and a second model for nothing. When none qualifies the answer is `ar` — said plainly, with the
 * numbers that explain it (acceptance per position, verification cost, draft cost: replay/profile.ts).
 *
 * "Fastest" is the highest median speedup: each speedup is paired with `ar` on the same (prompt, repeat), so drifts
 * of the machine cancel, which a ranking by raw tokens per second would not do.
 */
import type { WorkloadProfile } from './profile'

export interface Interval {
  median: number
  low: number
  high: number
}

export interface MeasuredConfiguration {
  /** The arm's label in the stored run. */
  label: string
  method: string
  /** Tokens per second per (prompt, repeat) and the speedup paired with ar; null when unmeasured (failed, no ar). */
  tokensPerSecond: Interval | null
  speedup: Interval | null
}

export interface RecommendationVerdict<M extends MeasuredConfiguration = MeasuredConfiguration> {
  /** The configuration to deploy; null = no speculation (`ar`). */
  pick: M | null
  /** Why, with the numbers. */
  reason: string
}

const times = (x: number) => `${x.toFixed(2)}×`
export const describeInterval = (i: Interval) => `${times(i.median)} [${times(i.low)}, ${times(i.high)}]`

/** The rule: the highest median speedup among those whose interval lies above 1.0; null when none does. */
export function fastestAboveOne<M extends MeasuredConfiguration>(measured: readonly M[]): M | null {
  let best: M | null = null
  for (const m of measured) {
    if (m.method === 'ar' || m.speedup === null || !(m.speedup.low > 1)) continue
    if (best === null || m.speedup.median > best.speedup!.median) best = m
  }
  return best
}

const fixed = (x: number | null, digits = 2) => (x === null ? '–' : x.toFixed(digits))

/** Why speculation does not pay: per draft its acceptance, its cost, and what a one-token round yields against what it costs. */
export function whyNoSpeculation(profile: WorkloadProfile): string {
  const verify = profile.verifyCost.slice(1, 8).map((v, i) => `k=${i + 2} ${fixed(v)}`)
  const lines = [`verification cost c_T(k)/c_T(1): ${verify.length > 0 ? verify.join(', ') : 'not measured'}`]
  for (const [name, draft] of Object.entries(profile.drafts)) {
    const a1 = draft.acceptance[0] ?? null
    const v2 = profile.verifyCost[1] ?? null
    const perRound = draft.relativeCost !== null && v2 !== null ? draft.relativeCost + v2 : null
    // A round drafting one token yields 1 + a_1 tokens for c_D/c_T(1) + c_T(2)/c_T(1) target-token times; longer
    // drafts only add positions whose acceptance is lower still.
    const balance = a1 !== null && perRound !== null ? `; a one-token round yields ${fixed(1 + a1)} tokens for ${fixed(perRound)} target-token times` : ''
    lines.push(`draft ${name}: acceptance per position ${draft.acceptance.map((a) => fixed(a)).join(' ')}, draft cost c_D/c_T(1) ${fixed(draft.relativeCost)}${balance}`)
  }
  if (Object.keys(profile.drafts).length === 0) lines.push('no draft model: only lookups were candidates')
  return lines.join('; ')
}

export function recommend<M extends MeasuredConfiguration>(measured: readonly M[], profile: WorkloadProfile): RecommendationVerdict<M> {
  const pick = fastestAboveOne(measured)
  if (pick) return { pick, reason: `${pick.label} is the fastest measured configuration whose 95 % speedup interval lies above 1.0: ${describeInterval(pick.speedup!)} against ar` }
  const tried = measured.filter((m) => m.method !== 'ar' && m.speedup !== null).sort((a, b) => b.speedup!.median - a.speedup!.median)
  const best = tried[0]
  const measuredText = best ? `the best measured, ${best.label}, made ${describeInterval(best.speedup!)}` : 'no configuration was measured against ar'
  return {
    pick: null,
    reason: `speculation does not pay for this trio and workload: no configuration's 95 % speedup interval lies above 1.0 (${measuredText}); run ar. ${whyNoSpeculation(profile)}`
  }
}

/** Candidates (best predicted first) and repeats the verification runs, within a time budget. */
export interface VerificationPlan {
  candidates: number
  repeats: number
  /** Predicted ms of the timed cells. */
  estimatedMs: number
}

/**
 * The most verification that fits `budgetMs` (null: no budget), from the predicted time of one pass over the
 * workload per arm: `arMs` for ar, `armMs` for the others, best first. Repeats go first (down to 2, the fewest
 * that still give every prompt two paired cells), then candidates from the end, then the last repeat. null when
 * even ar and one candidate once do not fit: nothing could be measured.
 */
export function planVerification(arMs: number, armMs: readonly number[], repeats: number, budgetMs: number | null): VerificationPlan | null {
  const cost = (n: number, r: number) => r * (arMs + armMs.slice(0, n).reduce((a, b) => a + b, 0))
  const plans: [number, number][] = []
  for (let r = repeats; r >= Math.min(2, repeats); r--) plans.push([armMs.length, r])
  for (let n = armMs.length - 1; n >= 1; n--) plans.push([n, Math.min(2, repeats)])
  if (repeats > 1) plans.push([1, 1])
  for (const [n, r] of plans) {
    if (n < 1) continue
    const estimatedMs = cost(n, r)
    if (budgetMs === null || estimatedMs <= budgetMs) return { candidates: n, repeats: r, estimatedMs }
  }
  return null
}
