/**
 * `sd+ngram` (llama.cpp's ngram-simple chained before the draft model, decoders/drafter.ts `chainDrafter`) and
 * `ngram-mod` (llama.cpp's rolling-hash pool, lookup/ngram-mod.ts) are lossless: chi-square of the joint law of the
 * output tokens against the toy target's exact warped law (as test/unit/lookup-lossless.test.ts), with both of the
 * hybrid's sources drafting and being rejected; a mutant hybrid whose n-gram tokens are accepted unconditionally
 * fails the same test. Greedy: the text equals `ar`'s. ngram-mod's pool: carried across the prompts of a run, never
 * across runs; the hash is llama.cpp's 64-bit one.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { chainDrafter, lookupDrafter, type Drafter } from '../../electron/engine/decoders/drafter'
import { modelDrafter, speculativeDecoder } from '../../electron/engine/decoders/speculative'
import type { Decoder, DecoderModels } from '../../electron/engine/decoders/types'
import { ngramSimpleState } from '../../electron/engine/lookup/ngram-map'
import { NgramModPool, NgramModRun } from '../../electron/engine/lookup/ngram-mod'
import { prepare, prepareRun } from '../../electron/engine/methods/prepare'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20251124
const P_MIN = 0.001
const MAX_TOKENS = 4
const GROUPS = [
  [0, 1],
  [2, 3]
]
const PROMPT = [TOY_BOS, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2]

type Params = Record<string, number>
const HYBRID: Params = { 'sdngram.n': 1, 'sdngram.m': 3 }
const MOD: Params = { 'ngrammod.n': 2, 'ngrammod.nMin': 1, 'ngrammod.nMax': 3 }

interface Sampled {
  counts: Map<string, number>[]
  rounds: Record<string, number>
  rejections: Record<string, number>
}

async function sampleLaw(decoder: () => Decoder, models: DecoderModels, warp: WarpConfig): Promise<Sampled> {
  const sampled: Sampled = { counts: GROUPS.map(() => new Map()), rounds: {}, rejections: {} }
  for (let i = 0; i < SAMPLES; i++) {
    const result = await decode(decoder(), models, { promptTokens: [...PROMPT], maxTokens: MAX_TOKENS, warp, rng: createPrng(SEED, i) })
    expect(result.tokens).toHaveLength(MAX_TOKENS)
    GROUPS.forEach((positions, g) => tally(sampled.counts[g], positions.map((p) => result.tokens[p]).join(',')))
    for (const step of result.steps) {
      if (step.proposed === 0) continue
      const source = String((step.decision as Record<string, unknown> | null)?.source ?? 'lookup')
      sampled.rounds[source] = (sampled.rounds[source] ?? 0) + 1
      if (step.resampled) sampled.rejections[source] = (sampled.rejections[source] ?? 0) + 1
    }
  }
  return sampled
}

function fits(label: string, sampled: Sampled, warp: WarpConfig): number[] {
  const law = exactSequenceDistribution(toyTarget(), PROMPT, MAX_TOKENS, warp)
  return GROUPS.map((positions, g) => {
    const fit = chiSquareGoodnessOfFit(sampled.counts[g], marginal(law, positions))
    report(`${label} tokens ${positions.join('+')}`, fit)
    expect(fit.df).toBeGreaterThanOrEqual(8)
    return fit.pValue
  })
}

const warps: { label: string; warp: WarpConfig }[] = [
  { label: 'T=1', warp: PLAIN },
  { label: 'T=0.7 top-k 4', warp: { temperature: 0.7, topK: 4, topP: 1 } }
]

describe('sd+ngram and ngram-mod are lossless at temperature > 0 (chi-square, 20k decodes each)', () => {
  it.each(warps)('sd+ngram, $label: both sources draft and get rejected', async ({ label, warp }) => {
    const sampled = await sampleLaw(prepare('sd+ngram', { gamma: 3, params: HYBRID }).newRun(), { target: toyTarget(), draft: toyDraft() }, warp)
    console.log(`sd+ngram ${label}: rounds ${JSON.stringify(sampled.rounds)}, rejection rounds ${JSON.stringify(sampled.rejections)}`)
    for (const source of ['ngram', 'draft']) {
      expect(sampled.rounds[source]).toBeGreaterThan(SAMPLES / 4)
      expect(sampled.rejections[source] / sampled.rounds[source]).toBeGreaterThan(0.2)
    }
    for (const p of fits(`sd+ngram ${label}`, sampled, warp)) expect(p).toBeGreaterThan(P_MIN)
  })

  it.each(warps)('ngram-mod (one run, its pool shared by all 20k decodes), $label', async ({ label, warp }) => {
    const sampled = await sampleLaw(prepare('ngram-mod', { gamma: 3, params: MOD }).newRun(), { target: toyTarget() }, warp)
    console.log(`ngram-mod ${label}: rounds ${JSON.stringify(sampled.rounds)}, rejection rounds ${JSON.stringify(sampled.rejections)}`)
    expect(sampled.rounds.lookup).toBeGreaterThan(SAMPLES / 2)
    expect(sampled.rejections.lookup / sampled.rounds.lookup).toBeGreaterThan(0.2)
    for (const p of fits(`ngram-mod ${label}`, sampled, warp)) expect(p).toBeGreaterThan(P_MIN)
  })

  it('negative control: a hybrid that accepts every n-gram token in the target’s support fails the same test', async () => {
    const acceptAlways = (inner: Drafter): Drafter => ({
      stage: inner.stage,
      async open(models, request, policy) {
        const session = await inner.open(models, request, policy)
        return {
          ...session,
          async propose(round) {
            const proposal = await session.propose(round)
            return { ...proposal, distributions: proposal.tokens.map((t) => ({ ids: Int32Array.of(t), probs: Float64Array.of(0) })) }
          }
        }
      }
    })
    const mutant = () =>
      speculativeDecoder(
        fixedLengthPolicy(3),
        chainDrafter('sd+ngram', [
          { source: 'ngram', drafter: acceptAlways(lookupDrafter('ngram-simple', (prompt) => ngramSimpleState({ n: 1, m: 3 }, prompt.length))) },
          { source: 'draft', drafter: modelDrafter }
        ])
      )
    const sampled = await sampleLaw(mutant, { target: toyTarget(), draft: toyDraft() }, PLAIN)
    expect(sampled.rejections.ngram ?? 0).toBe(0)
    expect(Math.min(...fits('negative control: sd+ngram accepting n-gram tokens unconditionally', sampled, PLAIN))).toBeLessThan(1e-6)
  })
})

describe('sd+ngram and ngram-mod: greedy reproduces ar, step records, the pool', () => {
  const prompts = [PROMPT, [TOY_BOS], [TOY_BOS, 3, 4, 3, 4, 3], [TOY_BOS, 5, 5, 2, 5, 5, 2, 5], [TOY_BOS, 2, 1, 4, 3, 2, 1]]
  const cases: { id: string; params: Params; draft: boolean }[] = [
    { id: 'sd+ngram', params: HYBRID, draft: true },
    { id: 'ngram-mod', params: MOD, draft: false }
  ]

  it.each(cases)('greedy $id = greedy ar (5 prompts, top-k 0 and 3)', async ({ id, params, draft }) => {
    let accepted = 0
    let rejected = 0
    const sources = new Set<unknown>()
    const run = prepare(id, { gamma: 3, params }).newRun()
    for (const warp of [GREEDY, { temperature: 0, topK: 3, topP: 1 }])
      for (const promptTokens of prompts) {
        const models = draft ? { target: toyTarget(), draft: toyDraftClose() } : { target: toyTarget() }
        const ar = await decode(autoregressive, models, makeRequest({ promptTokens, maxTokens: 32, warp }))
        const other = await decode(run(), models, makeRequest({ promptTokens, maxTokens: 32, warp }))
        expect(other.tokens, `${id} prompt ${promptTokens}`).toEqual(ar.tokens)
        for (const step of other.steps) {
          expect(step.stage).toBe(id)
          accepted += step.accepted
          if (step.resampled) rejected += 1
          if (step.proposed > 0) sources.add((step.decision as Record<string, unknown>).source)
        }
      }
    expect(accepted).toBeGreaterThan(10)
    expect(rejected).toBeGreaterThan(0)
    if (draft) expect([...sources].sort()).toEqual(['draft', 'ngram'])
  })

  it('sd+ngram cuts its n-gram drafts at γ, not at sdngram.m (the one draft length of both sources)', async () => {
    const result = await decode(
      prepare('sd+ngram', { gamma: 2, params: { 'sdngram.n': 1, 'sdngram.m': 8 } }).newRun()(),
      { target: toyTarget(), draft: toyDraftClose() },
      makeRequest({ promptTokens: [...PROMPT], maxTokens: 32, warp: GREEDY })
    )
    const ngramRounds = result.steps.filter((s) => (s.decision as Record<string, unknown>).source === 'ngram')
    expect(ngramRounds.length).toBeGreaterThan(0)
    expect(Math.max(...ngramRounds.map((s) => s.proposed))).toBe(2)
  })

  it('sd+ngram records the source of each round: model rounds call the draft, n-gram rounds do not; needs a draft', async () => {
    const result = await decode(
      prepare('sd+ngram', { gamma: 3, params: HYBRID }).newRun()(),
      { target: toyTarget(), draft: toyDraft() },
      makeRequest({ promptTokens: [...PROMPT], maxTokens: 16, warp: GREEDY })
    )
    // No lookup before the first sampled token (llama.cpp's schedule): round 0 is the draft model's.
    expect(result.steps[0]).toMatchObject({ stage: 'sd+ngram', decision: { source: 'draft', matchPos: null } })
    for (const step of result.steps) {
      const { source } = step.decision as Record<string, unknown>
      expect(step.proposed).toBeGreaterThan(0)
      expect(step.proposed).toBeLessThanOrEqual(3)
      if (source === 'ngram') expect(step).toMatchObject({ draftCalls: 0, draftEntropies: new Array(step.proposed).fill(0) })
      else expect(step.draftCalls).toBe(step.proposed)
    }
    expect(result.steps.some((s) => (s.decision as Record<string, unknown>).source === 'ngram')).toBe(true)
    // The colours follow the source: an accepted token of an n-gram round is `ngram`, of a model round `draft`.
    const tokenEvents = result.events.filter((e) => e.type === 'token')
    for (const step of result.steps) {
      const accepted = tokenEvents.filter((e) => e.step === step.index).slice(0, step.acceptedDraftTokens)
      const expected = (step.decision as Record<string, unknown>).source === 'ngram' ? 'ngram' : 'draft'
      expect(accepted.map((e) => e.provenance)).toEqual(new Array(step.acceptedDraftTokens).fill(expected))
    }
    expect(result.provenances).toContain('ngram')
    await expect(decode(prepare('sd+ngram', { gamma: 3, params: HYBRID }).newRun()(), { target: toyTarget() }, makeRequest({ promptTokens: [...PROMPT] }))).rejects.toThrow(
      /needs a draft model/
    )
    const run = prepareRun(['sd+ngram', 'ngram-mod'], { gamma: 5, params: {} }, { draft: true, mid: false })
    expect(run.params).toMatchObject({ 'sdngram.n': 12, 'sdngram.m': 48, 'ngrammod.n': 24, 'ngrammod.nMax': 64, 'ngrammod.nMin': 48 })
    expect(run.methods.map((m) => m.definition.needs.draft)).toEqual([true, false])
    expect(() => prepare('ngram-mod', { gamma: 5, params: { 'ngrammod.nMin': 9, 'ngrammod.nMax': 8 } })).toThrow(/ngrammod\.nMin must be at most/)
  })

  it("ngram-mod's pool carries across the prompts of a run, but not across runs", async () => {
    const params = { 'ngrammod.n': 2, 'ngrammod.nMin': 2, 'ngrammod.nMax': 4 }
    const target = toyTarget()
    const second = [TOY_BOS, 1]
    const continuation = (await decode(autoregressive, { target }, makeRequest({ promptTokens: second, maxTokens: 10, warp: GREEDY }))).tokens
    // The first prompt holds the second prompt's own greedy continuation, after unrelated tokens.
    const first = [TOY_BOS, 5, 5, 1, ...continuation]
    const proposedOn = async (decoder: Decoder, promptTokens: number[]) =>
      (await decode(decoder, { target }, makeRequest({ promptTokens, maxTokens: 10, warp: GREEDY }))).steps.reduce((n, s) => n + s.proposed, 0)

    const run = prepare('ngram-mod', { gamma: 3, params }).newRun()
    await proposedOn(run(), first)
    const sameRun = await proposedOn(run(), second)
    const freshRun = await proposedOn(prepare('ngram-mod', { gamma: 3, params }).newRun()(), second)
    expect(sameRun).toBeGreaterThanOrEqual(4)
    expect(freshRun).toBe(0)
  })

  it("ngram-mod's hash is llama.cpp's (64-bit LCG mod the pool size); chains stop at a miss and below n_min draft nothing", () => {
    const pool = new NgramModPool(3)
    for (const tokens of [
      [1, 2, 3],
      [31999, 7, 151935],
      [2 ** 31 - 1, 0, 123456789]
    ]) {
      let res = 0n
      for (const t of tokens) res = BigInt.asUintN(64, res * 6364136223846793005n + BigInt(t))
      expect(pool.idx(tokens, 0)).toBe(Number(res % BigInt(pool.size)))
    }
    const run = new NgramModRun({ n: 2, nMax: 5, nMin: 3 }, 1024)
    run.begin([9, 1, 2, 3, 4, 8])
    // Key (1, 2): 3, 4, 8, then (4, 8) is unknown — a chain of 3.
    expect(run.draft([7, 1], 2)).toEqual([3, 4, 8])
    // Key (3, 4): 8 then a miss — shorter than n_min, no draft.
    expect(run.draft([7, 3], 4)).toEqual([])
    // Five drafts in a row with acceptance below 25% empty the pool.
    for (let i = 0; i < 5; i++) {
      expect(run.draft([7, 1], 2)).toHaveLength(3)
      run.accept(0)
    }
    expect(run.pool.used).toBe(0)
    expect(run.draft([7, 1], 2)).toEqual([])
  })
})
