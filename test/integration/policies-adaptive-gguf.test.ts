/**
 * The four on-the-fly adaptation policies on real GGUF models (node-llama-cpp, CPU, one thread): greedy decoding
 * must reproduce `ar` — target stories-target5M-f32 ← draft stories260K-f32, 3 story prompts × 48 tokens, one
 * run per method (newRun once, so learned state carries from prompt to prompt as in a real run).
 * A divergence is tolerated only where the target's top two tokens are within 0.02 of each other at the first
 * differing position (batched and single-token evaluation may round differently) and the two outputs chose
 * exactly those two tokens — the rule of expectSameOrNearTie (test/helpers/gguf.ts).
 *
 * Models: $SPECLAB_MODELS, default ../shared/models next to the project.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { prepare } from '../../electron/engine/methods/prepare'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { decode, makeRequest } from '../helpers/decode'
import { describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/policies-adaptive-gguf.test.ts', [TARGET, DRAFT])

const MAX_TOKENS = 48
const GAMMA_MAX = 5
const METHODS = ['adaptive-analytic', 'adaptive-fsm', 'adaptive-cache-fsm', 'adaptive-rl'] as const
const PROMPTS = [
  'Once upon a time, there was a little dog named Max.',
  'Lily went to the park with her mom. She saw a big red ball',
  'Tom had a toy car. One day, the car broke and Tom was sad.'
]

withModels('adaptive policies on GGUF models: greedy = ar (target5M-f32 ← 260K-f32)', () => {
  let target: LlamaCppModel
  let draft: LlamaCppModel
  const arTokens: number[][] = []

  const promptTokens = (text: string): number[] => [target.info.bos!, ...target.tokenize(text)]

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512 })
    draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, contextSize: 512 })
    for (const prompt of PROMPTS) {
      const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens: promptTokens(prompt), maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
      expect(ar.tokens.length).toBeGreaterThan(0)
      arTokens.push(ar.tokens)
    }
  })

  afterAll(async () => {
    await draft?.dispose()
    await target?.dispose()
  })

  it('the near-tie rule has power: the draft decoding alone is rejected', async () => {
    const alone = await decode(autoregressive, { target: draft }, makeRequest({ promptTokens: promptTokens(PROMPTS[0]), maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
    await expect(
      expectSameOrNearTie('negative control: ar on the draft', target, promptTokens(PROMPTS[0]), arTokens[0], alone.tokens)
    ).rejects.toThrow(/not a near-tie/)
  })

  for (const method of METHODS) {
    it(`${method} (γ_max ${GAMMA_MAX}): ${PROMPTS.length} prompts × ${MAX_TOKENS} tokens match ar`, async () => {
      const factory = prepare(method, { gamma: GAMMA_MAX, params: method === 'adaptive-rl' ? { 'rl.warmup': 10 } : {} }).newRun()
      const outcomes: string[] = []
      const steps: StepRecord[] = []
      for (const [k, prompt] of PROMPTS.entries()) {
        const result = await decode(factory(), { target, draft }, makeRequest({ promptTokens: promptTokens(prompt), maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
        outcomes.push(await expectSameOrNearTie(method, target, promptTokens(prompt), arTokens[k], result.tokens))
        steps.push(...result.steps)
      }
      const proposed = steps.reduce((n, s) => n + s.proposed, 0)
      const accepted = steps.reduce((n, s) => n + s.accepted, 0)
      const trajectory = steps.map((s) => s.proposed).join(',')
      console.log(`${method}: ${outcomes.join(', ')}; acceptance ${(accepted / proposed).toFixed(3)}; γ ${trajectory}`)
      // Near-ties are rare: most prompts match token for token; the draft was really used and really rejected.
      expect(outcomes.filter((o) => o === 'identical').length).toBeGreaterThanOrEqual(PROMPTS.length - 1)
      expect(accepted).toBeGreaterThan(0)
      expect(steps.some((s) => s.resampled)).toBe(true)
      // Every round records the policy's decision.
      for (const step of steps) expect(step.decision?.gamma, `${method} step ${step.index}`).toBeTypeOf('number')
      expect(new Set(steps.map((s) => s.proposed)).size).toBeGreaterThanOrEqual(2)
    })
  }
})
