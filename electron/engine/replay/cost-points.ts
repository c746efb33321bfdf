/**
 * A verification cost read from a run's own timed calls — what-if.ts's c_T(k) from calls made alone, what-if-parallel.ts's
 * c‖_T(n) from verifications timed beside the draft: the mean ms of the calls that evaluated k positions, made
 * non-decreasing in k with each k weighted by its calls (isotonic.ts), and priced at any k by targetCostAt.
 */
import { nonDecreasing } from './isotonic'

export interface CostPoint {
  k: number
  ms: number
  /** The calls behind the point. */
  rounds: number
}

/** The points of `calls` (positions evaluated, ms): a mean per k, in k's order, made non-decreasing. */
export function fittedCosts(calls: Iterable<{ k: number; ms: number }>): CostPoint[] {
  const byK = new Map<number, { ms: number; rounds: number }>()
  for (const { k, ms } of calls) {
    const into = byK.get(k) ?? { ms: 0, rounds: 0 }
    into.ms += ms
    into.rounds += 1
    byK.set(k, into)
  }
  const points = [...byK.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => ({ k, ms: v.ms / v.rounds, rounds: v.rounds }))
  const fitted = nonDecreasing(
    points.map((p) => p.ms),
    points.map((p) => p.rounds)
  )
  return points.map((p, i) => ({ ...p, ms: fitted[i]! }))
}

/** c_T(k) for any k: a measured point, linear between measured points, along the last slope beyond them. */
export function targetCostAt(points: readonly CostPoint[], k: number): { ms: number; extrapolated: boolean } {
  if (points.length === 0) throw new RangeError('no single-call round was timed')
  const exact = points.find((p) => p.k === k)
  if (exact) return { ms: exact.ms, extrapolated: false }
  const below = points.filter((p) => p.k < k).at(-1)
  const above = points.find((p) => p.k > k)
  if (below && above) return { ms: below.ms + ((above.ms - below.ms) * (k - below.k)) / (above.k - below.k), extrapolated: false }
  if (!below) return { ms: above!.ms, extrapolated: true }
  const before = points.at(-2)
  const slope = before ? Math.max(0, (below.ms - before.ms) / (below.k - before.k)) : 0
  return { ms: below.ms + slope * (k - below.k), extrapolated: true }
}
