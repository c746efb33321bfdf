/**
 * SpecLab's small-batch patch (electron/engine/model/ggml-small-batch-patch.ts): with SpecLab's CPU build on a CPU
 * with AVX-512, a verification of up to 16 positions against f16 weights runs on ggml's own kernel — the single
 * token's — so, in a fresh sequence, a batch's distributions are bit-identical to its positions evaluated one at a time,
 * as `ar` evaluates them (test/fixtures/batch-against-single.ts on the inflated f16 target, whole vocabulary).
 * Negative control: the same process with SPECLAB_SMALL_BATCH_MATMUL=0 (tinyBLAS's tiles, llama.cpp's choice) records
 * the routing off and its batch differs from the single positions.
 * Runs record whether the routing was in (machine.native.smallBatchMatmul). And on that routed target, greedy `sd`
 * and `sd-pmin` reproduce greedy `ar` (the near-tie rule of expectSameOrNearTie): the routed verifications decide
 * what a real decode keeps.
 */
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { prepare } from '../../electron/engine/methods/prepare'
import { loadLlamaModel, nativeBackend, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { cpuBuildStatus, cpuHasAvx512 } from '../../electron/engine/model/native-cpu-build'
import { decode, makeRequest } from '../helpers/decode'
import { describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-inflated-78M-f16.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/small-batch-gguf.test.ts', [TARGET, DRAFT])
const root = path.resolve(import.meta.dirname, '../..')

interface Comparison {
  binary: string | null
  smallBatchMatmul: boolean
  identical: boolean
  largestDifference: number
}

function compare(env: NodeJS.ProcessEnv): Comparison {
  const result = spawnSync(path.join(root, 'node_modules/.bin/tsx'), [path.join(root, 'test/fixtures/batch-against-single.ts'), modelPath(TARGET)], {
    cwd: root,
    env,
    encoding: 'utf8'
  })
  expect(result.status, result.stderr).toBe(0)
  return JSON.parse(result.stdout.trim().split('\n').pop()!) as Comparison
}

withModels('small f16 batches on ggml’s kernel', () => {
  it('a batch’s distributions are its single positions’, bit for bit, where the routing is in; tinyBLAS’s are not', async () => {
    const status = cpuBuildStatus()
    const { SPECLAB_SMALL_BATCH_MATMUL: _setting, ...env } = process.env
    const routed = compare(env)
    const patchedBuild = status.installed === 'speclab' && status.key.ggmlPatch >= 2 && cpuHasAvx512()
    const build = `binary ${routed.binary}, build ${status.installed ?? (status.stale ? 'stale' : 'none')}, ggml patch ${status.key.ggmlPatch}`
    expect(routed.smallBatchMatmul, build).toBe(patchedBuild && routed.binary === 'cpu-openmp-build')
    if (!routed.smallBatchMatmul) return
    expect(routed.identical, `largest difference ${routed.largestDifference}`).toBe(true)

    const tiles = compare({ ...env, SPECLAB_SMALL_BATCH_MATMUL: '0' })
    expect(tiles.smallBatchMatmul).toBe(false)
    expect(tiles.identical).toBe(false)
    expect(tiles.largestDifference).toBeGreaterThan(0)
  }, 120_000)

  describe('greedy decodes on the routed target', () => {
    let target: LlamaCppModel
    let draft: LlamaCppModel
    beforeAll(async () => {
      target = await loadLlamaModel(modelPath(TARGET), { threads: 2, batchThreads: 2, contextSize: 256, sequences: 4 })
      draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, batchThreads: 1, contextSize: 256, sequences: 4 })
    })
    afterAll(async () => {
      await draft?.dispose()
      await target?.dispose()
    })

    const PROMPTS = ['Once upon a time, there was a little girl named Lily.', 'The dog ran to the park and', 'Tom had a big red ball. One day']
    for (const [method, settings] of [
      ['sd', { gamma: 5, params: {} }],
      ['sd-pmin', { gamma: 5, params: { 'pmin.p': 0.3, 'pmin.max': 8 } }]
    ] as const) {
      it(`${method} = ar, ${PROMPTS.length} prompts × 48 tokens`, async () => {
        const native = await nativeBackend()
        console.info(`${method} on the inflated f16 target; small f16 batches on ggml's kernel: ${native.smallBatchMatmul === true}`)
        for (const prompt of PROMPTS) {
          const promptTokens = [target.info.bos!, ...target.tokenize(prompt)]
          const request = () => makeRequest({ promptTokens, maxTokens: 48, warp: GREEDY_64 })
          const ar = await decode(autoregressive, { target }, request())
          const other = await decode(prepare(method, settings).newRun()(), { target, draft }, request())
          expect(other.steps.some((step) => step.proposed > 1), 'the decode verified batches').toBe(true)
          await expectSameOrNearTie(method, target, promptTokens, ar.tokens, other.tokens)
        }
      }, 120_000)
    }
  })
})
