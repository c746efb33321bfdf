/**
 * The direct evaluation path (electron/engine/model/direct-evaluation.ts): a session alone on its context evaluates
 * through node-llama-cpp's addon instead of `controlledEvaluate`. It must return exactly the logits
 * `controlledEvaluate` returns (top-k and whole vocabulary, single tokens and batches), leave the sequence's state as
 * node-llama-cpp keeps it (so erase and later evaluations agree), step aside for evaluations issued together (they
 * stay one batched decode), and never interleave with a node-llama-cpp batch on the same context. node-llama-cpp
 * 3.22.1's internals are pinned: the first test fails when an upgrade removes them.
 */
import type { ControlledEvaluateInputItem, Token } from 'node-llama-cpp'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import type { Distribution } from '../../electron/engine/sampling/distribution'
import { warp, type WarpConfig } from '../../electron/engine/sampling/warp'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const withModels = describeWithModels('test/integration/direct-evaluation-gguf.test.ts', [TARGET])
const GREEDY_TOP64: WarpConfig = { temperature: 0, topK: 64, topP: 1 }
const WHOLE_VOCABULARY: WarpConfig = { temperature: 1, topK: 0, topP: 1 }

withModels('direct evaluation through the addon = controlledEvaluate', () => {
  let model: LlamaCppModel
  let prompt: number[]
  let batch: number[]

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 4 })
    prompt = [model.info.bos!, ...model.tokenize('Once upon a time, there was a little dog named Max. He liked to')]
    batch = model.tokenize(' play in the park with his')
  })

  afterAll(async () => {
    await model?.dispose()
  })

  /** The same evaluations through node-llama-cpp's own path, on a raw sequence, with the session's request. */
  async function throughControlledEvaluate(warp: WarpConfig): Promise<{ ids: number[]; logits: number[] }[]> {
    const sequence = model.context.getSequence()
    const generateNext =
      warp.topK > 0
        ? { logits: { filter: { tokens: [] as Token[], includeTop: warp.topK } }, options: { topK: warp.topK, temperature: 1, topP: 1, minP: 0, seed: 0 } }
        : { logits: true as const }
    try {
      const ask = (tokens: number[], from: number): ControlledEvaluateInputItem[] => tokens.map((t, i) => (i >= from ? [t as Token, { generateNext }] : (t as Token)))
      const first = await sequence.controlledEvaluate(ask(prompt, prompt.length - 1))
      const rest = await sequence.controlledEvaluate(ask(batch, 0))
      return [first[prompt.length - 1]!, ...rest].map((o) => ({ ids: [...o!.next.logits!.keys()], logits: [...o!.next.logits!.values()] }))
    } finally {
      sequence.dispose()
    }
  }

  it('node-llama-cpp 3.22.1 has the internals the path uses', () => {
    expect(model.direct, 'node-llama-cpp changed its internals: review direct-evaluation.ts').not.toBeNull()
  })

  it.each([
    ['top-64, greedy', GREEDY_TOP64],
    ['whole vocabulary', WHOLE_VOCABULARY]
  ] as const)('%s: the same ids and logits per position, single token and batch', async (_label, warp_) => {
    const reference = await throughControlledEvaluate(warp_)
    const before = model.direct!.evaluations
    const session = await model.createSession(warp_)
    try {
      const ours = [...(await session.append(prompt, prompt.length - 1)), ...(await session.append(batch, 0))]
      expect(model.direct!.evaluations - before, 'both evaluations took the direct path').toBe(2)
      // The session warps what it received exactly as it would have warped controlledEvaluate's logits.
      expectSame(ours, reference.map(({ ids, logits }) => warp(Int32Array.from(ids), Float64Array.from(logits), warp_)))
    } finally {
      await session.dispose()
    }
  })

  it('keeps the sequence as node-llama-cpp does: erase, then evaluate again, gives the same logits', async () => {
    const session = await model.createSession(GREEDY_TOP64)
    const sequence = model.context.getSequence()
    try {
      await session.append(prompt, prompt.length - 1)
      const first = await session.append(batch, 0)
      const llamaSequence = (session as unknown as { sequence: { contextTokens: readonly number[]; nextTokenIndex: number } }).sequence
      expect([...llamaSequence.contextTokens]).toEqual([...prompt, ...batch])
      expect(llamaSequence.nextTokenIndex).toBe(prompt.length + batch.length)
      await session.truncate(prompt.length)
      expect(llamaSequence.nextTokenIndex).toBe(prompt.length)
      const again = await session.append(batch, 0)
      expectSame(again, first)
    } finally {
      sequence.dispose()
      await session.dispose()
    }
  })

  it('an empty append returns nothing and changes nothing, as through controlledEvaluate', async () => {
    const session = await model.createSession(GREEDY_TOP64)
    try {
      await session.append(prompt, prompt.length - 1)
      expect(await session.append([], 0)).toEqual([])
      expect(session.tokens).toEqual(prompt)
    } finally {
      await session.dispose()
    }
  })

  it('evaluations issued together skip the path and stay one batch; their results are the lone ones', async () => {
    const a = await model.createSession(GREEDY_TOP64)
    const b = await model.createSession(GREEDY_TOP64)
    try {
      const alone = await a.append(prompt, prompt.length - 1)
      await a.truncate(0)
      const before = model.direct!.evaluations
      const [fromA, fromB] = await Promise.all([a.append(prompt, prompt.length - 1), b.append(prompt, prompt.length - 1)])
      expect(model.direct!.evaluations, 'concurrent evaluations went through node-llama-cpp').toBe(before)
      // A batch of two sequences is other arithmetic than one sequence alone (and other KV cells): equal to rounding.
      expectClose(fromA, alone)
      expectClose(fromB, alone)
    } finally {
      await a.dispose()
      await b.dispose()
    }
  })

  it('never interleaves with a node-llama-cpp batch on the same context', async () => {
    const reference = await throughControlledEvaluate(GREEDY_TOP64)
    const session = await model.createSession(GREEDY_TOP64)
    const lone = await session.append(prompt, prompt.length - 1)
    await session.truncate(0)
    try {
      for (let round = 0; round < 5; round++) {
        // node-llama-cpp's evaluation (not counted as SpecLab's) and a direct one race for the context.
        const [raw, ours] = await Promise.all([throughControlledEvaluate(GREEDY_TOP64), session.append(prompt, prompt.length - 1)])
        // Interleaved batches fail llama_decode or give other logits; the cells a sequence lands in may differ by rounding.
        raw.forEach((r, i) => {
          expect(r.ids).toEqual(reference[i]!.ids)
          r.logits.forEach((l, j) => expect(l).toBeCloseTo(reference[i]!.logits[j]!, 4))
        })
        expectClose(ours, lone)
        await session.truncate(0)
      }
    } finally {
      await session.dispose()
    }
  })
})

function expectSame(actual: Distribution[], expected: Distribution[]): void {
  expect(actual).toHaveLength(expected.length)
  actual.forEach((d, i) => {
    expect([...d.ids], `position ${i}`).toEqual([...expected[i]!.ids])
    expect([...d.probs], `position ${i}`).toEqual([...expected[i]!.probs])
  })
}

function expectClose(actual: Distribution[], expected: Distribution[]): void {
  expect(actual).toHaveLength(expected.length)
  actual.forEach((d, i) => {
    expect([...d.ids], `position ${i}`).toEqual([...expected[i]!.ids])
    d.probs.forEach((p, j) => expect(p, `position ${i}, entry ${j}`).toBeCloseTo(expected[i]!.probs[j]!, 5))
  })
}
