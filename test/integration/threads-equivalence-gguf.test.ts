/**
 * One thread and two compute the same thing. At two threads llama.cpp's ops meet at a barrier between every pair of
 * ops — in SpecLab's CPU build ggml's own yielding barrier instead of libgomp's (electron/engine/model/
 * ggml-barrier-patch.ts) — so a barrier that let a thread run ahead would read half-written tensors: the logits
 * would differ from one thread's and the greedy continuation would drift. Single tokens and batches, on the binary
 * the suite runs (SpecLab's build where `npm install` made it: the test says which it checked).
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RAW_WARP } from '../../electron/engine/decoders/session-pool'
import { loadLlamaModel, llamaBackendChoice, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { cpuBuildStatus } from '../../electron/engine/model/native-cpu-build'
import { argmax, type Distribution } from '../../electron/engine/sampling/distribution'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const withModels = describeWithModels('test/integration/threads-equivalence-gguf.test.ts', [TARGET])
const TOKENS = 40
const PROMPTS = ['Once upon a time', 'The little dog ran to the park and', 'Lily wanted to']

/** The thread count llama.cpp's context ran its last decode with. */
const lastThreads = (model: LlamaCppModel): number => (model.context as unknown as { _ctx: { getThreads(): number } })._ctx.getThreads()

/** Greedy continuations of every prompt, one token per evaluation, with every step's distribution. */
async function greedy(model: LlamaCppModel, threads: number): Promise<{ tokens: number[]; steps: Distribution[] }[]> {
  const out = []
  for (const text of PROMPTS) {
    const session = await model.createSession(RAW_WARP)
    try {
      const prompt = [model.info.bos!, ...model.tokenize(text)]
      let [next] = await session.append(prompt, prompt.length - 1)
      const tokens: number[] = []
      const steps: Distribution[] = [next!]
      for (let i = 0; i < TOKENS; i++) {
        tokens.push(argmax(next!))
        ;[next] = await session.append([tokens.at(-1)!], 0)
        expect(lastThreads(model)).toBe(threads)
        steps.push(next!)
      }
      // The whole continuation again as one batch: every position's distribution from a batched evaluation.
      const batched = await model.createSession(RAW_WARP)
      try {
        const all = await batched.append([...prompt, ...tokens], prompt.length - 1)
        steps.push(...all)
      } finally {
        await batched.dispose()
      }
      out.push({ tokens, steps })
    } finally {
      await session.dispose()
    }
  }
  return out
}

withModels('one thread and two compute the same logits', () => {
  const models: LlamaCppModel[] = []
  beforeAll(async () => {
    for (const threads of [1, 2]) models.push(await loadLlamaModel(modelPath(TARGET), { threads, batchThreads: threads, contextSize: 256, sequences: 2 }))
  })
  afterAll(async () => {
    for (const model of models) await model.dispose()
  })

  it('greedy tokens equal and every distribution within float rounding, single tokens and batches', async () => {
    const status = cpuBuildStatus()
    console.info(`threads equivalence on ${llamaBackendChoice()?.binary}; SpecLab's build installed: ${status.installed === 'speclab'}, ggml barrier patch ${status.key.ggmlPatch}`)
    const [one, two] = [await greedy(models[0]!, 1), await greedy(models[1]!, 2)]
    for (const [p, a] of one.entries()) {
      const b = two[p]!
      expect(b.tokens, `prompt ${p}`).toEqual(a.tokens)
      expect(b.steps.length).toBe(a.steps.length)
      for (const [i, step] of a.steps.entries()) {
        const other = b.steps[i]!
        expect(Array.from(other.ids.slice(0, 8)), `prompt ${p}, step ${i}`).toEqual(Array.from(step.ids.slice(0, 8)))
        for (let k = 0; k < 8; k++) expect(Math.abs(other.probs[k]! - step.probs[k]!), `prompt ${p}, step ${i}, rank ${k}`).toBeLessThan(1e-4)
      }
    }
  })
})
