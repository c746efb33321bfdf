import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { chooseLlamaBackend, requestedGpu, type GpuBackend, type GpuOption } from '../../electron/engine/model/llama-backend-choice'
import {
  AMX_OFF_FLAGS,
  BUILD_RECIPE,
  buildEnvironment,
  bundleCommit,
  cpuBuildCacheDir,
  cpuBuildKey,
  cpuBuildStatus,
  cpuHasAvx512,
  hasSmallBatchRouting,
  localCpuBuildDir,
  progressOfLine,
  restoreCpuBuild,
  smallBatchMatmulActive,
  storeCpuBuild
} from '../../electron/engine/model/native-cpu-build'
import { describeMachine } from '../../electron/experiments/machine-state'

describe('chooseLlamaBackend: the CPU build never takes a GPU backend away', () => {
  const gpuSets: GpuBackend[][] = [[], ['cuda'], ['vulkan'], ['metal'], ['cuda', 'vulkan']]
  const requests: GpuOption[] = ['auto', false, 'cuda', 'vulkan', 'metal']
  for (const gpuBackends of gpuSets)
    for (const requested of requests)
      for (const cpuBuildInstalled of [false, true])
        it(`gpus [${gpuBackends.join(',')}], asked ${String(requested)}, CPU build ${cpuBuildInstalled ? 'installed' : 'absent'}`, () => {
          const choice = chooseLlamaBackend({ requested, gpuBackends, cpuBuildInstalled })
          if (requested === 'auto' && gpuBackends.length > 0) {
            // A GPU the machine can run: node-llama-cpp's own choice among them, never the CPU.
            expect(choice).toMatchObject({ gpu: 'auto', binary: 'gpu' })
          } else if (requested !== false && requested !== 'auto') {
            expect(choice).toMatchObject({ gpu: requested, binary: 'gpu' })
          } else {
            // Only here does the CPU run the model: the OpenMP build when installed.
            expect(choice.gpu).toBe(false)
            expect(choice.binary).toBe(cpuBuildInstalled ? 'cpu-openmp-build' : 'cpu-prebuilt')
          }
          expect(choice.reason).not.toBe('')
        })

  it('reads NODE_LLAMA_CPP_GPU as node-llama-cpp does', () => {
    expect(requestedGpu(undefined)).toBe('auto')
    expect(requestedGpu('auto')).toBe('auto')
    for (const off of ['false', 'OFF', 'none', 'disable', 'disabled']) expect(requestedGpu(off)).toBe(false)
    expect(requestedGpu('cuda')).toBe('cuda')
    expect(requestedGpu('Vulkan')).toBe('vulkan')
    expect(requestedGpu('metal')).toBe('metal')
  })
})

describe('progressOfLine', () => {
  it('reads ninja, make and the clone', () => {
    expect(progressOfLine('[76/152] Building CXX object llama.cpp/src/llama.cpp.o')?.fraction).toBeCloseTo(0.05 + 0.95 * 0.5)
    expect(progressOfLine('[ 40%] Building C object ggml.c.o')?.fraction).toBeCloseTo(0.05 + 0.95 * 0.4)
    expect(progressOfLine('\x1b[2K\x1b[1A\x1b[2K\x1b[GCloning ggml-org/llama.cpp (local bundle)      60%')?.fraction).toBeCloseTo(0.03)
    expect(progressOfLine('◷ Compiling llama.cpp')).toEqual({ fraction: 0.05, stage: 'configuring' })
    expect(progressOfLine('-- Found OpenMP: TRUE (found version "4.5")')).toBeNull()
  })
})

describe('the CPU build cache', () => {
  const commit = 'a'.repeat(40)
  let root: string
  let packageDir: string
  const savedCacheDir = process.env.SPECLAB_CACHE_DIR

  function fakeLocalBuild(folder: string, addon: string): void {
    fs.mkdirSync(path.join(folder, 'Release'), { recursive: true })
    fs.writeFileSync(path.join(folder, 'Release', 'llama-addon.node'), addon)
    fs.writeFileSync(path.join(folder, 'Release', '_nlcBuildMetadata.json'), '{}')
    fs.writeFileSync(path.join(folder, 'buildDone.status'), '')
    fs.mkdirSync(path.join(folder, 'CMakeFiles'), { recursive: true })
    fs.writeFileSync(path.join(folder, 'CMakeFiles', 'object.o'), 'cmake objects are not kept')
  }

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-native-'))
    process.env.SPECLAB_CACHE_DIR = path.join(root, 'cache')
    // A node-llama-cpp package as the build needs it: its version and the llama.cpp bundle's header.
    packageDir = path.join(root, 'node_modules', 'node-llama-cpp')
    fs.mkdirSync(path.join(packageDir, 'llama'), { recursive: true })
    fs.writeFileSync(path.join(packageDir, 'package.json'), JSON.stringify({ version: '9.9.9' }))
    fs.writeFileSync(path.join(packageDir, 'llama', 'gitRelease.bundle'), `# v2 git bundle\n${commit} refs/tags/v1\n${commit} HEAD\n\nPACK…`)
  })
  afterEach(() => {
    if (savedCacheDir === undefined) delete process.env.SPECLAB_CACHE_DIR
    else process.env.SPECLAB_CACHE_DIR = savedCacheDir
    fs.rmSync(root, { recursive: true, force: true })
  })

  it('reads the commit from the bundle header without git', () => {
    expect(bundleCommit(path.join(packageDir, 'llama', 'gitRelease.bundle'))).toBe(commit)
    fs.writeFileSync(path.join(root, 'not-a-bundle'), 'hello')
    expect(() => bundleCommit(path.join(root, 'not-a-bundle'))).toThrow(/not a git bundle/)
  })

  it('keys the cache by llama.cpp commit, node-llama-cpp version, platform, architecture and CPU', () => {
    const key = cpuBuildKey(packageDir)
    expect(key).toMatchObject({ commit, nodeLlamaCpp: '9.9.9', platform: process.platform, arch: process.arch })
    expect(key.cpuHash).toMatch(/^[0-9a-f]{12}$/)
    // This package has no addon source, so SpecLab's addon patch does not apply: p0; and its commit is not the one the
    // ggml barrier patch is for: g0 (addon-patch.test.ts: p1 and g1 where they apply).
    expect(key.addonPatch).toBe(0)
    expect(key.ggmlPatch).toBe(0)
    expect(path.basename(cpuBuildCacheDir(key))).toBe(`${commit.slice(0, 12)}-9.9.9-${process.platform}-${process.arch}-${key.cpuHash}-r${BUILD_RECIPE}-p0-g0`)
    expect(cpuBuildCacheDir(key).startsWith(path.join(root, 'cache', 'native'))).toBe(true)
  })

  it('stores a build, survives node_modules being wiped, and restores it where node-llama-cpp looks', () => {
    expect(cpuBuildStatus(packageDir)).toMatchObject({ cached: false, installed: null })
    fakeLocalBuild(localCpuBuildDir(packageDir), 'addon v1')
    // A local build SpecLab did not make is someone else's: reported, not claimed.
    expect(cpuBuildStatus(packageDir).installed).toBe('other')

    storeCpuBuild(packageDir, 321)
    const status = cpuBuildStatus(packageDir)
    expect(status).toMatchObject({ cached: true, installed: 'speclab' })
    expect(JSON.parse(fs.readFileSync(path.join(status.cacheDir, 'entry.json'), 'utf8'))).toMatchObject({ commit, buildSeconds: 321 })
    // Only what node-llama-cpp loads is kept, not cmake's objects.
    expect(fs.existsSync(path.join(status.cacheDir, 'build', 'CMakeFiles'))).toBe(false)

    // `npm ci`: node_modules goes, the cache stays.
    fs.rmSync(path.join(packageDir, 'llama', 'localBuilds'), { recursive: true })
    expect(cpuBuildStatus(packageDir)).toMatchObject({ cached: true, installed: null })
    restoreCpuBuild(packageDir)
    expect(cpuBuildStatus(packageDir).installed).toBe('speclab')
    expect(fs.readFileSync(path.join(localCpuBuildDir(packageDir), 'Release', 'llama-addon.node'), 'utf8')).toBe('addon v1')
    expect(fs.readdirSync(path.dirname(localCpuBuildDir(packageDir)))).toEqual([path.basename(localCpuBuildDir(packageDir))])
  })

  it('does not hand a build to another llama.cpp commit, and calls its own build for another key stale', () => {
    fakeLocalBuild(localCpuBuildDir(packageDir), 'addon v1')
    storeCpuBuild(packageDir, 1)
    const other = 'b'.repeat(40)
    fs.writeFileSync(path.join(packageDir, 'llama', 'gitRelease.bundle'), `# v2 git bundle\n${other} HEAD\n\n`)
    // SpecLab's build for the old commit: not installed for this one (the install replaces it), but what loads now.
    expect(cpuBuildStatus(packageDir)).toMatchObject({ cached: false, installed: null, stale: true })
    expect(() => restoreCpuBuild(packageDir)).toThrow(/no cached CPU build/)
  })

  it('names the compilers with the AMX-off flags on x64 Linux and macOS, keeping the user’s own compiler, and nowhere else', () => {
    const onPath = (tool: string) => ['gcc', 'g++'].includes(tool)
    const env = buildEnvironment({ PATH: '/bin' }, 'linux', 'x64', onPath)
    expect(env).toMatchObject({ CC: `gcc ${AMX_OFF_FLAGS}`, CXX: `g++ ${AMX_OFF_FLAGS}`, PATH: '/bin', NODE_LLAMA_CPP_GPU: 'false', ELECTRON_RUN_AS_NODE: '1' })
    expect(buildEnvironment({ CXX: 'clang++-18' }, 'darwin', 'x64', onPath).CXX).toBe(`clang++-18 ${AMX_OFF_FLAGS}`)
    expect(buildEnvironment({ CC: 'gcc-12' }, 'linux', 'arm64', onPath).CC).toBe('gcc-12')
    expect(buildEnvironment({}, 'win32', 'x64', onPath).CXX).toBeUndefined()
  })
})

describe('run records name the binary', () => {
  it('describeMachine says which llama.cpp ran', () => {
    const base = { cpus: 2, loadBefore: [0.5, 0.5, 0.5], loadAfter: null, governor: null, busy: false }
    expect(describeMachine({ ...base, native: { build: 'localBuild', openmp: true, release: 'v1', gpu: 'cpu' } })).toBe(
      'load 0.50 on 2 cores, llama.cpp localBuild cpu with OpenMP'
    )
    expect(describeMachine({ ...base, native: { build: 'prebuilt', openmp: false, release: 'v1', gpu: 'cpu' } })).toContain('prebuilt cpu without OpenMP')
    expect(describeMachine({ ...base, native: null })).toBe('load 0.50 on 2 cores')
    // The evaluation path is named only when it is not the default (direct-evaluation.ts).
    const native = { build: 'localBuild', openmp: true, release: 'v1', gpu: 'cpu', libuvWorkers: 4 }
    expect(describeMachine({ ...base, native: { ...native, directEvaluation: true } })).toBe('load 0.50 on 2 cores, llama.cpp localBuild cpu with OpenMP, 4 libuv workers')
    expect(describeMachine({ ...base, native: { ...native, directEvaluation: false } })).toContain(', every evaluation through controlledEvaluate')
    expect(describeMachine({ ...base, native: { ...native, directEvaluation: true, jsThreadEvaluation: true, topLogitsRead: true } })).toBe(
      'load 0.50 on 2 cores, llama.cpp localBuild cpu with OpenMP, 4 libuv workers, evaluations alone on the JS thread, the one-pass top-k read'
    )
    // Without the direct path no evaluation reads through SpecLab's top-k read.
    expect(describeMachine({ ...base, native: { ...native, directEvaluation: false, topLogitsRead: true } })).not.toContain('top-k read')
    expect(describeMachine({ ...base, native: { ...native, smallBatchMatmul: true } })).toBe(
      "load 0.50 on 2 cores, llama.cpp localBuild cpu with OpenMP, 4 libuv workers, small f16 batches on ggml's kernel"
    )
    expect(describeMachine({ ...base, native: { ...native, smallBatchMatmul: false } })).not.toContain('batches')
  })

  it('small f16 batches on ggml’s kernel only with SpecLab’s CPU build, and not when SPECLAB_SMALL_BATCH_MATMUL=0', () => {
    expect(smallBatchMatmulActive('prebuilt', false, {})).toBe(false)
    expect(smallBatchMatmulActive('localBuild', 'cuda', {})).toBe(false)
    expect(smallBatchMatmulActive('localBuild', false, { SPECLAB_SMALL_BATCH_MATMUL: '0' })).toBe(false)
    // The patch is compiled for AVX-512 only: Linux's lower-case flag, macOS's upper-case feature, not a longer name.
    expect(cpuHasAvx512('fpu sse2 avx2 avx512f avx512dq')).toBe(true)
    expect(cpuHasAvx512('FPU SSE2 AVX2 AVX512F')).toBe(true)
    expect(cpuHasAvx512('fpu sse2 avx2 fma')).toBe(false)
    expect(cpuHasAvx512('avx512fp16')).toBe(false)
  })

  it('tells a ggml CPU library with the small-batch routing compiled in by the switch it reads', () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-ggml-lib-'))
    try {
      expect(hasSmallBatchRouting(folder)).toBe(false)
      fs.writeFileSync(path.join(folder, 'libggml-cpu.so'), Buffer.from('\x7fELF … ggml_barrier … sched_yield'))
      expect(hasSmallBatchRouting(folder)).toBe(false)
      fs.writeFileSync(path.join(folder, 'libggml-cpu.so'), Buffer.from('\x7fELF … getenv SPECLAB_SMALL_BATCH_MATMUL …'))
      expect(hasSmallBatchRouting(folder)).toBe(true)
    } finally {
      fs.rmSync(folder, { recursive: true, force: true })
    }
  })
})
