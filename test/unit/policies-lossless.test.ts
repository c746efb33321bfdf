/**
 * The draft-length policies (heuristic, p-min, SVIP, self-verify) keep speculative decoding lossless: whatever length a policy picks (from
 * the draft's entropies/confidences and earlier verdicts), the output's joint law is the target's warped law
 * (chi-square against the exact law on toy models, 20k decodes per case, as in speculative-distribution.test.ts),
 * and greedy decoding reproduces `ar` token for token.
 *
 * Parameters are chosen so each rule really varies the draft length on the toy draft (entropies 1.2–1.56 nats,
 * top-1 probabilities 0.26–0.55): every case checks that several draft lengths and both the rule's stop and
 * another end occurred, so a pass is not a constant-γ pass in disguise.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { prepare } from '../../electron/engine/methods/prepare'
import type { Decoder, DecoderModels } from '../../electron/engine/decoders/types'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20250301
const P_MIN = 0.001
const MAX_TOKENS = 6
const GROUPS = [
  [0, 1],
  [2, 3],
  [4, 5]
]

interface Case {
  label: string
  id: string
  params: MethodParams
  warp: WarpConfig
  /** true: one forRun for all 20k decodes (state carried across "prompts"); false: a fresh run per decode. */
  shared: boolean
  /** The rule's own stop reason, which must occur (null for the heuristic, which never stops early). */
  ruleReason: string | null
}

const CASES: Case[] = [
  { label: 'sd-heuristic persistent, γ0 = 3', id: 'sd-heuristic', params: {}, warp: PLAIN, shared: true, ruleReason: null },
  {
    label: 'sd-heuristic transient, γ0 = 3, T=0.7 top-k 4',
    id: 'sd-heuristic',
    params: { 'heuristic.transient': true },
    warp: { temperature: 0.7, topK: 4, topP: 1 },
    shared: true,
    ruleReason: null
  },
  { label: 'sd-pmin p=0.4 min=1 max=4', id: 'sd-pmin', params: { 'pmin.p': 0.4, 'pmin.min': 1, 'pmin.max': 4 }, warp: PLAIN, shared: false, ruleReason: 'threshold' },
  { label: 'svip h=1.19 c=1 max=4', id: 'svip', params: { 'svip.h': 1.19, 'svip.c': 1, 'svip.maxDraft': 4 }, warp: PLAIN, shared: false, ruleReason: 'threshold' },
  {
    // The warped H (top-4) is at most ln 4 < 1.19², so every 'threshold' stop here comes from the full-vocabulary H.
    label: 'svip full-vocabulary H, h=1.19 c=1 max=4, T=0.8 top-k 4',
    id: 'svip',
    params: { 'svip.h': 1.19, 'svip.c': 1, 'svip.maxDraft': 4 },
    warp: { temperature: 0.8, topK: 4, topP: 1 },
    shared: false,
    ruleReason: 'threshold'
  },
  {
    label: 'self-verify K=4, T=1.3 top-p 0.8',
    id: 'self-verify',
    params: { 'selfverify.maxDraft': 4 },
    warp: { temperature: 1.3, topK: 0, topP: 0.8 },
    shared: true,
    ruleReason: 'threshold'
  }
]

describe('the policies are lossless: chi-square against the exact target law (20k decodes each)', () => {
  const target = toyTarget()
  const draft = toyDraft()
  const models: DecoderModels = { target, draft }
  const sampling = { maxTokens: MAX_TOKENS, groups: GROUPS, samples: SAMPLES, seed: SEED }

  it.each(CASES)('$label', async ({ label, id, params, warp, shared, ruleReason }) => {
    const method = prepare(id, { gamma: 3, params })
    const run = method.newRun()
    const decoder = (): Decoder => (shared ? run : method.newRun())()
    const lengths = new Map<number, number>()
    const reasons = new Map<string, number>()
    let rounds = 0
    let rejections = 0
    const counts = await sampleTokenGroups({ ...sampling, models, decoder, warp }, (result) => {
      for (const step of result.steps) {
        rounds += 1
        if (step.resampled) rejections += 1
        lengths.set(step.proposed, (lengths.get(step.proposed) ?? 0) + 1)
        const reason = String(step.decision?.reason)
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
      }
    })
    console.log(
      `${label}: ${rounds} rounds, rejection rounds ${(rejections / rounds).toFixed(3)}, ` +
        `draft lengths ${JSON.stringify(Object.fromEntries([...lengths].sort((a, b) => a[0] - b[0])))}, ` +
        `reasons ${JSON.stringify(Object.fromEntries(reasons))}`
    )
    // The policy really varied the draft length, and Correct really ran.
    expect(lengths.size).toBeGreaterThanOrEqual(3)
    expect(rejections / rounds).toBeGreaterThan(0.25)
    if (ruleReason) {
      expect(reasons.get(ruleReason) ?? 0).toBeGreaterThan(rounds / 20)
      expect(rounds - (reasons.get(ruleReason) ?? 0)).toBeGreaterThan(rounds / 20)
    }

    const law = exactSequenceDistribution(target, [TOY_BOS], MAX_TOKENS, warp)
    GROUPS.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(counts[g], marginal(law, positions))
      report(`${label} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })

  it('negative control: the same grouped test rejects the draft decoding alone at every group', async () => {
    const counts = await sampleTokenGroups({ ...sampling, decoder: () => autoregressive, models: { target: draft }, warp: PLAIN })
    const law = exactSequenceDistribution(target, [TOY_BOS], MAX_TOKENS, PLAIN)
    GROUPS.forEach((positions, g) => expect(chiSquareGoodnessOfFit(counts[g], marginal(law, positions)).pValue).toBeLessThan(1e-6))
  })
})

describe('greedy: each policy reproduces ar exactly (toy models)', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 1], [TOY_BOS, 3, 4], [TOY_BOS, 5, 5, 2], [TOY_BOS, 2, 1, 4, 3]]
  const warps: WarpConfig[] = [GREEDY, { temperature: 0, topK: 3, topP: 1 }]
  const methods: [string, MethodParams][] = [
    ['sd-heuristic', {}],
    ['sd-heuristic', { 'heuristic.transient': true }],
    ['sd-pmin', {}],
    ['sd-pmin', { 'pmin.p': 0.45, 'pmin.min': 2, 'pmin.max': 6 }],
    ['svip', {}],
    ['svip', { 'svip.h': 1.1, 'svip.c': 1, 'svip.maxDraft': 8 }],
    ['svip', { 'svip.warpedEntropy': true }],
    ['self-verify', {}],
    ['self-verify', { 'selfverify.maxDraft': 3 }],
    ['self-verify', { 'selfverify.warpedEntropy': true }]
  ]

  it.each(warps)('temperature 0, top-k $topK: 10 method settings × 5 prompts × γ ∈ {1, 3, 6}', async (warp) => {
    const target = toyTarget()
    const draft = toyDraftClose()
    let accepted = 0
    let rejected = 0
    for (const [id, params] of methods) {
      for (const gamma of [1, 3, 6]) {
        // One run per (method, γ): state that persists across prompts is exercised too.
        const run = prepare(id, { gamma, params }).newRun()
        for (const promptTokens of prompts) {
          const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 24, warp }))
          const request = makeRequest({ promptTokens, maxTokens: 24, warp, rng: createPrng(gamma, 99) })
          const out = await decode(run(), { target, draft }, request)
          expect(out.tokens, `${id} ${JSON.stringify(params)} γ=${gamma} prompt ${promptTokens}`).toEqual(ar.tokens)
          for (const step of out.steps) {
            accepted += step.accepted
            if (step.resampled) rejected += 1
          }
        }
      }
    }
    expect(accepted).toBeGreaterThan(100)
    expect(rejected).toBeGreaterThan(100)
  })
})
