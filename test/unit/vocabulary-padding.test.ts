/**
 * Vocabularies that differ in size:
 * - the compatibility rules as llama.cpp decides them (engine/model/vocabulary-check.ts): tokenizer model, add-BOS /
 *   add-EOS and BOS / EOS, sizes within 128, identical token texts of the common range from id 5 — each failure
 *   names its rule, each success says what held; the header path's add-flag defaults;
 * - exactness with padding, by Pearson's chi-square against the target's exact warped law on toy models: a padded
 *   target that puts mass on ids the draft lacks (covered by the residual norm(max(0, p − q)), q = 0 there), and a
 *   padded draft that proposes ids the target lacks (p = 0: always rejected) — for sd, the hierarchies (pre-verify,
 *   hsddw, hier-chen with chen.residual) and DSBD with a fixed width of 1 (beam sampling with W = 1 is multinomial
 *   sampling); a negative control drops the residual's mass outside the draft's vocabulary and is caught;
 * - greedy decoding of every toy-runnable method of the catalog reproduces `ar` with padded targets and drafts.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import type { DecoderModels, StepRecord } from '../../electron/engine/decoders/types'
import { UserInputError } from '../../electron/engine/errors'
import { prepare } from '../../electron/engine/methods/prepare'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { ToyModel } from '../../electron/engine/model/toy-model'
import {
  addFlagsOf,
  assertSameVocabulary,
  compareVocabularies,
  describeCompatible,
  vocabularyMismatch,
  vocabularyTypeOf,
  type VocabularyFacts
} from '../../electron/engine/model/vocabulary-check'
import { fromWeights, probabilityOf, sample, type Distribution } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import { acceptSampling } from '../../electron/engine/sampling/verify'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, NEVER, TOY_BOS, TOY_VOCABULARY, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

// ---------------------------------------------------------------------------------------------------------------
// The rules

function facts(size: number, overrides: Partial<VocabularyFacts> = {}, text: (id: number) => string = (id) => `t${id}`): VocabularyFacts {
  return { vocabularyType: 'spm', tokenizerModel: 'llama', size, bos: 1, eos: 2, addBos: true, addEos: false, tokenText: text, ...overrides }
}

describe("vocabulary compatibility: llama.cpp's rules (common_speculative_are_compatible)", () => {
  it('identical vocabularies are compatible and identical', () => {
    const verdict = compareVocabularies(facts(512), facts(512))
    expect(verdict).toMatchObject({ compatible: true, sizeDifference: 0, commonSize: 512, identical: true })
    if (verdict.compatible) expect(describeCompatible(verdict)).toBe("same 512 tokens; the first 512 token texts are identical (llama.cpp's rule: from id 5)")
  })

  it('padding within 128 is compatible and says which rule held (texts beyond the common range are not compared)', () => {
    const padded = facts(600, {}, (id) => (id < 512 ? `t${id}` : `<pad_${id - 512}>`))
    for (const [target, other] of [
      [padded, facts(512)],
      [facts(512), padded]
    ]) {
      const verdict = compareVocabularies(target, other)
      expect(verdict).toMatchObject({ compatible: true, sizeDifference: 88, commonSize: 512, identical: false })
      if (!verdict.compatible) continue
      const words = describeCompatible(verdict)
      expect(words).toContain('sizes differ by 88 — padding')
      expect(words).toContain("the first 512 token texts are identical (llama.cpp's rule: from id 5)")
    }
    // Exactly 128 passes, 129 fails (Qwen2.5: 152,064 vs 151,936 = 128).
    expect(compareVocabularies(facts(152_064), facts(151_936)).compatible).toBe(true)
    expect(compareVocabularies(facts(152_065), facts(151_936))).toMatchObject({ compatible: false, rule: 'size' })
  })

  it('each rule that fails is named', () => {
    const cases: [Partial<VocabularyFacts>, string, RegExp][] = [
      [{ vocabularyType: 'bpe', tokenizerModel: 'gpt2' }, 'tokenizer', /tokenizer models differ \(gpt2 \(BPE\) vs the target's llama \(SPM\)/],
      [{ addBos: false }, 'add-bos', /add-BOS flags differ \(false vs the target's true\)/],
      [{ bos: 0 }, 'bos', /BOS tokens differ \(0 vs the target's 1\)/],
      [{ addEos: true }, 'add-eos', /add-EOS flags differ \(true vs the target's false\)/],
      [{ eos: 3 }, 'eos', /EOS tokens differ \(3 vs the target's 2\)/],
      [{ size: 2048 }, 'size', /vocabulary sizes differ by 1,536 \(2,048 vs the target's 512 tokens; more than llama.cpp's 128\)/],
      [{ tokenText: (id) => (id === 42 ? 'x' : `t${id}`) }, 'token-text', /token 42 is "x" vs the target's "t42"/]
    ]
    for (const [override, rule, message] of cases) {
      const verdict = compareVocabularies(facts(512), facts(512, override))
      expect(verdict, rule).toMatchObject({ compatible: false, rule })
      if (!verdict.compatible) expect(verdict.reason).toMatch(message)
    }
  })

  it('token texts are compared from id 5, as llama.cpp does; a difference below is allowed and reported', () => {
    const other = facts(512, {}, (id) => (id === 3 ? '<pad>' : `t${id}`))
    const verdict = compareVocabularies(facts(512), other)
    expect(verdict).toMatchObject({ compatible: true, controlTextDifference: 3, identical: false })
    if (verdict.compatible) expect(describeCompatible(verdict)).toContain('token texts 5–511 are identical')
    const at5 = compareVocabularies(facts(512), facts(512, {}, (id) => (id === 5 ? '<pad>' : `t${id}`)))
    expect(at5).toMatchObject({ compatible: false, rule: 'token-text' })
  })

  it('header facts: llama.cpp vocab types and add-BOS / add-EOS defaults when the header has no key', () => {
    expect(vocabularyTypeOf('llama')).toBe('spm')
    expect(vocabularyTypeOf('gpt2')).toBe('bpe')
    expect(vocabularyTypeOf('t5')).toBe('ugm')
    expect(addFlagsOf('llama', null, null, null)).toEqual({ addBos: true, addEos: false })
    expect(addFlagsOf('gpt2', 'qwen2', null, null)).toEqual({ addBos: false, addEos: false })
    expect(addFlagsOf('gpt2', 'llama-bpe', null, null)).toEqual({ addBos: true, addEos: false })
    expect(addFlagsOf('t5', null, null, null)).toEqual({ addBos: false, addEos: true })
    expect(addFlagsOf('gpt2', 'qwen2', true, false)).toEqual({ addBos: true, addEos: false })
    expect(addFlagsOf('llama', null, false, null)).toEqual({ addBos: false, addEos: false })
  })

  it('assertSameVocabulary on models: padded toys pass, a mismatch is one UserInputError naming both and the rule', () => {
    expect(() => assertSameVocabulary([paddedTarget(), toyDraft()])).not.toThrow()
    expect(() => assertSameVocabulary([toyTarget(), paddedDraft()])).not.toThrow()
    expect(vocabularyMismatch(toyTarget(), paddedDraft())).toBeNull()
    const other = new ToyModel({ name: 'toy-other', vocabulary: ['<s>', 'a', 'b', 'c', 'd', 'z'], logits: () => [0, 0, 0, 0, 0, 0] })
    expect(() => assertSameVocabulary([toyTarget(), other])).toThrow(UserInputError)
    expect(() => assertSameVocabulary([toyTarget(), other])).toThrow(/toy-target and toy-other: token 5 is "z" vs the target's "e"/)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Padded toy models: TOY_VOCABULARY (6 entries) padded with two entries that carry real mass.

const PADDED_VOCABULARY = [...TOY_VOCABULARY, '<pad_0>', '<pad_1>'] as const
const REAL = TOY_VOCABULARY.length
const PAD_0 = REAL
const PAD_1 = REAL + 1

/**
 * A padded model from a base toy: its own padded ids condition like the real tokens they alias (pad_0 ~ 'a',
 * pad_1 ~ 'd'), and the padded ids get logits that vary with the context (so they sometimes win the argmax).
 */
function padded(base: ToyModel, name: string, padLogits: (last: number, length: number) => [number, number]): ToyModel {
  const alias = (t: number) => (t === PAD_0 ? 1 : t === PAD_1 ? 4 : t)
  return new ToyModel({
    name,
    vocabulary: PADDED_VOCABULARY,
    logits: (context) => {
      const real = context.map(alias)
      const d = base.distribution(real, PLAIN)
      const logits = new Array<number>(PADDED_VOCABULARY.length).fill(NEVER)
      d.ids.forEach((id, i) => (logits[id] = Math.log(d.probs[i])))
      const [a, b] = padLogits(context[context.length - 1], context.length)
      logits[PAD_0] = a
      logits[PAD_1] = b
      return logits
    }
  })
}

/** The target with two padded ids holding ≈ 25–40 % of the mass, which the unpadded drafts never propose. */
function paddedTarget(): ToyModel {
  return padded(toyTarget(), 'toy-target-padded', (last, length) => [-1.4 + 0.5 * (length % 3) + (last === 2 ? 0.6 : 0), -1.2 + (last >= REAL ? 0.9 : 0.2 * (last % 3))])
}

/** The draft with two padded ids the target lacks, proposed often. */
function paddedDraft(): ToyModel {
  return padded(toyDraft(), 'toy-draft-padded', (last, length) => [-0.9 + 0.3 * (length % 2), -1.5 + (last === 3 ? 1.2 : 0.3)])
}

/** A close mid model with padding (the hierarchies' M_q2). */
function paddedMid(): ToyModel {
  return padded(toyDraftClose(), 'toy-mid-padded', (last, length) => [-1.2 + 0.4 * (length % 2), -1.0 + (last === 1 ? 0.8 : 0)])
}

// ---------------------------------------------------------------------------------------------------------------
// Chi-square

const SAMPLES = 20_000
const SEED = 20250214
const P_MIN = 0.001
const MAX_TOKENS = 4
const GROUPS = [
  [0, 1],
  [2, 3]
]

interface Sampled {
  byPositions: Map<string, number>[]
  steps: StepRecord[]
  /** Output tokens beyond the draft's vocabulary / draft proposals beyond the target's. */
  emittedPads: number
}

async function sampleMethod(method: string, gamma: number, params: MethodParams, models: DecoderModels, warp: WarpConfig): Promise<Sampled> {
  const steps: StepRecord[] = []
  let emittedPads = 0
  const decoder = prepare(method, { gamma, params }).newRun()
  const byPositions = await sampleTokenGroups({ decoder, models, warp, maxTokens: MAX_TOKENS, groups: GROUPS, samples: SAMPLES, seed: SEED }, (result) => {
    steps.push(...result.steps)
    emittedPads += result.tokens.filter((t) => t >= REAL).length
  })
  return { byPositions, steps, emittedPads }
}

function expectTargetLaw(label: string, sampled: Sampled, target: ToyModel, warp: WarpConfig): void {
  const law = exactSequenceDistribution(target, [TOY_BOS], MAX_TOKENS, warp)
  GROUPS.forEach((positions, g) => {
    const fit = chiSquareGoodnessOfFit(sampled.byPositions[g], marginal(law, positions))
    report(`${label} tokens ${positions.join('+')}`, fit)
    expect(fit.df).toBeGreaterThanOrEqual(10)
    expect(fit.pValue).toBeGreaterThan(P_MIN)
  })
}

const T08_TOP5: WarpConfig = { temperature: 0.8, topK: 5, topP: 1 }

describe('exact with padded vocabularies: the output law is the target’s warped law (chi-square, 20k decodes each)', () => {
  it.each([
    { label: 'T=1', warp: PLAIN, gamma: 3 },
    { label: 'T=0.8 top-k 5', warp: T08_TOP5, gamma: 2 }
  ])('sd, padded target (8) + unpadded draft (6), $label γ=$gamma: mass on ids the draft lacks comes from the residual', async ({ label, warp, gamma }) => {
    const target = paddedTarget()
    const sampled = await sampleMethod('sd', gamma, {}, { target, draft: toyDraft() }, warp)
    const padShare = sampled.emittedPads / (SAMPLES * MAX_TOKENS)
    console.log(`sd padded target ${label}: padded ids are ${(padShare * 100).toFixed(1)} % of the output`)
    expectTargetLaw(`sd padded target ${label} γ=${gamma}`, sampled, target, warp)
    expect(padShare).toBeGreaterThan(0.1)
  })

  it('sd, unpadded target (6) + padded draft (8), T=1 γ=3: draft ids the target lacks are proposed and always rejected', async () => {
    const target = toyTarget()
    const draft = paddedDraft()
    let acceptedPads = 0
    const decoder = prepare('sd', { gamma: 3, params: {} }).newRun()
    const steps: StepRecord[] = []
    const byPositions = await sampleTokenGroups(
      { decoder, models: { target, draft }, warp: PLAIN, maxTokens: MAX_TOKENS, groups: GROUPS, samples: SAMPLES, seed: SEED },
      (result) => {
        steps.push(...result.steps)
        acceptedPads += result.tokens.filter((t) => t >= REAL).length
      }
    )
    // The draft's padded ids hold a large share of its law, so it proposes them often.
    const q = draft.distribution([TOY_BOS], PLAIN)
    const padMass = probabilityOf(q, PAD_0) + probabilityOf(q, PAD_1)
    console.log(`sd padded draft: q(padded | BOS) = ${padMass.toFixed(3)}, padded ids in the output: ${acceptedPads}`)
    expect(padMass).toBeGreaterThan(0.2)
    expect(acceptedPads).toBe(0)
    expect(steps.filter((s) => s.resampled).length / steps.length).toBeGreaterThan(0.3)
    expectTargetLaw('sd padded draft T=1 γ=3', { byPositions, steps, emittedPads: 0 }, target, PLAIN)
  })

  const trios: { label: string; models: () => DecoderModels }[] = [
    { label: 'target padded, mid and draft not', models: () => ({ target: paddedTarget(), mid: toyDraftClose(), draft: toyDraft() }) },
    { label: 'mid and draft padded, target not', models: () => ({ target: toyTarget(), mid: paddedMid(), draft: paddedDraft() }) },
    { label: 'target and draft padded, mid not', models: () => ({ target: paddedTarget(), mid: toyDraftClose(), draft: paddedDraft() }) }
  ]
  const hierarchies: { method: string; gamma: number; params: MethodParams }[] = [
    { method: 'pre-verify', gamma: 2, params: { 'pre.window': 3 } },
    { method: 'hsddw', gamma: 2, params: {} },
    { method: 'hier-chen', gamma: 1, params: { 'chen.m': 2, 'chen.n': 1, 'chen.residual': true } }
  ]
  for (const trio of trios)
    for (const { method, gamma, params } of hierarchies)
      it(`${method} ${JSON.stringify(params)}, ${trio.label}, T=1`, async () => {
        const models = trio.models()
        const sampled = await sampleMethod(method, gamma, params, models, PLAIN)
        expect(sampled.steps.filter((s) => s.resampled).length).toBeGreaterThan(SAMPLES / 10)
        expectTargetLaw(`${method} (${trio.label})`, sampled, models.target as ToyModel, PLAIN)
      })

  it.each([
    { label: 'padded target + unpadded draft', models: (): DecoderModels => ({ target: paddedTarget(), draft: toyDraft() }) },
    { label: 'unpadded target + padded draft', models: (): DecoderModels => ({ target: toyTarget(), draft: paddedDraft() }) }
  ])('dsbd and dsbd-1beam with a fixed width of 1 (= multinomial sampling), $label', async ({ label, models }) => {
    for (const method of ['dsbd', 'dsbd-1beam']) {
      const m = models()
      const sampled = await sampleMethod(method, 2, { 'dsbd.ws': 3, 'dsbd.fixedWidth': 1 }, m, PLAIN)
      expect(sampled.steps.filter((s) => s.resampled).length).toBeGreaterThan(SAMPLES / 10)
      expectTargetLaw(`${method} fixed width 1 (${label})`, sampled, m.target as ToyModel, PLAIN)
    }
  })

  it('negative control: a residual without the mass outside the draft’s vocabulary is caught', () => {
    // γ = 1 speculative sampling by hand, the residual restricted to ids the draft has (the natural mistake of
    // sizing the residual by the draft's vocabulary).
    const target = paddedTarget()
    const draft = toyDraft()
    const truncated = (p: Distribution, q: Distribution): Distribution => {
      const ids = Array.from(p.ids).filter((id) => id < REAL)
      return fromWeights(ids, ids.map((id) => Math.max(0, probabilityOf(p, id) - probabilityOf(q, id))))
    }
    const counts = new Map<string, number>()
    for (let i = 0; i < SAMPLES; i++) {
      const rng = createPrng(SEED, i)
      const out: number[] = []
      while (out.length < 2) {
        const context = [TOY_BOS, ...out]
        const q = draft.distribution(context, PLAIN)
        const p = target.distribution(context, PLAIN)
        const x = sample(q, rng)
        if (acceptSampling(p, q, x, rng)) {
          out.push(x)
          if (out.length < 2) out.push(sample(target.distribution([...context, x], PLAIN), rng))
        } else out.push(sample(truncated(p, q), rng))
      }
      tally(counts, out.join(','))
    }
    const fit = chiSquareGoodnessOfFit(counts, exactSequenceDistribution(target, [TOY_BOS], 2, PLAIN))
    report('negative control: residual without the padded ids', fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Greedy: every method that runs on toy models reproduces ar

/** Every catalog method runnable on toy models (nlc-draft needs GGUF models: test/integration/vocabulary-padding-gguf). */
const GREEDY_METHODS: { method: string; params: MethodParams }[] = [
  { method: 'sd', params: {} },
  { method: 'sd-heuristic', params: {} },
  { method: 'sd-pmin', params: { 'pmin.p': 0.5 } },
  { method: 'svip', params: {} },
  { method: 'self-verify', params: {} },
  { method: 'adaptive-analytic', params: {} },
  { method: 'adaptive-fsm', params: {} },
  { method: 'adaptive-cache-fsm', params: {} },
  { method: 'adaptive-rl', params: {} },
  { method: 'pre-verify', params: {} },
  { method: 'pre-self-verify', params: {} },
  { method: 'hsddw', params: {} },
  { method: 'hier-chen', params: { 'chen.residual': true } },
  { method: 'beam', params: { 'beam.width': 1 } },
  { method: 'dsbd', params: {} },
  { method: 'dsbd-1beam', params: {} },
  { method: 'sd+ngram', params: { 'sdngram.n': 1, 'sdngram.m': 3 } }
]

describe('greedy methods reproduce ar with padded vocabularies (toy models)', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 1], [TOY_BOS, 3, 4], [TOY_BOS, 5, PAD_0, 2]]
  const setups: { label: string; models: () => DecoderModels & { mid: ToyModel } }[] = [
    { label: 'padded target, unpadded mid and draft', models: () => ({ target: paddedTarget(), mid: toyDraftClose(), draft: toyDraftClose() }) },
    { label: 'unpadded target, padded mid and draft', models: () => ({ target: toyTarget(), mid: paddedMid(), draft: paddedDraft() }) }
  ]
  for (const setup of setups)
    it(`${setup.label}: every method = ar, 4 prompts × γ ∈ {1, 3}`, async () => {
      const models = setup.models()
      const target = models.target as ToyModel
      let targetPads = 0
      for (const promptTokens of prompts.filter((p) => p.every((t) => t < target.info.vocabularySize))) {
        const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 16, warp: GREEDY }))
        targetPads += ar.tokens.filter((t) => t >= REAL).length
        for (const { method, params } of GREEDY_METHODS)
          for (const gamma of [1, 3]) {
            const request = makeRequest({ promptTokens, maxTokens: 16, warp: GREEDY, rng: createPrng(gamma, 5) })
            const result = await decode(prepare(method, { gamma, params }).newRun()(), models, request)
            expect(result.tokens, `${method} prompt ${promptTokens} γ=${gamma}`).toEqual(ar.tokens)
          }
      }
      if (models.target.info.vocabularySize > REAL) expect(targetPads, 'the padded target emits padded ids greedily').toBeGreaterThan(3)
    })
})

describe('the catalog of recommended trios (resources/catalog.json)', () => {
  it('every entry has a target and valid model URIs; the padded Qwen2.5 pairings are listed', async () => {
    const { readCatalog } = await import('../../electron/host/host')
    const { isModelUri } = await import('../../electron/api/models')
    const trios = readCatalog()
    for (const trio of trios) {
      expect(trio.models.filter((m) => m.role === 'target'), trio.id).toHaveLength(1)
      for (const model of trio.models) expect(isModelUri(model.uri), model.uri).toBe(true)
    }
    const ids = trios.map((t) => t.id)
    for (const id of ['qwen2.5-7b-padded', 'qwen2.5-14b-padded', 'qwen2.5-coder-32b-padded', 'qwen3', 'llama-3.3-70b', 'gemma-3']) expect(ids).toContain(id)
    expect(JSON.stringify(trios)).not.toMatch(/refuses/)
  })
})
