/**
 * SpecLab's small-batch patch (electron/engine/model/ggml-small-batch-patch.ts): with SpecLab's CPU build on a CPU
 * with AVX-512, a verification of up to 16 positions against f16 weights runs on ggml's own kernel — the single
 * token's — so, in a fresh sequence, a batch's distributions are bit-identical to its positions evaluated one at a time,
 * as `ar` evaluates them (test/fixtures/batch-against-single.ts on the inflated f16 target, whole vocabulary).
 * Negative control: the same process with SPECLAB_SMALL_BATCH_MATMUL=0 (tinyBLAS's tiles, llama.cpp's choice) records
 * the routing off and its batch differs from the single positions.
 * Runs record whether the routing was in (machine.native.smallBatchMatmul).
 */
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { expect, it } from 'vitest'
import { cpuBuildStatus, cpuHasAvx512 } from '../../electron/engine/model/native-cpu-build'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-inflated-78M-f16.gguf'
const withModels = describeWithModels('test/integration/small-batch-gguf.test.ts', [TARGET])
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
})
