/**
 * Chi-square goodness of fit, hand-written for the losslessness tests (no statistics dependency).
 *
 * The survival function is the regularized upper incomplete gamma Q(a, x) = Γ(a, x) / Γ(a):
 *   chi2.sf(x, k) = Q(k/2, x/2)
 * computed as in Numerical Recipes (§6.2): the series for P(a, x) when x < a + 1, Lentz's continued fraction for
 * Q(a, x) otherwise; ln Γ by Lanczos (g = 7, n = 9).
 */

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7
]

export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x)
  const z = x - 1
  let a = LANCZOS[0]
  const t = z + 7.5
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (z + i)
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a)
}

const EPS = 1e-15
const FPMIN = 1e-300
const MAX_ITERATIONS = 10_000

/** P(a, x) by its series; converges quickly for x < a + 1. */
function lowerSeries(a: number, x: number): number {
  let ap = a
  let sum = 1 / a
  let del = sum
  for (let n = 0; n < MAX_ITERATIONS; n++) {
    ap += 1
    del *= x / ap
    sum += del
    if (Math.abs(del) < Math.abs(sum) * EPS) break
  }
  return sum * Math.exp(-x + a * Math.log(x) - logGamma(a))
}

/** Q(a, x) by its continued fraction (modified Lentz); converges quickly for x ≥ a + 1. */
function upperContinuedFraction(a: number, x: number): number {
  let b = x + 1 - a
  let c = 1 / FPMIN
  let d = 1 / b
  let h = d
  for (let i = 1; i < MAX_ITERATIONS; i++) {
    const an = -i * (i - a)
    b += 2
    d = an * d + b
    if (Math.abs(d) < FPMIN) d = FPMIN
    c = b + an / c
    if (Math.abs(c) < FPMIN) c = FPMIN
    d = 1 / d
    const del = d * c
    h *= del
    if (Math.abs(del - 1) < EPS) break
  }
  return Math.exp(-x + a * Math.log(x) - logGamma(a)) * h
}

/** Regularized upper incomplete gamma Q(a, x). */
export function gammaQ(a: number, x: number): number {
  if (!(a > 0) || x < 0 || Number.isNaN(x)) throw new RangeError(`gammaQ(${a}, ${x}) is undefined`)
  if (x === 0) return 1
  if (x === Infinity) return 0
  return x < a + 1 ? 1 - lowerSeries(a, x) : upperContinuedFraction(a, x)
}

/** P(X ≥ x) for X ~ χ²(df). */
export function chiSquareSf(x: number, df: number): number {
  if (x === Infinity) return 0
  return gammaQ(df / 2, x / 2)
}

export interface ChiSquareResult {
  statistic: number
  df: number
  pValue: number
  /** Bins after merging those with expected count < minExpected. */
  bins: number
  samples: number
}

/**
 * Pearson's chi-square test of observed counts against exact probabilities. Outcomes are any string keys;
 * an observed outcome of probability 0 makes the statistic infinite (p = 0). Bins with expected count
 * < `minExpected` are pooled (smallest first) until the pool reaches it; a pool still too small joins the smallest
 * regular bin.
 */
export function chiSquareGoodnessOfFit(
  observed: ReadonlyMap<string, number>,
  probabilities: ReadonlyMap<string, number>,
  minExpected = 5
): ChiSquareResult {
  let total = 0
  for (const count of observed.values()) total += count
  let mass = 0
  for (const p of probabilities.values()) mass += p
  if (Math.abs(mass - 1) > 1e-9) throw new Error(`expected probabilities sum to ${mass}, not 1`)
  if (total === 0) throw new Error('no observations')

  const keys = new Set([...observed.keys(), ...probabilities.keys()])
  const cells = [...keys]
    .map((key) => ({ expected: total * (probabilities.get(key) ?? 0), observed: observed.get(key) ?? 0 }))
    .sort((a, b) => a.expected - b.expected)

  // An observed outcome of probability 0 refutes the law outright, whatever bin it would be pooled into.
  const impossible = cells.some((cell) => cell.expected === 0 && cell.observed > 0)

  const kept: { expected: number; observed: number }[] = []
  const pool = { expected: 0, observed: 0 }
  for (const cell of cells) {
    if (cell.expected >= minExpected) kept.push(cell)
    else {
      pool.expected += cell.expected
      pool.observed += cell.observed
    }
  }
  if (pool.expected > 0 || pool.observed > 0) {
    if (pool.expected >= minExpected || kept.length === 0) kept.unshift(pool)
    else {
      kept[0].expected += pool.expected
      kept[0].observed += pool.observed
    }
  }
  const df = kept.length - 1
  if (df < 1) throw new Error(`only ${kept.length} bin(s) after merging: the test has no degrees of freedom`)
  let statistic = 0
  for (const cell of kept) if (cell.expected > 0) statistic += (cell.observed - cell.expected) ** 2 / cell.expected
  if (impossible) statistic = Infinity
  return { statistic, df, pValue: chiSquareSf(statistic, df), bins: kept.length, samples: total }
}

/** Increments `counts[key]`. */
export function tally(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1)
}
