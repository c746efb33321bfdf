/**
 * Whether a resource stayed flat over a soak: the samples of the warm-up (the first `warmupFraction` of the time)
 * are cut, and the median of the last third of what remains is compared with the median of the first third. Medians
 * of thirds, not min/max: a download's sockets or a generation's buffers in flight at one sample are noise, while a
 * leak moves the whole later third. The least-squares slope is reported beside it, per minute.
 */

export interface SeriesPoint {
  /** Seconds since the soak started. */
  t: number
  value: number
}

export interface Flatness {
  /** Samples after the warm-up cut, and the time of the cut (s). */
  samples: number
  warmupEndS: number
  min: number
  max: number
  /** Least-squares slope of value over time, per minute. */
  slopePerMinute: number
  /** Median of the first and the last third after the warm-up. */
  startMedian: number
  endMedian: number
  /** (endMedian − startMedian) / startMedian, in % (signed). */
  changePercent: number
  /** |changePercent| ≤ the tolerance; false also when too few samples remain to judge. */
  flat: boolean
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

function slopePerMinute(points: SeriesPoint[]): number {
  const meanT = points.reduce((sum, p) => sum + p.t, 0) / points.length
  const meanV = points.reduce((sum, p) => sum + p.value, 0) / points.length
  let covariance = 0
  let variance = 0
  for (const p of points) {
    covariance += (p.t - meanT) * (p.value - meanV)
    variance += (p.t - meanT) ** 2
  }
  return variance === 0 ? 0 : (covariance / variance) * 60
}

/** Fewer samples than this after the warm-up cannot tell a trend from noise: the verdict is then "not flat". */
export const MIN_SAMPLES = 6

/**
 * `points` in time order over a soak of `durationS`; `tolerancePercent` is the largest change of the median that
 * still counts as flat (10 for the soak's target).
 */
export function flatness(points: SeriesPoint[], durationS: number, { warmupFraction = 0.2, tolerancePercent = 10 } = {}): Flatness {
  const warmupEndS = durationS * warmupFraction
  const kept = points.filter((p) => p.t >= warmupEndS)
  if (kept.length === 0)
    return { samples: 0, warmupEndS, min: NaN, max: NaN, slopePerMinute: NaN, startMedian: NaN, endMedian: NaN, changePercent: NaN, flat: false }
  const third = Math.max(1, Math.floor(kept.length / 3))
  const startMedian = median(kept.slice(0, third).map((p) => p.value))
  const endMedian = median(kept.slice(-third).map((p) => p.value))
  const changePercent = startMedian === 0 ? (endMedian === 0 ? 0 : Infinity) : ((endMedian - startMedian) / startMedian) * 100
  return {
    samples: kept.length,
    warmupEndS,
    min: Math.min(...kept.map((p) => p.value)),
    max: Math.max(...kept.map((p) => p.value)),
    slopePerMinute: slopePerMinute(kept),
    startMedian,
    endMedian,
    changePercent,
    flat: kept.length >= MIN_SAMPLES && Math.abs(changePercent) <= tolerancePercent
  }
}
