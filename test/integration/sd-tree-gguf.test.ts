/**
 * `sd-tree` and `sd-tree+ngram` on the shared GGUF family (node-llama-cpp, CPU, one thread; target5M-f32 ← stories260K,
 * 4 context sequences = the default tree.branches): greedy output equals greedy `ar` (the near-tie rule of
 * test/helpers/gguf.ts) with sibling branches and n-gram chains really accepted; at temperature 1 the trees split,
 * every KV sequence is handed back after each prompt, and the step records carry the tree's price (evaluated vs
 * requested positions, paths, copies).
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { Provenance } from '../../electron/engine/decoders/types'
import { prepare } from '../../electron/engine/methods/prepare'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { createPrng } from '../../electron/engine/sampling/prng'
import { decode, makeRequest } from '../helpers/decode'
import { copyingPrompt, describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/sd-tree-gguf.test.ts', [TARGET, DRAFT])

const SEQUENCES = 4
const MAX_TOKENS = 48
const OPENINGS = [
  'Once upon a time, there was a little dog named Max.',
  'Lily went to the park with her mom. She saw a big red ball',
  'Tom had a toy car. One day, the car broke and Tom was sad.'
]

withModels('sd-tree on GGUF (target5M ← stories260K)', () => {
  let target: LlamaCppModel
  let draft: LlamaCppModel
  const prompts: number[][] = []
  const reference: number[][] = []

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512, sequences: SEQUENCES })
    draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, contextSize: 512, sequences: SEQUENCES })
    // The prompts copy (as in lookup-gguf.test.ts): an opening, the target's own greedy continuation of it, the
    // opening again — so the n-gram branch finds what the target re-tells.
    for (const opening of OPENINGS) {
      const copying = await copyingPrompt(target, opening, 32, MAX_TOKENS)
      prompts.push(copying.promptTokens)
      reference.push(copying.reference)
    }
  })

  afterAll(async () => {
    await target?.dispose()
    await draft?.dispose()
  })

  it.each([
    ['sd-tree', { 'tree.pSplit': 0.05 }],
    ['sd-tree+ngram', { 'treengram.pSplit': 0.05 }]
  ] as const)('greedy %s = greedy ar, with branches accepted', async (id, params) => {
    const seen = new Map<Provenance, number>()
    const outcomes: string[] = []
    let evaluated = 0
    let requested = 0
    for (const [i, promptTokens] of prompts.entries()) {
      const result = await decode(prepare(id, { gamma: 4, params }).newRun()(), { target, draft }, makeRequest({ promptTokens, maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
      outcomes.push(await expectSameOrNearTie(id, target, promptTokens, reference[i], result.tokens))
      for (const p of result.provenances) seen.set(p, (seen.get(p) ?? 0) + 1)
      for (const s of result.steps) {
        evaluated += Number(s.decision?.evaluated ?? 0)
        requested += Number(s.decision?.requested ?? 0)
      }
      expect(result.steps.every((s) => s.stage === id && s.targetCalls >= 1)).toBe(true)
      expect(target.sessionsLeft()).toBe(SEQUENCES)
      expect(draft.sessionsLeft()).toBe(SEQUENCES)
    }
    console.log(`greedy ${id}: ${JSON.stringify(Object.fromEntries(seen))}; target positions evaluated/requested ${evaluated}/${requested}; ${outcomes.join(' ')}`)
    expect(outcomes.filter((o) => o === 'identical').length).toBeGreaterThanOrEqual(prompts.length - 1)
    expect(seen.get('draft') ?? 0).toBeGreaterThan(10)
    expect(seen.get('branch') ?? 0).toBeGreaterThan(0)
    if (id === 'sd-tree+ngram') expect(seen.get('ngram') ?? 0).toBeGreaterThan(5)
    expect(evaluated).toBeGreaterThanOrEqual(requested)
  })

  it('temperature 1: trees split within their budgets; one batched target call per round after the prompt', async () => {
    const result = await decode(prepare('sd-tree', { gamma: 4, params: {} }).newRun()(), { target, draft }, makeRequest({
      promptTokens: prompts[0],
      maxTokens: MAX_TOKENS,
      warp: { temperature: 1, topK: 64, topP: 1 },
      rng: createPrng(5, 0)
    }))
    expect(result.tokens.length).toBeGreaterThan(0)
    const leaves = result.steps.map((s) => Number(s.decision?.treeLeaves))
    expect(Math.max(...leaves)).toBeGreaterThan(1)
    expect(Math.max(...leaves)).toBeLessThanOrEqual(4)
    // (The first round evaluates the prompt once, then forks it: two calls.)
    expect(result.steps.every((s) => s.targetCalls === (s.index === 0 ? 2 : 1) && Number(s.decision?.treeNodes) <= 16)).toBe(true)
    expect(target.sessionsLeft()).toBe(SEQUENCES)
  })
})
