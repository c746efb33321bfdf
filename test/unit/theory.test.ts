/**
 * The closed forms of electron/engine/theory: hand values, Chen's Theorem 3.2 against a Monte Carlo simulation of
 * Algorithm 2 with i.i.d. acceptances (≤ 1% relative error) and against its own Table A.1, the special cases the
 * paper lists (n = 0; m = 1 with α = β; n → ∞), Theorem 3.4, DSBD Theorem 3.2 and the on-the-fly objective.
 */
import { describe, expect, it } from 'vitest'
import { createPrng } from '../../electron/engine/sampling/prng'
import { chenExpectedTokens, chenQ, chenTimeImprovement, tokensDistribution } from '../../electron/engine/theory/chen'
import { dsbdExpectedSteps } from '../../electron/engine/theory/dsbd'
import { expectedSpeedup, expectedTokens, geometricSum, optimalGamma } from '../../electron/engine/theory/leviathan'
import { analyticObjective, bestWindow } from '../../electron/engine/theory/on-the-fly'

describe('Leviathan et al.: expected tokens and speedup', () => {
  it('matches hand values', () => {
    // (1 − 0.8^5)/(1 − 0.8) = (1 − 0.32768)/0.2 = 3.3616
    expect(expectedTokens(0.8, 4)).toBeCloseTo(3.3616, 12)
    // α = 0.5, γ = 1: 1 + 0.5
    expect(expectedTokens(0.5, 1)).toBeCloseTo(1.5, 12)
    expect(expectedTokens(0, 7)).toBe(1)
    expect(expectedTokens(1, 7)).toBe(8) // the limit γ + 1, no 0/0
    expect(expectedTokens(0.3, 0)).toBe(1)
    // Speedup with c = 0.05, γ = 4: 3.3616 / 1.2
    expect(expectedSpeedup(0.8, 4, 0.05)).toBeCloseTo(3.3616 / 1.2, 12)
    expect(expectedSpeedup(0.8, 4, 0)).toBeCloseTo(3.3616, 12)
    expect(geometricSum(0.5, 3)).toBeCloseTo(1.75, 12)
    expect(geometricSum(2, 3)).toBe(7)
    expect(() => expectedTokens(1.2, 3)).toThrow(RangeError)
    expect(() => expectedTokens(0.5, -1)).toThrow(RangeError)
    expect(() => expectedSpeedup(0.5, 2, -0.1)).toThrow(RangeError)
  })

  it('optimal γ: α = 0.8, c = 0.05 → the argmax over a brute-force scan', () => {
    const best = optimalGamma(0.8, 0.05, 30)
    for (let g = 1; g <= 30; g++) expect(expectedSpeedup(0.8, g, 0.05)).toBeLessThanOrEqual(best.speedup + 1e-12)
    expect(best.gamma).toBe(8) // Leviathan Fig. 3 region: γ ≈ 8 for α = 0.8, c ≈ 0.05
    expect(optimalGamma(0.2, 0.5, 10).gamma).toBe(1)
  })
})

describe("Chen's Theorem 3.2 (expected tokens of Algorithm 2) and Theorem 3.4", () => {
  /** Algorithm 2 with i.i.d. acceptances: n small guesses (β each) then one medium guess (α), m times. */
  function simulate(alpha: number, beta: number, m: number, n: number, trials: number, seed: number): number {
    const rng = createPrng(seed, 0)
    let total = 0
    for (let t = 0; t < trials; t++) {
      let tokens = 1 // the target always adds t (line 15)
      let rejected = false
      for (let i = 0; i < m && !rejected; i++) {
        for (let j = 0; j <= n; j++) {
          if (rng.next() < (j < n ? beta : alpha)) tokens += 1
          else {
            rejected = true
            break
          }
        }
      }
      total += tokens
    }
    return total / trials
  }

  const grid: [number, number, number, number][] = [
    [0.8, 0.6, 2, 2],
    [0.9, 0.5, 3, 1],
    [0.7, 0.7, 1, 4],
    [0.95, 0.85, 4, 3],
    [0.6, 0.3, 5, 0],
    [0.85, 0.75, 2, 6]
  ]

  it.each(grid)('α=%f β=%f m=%i n=%i: closed form = Monte Carlo (200k runs) within 1%', (alpha, beta, m, n) => {
    const theory = chenExpectedTokens(alpha, beta, m, n)
    const simulated = simulate(alpha, beta, m, n, 200_000, 17 + m * 31 + n)
    const relative = Math.abs(simulated - theory) / theory
    console.log(`Chen Thm 3.2 α=${alpha} β=${beta} m=${m} n=${n}: E = ${theory.toFixed(4)}, Monte Carlo ${simulated.toFixed(4)} (${(relative * 100).toFixed(3)} %)`)
    expect(relative).toBeLessThanOrEqual(0.01)
  })

  it.each(grid)('α=%f β=%f m=%i n=%i: Table A.1 sums to 1 and its mean is the closed form', (alpha, beta, m, n) => {
    const law = tokensDistribution(alpha, beta, m, n)
    expect(law).toHaveLength(m * (n + 1) + 1)
    expect(law.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12)
    expect(law.reduce((sum, p, k) => sum + (k + 1) * p, 0)).toBeCloseTo(chenExpectedTokens(alpha, beta, m, n), 12)
  })

  it('hand values: α = 0.8, β = 0.5, m = 2, n = 1', () => {
    // Q = 0.4; (1 − β²)/(1 − β) = 1.5; (1 − Q²)/(1 − Q) = 1.4; E = 1.5·1.4 + 0.16 = 2.26
    expect(chenQ(0.8, 0.5, 1)).toBeCloseTo(0.4, 12)
    expect(chenExpectedTokens(0.8, 0.5, 2, 1)).toBeCloseTo(2.26, 12)
    // Table A.1 by hand: X = 1: 1 − β; X = 2: β(1 − α); X = 3: βα(1 − β); X = 4: β²α(1 − α); X = 5: β²α².
    const law = tokensDistribution(0.8, 0.5, 2, 1)
    ;[0.5, 0.5 * 0.2, 0.5 * 0.8 * 0.5, 0.25 * 0.8 * 0.2, 0.25 * 0.64].forEach((p, i) => expect(law[i]).toBeCloseTo(p, 12))
    // Theorem 3.4: c = 0.1, c_s = 0.5 → cost 1 + 2·0.1 + 2·1·0.1·0.5 = 1.3
    expect(chenTimeImprovement(0.8, 0.5, 2, 1, 0.1, 0.5)).toBeCloseTo(2.26 / 1.3, 12)
  })

  it("the paper's special cases: n = 0 is Leviathan with γ = m; m = 1, α = β is Leviathan with γ = n + 1; n → ∞ gives 1/(1 − β)", () => {
    for (const alpha of [0, 0.3, 0.75, 0.99, 1]) {
      for (const m of [1, 2, 5, 9]) {
        // n = 0: E = (1 − α^{m+1})/(1 − α), Q = α (β plays no part)
        expect(chenQ(alpha, 0.4, 0)).toBe(alpha)
        expect(chenExpectedTokens(alpha, 0.4, m, 0)).toBeCloseTo(expectedTokens(alpha, m), 12)
        expect(chenExpectedTokens(alpha, 0.9, m, 0)).toBeCloseTo(expectedTokens(alpha, m), 12)
      }
      for (const n of [0, 1, 3, 10]) {
        // m = 1, α = β: E = (1 − β^{n+2})/(1 − β)
        expect(chenExpectedTokens(alpha, alpha, 1, n)).toBeCloseTo(expectedTokens(alpha, n + 1), 12)
      }
    }
    for (const beta of [0.2, 0.6, 0.9]) expect(chenExpectedTokens(0.9, beta, 3, 400)).toBeCloseTo(1 / (1 - beta), 9)
    // With a free small model (c_s = 0) and n = 0, Theorem 3.4 is Leviathan's speedup.
    expect(chenTimeImprovement(0.8, 0.5, 4, 0, 0.05, 0.3)).toBeCloseTo(expectedSpeedup(0.8, 4, 0.05), 12)
    expect(() => chenExpectedTokens(0.5, 0.5, 0, 1)).toThrow(RangeError)
    expect(() => chenExpectedTokens(0.5, 0.5, 1, 1.5)).toThrow(RangeError)
  })
})

describe('DSBD Theorem 3.2 and the on-the-fly objective (Eq 1)', () => {
  it('DSBD: Leviathan with acceptance min(t, β̄)', () => {
    expect(dsbdExpectedSteps(0.9, 0.6, 3)).toBeCloseTo((1 - 0.6 ** 4) / 0.4, 12)
    expect(dsbdExpectedSteps(0.5, 0.8, 3)).toBeCloseTo((1 - 0.5 ** 4) / 0.5, 12)
    expect(dsbdExpectedSteps(1, 1, 4)).toBe(5)
    expect(() => dsbdExpectedSteps(1.5, 0.5, 2)).toThrow(RangeError)
  })

  it('Eq 1: (1 − Acc^{γ+1}) / ((1 − Acc)(γ a_q + b_p)), re-exported from the adaptive-analytic policy', () => {
    // Acc = 0.8, γ = 4, a_q = 1 ms, b_p = 10 ms: 3.3616 / 14
    expect(analyticObjective(0.8, 4, 1, 10)).toBeCloseTo(3.3616 / 14, 12)
    // In units of one target call (b_p = 1, a_q = c) Eq 1 is Leviathan's improvement factor.
    expect(analyticObjective(0.8, 4, 0.05, 1)).toBeCloseTo(expectedSpeedup(0.8, 4, 0.05), 12)
    expect(bestWindow(0.8, 30, 0.05, 1).gamma).toBe(optimalGamma(0.8, 0.05, 30).gamma)
  })
})
