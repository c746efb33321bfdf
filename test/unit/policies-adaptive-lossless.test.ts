/**
 * The four on-the-fly adaptation policies stay lossless: whatever γ they choose (0 included: a target-only
 * round), the output law is the target's warped law (chi-square against the exact law on the toy models, 20k
 * decodes each) and greedy decoding reproduces `ar` token for token. Decoders come from the registry exactly as a
 * run builds them: prepare(id, { gamma, params }).newRun()() — one forRun per test, so learned state carries
 * over from decode to decode as it does across the prompts of a run.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { prepare } from '../../electron/engine/methods/prepare'
import type { DecoderModels } from '../../electron/engine/decoders/types'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20250117
const P_MIN = 0.001
const METHODS = ['adaptive-analytic', 'adaptive-fsm', 'adaptive-cache-fsm', 'adaptive-rl'] as const
/** Short warm-up and frequent exploration so the RL agent really varies γ within the test. */
const PARAMS: MethodParams = { 'rl.warmup': 10, 'rl.epsilon': 0.3, 'rl.seed': 4 }

describe('adaptive policies are lossless: output law = target warped law (chi-square, 20k decodes each)', () => {
  const target = toyTarget()
  const models: DecoderModels = { target, draft: toyDraft() }
  // Every method at T = 1; the FSM (the one that reaches γ = 0, a target-only round) also under a warp.
  const cases: { method: string; label: string; warp: WarpConfig }[] = [
    ...METHODS.map((method) => ({ method, label: 'T=1', warp: PLAIN })),
    { method: 'adaptive-fsm', label: 'T=0.7 top-k 4', warp: { temperature: 0.7, topK: 4, topP: 1 } }
  ]

  it.each(cases)('$method, $label, γ_max 3, 6 tokens', async ({ method, warp, label }) => {
    const maxTokens = 6
    const groups = [
      [0, 1],
      [4, 5]
    ]
    const gammas = new Map<number, number>()
    let rounds = 0
    let rejections = 0
    const decoder = prepare(method, { gamma: 3, params: method === 'adaptive-rl' ? PARAMS : {} }).newRun()
    const counts = await sampleTokenGroups({ decoder, models, warp, maxTokens, groups, samples: SAMPLES, seed: SEED }, (result) => {
      for (const step of result.steps) {
        rounds += 1
        if (step.resampled) rejections += 1
        const gamma = Number(step.decision?.gamma ?? step.proposed)
        gammas.set(gamma, (gammas.get(gamma) ?? 0) + 1)
      }
    })
    const trajectory = [...gammas].sort((a, b) => a[0] - b[0]).map(([g, n]) => `γ${g}×${n}`).join(' ')
    console.log(`${method} ${label}: ${rounds} rounds, rejection rounds ${(rejections / rounds).toFixed(3)}, ${trajectory}`)
    // The policy really adapted (several γ values), and the draft really got rejected.
    expect(gammas.size).toBeGreaterThanOrEqual(2)
    expect(rejections / rounds).toBeGreaterThan(0.2)
    if (method === 'adaptive-fsm') expect(gammas.get(0) ?? 0).toBeGreaterThan(SAMPLES / 10)

    const law = exactSequenceDistribution(target, [TOY_BOS], maxTokens, warp)
    groups.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(counts[g], marginal(law, positions))
      report(`${method} ${label} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })
})

describe('greedy adaptive policies reproduce ar exactly (toy models)', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 1], [TOY_BOS, 3, 4], [TOY_BOS, 5, 5, 2], [TOY_BOS, 2, 1, 4, 3]]

  it.each(METHODS)('%s: 5 prompts × γ_max ∈ {1, 2, 3, 5, 8}, temperature 0 (plain and top-k 3)', async (method) => {
    const target = toyTarget()
    const draft = toyDraftClose()
    let accepted = 0
    let rejected = 0
    const proposals = new Set<number>()
    for (const warp of [GREEDY, { temperature: 0, topK: 3, topP: 1 }]) {
      for (const gamma of [1, 2, 3, 5, 8]) {
        // One run per (warp, γ_max): state carries over from prompt to prompt.
        const factory = prepare(method, { gamma, params: method === 'adaptive-rl' ? { 'rl.warmup': 5 } : {} }).newRun()
        for (const promptTokens of prompts) {
          const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 24, warp }))
          const request = makeRequest({ promptTokens, maxTokens: 24, warp, rng: createPrng(gamma, 99) })
          const result = await decode(factory(), { target, draft }, request)
          expect(result.tokens, `${method} prompt ${promptTokens} γ_max=${gamma}`).toEqual(ar.tokens)
          for (const step of result.steps) {
            accepted += step.accepted
            if (step.resampled) rejected += 1
            proposals.add(step.proposed)
            expect(step.proposed).toBeLessThanOrEqual(gamma)
          }
        }
      }
    }
    expect(accepted).toBeGreaterThan(20)
    expect(rejected).toBeGreaterThan(20)
    expect(proposals.size).toBeGreaterThanOrEqual(3)
  })
})
