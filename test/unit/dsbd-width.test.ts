/**
 * DSBD's dynamic width (../shared/papers/dsbd-dynamic-width-speculative-beam.txt §3.2, Eq 2–7;
 * electron/engine/decoders/dsbd-width.ts): a hand-computed three-beam case, the α chain of Eq 4 from two small
 * distributions, the limits t → 0, t → 1 and W_min, and Eq 2's count law against the verification procedure itself.
 */
import { describe, expect, it } from 'vitest'
import {
  acceptanceChain,
  acceptedCountTable,
  atLeast,
  dynamicWidth,
  firstAcceptance,
  widthFromAlphas
} from '../../electron/engine/decoders/dsbd-width'
import { verifyLayer } from '../../electron/engine/decoders/dsbd'
import { fromWeights, sample } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'

/*
 * Hand computation, α = (0.6, 0.5, 0.4), M = 3 draft beams:
 *   P̃(·,1) = 0.6, P̃(·,2) = 0.4·0.5 = 0.2, P̃(·,3) = 0.4·0.5·0.4 = 0.08                       (Eq 3)
 *   P(1,0) = 0.4, P(1,1) = 0.6
 *   P(2,0) = 0.4·0.5 = 0.2, P(2,1) = 0.6·P(1,0) + 0.2·P(0,0) = 0.44, P(2,2) = 0.6·P(1,1) = 0.36
 *   P(3,0) = 0.4·0.5·0.6 = 0.12
 *   P(3,1) = 0.6·P(2,0) + 0.2·P(1,0) + 0.08·P(0,0) = 0.12 + 0.08 + 0.08 = 0.28                   (Eq 2)
 *   P(3,2) = 0.6·P(2,1) + 0.2·P(1,1) = 0.264 + 0.12 = 0.384
 *   P(3,3) = 0.6·P(2,2) = 0.216                                    Σ = 1
 *   P(≥1) = 0.88, P(≥2) = 0.6, P(≥3) = 0.216                                                    (Eq 7)
 */
const ALPHAS = [0.6, 0.5, 0.4]

describe('DSBD width: Eq 2–7 on a hand-computed case (three draft beams)', () => {
  it('Eq 3: the probability that the i-th beam is the first accepted', () => {
    expect(firstAcceptance(ALPHAS, 1)).toBeCloseTo(0.6, 12)
    expect(firstAcceptance(ALPHAS, 2)).toBeCloseTo(0.2, 12)
    expect(firstAcceptance(ALPHAS, 3)).toBeCloseTo(0.08, 12)
  })

  it('Eq 2: P(m, k) for m = 0…3', () => {
    const table = acceptedCountTable(ALPHAS, 3)
    const expected = [[1], [0.4, 0.6], [0.2, 0.44, 0.36], [0.12, 0.28, 0.384, 0.216]]
    expected.forEach((row, m) => row.forEach((p, k) => expect(table[m][k]).toBeCloseTo(p, 12)))
    for (const row of table) expect(row.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12)
  })

  it('Eq 5/7: P(at least K) sums from k = 0 (Eq 5 printed from k = 1)', () => {
    const probs = atLeast(acceptedCountTable(ALPHAS, 3)[3])
    ;[1, 0.88, 0.6, 0.216].forEach((p, K) => expect(probs[K]).toBeCloseTo(p, 12))
  })

  it('Eq 6–7: W̃(t) is the largest K with P(≥ K) ≥ t; W_L = max(W_min, W̃)', () => {
    const cases: [number, number, number, number][] = [
      // t, W_min, W̃, W_L
      [0.9, 1, 0, 1],
      [0.88, 1, 1, 1],
      [0.7, 1, 1, 1],
      [0.6, 1, 2, 2],
      [0.5, 1, 2, 2],
      [0.2, 1, 3, 3],
      [0.9, 2, 0, 2],
      [0.2, 2, 3, 3]
    ]
    for (const [t, wMin, wTilde, width] of cases) {
      const w = widthFromAlphas(ALPHAS, t, wMin)
      expect({ t, wMin, wTilde: w.wTilde, width: w.width }).toEqual({ t, wMin, wTilde, width })
    }
    const w = widthFromAlphas(ALPHAS, 0.5, 1)
    expect(w.beta).toBeCloseTo(0.88, 12) // β_{W_min=1} = P(≥ 1)
    expect(w.acceptance).toBeCloseTo(0.6, 12) // P(≥ W_L = 2)
    expect(widthFromAlphas(ALPHAS, 0.5, 2).beta).toBeCloseTo(0.6, 12)
  })

  it('limits: t → 0 accepts every draft, t → 1 falls back to W_min, W_min is a floor', () => {
    for (const t of [0, 1e-9, 1e-3]) expect(widthFromAlphas(ALPHAS, t, 1).wTilde).toBe(3)
    expect(widthFromAlphas(ALPHAS, 1, 1).wTilde).toBe(0)
    expect(widthFromAlphas(ALPHAS, 1 - 1e-9, 1).width).toBe(1)
    expect(widthFromAlphas(ALPHAS, 1, 3).width).toBe(3)
    // Certain acceptance: t = 1 can still take every beam.
    expect(widthFromAlphas([1, 1, 1], 1, 1).wTilde).toBe(3)
    // Never accepted: only W_min.
    expect(widthFromAlphas([0, 0, 0], 0.01, 2).width).toBe(2)
    // W̃ is non-increasing in t.
    let last = Infinity
    for (let t = 0; t <= 1; t += 0.01) {
      const w = widthFromAlphas(ALPHAS, t, 1).wTilde
      expect(w).toBeLessThanOrEqual(last)
      last = w
    }
    expect(() => widthFromAlphas(ALPHAS, 1.5, 1)).toThrow(RangeError)
    expect(() => widthFromAlphas(ALPHAS, 0.5, 0)).toThrow(RangeError)
  })
})

describe('DSBD width: Eq 4 from distributions', () => {
  // p_beam = (0.6, 0.4), q_beam = (0.3, 0.7): α_1 = Σ min = 0.3 + 0.4 = 0.7; p_2 = norm(max(p − q, 0)) = (1, 0),
  // α_2 = min(1, 0.3) = 0.3; p_3 = norm(max((1, 0) − q, 0)) = (1, 0), α_3 = 0.3.
  const p = [0.6, 0.4]
  const q = [0.3, 0.7]

  it('the α chain of the residuals', () => {
    const alphas = acceptanceChain(p, q, 3)
    ;[0.7, 0.3, 0.3].forEach((a, i) => expect(alphas[i]).toBeCloseTo(a, 12))
    // P(2, ·) = (0.3·0.7, 0.7·0.3 + 0.3·0.3, 0.7·0.7)
    const w = dynamicWidth(p, q, 2, 0.5, 1)
    ;[0.21, 0.3, 0.49].forEach((c, k) => expect(w.counts[k]).toBeCloseTo(c, 12))
    expect(w.width).toBe(1) // P(≥ 2) = 0.49 < 0.5
    expect(dynamicWidth(p, q, 2, 0.49, 1).width).toBe(2)
  })

  it('identical p and q accept every draft: α = 1', () => {
    expect(acceptanceChain([0.2, 0.5, 0.3], [0.2, 0.5, 0.3], 4)).toEqual([1, 1, 1, 1])
    expect(dynamicWidth([0.2, 0.5, 0.3], [0.2, 0.5, 0.3], 4, 1, 1).width).toBe(4)
  })

  it("Eq 2's count law is what the verification procedure does (chi-square, verifyLayer with W_L = M)", () => {
    // Three outcomes, M = 4 drafts i.i.d. from q; W_L = M so no early stop: count the accepted drafts.
    const pLaw = fromWeights([0, 1, 2], [0.5, 0.3, 0.2])
    const qLaw = fromWeights([0, 1, 2], [0.2, 0.3, 0.5])
    const M = 4
    const counts = dynamicWidth([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], M, 0.5, 1).counts
    const expected = new Map(counts.map((c, k) => [String(k), c]))
    const observed = new Map<string, number>()
    const rng = createPrng(7, 0)
    for (let i = 0; i < 20_000; i++) {
      const drafts = Array.from({ length: M }, () => sample(qLaw, rng))
      tally(observed, String(verifyLayer(pLaw, qLaw, drafts, M, rng).accepted.length))
    }
    const result = chiSquareGoodnessOfFit(observed, expected)
    expect(result.pValue).toBeGreaterThan(0.001)
  })
})
