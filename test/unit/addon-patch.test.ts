/**
 * SpecLab's patch to node-llama-cpp's addon (electron/engine/model/addon-patch.ts): it applies to the node-llama-cpp
 * this checkout installs, is recognised where a killed build left it applied, refuses another version's source
 * without writing anything, and always puts npm's files back. What the patched build does is checked on the real
 * binary by test/integration/direct-evaluation-gguf.test.ts.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ADDON_PATCH, ADDON_PATCH_REVISION } from '../../electron/engine/model/addon-patch'
import { GGML_BARRIER_PATCH } from '../../electron/engine/model/ggml-barrier-patch'
import { GGML_PATCH_COMMIT, GGML_PATCH_REVISION, GGML_PATCHES } from '../../electron/engine/model/ggml-patches'
import { GGML_SMALL_BATCH_PATCH } from '../../electron/engine/model/ggml-small-batch-patch'
import { cpuBuildCacheDir, cpuBuildKey, nodeLlamaCppDir } from '../../electron/engine/model/native-cpu-build'
import { applySourcePatch, patchedSources } from '../../electron/engine/model/source-patch'

const installed = nodeLlamaCppDir()
const SOURCES = ['llama/addon/AddonContext.cpp', 'llama/addon/AddonContext.h']

describe('the addon patch', () => {
  let copy: string

  beforeEach(() => {
    // A copy of the installed package's parts the patch and the build key read.
    copy = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-addon-patch-'))
    for (const file of [...SOURCES, 'package.json', 'llama/gitRelease.bundle']) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true })
      fs.copyFileSync(path.join(installed, file), path.join(copy, file))
    }
  })
  afterEach(() => fs.rmSync(copy, { recursive: true, force: true }))

  const read = (file: string) => fs.readFileSync(path.join(copy, file), 'utf8')

  it('applies to the installed node-llama-cpp and adds the two calls, then puts npm’s files back', () => {
    const npm = SOURCES.map(read)
    const restore = applySourcePatch(copy, ADDON_PATCH)
    expect(restore, 'the patch no longer applies to this node-llama-cpp: update addon-patch.ts').not.toBeNull()
    expect(read(SOURCES[0]!)).toContain('InstanceMethod("decodeBatchNow", &AddonContext::DecodeBatchNow)')
    expect(read(SOURCES[0]!)).toContain('InstanceMethod("sampleTokenNow", &AddonContext::SampleTokenNow)')
    expect(read(SOURCES[1]!)).toContain('Napi::Value DecodeBatchNow(const Napi::CallbackInfo& info);')
    restore!()
    expect(SOURCES.map(read)).toEqual(npm)
    expect(cpuBuildKey(copy).addonPatch).toBe(ADDON_PATCH_REVISION)
  })

  it('recognises sources a killed build left patched, and restores npm’s text from them', () => {
    const npm = SOURCES.map(read)
    applySourcePatch(copy, ADDON_PATCH) // never restored: the build was killed
    const patched = SOURCES.map(read)
    const restore = applySourcePatch(copy, ADDON_PATCH)
    expect(restore).not.toBeNull()
    expect(SOURCES.map(read)).toEqual(patched)
    restore!()
    expect(SOURCES.map(read)).toEqual(npm)
  })

  it('another version’s source: nothing is written, and the build key says the build is unpatched', () => {
    const foreign = read(SOURCES[0]!).replace('InstanceMethod("sampleToken", &AddonContext::SampleToken),', 'InstanceMethod("sampleToken", &AddonContext::SampleTokenV2),')
    fs.writeFileSync(path.join(copy, SOURCES[0]!), foreign)
    const header = read(SOURCES[1]!)
    expect(patchedSources(copy, ADDON_PATCH)).toBeNull()
    expect(applySourcePatch(copy, ADDON_PATCH)).toBeNull()
    expect(read(SOURCES[0]!)).toBe(foreign)
    expect(read(SOURCES[1]!)).toBe(header)
    expect(cpuBuildKey(copy).addonPatch).toBe(0)
  })
})

/**
 * SpecLab's ggml patches (electron/engine/model/ggml-patches.ts) against the llama.cpp source node-llama-cpp bundles:
 * each applies to that commit's file, changes what it says, and is put back; the build key promises them only for
 * that commit. What the patched build computes is checked on the real binary by
 * test/integration/threads-equivalence-gguf.test.ts (the barrier) and small-batch-gguf.test.ts (small batches).
 */
describe('the ggml patches', () => {
  const GGML_CPU = 'llama/llama.cpp/ggml/src/ggml-cpu/ggml-cpu.c'
  const SGEMM = 'llama/llama.cpp/ggml/src/ggml-cpu/llamafile/sgemm.cpp'
  let copy: string

  beforeEach(() => {
    // The bundled commit's ggml sources where the build puts them (node-llama-cpp's clone of its git bundle).
    copy = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-ggml-patch-'))
    const clone = path.join(copy, 'clone')
    execFileSync('git', ['clone', '--quiet', '--no-checkout', path.join(installed, 'llama', 'gitRelease.bundle'), clone])
    for (const file of [GGML_CPU, SGEMM]) {
      const text = execFileSync('git', ['-C', clone, 'show', `HEAD:${file.replace('llama/llama.cpp/', '')}`], { maxBuffer: 64 * 1024 * 1024 })
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true })
      fs.writeFileSync(path.join(copy, file), text)
    }
    for (const file of ['package.json', 'llama/gitRelease.bundle']) fs.copyFileSync(path.join(installed, file), path.join(copy, file))
    for (const file of SOURCES) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true })
      fs.copyFileSync(path.join(installed, file), path.join(copy, file))
    }
  })
  afterEach(() => fs.rmSync(copy, { recursive: true, force: true }))

  const source = (file: string) => fs.readFileSync(path.join(copy, file), 'utf8')

  it('the barrier: puts ggml’s own yielding barrier in for OpenMP builds, and is put back', () => {
    const upstream = source(GGML_CPU)
    const barrier = (text: string) => text.slice(text.indexOf('void ggml_barrier('), text.indexOf('void ggml_threadpool_chunk_set('))
    expect(barrier(upstream)).toContain('#pragma omp barrier')
    const restore = applySourcePatch(copy, GGML_BARRIER_PATCH)
    expect(restore, 'the patch no longer applies to the bundled llama.cpp: update ggml-barrier-patch.ts').not.toBeNull()
    expect(barrier(source(GGML_CPU))).not.toContain('#pragma omp barrier')
    expect(barrier(source(GGML_CPU))).not.toContain('GGML_USE_OPENMP')
    expect(barrier(source(GGML_CPU))).toContain('sched_yield();')
    restore!()
    expect(source(GGML_CPU)).toBe(upstream)
  })

  it('small batches: f16 products of at most 16 columns leave tinyBLAS before any type is dispatched, and it is put back', () => {
    const upstream = source(SGEMM)
    const dispatch = (text: string) => text.slice(text.indexOf('bool llamafile_sgemm('), text.indexOf('switch (Atype)', text.indexOf('bool llamafile_sgemm(')))
    expect(dispatch(upstream)).not.toContain('GGML_TYPE_F16')
    const restore = applySourcePatch(copy, GGML_SMALL_BATCH_PATCH)
    expect(restore, 'the patch no longer applies to the bundled llama.cpp: update ggml-small-batch-patch.ts').not.toBeNull()
    expect(dispatch(source(SGEMM))).toContain('if (Atype == GGML_TYPE_F16 && n <= 16 && m * k >= 256 * 1024 && speclab_small_batch_matmul())\n        return false;')
    expect(source(SGEMM)).toContain('getenv("SPECLAB_SMALL_BATCH_MATMUL")')
    restore!()
    expect(source(SGEMM)).toBe(upstream)
  })

  it('are all applied by the build and keyed by one revision for the bundled commit', () => {
    expect(GGML_PATCHES.map((patch) => patch.diff)).toEqual([GGML_BARRIER_PATCH, GGML_SMALL_BATCH_PATCH])
    const restores = GGML_PATCHES.map((patch) => applySourcePatch(copy, patch.diff))
    expect(restores.every((restore) => restore !== null)).toBe(true)
    for (const restore of restores.reverse()) restore!()
    const key = cpuBuildKey(copy)
    expect(key.commit).toBe(GGML_PATCH_COMMIT)
    expect(key.ggmlPatch).toBe(GGML_PATCH_REVISION)
    expect(cpuBuildCacheDir(key)).toMatch(new RegExp(`-p${ADDON_PATCH_REVISION}-g${GGML_PATCH_REVISION}$`))
  })
})
