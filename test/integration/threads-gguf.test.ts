/**
 * Threads per phase (engine/model/llama-cpp-model.ts): a single-token evaluation runs with `threads`, a batch (several
 * tokens, or several sequences decoded together) with `batchThreads` — read back from llama.cpp's context after each
 * decode, so a change in node-llama-cpp's internals (it re-applies the context's thread count before every decode)
 * fails here; loadTrio gives only the target more batch threads, and a run records what the target was loaded with.
 */
import os from 'node:os'
import type { Token } from 'node-llama-cpp'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RAW_WARP } from '../../electron/engine/decoders/session-pool'
import { loadLlamaModel, targetBatchThreadsFor, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { loadTrio, type LoadedTrio } from '../../electron/experiments/models'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/threads-gguf.test.ts', [TARGET, DRAFT])

/** The thread count llama.cpp's context ran its last decode with. */
const lastThreads = (model: LlamaCppModel): number => (model.context as unknown as { _ctx: { getThreads(): number } })._ctx.getThreads()

withModels('threads per phase', () => {
  let model: LlamaCppModel
  let trio: LoadedTrio

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, batchThreads: 2, contextSize: 256, sequences: 2 })
    trio = await loadTrio({ target: modelPath(TARGET), draft: modelPath(DRAFT) }, { threads: 1, contextSize: 256 })
  })
  afterAll(async () => {
    await model?.dispose()
    await trio?.dispose()
  })

  it('one token runs on `threads`, a batch on `batchThreads`, two sequences decoded together count as a batch', async () => {
    expect(model.phaseThreads).toEqual({ threads: 1, batchThreads: 2 })
    const [a, b] = [await model.createSession(RAW_WARP), await model.createSession(RAW_WARP)]
    let bDisposed = false
    try {
      const prompt = [model.info.bos!, ...model.tokenize('Once upon a time')]
      await a.append(prompt, prompt.length - 1)
      expect(lastThreads(model)).toBe(2)
      await a.append([300], 0)
      expect(lastThreads(model)).toBe(1)
      await a.append([301, 302, 303], 0)
      expect(lastThreads(model)).toBe(2)
      await a.append([304], 0)
      expect(lastThreads(model)).toBe(1)
      await b.append([model.info.bos!], 0)
      await Promise.all([a.append([305], 0), b.append([306], 0)])
      expect(lastThreads(model)).toBe(2)
      await a.append([307], 0)
      expect(lastThreads(model)).toBe(1)
      // node-llama-cpp's own predictors (nlc-draft, nlc-lookup) evaluate on `threads`, whatever ran last.
      await a.append([308, 309], 0)
      expect(lastThreads(model)).toBe(2)
      model.useSingleTokenThreads()
      await b.dispose() // (its sequence is the context's second and last)
      bDisposed = true
      const raw = model.context.getSequence()
      try {
        await raw.controlledEvaluate([model.info.bos!, 300, 301] as Token[])
        expect(lastThreads(model)).toBe(1)
      } finally {
        raw.dispose()
      }
    } finally {
      await a.dispose()
      if (!bDisposed) await b.dispose()
    }
  })

  it('loadTrio: the target batches on every core of a ≤ 2-core machine when threads are the default; drafts never', () => {
    const target = trio.models.target as LlamaCppModel
    const draft = trio.models.draft as LlamaCppModel
    expect(target.phaseThreads).toEqual({ threads: 1, batchThreads: targetBatchThreadsFor(1) })
    if (os.cpus().length <= 2) expect(target.phaseThreads.batchThreads).toBe(os.cpus().length)
    expect(draft.phaseThreads).toEqual({ threads: 1, batchThreads: 1 })
    // An explicit thread count other than the default is kept for batches too.
    expect(targetBatchThreadsFor(3)).toBe(3)
  })
})
