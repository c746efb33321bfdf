/**
 * Losslessness of speculative decoding, checked statistically on toy models whose warped conditionals are known in
 * closed form: the joint law of `sd`'s output tokens must be the target's warped law (Leviathan et al. 2023,
 * Theorem 1; SVIP Appendix A). Pearson's chi-square against the exact law, with negative controls that prove the
 * test has the power to reject a wrong sampler.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { speculativeDecoder } from '../../electron/engine/decoders/speculative'
import type { Decoder, DecoderModels } from '../../electron/engine/decoders/types'
import { prepare } from '../../electron/engine/methods/prepare'
import type { ToyModel } from '../../electron/engine/model/toy-model'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import { fromWeights, probabilityOf, sample, type Distribution } from '../../electron/engine/sampling/distribution'
import { createPrng, type Prng } from '../../electron/engine/sampling/prng'
import { acceptSampling } from '../../electron/engine/sampling/verify'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, chiSquareSf, gammaQ, tally } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20240611
const P_MIN = 0.001

interface Sampled {
  /** Counts keyed by the tokens at the requested positions. */
  byPositions: Map<string, number>[]
  rounds: number
  proposed: number
  accepted: number
  rejections: number
  bonuses: number
}

/** Decodes `SAMPLES` times with PRNG streams (seed, i), tallies each group of positions and sums the rounds. */
async function sampleDecoder(
  decoder: () => Decoder,
  models: DecoderModels,
  warp: WarpConfig,
  maxTokens: number,
  groups: number[][]
): Promise<Sampled> {
  const stats = { rounds: 0, proposed: 0, accepted: 0, rejections: 0, bonuses: 0 }
  const byPositions = await sampleTokenGroups({ decoder, models, warp, maxTokens, groups, samples: SAMPLES, seed: SEED }, (result) => {
    for (const step of result.steps) {
      stats.rounds += 1
      stats.proposed += step.proposed
      stats.accepted += step.accepted
      if (step.resampled) stats.rejections += 1
      if (step.bonus) stats.bonuses += 1
    }
  })
  return { byPositions, ...stats }
}

describe('chi-square helper (test/helpers/chi-square.ts)', () => {
  it('matches known survival-function values', () => {
    // Critical values from standard tables.
    expect(chiSquareSf(3.841458820694124, 1)).toBeCloseTo(0.05, 6)
    expect(chiSquareSf(18.307038053275146, 10)).toBeCloseTo(0.05, 6)
    expect(chiSquareSf(10.827566170662733, 1)).toBeCloseTo(0.001, 7)
    expect(chiSquareSf(124.34211340400407, 100)).toBeCloseTo(0.05, 6)
    expect(chiSquareSf(6.634896601021214, 1)).toBeCloseTo(0.01, 7)
    // sf(1, 1) = erfc(1/√2) = 0.3173105078629141; with 2 degrees of freedom sf(x) = exp(−x/2) exactly.
    expect(chiSquareSf(1, 1)).toBeCloseTo(0.3173105078629141, 9)
    for (const x of [0.1, 2, 7.5, 40]) expect(chiSquareSf(x, 2)).toBeCloseTo(Math.exp(-x / 2), 12)
    // Q(1, x) = e^{−x}; Q(a, 0) = 1; far tail.
    expect(gammaQ(1, 3)).toBeCloseTo(Math.exp(-3), 12)
    expect(chiSquareSf(0, 4)).toBe(1)
    expect(chiSquareSf(100, 3)).toBeLessThan(1e-20)
    expect(chiSquareSf(100, 3)).toBeGreaterThan(0)
  })

  it('merges bins with expected count < 5 and rejects impossible outcomes', () => {
    // Expected 50, 30, 15, 3, 2 (n = 100): the last two merge into one bin of 5 → 4 bins, df 3.
    const probabilities = new Map([
      ['a', 0.5],
      ['b', 0.3],
      ['c', 0.15],
      ['d', 0.03],
      ['e', 0.02]
    ])
    const observed = new Map([
      ['a', 50],
      ['b', 30],
      ['c', 15],
      ['d', 5],
      ['e', 0]
    ])
    const fit = chiSquareGoodnessOfFit(observed, probabilities)
    expect(fit.bins).toBe(4)
    expect(fit.df).toBe(3)
    expect(fit.statistic).toBeCloseTo(0, 12)
    // An outcome of probability 0 observed once: p = 0.
    const impossible = chiSquareGoodnessOfFit(new Map([...observed, ['z', 1]]), probabilities)
    expect(impossible.pValue).toBe(0)
    // A blatant misfit: everything in one bin.
    expect(chiSquareGoodnessOfFit(new Map([['a', 100]]), probabilities).pValue).toBeLessThan(1e-6)
  })
})

describe('sd is lossless: its output law is the target warped law (chi-square, 20k decodes each)', () => {
  const target = toyTarget()
  const draft = toyDraft()
  const models: DecoderModels = { target, draft }

  const cases: { label: string; warp: WarpConfig; gamma: number }[] = [
    { label: 'T=1', warp: PLAIN, gamma: 1 },
    { label: 'T=1', warp: PLAIN, gamma: 3 },
    { label: 'T=1', warp: PLAIN, gamma: 5 },
    { label: 'T=0.7 top-k 4', warp: { temperature: 0.7, topK: 4, topP: 1 }, gamma: 3 },
    { label: 'T=1.3 top-p 0.8', warp: { temperature: 1.3, topK: 0, topP: 0.8 }, gamma: 2 }
  ]

  it.each(cases)('$label, γ = $gamma', async ({ label, warp, gamma }) => {
    // maxTokens = γ + 1 so the first round drafts the full γ; test the first two and the last two tokens.
    const maxTokens = Math.max(2, gamma + 1)
    const groups = [
      [0, 1],
      [maxTokens - 2, maxTokens - 1]
    ]
    const sampled = await sampleDecoder(() => speculativeDecoder(fixedLengthPolicy(gamma)), models, warp, maxTokens, groups)
    const law = exactSequenceDistribution(target, [TOY_BOS], maxTokens, warp)

    // The draft must really disagree with the target, or the test would prove nothing about Correct.
    const rejectionRate = sampled.rejections / sampled.rounds
    console.log(
      `sd ${label} γ=${gamma}: ${sampled.rounds} rounds, acceptance ${(sampled.accepted / sampled.proposed).toFixed(3)}, ` +
        `rejection rounds ${rejectionRate.toFixed(3)}, bonus rounds ${(sampled.bonuses / sampled.rounds).toFixed(3)}`
    )
    expect(rejectionRate).toBeGreaterThan(0.25)
    expect(sampled.bonuses).toBeGreaterThan(SAMPLES / 50)

    groups.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(sampled.byPositions[g], marginal(law, positions))
      report(`sd ${label} γ=${gamma} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })

  it('negative control: the draft decoding alone (ar on the draft) fails the same test', async () => {
    const sampled = await sampleDecoder(() => autoregressive, { target: draft }, PLAIN, 2, [[0, 1]])
    const fit = chiSquareGoodnessOfFit(sampled.byPositions[0], exactSequenceDistribution(target, [TOY_BOS], 2, PLAIN))
    report('negative control: ar on the draft vs the target law', fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })

  it('positive control: ar on the target passes the same test', async () => {
    const sampled = await sampleDecoder(() => autoregressive, { target }, PLAIN, 2, [[0, 1]])
    const fit = chiSquareGoodnessOfFit(sampled.byPositions[0], exactSequenceDistribution(target, [TOY_BOS], 2, PLAIN))
    report('positive control: ar on the target', fit)
    expect(fit.pValue).toBeGreaterThan(P_MIN)
  })

  it("negative control: SVIP Alg. 4 as printed (residual max(q − p, 0)) fails — the test catches the paper's typo", () => {
    // γ = 1 speculative sampling written out by hand with the typo'd residual, two output tokens.
    const typoResidual = (p: Distribution, q: Distribution): Distribution => {
      const ids = Array.from(q.ids)
      const weights = ids.map((id, i) => Math.max(0, q.probs[i] - probabilityOf(p, id)))
      return fromWeights(ids, weights)
    }
    const counts = new Map<string, number>()
    for (let i = 0; i < SAMPLES; i++) {
      const rng: Prng = createPrng(SEED, i)
      const out: number[] = []
      while (out.length < 2) {
        const context = [TOY_BOS, ...out]
        const q = draft.distribution(context, PLAIN)
        const p = target.distribution(context, PLAIN)
        const x = sample(q, rng)
        if (acceptSampling(p, q, x, rng)) {
          out.push(x)
          if (out.length < 2) out.push(sample(target.distribution([...context, x], PLAIN), rng))
        } else out.push(sample(typoResidual(p, q), rng))
      }
      tally(counts, out.join(','))
    }
    const fit = chiSquareGoodnessOfFit(counts, exactSequenceDistribution(target, [TOY_BOS], 2, PLAIN))
    report("negative control: SVIP's printed residual", fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })
})

describe('greedy sd reproduces ar exactly (toy models)', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 1], [TOY_BOS, 3, 4], [TOY_BOS, 5, 5, 2], [TOY_BOS, 2, 1, 4, 3]]
  const warps: WarpConfig[] = [GREEDY, { temperature: 0, topK: 3, topP: 1 }]

  it.each(warps)('temperature 0, top-k $topK: sd tokens = ar tokens for 5 prompts × γ ∈ {1, 2, 3, 5, 8}', async (warp) => {
    const target: ToyModel = toyTarget()
    const draft: ToyModel = toyDraftClose()
    let accepted = 0
    let rejected = 0
    for (const promptTokens of prompts) {
      const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 24, warp }))
      expect(ar.tokens).toHaveLength(24)
      for (const gamma of [1, 2, 3, 5, 8]) {
        const request = makeRequest({ promptTokens, maxTokens: 24, warp, rng: createPrng(gamma, 99) })
        const sd = await decode(prepare('sd', { gamma, params: {} }).newRun()(), { target, draft }, request)
        expect(sd.tokens, `prompt ${promptTokens} γ=${gamma}`).toEqual(ar.tokens)
        for (const step of sd.steps) {
          accepted += step.accepted
          if (step.resampled) rejected += 1
        }
      }
    }
    // Both Verify outcomes really occurred.
    expect(accepted).toBeGreaterThan(20)
    expect(rejected).toBeGreaterThan(20)
  })
})
