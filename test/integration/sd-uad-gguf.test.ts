/**
 * sd-uad on a real pair of DIFFERENT tokenizers (node-llama-cpp, CPU, one thread): the draft tinystories-656k-q8_0
 * (its own 2,048-token SentencePiece vocabulary, BOS/EOS `<|start_story|>` / `<|end_story|>`, pieces that carry the
 * space at their end: "upon▁a▁tim") drafting for stories-target5M-f32 (karpathy's 512-token vocabulary, `▁` at the
 * start). Greedy: 4 story prompts × 32 tokens must reproduce `ar`'s tokens (expectSameOrNearTie tolerates only a
 * near-tie flipped by batched evaluation, test/helpers/gguf.ts), with and without token healing; the acceptance and
 * the fraction of draft text kept are printed. A sampled run checks the step bookkeeping at temperature 1.
 *
 * Models: $SPECLAB_MODELS, default ../shared/models next to the project.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { prepare, prepareRun } from '../../electron/engine/methods/prepare'
import { textKept } from '../../electron/engine/metrics/fold'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { createPrng } from '../../electron/engine/sampling/prng'
import { decode, makeRequest } from '../helpers/decode'
import { describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'tinystories-656k-q8_0.gguf'
const withModels = describeWithModels('test/integration/sd-uad-gguf.test.ts', [TARGET, DRAFT])

const MAX_TOKENS = 32
const PROMPTS = [
  'Once upon a time, there was a little dog named Max.',
  'Lily went to the park with her mom. She saw a big red ball',
  'Tom had a toy car. One day, the car broke and Tom was sad.',
  'The sun was hot and the birds were singing.'
]

withModels('sd-uad on GGUF models with different tokenizers: greedy output = greedy ar (target5M ← 656K)', () => {
  let target: LlamaCppModel
  let draft: LlamaCppModel
  const ar: number[][] = []

  const promptTokens = (text: string): number[] => [target.info.bos!, ...target.tokenize(text)]
  const request = (text: string) => makeRequest({ promptTokens: promptTokens(text), maxTokens: MAX_TOKENS, warp: GREEDY_64 })

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512 })
    draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, contextSize: 512 })
    for (const prompt of PROMPTS) ar.push((await decode(autoregressive, { target }, request(prompt))).tokens)
  })

  afterAll(async () => {
    await draft?.dispose()
    await target?.dispose()
  })

  it('the pair really has different vocabularies, and a run of ar + sd-uad does not ask for a shared one', () => {
    expect(target.info.vocabularySize).toBe(512)
    expect(draft.info.vocabularySize).toBe(2048)
    expect(draft.tokenText(draft.info.bos!)).toBe('<|start_story|>')
    expect(prepareRun(['ar', 'sd-uad'], { gamma: 4, params: {} }).sharedVocabulary).toBe(false)
  })

  it.each<[number, Record<string, number | boolean>]>([
    [4, {}],
    [2, {}],
    [4, { 'uad.heal': false }],
    [4, { 'uad.lookbehind': 3 }],
    [3, { 'uad.maxProposed': 3 }]
  ])('γ = %i %o: 4 prompts × 32 tokens equal ar', async (gamma, params) => {
    const run = prepare('sd-uad', { gamma, params }).newRun()
    const outcomes: string[] = []
    const steps: StepRecord[] = []
    for (const [i, prompt] of PROMPTS.entries()) {
      const result = await decode(run(), { target, draft }, request(prompt))
      expect(ar[i]).toHaveLength(MAX_TOKENS)
      outcomes.push(await expectSameOrNearTie('sd-uad', target, promptTokens(prompt), ar[i], result.tokens))
      steps.push(...result.steps)
    }
    const proposed = steps.reduce((n, s) => n + s.proposed, 0)
    const accepted = steps.reduce((n, s) => n + s.accepted, 0)
    const drafted = steps.reduce((n, s) => n + s.draftTokens, 0)
    const junctions = steps.filter((s) => s.decision?.junction === true).length
    console.log(
      `sd-uad γ=${gamma} ${JSON.stringify(params)}: ${outcomes.filter((o) => o === 'identical').length}/${PROMPTS.length} identical, ` +
        `${steps.length} rounds for ${PROMPTS.length * MAX_TOKENS} tokens, acceptance ${(accepted / proposed).toFixed(3)} ` +
        `(${accepted}/${proposed} target tokens), ${(accepted / steps.length).toFixed(2)} accepted per round, ` +
        `${drafted} draft tokens, draft text kept ${textKept(steps).textKept?.toFixed(3)}, junction splits ${junctions}`
    )
    expect(accepted).toBeGreaterThan(0)
    expect(steps.every((s) => s.targetCalls === 1 && s.accepted <= s.proposed && s.acceptedDraftTokens <= s.draftTokens)).toBe(true)
    // Fewer target calls than ar's one per token (the draft helps on this pair).
    if (params['uad.heal'] !== false) expect(steps.length).toBeLessThan(PROMPTS.length * MAX_TOKENS * 0.75)
  })

  it('text the draft cannot spell ("~", "é": no byte tokens, llama.cpp would abort) is left out of its view', async () => {
    const prompt = 'Tom said "café ~ naïve" and smiled.'
    const tokens = promptTokens(prompt)
    const reference = (await decode(autoregressive, { target }, request(prompt))).tokens
    const result = await decode(prepare('sd-uad', { gamma: 4, params: {} }).newRun()(), { target, draft }, request(prompt))
    await expectSameOrNearTie('sd-uad', target, tokens, reference, result.tokens)
    expect(result.steps.some((s) => s.accepted > 0)).toBe(true)
  })

  it('temperature 1: rounds add up (emitted = accepted + 1 until the budget), provenance follows the verdict', async () => {
    const run = prepare('sd-uad', { gamma: 4, params: {} }).newRun()
    const warp = { temperature: 1, topK: 64, topP: 1 }
    for (const [i, prompt] of PROMPTS.entries()) {
      const result = await decode(run(), { target, draft }, makeRequest({ promptTokens: promptTokens(prompt), maxTokens: MAX_TOKENS, warp, rng: createPrng(3, i) }))
      expect(result.tokens.length).toBeGreaterThan(0)
      for (const step of result.steps) expect(step.emitted).toBeLessThanOrEqual(step.accepted + 1)
      const drafts = result.provenances.filter((p) => p === 'draft').length
      expect(drafts).toBe(result.steps.reduce((n, s) => n + Math.min(s.accepted, s.emitted), 0))
    }
  })
})
