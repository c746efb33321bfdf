/**
 * The top-k logits path (llama-cpp-model.ts generateNextFor): a top-k session asks node-llama-cpp for llama.cpp's
 * top-k sampler so that the vocabulary is not fully sorted per position. Whatever that chain does, the warped
 * distributions must be exactly those a whole-vocabulary transfer gives — same ids, same probabilities — at several
 * temperatures and top-k / top-p settings, for single tokens and for a batch (verification). A chain that scaled the
 * logits (a temperature ≠ 1) or cut before k would change them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const withModels = describeWithModels('test/integration/logits-topk-gguf.test.ts', [TARGET])

const WARPS: WarpConfig[] = [
  { temperature: 0, topK: 64, topP: 1 },
  { temperature: 0.7, topK: 16, topP: 1 },
  { temperature: 1.3, topK: 40, topP: 0.9 },
  { temperature: 1, topK: 1, topP: 1 }
]

withModels('top-k logits through llama.cpp’s top-k sampler = the whole vocabulary, warped', () => {
  let topK: LlamaCppModel
  let full: LlamaCppModel

  beforeAll(async () => {
    topK = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1 })
    full = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1, fullVocabulary: true })
  })

  afterAll(async () => {
    await topK?.dispose()
    await full?.dispose()
  })

  it.each(WARPS.map((w) => [JSON.stringify(w), w] as const))('%s: identical ids and probabilities per position', async (_label, warp) => {
    const prompt = [topK.info.bos!, ...topK.tokenize('Once upon a time, there was a little dog named Max. He liked to')]
    const batch = topK.tokenize(' play in the park with his')
    const distributions = async (model: LlamaCppModel) => {
      const session = await model.createSession(warp)
      try {
        // Every prompt position one by one is too slow; the prompt's last position, then a batch of six.
        const first = await session.append(prompt, prompt.length - 1)
        const rest = await session.append(batch, 0)
        return [...first, ...rest]
      } finally {
        await session.dispose()
      }
    }
    const ours = await distributions(topK)
    const reference = await distributions(full)
    expect(ours).toHaveLength(1 + batch.length)
    ours.forEach((d, i) => {
      expect([...d.ids], `position ${i}`).toEqual([...reference[i]!.ids])
      d.probs.forEach((p, j) => expect(p).toBeCloseTo(reference[i]!.probs[j]!, 12))
    })
  })
})
