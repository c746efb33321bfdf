/**
 * The GPU check's divergence weighing (scripts/gpu-check/divergence.ts) on a real model, on the CPU, where a position
 * evaluated alone and inside a batch agree: the replay of ar's greedy output must make ar's decisions (ar's token is
 * the argmax alone at every position), the gaps alone and in batches must agree to rounding, and a crafted divergence
 * to the runner-up token — what a verification bug would produce — must be weighed a real difference, not a tie.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { argmax } from '../../electron/engine/sampling/distribution'
import { weighDivergence } from '../../scripts/gpu-check/divergence'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const withModels = describeWithModels('test/integration/gpu-check-divergence-gguf.test.ts', [TARGET])

withModels('GPU check: weighing where a greedy output leaves ar’s', () => {
  let model: LlamaCppModel
  let prompt: number[]
  let output: number[]
  let runnerUp: number[]

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1 })
    prompt = [model.info.bos!, ...model.tokenize('Once upon a time, there was a little dog named Max. He liked to')]
    // ar's greedy output and the runner-up token at each position, token by token as ar decodes.
    const session = await model.createSession({ temperature: 0, topK: 64, topP: 1 })
    output = []
    runnerUp = []
    let [next] = await session.append(prompt, prompt.length - 1)
    for (let i = 0; i < 12; i++) {
      output.push(argmax(next!))
      runnerUp.push(next!.ids[1]!)
      ;[next] = await session.append([output[i]!], 0)
    }
    await session.dispose()
  })

  afterAll(async () => {
    await model?.dispose()
  })

  it.each([0, 1, 5, 11])('position %i: ar’s token is the argmax alone, batches agree, the runner-up is no tie', async (position) => {
    const weighed = await weighDivergence(model, prompt, output, runnerUp[position]!, position, 5)
    expect(weighed.ar).toBe(output[position])
    expect(weighed.gapAlone).not.toBeNull()
    expect(weighed.gapAlone!).toBeGreaterThan(0)
    expect(weighed.gapInBatch).toHaveLength(4)
    for (const gap of weighed.gapInBatch) expect(gap!).toBeCloseTo(weighed.gapAlone!, 4)
    expect(weighed.tie).toBe(false)
  })
})
