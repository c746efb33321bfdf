/**
 * The GPU check's token split (scripts/gpu-check/token-split.ts) on a real model, on the CPU: every greedy token of
 * the target session is split into the two awaited addon calls and the rest, the wrappers on the addon are gone
 * afterwards (a later evaluation runs the addon's own methods), and a model whose sessions take node-llama-cpp's own
 * path (SPECLAB_DIRECT_EVALUATION=0) is timed but not split.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { DEFAULT_WARP } from '../../electron/engine/sampling/warp'
import { measureTokenSplit } from '../../scripts/gpu-check/token-split'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/gpu-check-token-split-gguf.test.ts', [TARGET])
const TOKENS = 24

const addonOf = (model: LlamaCppModel) => (model.context as unknown as { _ctx: object })._ctx

withModels('GPU check: where an ar token’s time goes', () => {
  let model: LlamaCppModel
  let prompts: number[][]

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1 })
    prompts = ['Once upon a time', 'The little dog'].map((text) => [model.info.bos!, ...model.tokenize(text)])
  })

  afterAll(async () => {
    await model?.dispose()
  })

  it('splits every generated token into the awaited decode, the awaited read and the rest', async () => {
    const split = await measureTokenSplit(model, prompts, TOKENS, null)
    // The prompt's evaluation yields the first token; every later one is one timed evaluation.
    expect(split.tokens).toBe(prompts.length * (TOKENS - 1))
    expect(split.direct).toBe(split.tokens)
    for (const part of [split.stepMs, split.decodeMs, split.readMs, split.rereadMs, split.engineMs]) {
      expect(part?.cells).toBe(split.tokens)
      expect(part!.median).toBeGreaterThan(0)
    }
    expect(split.decodeMs!.median + split.readMs!.median).toBeLessThan(split.stepMs!.median)
    expect(split.serverMs).toBeNull()
    // The addon's own methods again: nothing of the measurement stays on the context.
    expect(Object.hasOwn(addonOf(model), 'decodeBatch')).toBe(false)
    expect(Object.hasOwn(addonOf(model), 'sampleToken')).toBe(false)
    const session = await model.createSession(DEFAULT_WARP)
    await session.append(prompts[0]!, prompts[0]!.length - 1)
    await session.dispose()
  })

  it('times but does not split the steps of node-llama-cpp’s own path', async () => {
    const saved = process.env.SPECLAB_DIRECT_EVALUATION
    process.env.SPECLAB_DIRECT_EVALUATION = '0'
    const controlled = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1 }).finally(() => {
      if (saved === undefined) delete process.env.SPECLAB_DIRECT_EVALUATION
      else process.env.SPECLAB_DIRECT_EVALUATION = saved
    })
    try {
      const split = await measureTokenSplit(controlled, prompts.slice(0, 1), 8, null)
      expect(split.tokens).toBe(7)
      expect(split.direct).toBe(0)
      expect(split.stepMs?.cells).toBe(7)
      expect(split.decodeMs).toBeNull()
    } finally {
      await controlled.dispose()
    }
  })
})
