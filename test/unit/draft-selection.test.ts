/** 004 §5 adaptive draft-model selection: OLS (Eq 5), TF-IDF, perplexity, and the throughput-based choice. */
import { describe, expect, it } from 'vitest'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { ordinaryLeastSquares, solveLinearSystem } from '../../electron/engine/selection/least-squares'
import { TfIdfCorpus } from '../../electron/engine/selection/tf-idf'
import { DraftModelSelector, perplexity, type PromptFeatures } from '../../electron/engine/selection/draft-model-selection'

function step(proposed: number, accepted: number, draftMs: number, verifyMs: number): StepRecord {
  return {
    index: 0, stage: 'sd', proposed, accepted, resampled: accepted < proposed, bonus: accepted === proposed,
    emitted: accepted + 1, draftTokens: proposed, acceptedDraftTokens: accepted, draftEntropies: [], threshold: null,
    decision: null, targetCalls: 1, draftCalls: proposed, draftMs, verifyMs, totalMs: draftMs + verifyMs
  }
}

describe('ordinary least squares (Eq 5 estimator)', () => {
  it('recovers Z exactly from three independent prompts', () => {
    // α = uᵀZ with Z = (0.01, −0.02, 0.5): rows chosen by hand.
    const rows = [[10, 2, 1], [20, 5, 1.2], [5, 1, 0.8]]
    const z = [0.01, -0.02, 0.5]
    const alpha = rows.map((u) => u[0] * z[0] + u[1] * z[1] + u[2] * z[2]) // 0.56, 0.70, 0.43
    expect(alpha[0]).toBeCloseTo(0.56, 12)
    const fitted = ordinaryLeastSquares(rows, alpha)
    fitted.forEach((v, i) => expect(v).toBeCloseTo(z[i], 10))
  })

  it('is the least-squares solution for an overdetermined system', () => {
    // y ≈ 2x with points (1, 2), (2, 4.2), (3, 5.8): Z = Σxy / Σx² = (2 + 8.4 + 17.4) / 14 = 27.8 / 14.
    const [slope] = ordinaryLeastSquares([[1], [2], [3]], [2, 4.2, 5.8])
    expect(slope).toBeCloseTo(27.8 / 14, 12)
  })

  it('refuses dependent warm-up prompts', () => {
    expect(() => solveLinearSystem([[1, 2], [2, 4]], [1, 2])).toThrow(/not linearly independent/)
  })
})

describe('TF-IDF score', () => {
  it('scores by smoothed idf weighted by term frequency', () => {
    const corpus = new TfIdfCorpus()
    expect(corpus.addAndScore([1, 2, 2])).toBeCloseTo(1, 12) // N = 1, every df = 1: idf = ln(2/2) + 1
    // N = 2: token 1 seen twice → idf 1; token 3 once → ln(3/2) + 1. tf = 1/2 each.
    expect(corpus.addAndScore([1, 3])).toBeCloseTo(0.5 * 1 + 0.5 * (Math.log(3 / 2) + 1), 12)
  })
})

describe('perplexity', () => {
  it('is exp of the mean negative log-probability', () => {
    expect(perplexity([Math.log(0.5), Math.log(0.25)])).toBeCloseTo(Math.exp(-(Math.log(0.5) + Math.log(0.25)) / 2), 12)
    expect(perplexity([Math.log(1 / 8), Math.log(1 / 8)])).toBeCloseTo(8, 10)
  })
})

describe('DraftModelSelector', () => {
  const warmFeatures: PromptFeatures[] = [
    { length: 10, perplexity: 2, tfidf: 1 },
    { length: 20, perplexity: 5, tfidf: 1.2 },
    { length: 5, perplexity: 1, tfidf: 0.8 }
  ]

  it('fits per-draft coefficients from warm-up acceptances and picks the higher predicted throughput', () => {
    const selector = new DraftModelSelector(2, 3, { gammaMax: 5, accMax: 0.98 })
    // Draft 0: cheap (0.1 ms/token) but accepts 1 of 5 per round → α = 1 / (1 + 1) = 0.5.
    // Draft 1: 1 ms/token and accepts 4 of 5 per round → α = 4 / (4 + 1) = 0.8. Verification costs 10 ms.
    for (const features of warmFeatures) {
      selector.recordWarmup(0, features, [step(5, 1, 0.5, 10), step(5, 1, 0.5, 10), step(5, 1, 0.5, 10)])
      selector.recordWarmup(1, features, [step(5, 4, 5, 10), step(5, 4, 5, 10), step(5, 4, 5, 10)])
    }
    selector.fit()
    const decision = selector.choose([warmFeatures[0], warmFeatures[0]])
    expect(decision.predictions[0].acceptance).toBeCloseTo(0.5, 8)
    expect(decision.predictions[1].acceptance).toBeCloseTo(0.8, 8)
    // Eq 1 by hand: draft 0 best γ = 1: (1 + 0.5) / (0.1 + 10) = 0.1485…; draft 1 at γ = 5:
    // (1 − 0.8⁶)/(0.2 · (5 + 10)) = 0.2245… tokens/ms → draft 1.
    expect(decision.predictions[1].throughput).toBeCloseTo((1 - 0.8 ** 6) / (0.2 * 15), 8)
    expect(decision.chosen).toBe(1)
  })

  it('prefers the cheap draft when verification is cheap and acceptances are close', () => {
    const selector = new DraftModelSelector(2, 3, { gammaMax: 5, accMax: 0.98 })
    for (const features of warmFeatures) {
      selector.recordWarmup(0, features, [step(5, 3, 0.5, 1), step(5, 3, 0.5, 1)]) // α = 6/8 = 0.75, a_q = 0.1
      selector.recordWarmup(1, features, [step(5, 4, 50, 1), step(5, 4, 50, 1)]) // α = 0.8, a_q = 10 ms
    }
    selector.fit()
    expect(selector.choose([warmFeatures[1], warmFeatures[1]]).chosen).toBe(0)
  })

  it('needs two drafts and at least one warm-up prompt per feature', () => {
    expect(() => new DraftModelSelector(1, 3, { gammaMax: 5, accMax: 0.98 })).toThrow(/two draft models/)
    expect(() => new DraftModelSelector(2, 2, { gammaMax: 5, accMax: 0.98 })).toThrow(/3 warm-up prompts/)
  })
})
