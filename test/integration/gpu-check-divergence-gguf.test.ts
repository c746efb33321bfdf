/**
 * The GPU check's divergence weighing (scripts/gpu-check/divergence.ts) on a real model, on the CPU: ar's own history
 * replayed must make ar's decisions (its token is the argmax at every position), the chunked histories must agree with
 * it to rounding (the CPU's noise is under 0.01 nats), and a crafted divergence to the runner-up token — what a
 * verification bug produces — must be weighed a real difference wherever the runner-up trails by more than the noise.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { argmax, type Distribution } from '../../electron/engine/sampling/distribution'
import { greedyOutput, historiesOf, noiseOf, weighDivergence } from '../../scripts/gpu-check/divergence'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const withModels = describeWithModels('test/integration/gpu-check-divergence-gguf.test.ts', [TARGET])

withModels('GPU check: weighing where a greedy output leaves ar’s', () => {
  let model: LlamaCppModel
  let output: number[]
  let runnerUp: number[]
  let histories: Distribution[][]

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1 })
    const prompt = [model.info.bos!, ...model.tokenize('Once upon a time, there was a little dog named Max. He liked to')]
    // ar's greedy output and the runner-up at each position, token by token as ar decodes.
    const decoded = await greedyOutput(model, prompt, 16)
    output = decoded.output
    runnerUp = decoded.distributions.map((d) => d.ids[1]!)
    histories = await historiesOf(model, prompt, output, 5)
  })

  afterAll(async () => {
    await model?.dispose()
  })

  it('replays ar’s decisions under its own history, and every history covers every position', () => {
    expect(histories).toHaveLength(5)
    for (const history of histories) expect(history).toHaveLength(output.length)
    expect(histories[0]!.map(argmax)).toEqual(output)
    expect(noiseOf(histories, output)).toBeLessThan(0.01)
  })

  it('weighs a divergence to the runner-up a real difference wherever it trails by more than the noise', () => {
    const noise = noiseOf(histories, output)
    const weighed = output.map((_, position) => weighDivergence(histories, output, position, runnerUp[position]!, noise))
    const clear = weighed.filter((w) => w.gap! > 2 * noise)
    expect(clear.length).toBeGreaterThanOrEqual(12)
    for (const w of weighed) {
      expect(w.gap!).toBeGreaterThanOrEqual(0)
      expect(w.gapChunked).toHaveLength(4)
      for (const gap of w.gapChunked) expect(Math.abs(gap! - w.gap!)).toBeLessThanOrEqual(noise + 1e-12)
    }
    for (const w of clear) expect(w.tie).toBe(false)
  })
})
