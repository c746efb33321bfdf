/**
 * Parallel drafting (decoders/parallel-drafting.ts): `pearl` (PEARL's pre-verify + post-verify rounds) and the
 * `parallel` option of sd and the draft-model policies (post-verify alone) keep the output's joint law the target's
 * warped law (chi-square against the exact law on toy models, 20k decodes per case, as in
 * speculative-distribution.test.ts; a negative control that commits PEARL's look-ahead token untested fails the same
 * test), greedy reproduces `ar`, and the rounds really are what the method says: tokens
 * drafted during a verification are carried to the next round, pre-verify rounds test one token.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { parallelDraftingDecoder } from '../../electron/engine/decoders/parallel-drafting'
import type { ExactPrefixRule } from '../../electron/engine/decoders/verifier'
import type { Decoder, DecoderModels, StepRecord } from '../../electron/engine/decoders/types'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { prepare } from '../../electron/engine/methods/prepare'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import { createPrng } from '../../electron/engine/sampling/prng'
import { verifyPrefix } from '../../electron/engine/sampling/verify'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20261124
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
}

const CASES: Case[] = [
  { label: 'pearl γ=3', id: 'pearl', params: {}, warp: PLAIN },
  { label: 'pearl γ=3, T=0.7 top-k 4', id: 'pearl', params: {}, warp: { temperature: 0.7, topK: 4, topP: 1 } },
  { label: 'sd parallel γ=3', id: 'sd', params: { 'sd.parallel': true }, warp: PLAIN },
  { label: 'svip parallel h=1.19 c=1 max=4, T=1.3 top-p 0.8', id: 'svip', params: { 'svip.parallel': true, 'svip.h': 1.19, 'svip.c': 1, 'svip.maxDraft': 4 }, warp: { temperature: 1.3, topK: 0, topP: 0.8 } }
]

/** Counts of the rounds' kinds and of those that carried drafts to the next round. */
function roundKinds(steps: readonly StepRecord[], into: Map<string, number>): void {
  for (const step of steps) {
    const kind = String(step.decision?.verify ?? step.stage)
    into.set(kind, (into.get(kind) ?? 0) + 1)
    if (Number(step.decision?.carried ?? 0) > 0) into.set('carried', (into.get('carried') ?? 0) + 1)
    if (step.resampled) into.set('rejected', (into.get('rejected') ?? 0) + 1)
  }
}

describe('parallel drafting is lossless: chi-square against the exact target law (20k decodes each)', () => {
  const target = toyTarget()
  const draft = toyDraft()
  const models: DecoderModels = { target, draft }
  const sampling = { maxTokens: MAX_TOKENS, groups: GROUPS, samples: SAMPLES, seed: SEED }

  it.each(CASES)('$label', async ({ label, id, params, warp }) => {
    const method = prepare(id, { gamma: 3, params })
    const run = method.newRun()
    const kinds = new Map<string, number>()
    const counts = await sampleTokenGroups({ ...sampling, models, decoder: (): Decoder => run(), warp }, (result) => roundKinds(result.steps, kinds))
    console.log(`${label}: rounds ${JSON.stringify(Object.fromEntries(kinds))}`)
    // Both kinds of round happened, drafts were carried over, and corrections really ran.
    expect(kinds.get('post-verify') ?? 0).toBeGreaterThan(1000)
    expect(kinds.get('carried') ?? 0).toBeGreaterThan(400)
    expect(kinds.get('rejected') ?? 0).toBeGreaterThan(1000)
    if (id === 'pearl') expect(kinds.get('pre-verify') ?? 0).toBeGreaterThan(1000)
    else expect(kinds.get('pre-verify') ?? 0).toBe(0)

    const law = exactSequenceDistribution(target, [TOY_BOS], MAX_TOKENS, warp)
    GROUPS.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(counts[g], marginal(law, positions))
      report(`${label} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })

  // PEARL's look-ahead token y_1 stands where sd draws its bonus, and pre-verify tests x_1 alone: the natural mistake
  // is to commit that token untested, as if it were the bonus. Both kinds of round make it here.
  it('negative control: pearl committing the last tested token untested (y_1 as the bonus) fails the same test', async () => {
    const lastUntested: ExactPrefixRule = (tokens, q, p, greedy, rng) => {
      const verdict = verifyPrefix(tokens.slice(0, -1), q.slice(0, -1), p, greedy, rng)
      return verdict.correction === null ? { accepted: tokens.length, correction: null } : verdict
    }
    const counts = await sampleTokenGroups({
      ...sampling,
      samples: SAMPLES / 4,
      models,
      decoder: () => parallelDraftingDecoder(fixedLengthPolicy(3), { preVerify: true, verifyPrefix: lastUntested }),
      warp: PLAIN
    })
    const law = exactSequenceDistribution(target, [TOY_BOS], MAX_TOKENS, PLAIN)
    const fit = chiSquareGoodnessOfFit(counts[0], marginal(law, GROUPS[0]))
    report('negative control: pearl with y_1 untested', fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })
})

describe('parallel drafting: the rounds', () => {
  it('pre-verify tests exactly one token; post-verify tests the waiting drafts plus the first carried one', async () => {
    const request = makeRequest({ promptTokens: [TOY_BOS], maxTokens: 40, warp: PLAIN, rng: createPrng(7, 1) })
    const out = await decode(prepare('pearl', { gamma: 4, params: {} }).newRun()(), { target: toyTarget(), draft: toyDraftClose() }, request)
    const pre = out.steps.filter((s) => s.decision?.verify === 'pre-verify')
    const post = out.steps.filter((s) => s.decision?.verify === 'post-verify')
    expect(pre.length).toBeGreaterThan(0)
    expect(post.length).toBeGreaterThan(0)
    for (const step of pre) {
      expect(step.proposed).toBe(1)
      expect(step.bonus).toBe(false)
    }
    for (const step of out.steps) {
      // A carried window replaces the bonus token: never both.
      if (Number(step.decision?.carried) > 0) expect(step.bonus).toBe(false)
      expect(step.stage).toBe('pearl')
    }
    // After pre-verify accepts, γ − 1 drafts wait; a post-verify round then tests them plus one look-ahead token.
    expect(post.some((s) => s.proposed === 4)).toBe(true)
    expect(out.tokens.length).toBe(40)
  })

  it('sd.parallel leaves plain sd untouched: without the flag the rounds have no look-ahead', async () => {
    const request = () => makeRequest({ promptTokens: [TOY_BOS, 2], maxTokens: 30, warp: PLAIN, rng: createPrng(3, 3) })
    const models = { target: toyTarget(), draft: toyDraftClose() }
    const plain = await decode(prepare('sd', { gamma: 3, params: {} }).newRun()(), models, request())
    expect(plain.steps.every((s) => s.decision?.carried === undefined)).toBe(true)
    const parallel = await decode(prepare('sd', { gamma: 3, params: { 'sd.parallel': true } }).newRun()(), models, request())
    expect(parallel.steps.some((s) => Number(s.decision?.carried) > 0)).toBe(true)
  })
})

describe('greedy: parallel drafting reproduces ar exactly (toy models)', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 1], [TOY_BOS, 3, 4], [TOY_BOS, 5, 5, 2], [TOY_BOS, 2, 1, 4, 3]]
  const warps: WarpConfig[] = [GREEDY, { temperature: 0, topK: 3, topP: 1 }]
  const methods: [string, MethodParams][] = [
    ['pearl', {}],
    ['sd', { 'sd.parallel': true }],
    ['sd-heuristic', { 'heuristic.parallel': true }],
    ['adaptive-fsm', { 'fsm.parallel': true }],
    ['svip', { 'svip.parallel': true, 'svip.h': 1.1, 'svip.c': 1, 'svip.maxDraft': 8 }]
  ]

  it.each(warps)('temperature 0, top-k $topK: 5 method settings × 5 prompts × γ ∈ {1, 3, 6}', async (warp) => {
    const target = toyTarget()
    const draft = toyDraftClose()
    let carried = 0
    let rejected = 0
    for (const [id, params] of methods) {
      for (const gamma of [1, 3, 6]) {
        const run = prepare(id, { gamma, params }).newRun()
        for (const promptTokens of prompts) {
          const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 24, warp }))
          const out = await decode(run(), { target, draft }, makeRequest({ promptTokens, maxTokens: 24, warp, rng: createPrng(gamma, 99) }))
          expect(out.tokens, `${id} ${JSON.stringify(params)} γ=${gamma} prompt ${promptTokens}`).toEqual(ar.tokens)
          for (const step of out.steps) {
            if (Number(step.decision?.carried) > 0) carried += 1
            if (step.resampled) rejected += 1
          }
        }
      }
    }
    expect(carried).toBeGreaterThan(50)
    expect(rejected).toBeGreaterThan(50)
  })
})
