/**
 * Greedy losslessness of the draft-length policies on real GGUF models (node-llama-cpp, CPU, one thread):
 * target stories-target5M-f32 ← draft stories260K-f32, 3 story prompts × 48 tokens. Each of `sd-heuristic`,
 * `sd-pmin`, `svip` and `self-verify`, and parallel drafting (`pearl`, the `parallel` option; default parameters and other settings, --gamma 5, one newRun per
 * method so state that persists across prompts is exercised) must reproduce `ar`'s greedy tokens. A divergence is tolerated only where the
 * target's top two tokens are within NEAR_TIE of each other at the first differing position (batched and
 * single-token evaluation may round differently) and the two outputs chose exactly those two tokens — the rule of
 * expectSameOrNearTie (test/helpers/gguf.ts).
 *
 * Models: $SPECLAB_MODELS, default ../shared/models next to the project.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { prepare } from '../../electron/engine/methods/prepare'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { entropy } from '../../electron/engine/sampling/distribution'
import { decode, makeRequest } from '../helpers/decode'
import { describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/policies-gguf.test.ts', [TARGET, DRAFT])

const MAX_TOKENS = 48
const GAMMA = 5
/** Defaults first, then settings that draft longer or differently (the defaults stop early on this pair). */
const METHODS: [string, Record<string, number | boolean>][] = [
  ['sd-heuristic', {}],
  ['sd-pmin', {}],
  ['svip', {}],
  ['self-verify', {}],
  ['sd-heuristic', { 'heuristic.transient': true }],
  ['sd-pmin', { 'pmin.p': 0.3, 'pmin.min': 2, 'pmin.max': 8 }],
  ['svip', { 'svip.h': 0.5 }],
  ['self-verify', { 'selfverify.maxDraft': 4 }],
  ['svip', { 'svip.warpedEntropy': true }],
  ['sd-heuristic', { 'heuristic.maxDraft': 6 }],
  // Parallel drafting (decoders/parallel-drafting.ts): the draft's and the target's contexts evaluate at once.
  ['pearl', {}],
  ['sd', { 'sd.parallel': true }],
  ['svip', { 'svip.parallel': true, 'svip.h': 0.5 }]
]

const PROMPTS = [
  'Once upon a time, there was a little dog named Max.',
  'Lily went to the park with her mom. She saw a big red ball',
  'Tom had a toy car. One day, the car broke and Tom was sad.'
]

withModels('draft-length policies on GGUF models: greedy output = greedy ar (target5M ← 260K)', () => {
  let target: LlamaCppModel
  let draft: LlamaCppModel
  const ar: number[][] = []

  const promptTokens = (text: string): number[] => [target.info.bos!, ...target.tokenize(text)]
  const request = (text: string) => makeRequest({ promptTokens: promptTokens(text), maxTokens: MAX_TOKENS, warp: GREEDY_64 })

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512 })
    draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, contextSize: 512 })
    for (const prompt of PROMPTS) ar.push((await decode(autoregressive, { target }, request(prompt))).tokens)
  })

  afterAll(async () => {
    await draft?.dispose()
    await target?.dispose()
  })

  it.each(METHODS)('%s %o (γ = 5), 3 prompts × 48 tokens', async (id, params) => {
    const run = prepare(id, { gamma: GAMMA, params }).newRun()
    const outcomes: string[] = []
    const steps: StepRecord[] = []
    for (const [i, prompt] of PROMPTS.entries()) {
      const result = await decode(run(), { target, draft }, request(prompt))
      expect(ar[i].length).toBeGreaterThan(0)
      outcomes.push(await expectSameOrNearTie(id, target, promptTokens(prompt), ar[i], result.tokens))
      steps.push(...result.steps)
    }
    const proposed = steps.reduce((n, s) => n + s.proposed, 0)
    const accepted = steps.reduce((n, s) => n + s.accepted, 0)
    const reasons: Record<string, number> = {}
    for (const s of steps) reasons[String(s.decision?.reason)] = (reasons[String(s.decision?.reason)] ?? 0) + 1
    console.log(
      `${id} ${JSON.stringify(params)}: ${steps.length} rounds, acceptance ${(accepted / proposed).toFixed(3)}, ` +
        `mean draft ${(proposed / steps.length).toFixed(2)}, reasons ${JSON.stringify(reasons)}, outcomes ${outcomes.join(' ')}`
    )
    // Near-ties are rare: most prompts must match token for token; the comparison is not vacuous.
    expect(outcomes.filter((o) => o === 'identical').length).toBeGreaterThanOrEqual(PROMPTS.length - 1)
    expect(accepted).toBeGreaterThan(0)
    expect(steps.some((s) => s.resampled)).toBe(true)
    // Every step records the policy's explanation.
    for (const s of steps) expect(s.decision).not.toBeNull()
    if (id !== 'sd-heuristic' && id !== 'sd' && id !== 'pearl') for (const s of steps) expect(s.threshold).not.toBeNull()
    if (id === 'pearl' || params['sd.parallel'] || params['svip.parallel']) expect(steps.some((s) => Number(s.decision?.carried) > 0)).toBe(true)
    if (id === 'svip' || id === 'self-verify') {
      const source = params['svip.warpedEntropy'] === true || params['selfverify.warpedEntropy'] === true ? 'warped' : 'full'
      for (const s of steps) expect(s.decision?.entropySource).toBe(source)
    }
    if (params['heuristic.maxDraft'] === 6) for (const s of steps) expect(s.proposed).toBeLessThanOrEqual(6)
  })

  it('fullEntropy (svip / self-verify drafts): H of the whole-vocabulary T = 1 softmax; the warped q is unchanged', async () => {
    const tokens = promptTokens(PROMPTS[1])
    const warped = { temperature: 0.7, topK: 64, topP: 1 }
    const plain = await draft.createSession(warped)
    const withEntropy = await draft.createSession(warped, { fullEntropy: true })
    const whole = await draft.createSession({ temperature: 1, topK: 0, topP: 1 })
    try {
      // One after the other: the same batch shapes, so the same logits bit for bit.
      const a = await plain.append(tokens, 1)
      const b = await withEntropy.append(tokens, 1)
      const w = await whole.append(tokens, 1)
      expect(b).toHaveLength(tokens.length - 1)
      let gap = 0
      for (let i = 0; i < a.length; i++) {
        expect(a[i].fullEntropy).toBeUndefined()
        expect(Array.from(b[i].ids)).toEqual(Array.from(a[i].ids))
        expect(Array.from(b[i].probs)).toEqual(Array.from(a[i].probs))
        expect(w[i].ids.length).toBe(draft.info.vocabularySize)
        expect(b[i].fullEntropy).toBeCloseTo(entropy(w[i]), 9)
        gap = Math.max(gap, Math.abs(b[i].fullEntropy! - entropy(b[i])))
      }
      // The warped entropy is a different number here (temperature 0.7 and top-64 of 512 tokens).
      expect(gap).toBeGreaterThan(0.1)
    } finally {
      for (const session of [plain, withEntropy, whole]) await session.dispose()
    }
  })
})
