/**
 * Theory beside measurement (engine/theory/measured.ts): the closed forms with a run's measured α̂, c and verify
 * cost, checked against engine/theory's own functions (themselves tested against the papers' reference cases in
 * theory.test.ts) and hand computations.
 */
import { describe, expect, it } from 'vitest'
import type { MethodSummary } from '../../electron/api/runs'
import { chenExpectedTokens, chenTimeImprovement } from '../../electron/engine/theory/chen'
import { dsbdExpectedSteps } from '../../electron/engine/theory/dsbd'
import { expectedSpeedup, expectedTokens, optimalGamma } from '../../electron/engine/theory/leviathan'
import { bestGamma, DSBD_LOWER_BOUND_NOTE, expectedTokensAt, speedupAt, theoryFor } from '../../electron/engine/theory/measured'

function summary(method: string, overrides: Partial<MethodSummary> = {}): MethodSummary {
  return {
    method,
    prompts: 2,
    outputTokens: 120,
    wallMs: 1000,
    tokensPerSecond: 120,
    speedup: 1.5,
    aggregateTokensPerSecond: null,
    throughputRatio: null,
    sigma: 0.2,
    eta: 0.3,
    acceptanceRate: 0.7,
    meanAcceptedLength: 3,
    targetCalls: 40,
    draftTokens: 150,
    acceptedTokens: 100,
    gammaTrajectory: [],
    outputs: [],
    draftMs: 0,
    verifyMs: 0,
    overheadMs: 0,
    steps: 40,
    overheadPerStepMs: null,
    repeats: 1,
    tokensPerSecondInterval: null,
    speedupInterval: { median: 1.4, low: 1.2, high: 1.6, cells: 6, prompts: 2, repeats: 3 },
    acceptanceByPosition: [],
    alpha: 0.8,
    timings: [],
    decisionDigest: '',
    costs: { draftMsPerCall: 1, targetMsPerCall: 4, meanGamma: 3.5, levels: null, beam: null },
    theory: null,
    ...overrides
  }
}

describe('theoryFor', () => {
  it("sd: Leviathan's Eq. 1 and Thm 3.8 at the run's γ with α̂ and c measured, beside the measurements", () => {
    const theory = theoryFor(summary('sd'), { family: 'speculative', gamma: 5, params: {}, arMsPerToken: 10 })!
    // c = 1 ms / 10 ms; a verification costs 4 / 10 target tokens.
    expect(theory).toMatchObject({ alpha: 0.8, c: 0.1, verifyCost: 0.4, gamma: 5, gammaIsMean: false })
    expect(theory.tokensPerCall.predicted).toBeCloseTo(expectedTokens(0.8, 5), 12)
    expect(theory.tokensPerCall.predicted).toBeCloseTo((1 - 0.8 ** 6) / 0.2, 12)
    expect(theory.tokensPerCall.measured).toBe(3) // 120 tokens / 40 target calls
    expect(theory.speedup.predicted).toBeCloseTo(expectedSpeedup(0.8, 5, 0.1), 12)
    expect(theory.speedupWithVerifyCost.predicted).toBeCloseTo(expectedTokens(0.8, 5) / (5 * 0.1 + 0.4), 12)
    expect(theory.speedup.measured).toBe(1.4) // the median paired speedup, not the aggregate
    expect(theory.optimalGamma!.gamma).toBe(optimalGamma(0.8, 0.1).gamma)
    expect(theory.optimalGamma!.speedup).toBeCloseTo(optimalGamma(0.8, 0.1).speedup, 12)
    expect(theory.notes).toEqual([])
  })

  it('adaptive policies use the mean draft length and say so; without ar there are no speedups', () => {
    const theory = theoryFor(summary('svip'), { family: 'policy', gamma: 5, params: {}, arMsPerToken: null })!
    expect(theory).toMatchObject({ gamma: 3.5, gammaIsMean: true, c: null, verifyCost: null, optimalGamma: null })
    expect(theory.tokensPerCall.predicted).toBeCloseTo((1 - 0.8 ** 4.5) / 0.2, 12)
    expect(theory.speedup.predicted).toBeNull()
    expect(theory.notes.join(' ')).toMatch(/no ar in this run/)
    expect(theory.notes.join(' ')).toMatch(/mean draft length/)
  })

  it("hier-chen: Chen's Theorems 3.2 and 3.4 with the measured α, β, c and c_s", () => {
    const costs = { draftMsPerCall: 1, targetMsPerCall: 4, meanGamma: 6, levels: { alpha: 0.7, beta: 0.8, q2MsPerCall: 2, q1MsPerCall: 0.5 }, beam: null }
    const theory = theoryFor(summary('hier-chen', { costs }), { family: 'hierarchy', gamma: 5, params: { 'chen.m': 2, 'chen.n': 3 }, arMsPerToken: 10 })!
    expect(theory.chen).toMatchObject({ alpha: 0.7, beta: 0.8, m: 2, n: 3, c: 0.2, cs: 0.25 })
    expect(theory.chen!.tokensPerCall.predicted).toBeCloseTo(chenExpectedTokens(0.7, 0.8, 2, 3), 12)
    expect(theory.chen!.timeImprovement.predicted).toBeCloseTo(chenTimeImprovement(0.7, 0.8, 2, 3, 0.2, 0.25), 12)
  })

  it("other hierarchies get the measured α and β as a note, not Chen's prediction for an algorithm they do not run", () => {
    const costs = { draftMsPerCall: 1, targetMsPerCall: 4, meanGamma: 6, levels: { alpha: 0.7, beta: 0.8, q2MsPerCall: 2, q1MsPerCall: 0.5 }, beam: null }
    const theory = theoryFor(summary('hsddw', { costs }), { family: 'hierarchy', gamma: 5, params: {}, arMsPerToken: 10 })!
    expect(theory.chen).toBeNull()
    expect(theory.notes.join(' ')).toMatch(/α \(M_q2 vs M_p\) = 0\.700, β \(M_q1 vs M_p\) = 0\.800; Chen's Theorems 3\.2\/3\.4 model Algorithm 2/)
  })

  it('dsbd: Theorem 3.2 with the measured β̄ beside the measured layers per iteration, and why it underestimates', () => {
    const costs = { draftMsPerCall: 1, targetMsPerCall: 4, meanGamma: null, levels: null, beam: { layersPerStep: 3.1, meanBeta: 0.75 } }
    const theory = theoryFor(summary('dsbd', { alpha: null, costs }), { family: 'beam', gamma: 4, params: { 'dsbd.t': 0.9 }, arMsPerToken: 10 })!
    expect(theory.dsbd).toEqual({ t: 0.9, betaBar: 0.75, gamma: 4, layersPerIteration: { predicted: dsbdExpectedSteps(0.9, 0.75, 4), measured: 3.1 } })
    expect(theory.notes).toContain(DSBD_LOWER_BOUND_NOTE)
  })

  it('is null for methods that do not draft', () => {
    expect(theoryFor(summary('ar', { alpha: null }), { family: 'baseline', gamma: 5, params: {}, arMsPerToken: 10 })).toBeNull()
  })
})

describe('the closed forms at real γ and with a verify cost', () => {
  it('equal Leviathan at integer γ and v = 1, and α = 1 gives γ + 1', () => {
    for (const [alpha, gamma, c] of [[0.6, 3, 0.05], [0.9, 7, 0.2], [0.3, 1, 0.5]] as const) {
      expect(expectedTokensAt(alpha, gamma)).toBeCloseTo(expectedTokens(alpha, gamma), 12)
      expect(speedupAt(alpha, gamma, c)).toBeCloseTo(expectedSpeedup(alpha, gamma, c), 12)
      expect(bestGamma(alpha, c).gamma).toBe(optimalGamma(alpha, c).gamma)
    }
    expect(expectedTokensAt(1, 2.5)).toBe(3.5)
  })

  it('a costlier verification moves the best γ up: more tokens per expensive round', () => {
    expect(bestGamma(0.8, 0.05, 4).gamma).toBeGreaterThan(bestGamma(0.8, 0.05, 1).gamma)
  })
})
