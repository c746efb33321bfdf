/**
 * metrics/fold.ts on hand-made step records. Every expected number is computed by hand in the comments
 * (HSDDW §4.4: σ = 1 − accepted draft tokens / draft tokens, η = target calls / output length).
 */
import { describe, expect, it } from 'vitest'
import type { StepRecord } from '../../electron/engine/decoders/types'
import {
  acceptanceRate,
  addStep,
  emptyTotals,
  eta,
  foldSteps,
  meanAcceptedLength,
  sigma,
  summarizeMethod,
  tokensPerSecond,
  type PromptOutcome
} from '../../electron/engine/metrics/fold'

function step(overrides: Partial<StepRecord>): StepRecord {
  return {
    index: 0,
    stage: 'sd',
    proposed: 0,
    accepted: 0,
    resampled: false,
    bonus: false,
    emitted: 0,
    draftTokens: 0,
    acceptedDraftTokens: 0,
    draftEntropies: [],
    threshold: null,
    decision: null,
    targetCalls: 1,
    draftCalls: 0,
    draftMs: 0,
    verifyMs: 0,
    totalMs: 0,
    ...overrides
  }
}

/** γ = 5 three times; accepted 5 (+bonus), 2 (+correction), 0 (+correction): emitted 6, 3, 1. */
const ROUNDS: StepRecord[] = [
  step({ index: 0, proposed: 5, accepted: 5, bonus: true, emitted: 6, draftTokens: 5, acceptedDraftTokens: 5, draftCalls: 5, draftMs: 2, verifyMs: 3, totalMs: 6 }),
  step({ index: 1, proposed: 5, accepted: 2, resampled: true, emitted: 3, draftTokens: 5, acceptedDraftTokens: 2, draftCalls: 5, draftMs: 2, verifyMs: 3, totalMs: 5.5 }),
  step({ index: 2, proposed: 5, accepted: 0, resampled: true, emitted: 1, draftTokens: 5, acceptedDraftTokens: 0, draftCalls: 5, draftMs: 2, verifyMs: 3, totalMs: 7 })
]

/**
 * A full round, a target-only round (γ = 0) and a last round cut by max-tokens after 2 of its 3 accepted drafts:
 * accepted 3 but only 2 draft tokens reached the output.
 */
const MIXED: StepRecord[] = [
  step({ index: 0, proposed: 4, accepted: 4, bonus: true, emitted: 5, draftTokens: 4, acceptedDraftTokens: 4, draftCalls: 4, draftMs: 1.5, verifyMs: 2, totalMs: 4 }),
  step({ index: 1, stage: 'target-only', proposed: 0, emitted: 1, verifyMs: 1, totalMs: 1.25 }),
  step({ index: 2, proposed: 3, accepted: 3, bonus: true, emitted: 2, draftTokens: 3, acceptedDraftTokens: 2, draftCalls: 3, draftMs: 1, verifyMs: 2, totalMs: 3.5 })
]

describe('foldSteps and the ratios', () => {
  it('γ 5,5,5 / accepted 5,2,0 / emitted 6,3,1', () => {
    const totals = foldSteps(ROUNDS)
    expect(totals).toEqual({
      steps: 3,
      verifications: 3,
      proposed: 15,
      accepted: 7,
      emitted: 10,
      draftTokens: 15,
      acceptedDraftTokens: 7,
      targetCalls: 3,
      draftCalls: 15,
      draftMs: 6,
      verifyMs: 9,
      stepMs: 18.5,
      gammas: [5, 5, 5]
    })
    expect(sigma(totals)).toBeCloseTo(1 - 7 / 15, 12) // 8/15 = 0.5333
    expect(eta(totals)).toBeCloseTo(3 / 10, 12)
    expect(acceptanceRate(totals)).toBeCloseTo(7 / 15, 12)
    expect(meanAcceptedLength(totals)).toBeCloseTo(7 / 3, 12)
  })

  it('target-only rounds are not verifications; σ counts draft tokens that reached the output', () => {
    const totals = foldSteps(MIXED)
    // Verifications: rounds 0 and 2 only; γ trajectory [4, 3].
    expect(totals.verifications).toBe(2)
    expect(totals.gammas).toEqual([4, 3])
    expect(totals.emitted).toBe(8)
    expect(totals.targetCalls).toBe(3)
    // σ = 1 − (4 + 2) / (4 + 3) = 1/7 (uses acceptedDraftTokens 6, not accepted 7).
    expect(sigma(totals)).toBeCloseTo(1 / 7, 12)
    // η = 3 target calls / 8 output tokens.
    expect(eta(totals)).toBeCloseTo(3 / 8, 12)
    // acceptance = 7 / 7; mean accepted length = 7 accepted / 2 verifications = 3.5 (not 7 / 3 steps).
    expect(acceptanceRate(totals)).toBe(1)
    expect(meanAcceptedLength(totals)).toBeCloseTo(3.5, 12)
  })

  it('ratios are null when their denominator is empty', () => {
    // Autoregressive: 4 steps, one token each, no drafting.
    const ar = foldSteps(Array.from({ length: 4 }, (_, i) => step({ index: i, stage: 'ar', emitted: 1 })))
    expect(sigma(ar)).toBeNull()
    expect(acceptanceRate(ar)).toBeNull()
    expect(meanAcceptedLength(ar)).toBeNull()
    expect(eta(ar)).toBe(1) // 4 calls / 4 tokens
    const none = foldSteps([])
    expect(none).toEqual(emptyTotals())
    expect([sigma(none), eta(none), acceptanceRate(none), meanAcceptedLength(none)]).toEqual([null, null, null, null])
  })

  it('addStep folds incrementally into the same object', () => {
    const totals = emptyTotals()
    for (const record of [...ROUNDS, ...MIXED]) expect(addStep(totals, record)).toBe(totals)
    expect(totals).toEqual(foldSteps([...ROUNDS, ...MIXED]))
    expect(totals.steps).toBe(6)
  })

  it('a method that reports no target calls (nlc-draft: targetCalls 0) gets η = null, not 0', () => {
    // nlc-draft.ts: "this method reports … no target-call count (η is n/a)". Its steps carry targetCalls 0;
    // η = 0 would claim the target produced 3 tokens without ever running.
    const nlc = [0, 1, 2].map((index) => step({ index, stage: 'nlc-draft', emitted: 1, targetCalls: 0 }))
    expect(eta(foldSteps(nlc))).toBeNull()
    expect(summarizeMethod('nlc-draft', [{ outputText: 'abc', outputTokens: 3, wallMs: 3, steps: nlc }], null).eta).toBeNull()
  })
})

/** An `ar` baseline whose aggregate throughput is `tps` tokens/s. */
const baselineAt = (tps: number): PromptOutcome[] => [{ outputText: '', outputTokens: tps, wallMs: 1000, steps: [] }]

describe('summarizeMethod', () => {
  const prompts: PromptOutcome[] = [
    { outputText: 'first', outputTokens: 10, wallMs: 500, steps: ROUNDS },
    { outputText: 'second', outputTokens: 8, wallMs: 400, steps: MIXED }
  ]

  it('aggregates over prompts', () => {
    // 18 tokens in 900 ms = 20 tokens/s; baseline 10 tokens/s → speedup 2.
    const summary = summarizeMethod('sd', prompts, baselineAt(10))
    expect(summary.method).toBe('sd')
    expect(summary.prompts).toBe(2)
    expect(summary.outputTokens).toBe(18)
    expect(summary.wallMs).toBe(900)
    expect(summary.tokensPerSecond).toBeCloseTo(20, 12)
    expect(summary.speedup).toBeCloseTo(2, 12)
    // σ = 1 − (7 + 6) / (15 + 7) = 9/22; η = (3 + 3) / (10 + 8) = 1/3.
    expect(summary.sigma).toBeCloseTo(9 / 22, 12)
    expect(summary.eta).toBeCloseTo(1 / 3, 12)
    // acceptance = (7 + 7) / (15 + 7) = 7/11; mean accepted length = 14 / (3 + 2) = 2.8.
    expect(summary.acceptanceRate).toBeCloseTo(7 / 11, 12)
    expect(summary.meanAcceptedLength).toBeCloseTo(2.8, 12)
    expect(summary.targetCalls).toBe(6)
    expect(summary.draftTokens).toBe(22)
    expect(summary.acceptedTokens).toBe(13)
    // γ per verification round, per prompt (the target-only round is not in it).
    expect(summary.gammaTrajectory).toEqual([
      [5, 5, 5],
      [4, 3]
    ])
    expect(summary.outputs).toEqual(['first', 'second'])
    expect(summary.steps).toBe(6)
    // draft 6 + 2.5 = 8.5 ms; verify 9 + 5 = 14 ms; step time 18.5 + 8.75 = 27.25 ms;
    // overhead = 27.25 − 8.5 − 14 = 4.75 ms over 6 steps.
    expect(summary.draftMs).toBeCloseTo(8.5, 12)
    expect(summary.verifyMs).toBeCloseTo(14, 12)
    expect(summary.overheadMs).toBeCloseTo(4.75, 12)
    expect(summary.overheadPerStepMs).toBeCloseTo(4.75 / 6, 12)
  })

  it('speedup is null without a baseline and 1 for the baseline itself', () => {
    expect(summarizeMethod('sd', prompts, null).speedup).toBeNull()
    expect(summarizeMethod('sd', prompts, []).speedup).toBeNull()
    const ar = summarizeMethod('ar', prompts, baselineAt(20))
    expect(ar.speedup).toBeCloseTo(1, 12)
    // Half the baseline's throughput.
    expect(summarizeMethod('sd', prompts, baselineAt(40)).speedup).toBeCloseTo(0.5, 12)
  })

  it('speedup and tokens/s are medians over the cells; the ratio of totals has names of its own', () => {
    // 100 tokens in 1 s and 1 token in 9 s: aggregate 101 / 10 s = 10.1 tokens/s; per cell 100 and 0.111 tokens/s.
    const skewed: PromptOutcome[] = [
      { outputText: 'a', outputTokens: 100, wallMs: 1000, steps: [] },
      { outputText: 'b', outputTokens: 1, wallMs: 9000, steps: [] }
    ]
    // ar at 50 tokens/s on both prompts: the paired ratios are 2 and 1/450.
    const ar: PromptOutcome[] = [
      { outputText: 'a', outputTokens: 50, wallMs: 1000, steps: [] },
      { outputText: 'b', outputTokens: 50, wallMs: 1000, steps: [] }
    ]
    const summary = summarizeMethod('x', skewed, ar)
    expect(summary.aggregateTokensPerSecond).toBeCloseTo(10.1, 12)
    expect(summary.throughputRatio).toBeCloseTo(10.1 / 50, 12)
    expect(summary.tokensPerSecond).toBeCloseTo((100 + 1 / 9) / 2, 9)
    expect(summary.tokensPerSecond).toBe(summary.tokensPerSecondInterval!.median)
    expect(summary.speedup).toBeCloseTo((2 + 1 / 450) / 2, 9)
    expect(summary.speedup).toBe(summary.speedupInterval!.median)
    expect(summary.gammaTrajectory).toEqual([[], []])
    expect(summary.overheadPerStepMs).toBeNull()
    expect(summary.sigma).toBeNull()
  })

  it('with repeats: the median wall time per prompt, every (prompt, repeat) in the intervals, speedups paired with ar', () => {
    const timed = (promptIndex: number, tokens: number, walls: number[]): PromptOutcome => ({
      promptIndex,
      outputText: '',
      outputTokens: tokens,
      wallMs: walls[0]!,
      steps: [],
      repeats: walls.map((wallMs, repeat) => ({ repeat, wallMs, outputTokens: tokens }))
    })
    // ar: 10 tokens in 100/200/100 ms (prompt 0) and 400/400/800 ms (prompt 1).
    const ar = [timed(0, 10, [100, 200, 100]), timed(1, 10, [400, 400, 800])]
    // sd is exactly twice as fast on every (prompt, repeat): the noise is shared, so every paired ratio is 2.
    const sd = [timed(0, 10, [50, 100, 50]), timed(1, 10, [200, 200, 400])]
    const summary = summarizeMethod('sd', sd, ar)
    expect(summary.repeats).toBe(3)
    expect(summary.wallMs).toBe(50 + 200) // medians of each prompt's repeats
    expect(summary.aggregateTokensPerSecond).toBeCloseTo(20 / 0.25, 9)
    expect(summary.tokensPerSecond).toBe(75)
    expect(summary.speedup).toBeCloseTo(2, 12)
    expect(summary.speedupInterval).toMatchObject({ median: 2, low: 2, high: 2, cells: 6, prompts: 2, repeats: 3 })
    // tokens/s per cell: 200, 100, 200 and 50, 50, 25 → median 75; the interval spans the prompts.
    expect(summary.tokensPerSecondInterval).toMatchObject({ median: 75, cells: 6 })
    expect(summary.tokensPerSecondInterval!.low).toBeLessThan(75)
    expect(summary.tokensPerSecondInterval!.high).toBeGreaterThan(75)
    // A repeat ar lacks is left out of the pairing rather than paired with another repeat.
    const partial = summarizeMethod('sd', sd, [timed(0, 10, [100]), timed(1, 10, [400])])
    expect(partial.speedupInterval).toMatchObject({ median: 2, cells: 2 })
    expect(summarizeMethod('sd', sd, null).speedupInterval).toBeNull()
  })

  it('tokensPerSecond', () => {
    expect(tokensPerSecond(30, 1500)).toBeCloseTo(20, 12)
    expect(tokensPerSecond(30, 0)).toBe(0)
  })
})
