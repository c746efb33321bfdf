/**
 * Model-free drafting on a real GGUF target (node-llama-cpp, CPU, one thread): greedy `pld`, `ngram-simple`,
 * `ngram-map-k`, `ngram-map-k4v`, `ngram-mod`, `ngram-cache`, `nlc-lookup` and the hybrid `sd+ngram` (with the stories260K draft)
 * reproduce greedy `ar` (the near-tie rule of test/helpers/gguf.ts),
 * with lookups really accepted. The prompts copy: a story opening, the target's own greedy continuation of it, then
 * the opening again — the target then partly re-tells what it told, which is where lookups pay. `nlc-lookup`'s
 * prediction length, which the greedy equivalence cannot see, is checked from its step records, greedy and sampled.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { prepare } from '../../electron/engine/methods/prepare'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { decode, makeRequest } from '../helpers/decode'
import { copyingPrompt, describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/lookup-gguf.test.ts', [TARGET, DRAFT])

const MAX_TOKENS = 64
const OPENINGS = [
  'Once upon a time, there was a little dog named Max.',
  'Lily went to the park with her mom. She saw a big red ball',
  'Tom had a toy car. One day, the car broke and Tom was sad.'
]

/** llama.cpp's n = 12 rarely recurs in 64 tokens of a 5M model: n = 3, m = 8 gives the maps something to find. */
const METHODS: { id: string; params: Record<string, number> }[] = [
  { id: 'pld', params: {} },
  { id: 'ngram-simple', params: { 'ngramsimple.n': 3, 'ngramsimple.m': 8 } },
  { id: 'ngram-map-k', params: { 'ngrammapk.n': 3, 'ngrammapk.m': 8 } },
  { id: 'ngram-map-k4v', params: { 'ngrammapk4v.n': 3, 'ngrammapk4v.m': 8 } },
  { id: 'ngram-mod', params: { 'ngrammod.n': 3, 'ngrammod.nMin': 1, 'ngrammod.nMax': 8 } },
  { id: 'nlc-lookup', params: {} },
  { id: 'ngram-cache', params: {} },
  // llama.cpp's defaults, for the equivalence alone.
  { id: 'ngram-simple', params: {} },
  { id: 'ngram-map-k', params: {} },
  { id: 'ngram-mod', params: {} }
]

withModels('model-free drafting on GGUF (target5M)', () => {
  let target: LlamaCppModel
  let draft: LlamaCppModel
  const prompts: number[][] = []
  const reference: number[][] = []

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512 })
    draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, contextSize: 512 })
    for (const opening of OPENINGS) {
      const copying = await copyingPrompt(target, opening, 48, MAX_TOKENS)
      prompts.push(copying.promptTokens)
      reference.push(copying.reference)
    }
  })

  afterAll(async () => {
    await target?.dispose()
    await draft?.dispose()
  })

  it.each(METHODS.map((m) => [m.id, JSON.stringify(m.params), m] as const))('greedy %s %s = greedy ar', async (id, _label, { params }) => {
    let proposed = 0
    let accepted = 0
    let fromLookups = 0
    const outcomes: string[] = []
    for (const [i, promptTokens] of prompts.entries()) {
      const result = await decode(prepare(id, { gamma: 5, params }).newRun()(), { target }, makeRequest({ promptTokens, maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
      outcomes.push(await expectSameOrNearTie(id, target, promptTokens, reference[i], result.tokens))
      proposed += result.steps.reduce((n, s) => n + s.proposed, 0)
      accepted += result.steps.reduce((n, s) => n + s.accepted, 0)
      fromLookups += result.provenances.filter((p) => p === 'ngram').length
      expect(result.steps.every((s) => s.stage === id)).toBe(true)
    }
    console.log(`${id} ${JSON.stringify(params)}: ${proposed} proposed, ${accepted} accepted, ${fromLookups} output tokens from lookups, ${outcomes.join(' ')}`)
    expect(outcomes.filter((o) => o === 'identical').length).toBeGreaterThanOrEqual(prompts.length - 1)
    if (Object.keys(params).length > 0 || id === 'pld' || id === 'nlc-lookup' || id === 'ngram-cache') {
      expect(accepted).toBeGreaterThan(10)
      expect(fromLookups).toBeGreaterThan(10)
    }
  })

  it.each([
    ['n = 3, m = 8', { 'sdngram.n': 3, 'sdngram.m': 8 }],
    ["llama.cpp's defaults", {}]
  ] as const)('greedy sd+ngram (%s) = greedy ar, rounds drafted by the n-gram and by the draft model', async (label, params) => {
    const rounds: Record<string, number> = {}
    const outcomes: string[] = []
    let accepted = 0
    for (const [i, promptTokens] of prompts.entries()) {
      const result = await decode(prepare('sd+ngram', { gamma: 5, params }).newRun()(), { target, draft }, makeRequest({ promptTokens, maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
      outcomes.push(await expectSameOrNearTie('sd+ngram', target, promptTokens, reference[i], result.tokens))
      for (const step of result.steps) {
        expect(step.stage).toBe('sd+ngram')
        const source = String((step.decision as Record<string, unknown>).source)
        rounds[source] = (rounds[source] ?? 0) + 1
        accepted += step.accepted
      }
    }
    console.log(`sd+ngram ${label}: rounds by source ${JSON.stringify(rounds)}, ${accepted} accepted, ${outcomes.join(' ')}`)
    expect(outcomes.filter((o) => o === 'identical').length).toBeGreaterThanOrEqual(prompts.length - 1)
    expect(rounds.draft).toBeGreaterThan(0)
    if (Object.keys(params).length > 0) expect(rounds.ngram).toBeGreaterThan(0)
  })

  // The greedy equivalence above holds whatever node-llama-cpp predicts; the prediction length shows in the counts of
  // predictions it validated and refuted (each step's `proposed`): never above predictionMax, and reaching it, because
  // these prompts copy long stretches, at temperature 0 and 1 alike.
  it.each([2, 5])('nlc-lookup predicts at most nlclookup.predictionMax = %i tokens at a time, and that many where the prompt has them', async (predictionMax) => {
    for (const warp of [GREEDY_64, { temperature: 1, topK: 64, topP: 1 }]) {
      const proposed: number[] = []
      for (const promptTokens of prompts) {
        const result = await decode(
          prepare('nlc-lookup', { gamma: 5, params: { 'nlclookup.predictionMax': predictionMax } }).newRun()(),
          { target },
          makeRequest({ promptTokens, maxTokens: 32, warp })
        )
        proposed.push(...result.steps.map((s) => s.proposed))
      }
      expect(Math.max(...proposed), `temperature ${warp.temperature}`).toBe(predictionMax)
    }
  })

  it("nlc-lookup gives its KV sequence back clean: afterwards every sequence of the target's context starts a session", async () => {
    for (let run = 0; run < 5; run++)
      await decode(prepare('nlc-lookup', { gamma: 5, params: {} }).newRun()(), { target }, makeRequest({ promptTokens: prompts[run % prompts.length], maxTokens: 32, warp: GREEDY_64 }))
    // node-llama-cpp returns disposed sequence ids asynchronously.
    const total = target.context.totalSequences
    for (let wait = 0; wait < 100 && target.context.sequencesLeft < total; wait++) await new Promise((r) => setTimeout(r, 10))
    expect(target.context.sequencesLeft).toBe(total)
    const sessions = []
    try {
      for (let i = 0; i < total; i++) sessions.push(await target.createSession(GREEDY_64))
      for (const session of sessions) expect((await session.append([target.info.bos!, target.tokenize(' the')[0]], 1)).length).toBe(1)
    } finally {
      for (const session of sessions) await session.dispose()
    }
  })
})
