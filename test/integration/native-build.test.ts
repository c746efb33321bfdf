/**
 * The real CPU build, end to end (opt-in: SPECLAB_TEST_NATIVE_BUILD=1; ~6-15 minutes on 2 cores): scripts/install-native.ts
 * as npm's postinstall runs it, in a project whose node_modules links every package of this checkout except
 * node-llama-cpp, which is a private copy (the build writes into node-llama-cpp's folder; the checkout's own stays
 * untouched). Checks the progress lines, that node-llama-cpp then loads the build (localBuild, libgomp mapped, SpecLab's
 * addon patch in: decodeBatchNow; the ggml barrier patch compiled in) with no option, that npm's addon source and the
 * cloned llama.cpp source are back as they were, and that after
 * node_modules is wiped the next install restores it from the cache in seconds.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cpuHasAvx512, hasSmallBatchRouting } from '../../electron/engine/model/native-cpu-build'

const root = path.resolve(__dirname, '../..')
const enabled = process.env.SPECLAB_TEST_NATIVE_BUILD === '1'
if (!enabled) console.warn('\n(native-build.test.ts: the real CPU build runs only with SPECLAB_TEST_NATIVE_BUILD=1)\n')

let project: string
let packageDir: string

function install(): { status: number | null; lines: string[]; seconds: number } {
  const started = performance.now()
  const result = spawnSync(process.execPath, ['--import', pathToFileURL(path.join(root, 'node_modules/tsx/dist/loader.mjs')).href, path.join(root, 'scripts/install-native.ts')], {
    cwd: project,
    env: { ...process.env, SPECLAB_CACHE_DIR: path.join(project, 'cache'), SPECLAB_NATIVE_BUILD: '1' },
    encoding: 'utf8'
  })
  const lines = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.trim() !== '')
  return { status: result.status, lines, seconds: (performance.now() - started) / 1000 }
}

/** What node-llama-cpp loads in that project with SpecLab's options for the CPU. */
function loadedBinary(): { buildType: string; openmp: boolean; jsThreadCalls: boolean } {
  const probe = path.join(project, 'probe.mjs')
  fs.writeFileSync(
    probe,
    `import fs from 'node:fs'\nimport { getLlama } from 'node-llama-cpp'\nconst llama = await getLlama({ gpu: false })\n` +
      `const jsThreadCalls = typeof llama._bindings.AddonContext.prototype.decodeBatchNow === 'function'\n` +
      `console.log(JSON.stringify({ buildType: llama.buildType, openmp: /libgomp/.test(fs.readFileSync('/proc/self/maps', 'utf8')), jsThreadCalls }))\n`
  )
  const result = spawnSync(process.execPath, [probe], { cwd: project, encoding: 'utf8' })
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!)
}

describe.skipIf(!enabled || process.platform !== 'linux')('the CPU build with OpenMP (real build)', () => {
  beforeAll(() => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-native-build-'))
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'native-build-test', type: 'module' }))
    const modules = path.join(project, 'node_modules')
    fs.mkdirSync(modules)
    const source = fs.realpathSync(path.join(root, 'node_modules'))
    for (const name of fs.readdirSync(source)) {
      if (name === 'node-llama-cpp') continue
      fs.symlinkSync(path.join(source, name), path.join(modules, name))
    }
    packageDir = path.join(modules, 'node-llama-cpp')
    fs.cpSync(path.join(source, 'node-llama-cpp'), packageDir, { recursive: true, verbatimSymlinks: true })
    fs.rmSync(path.join(packageDir, 'llama', 'localBuilds'), { recursive: true, force: true })
  })
  afterAll(() => {
    if (project) fs.rmSync(project, { recursive: true, force: true })
  })

  it('builds with progress, and node-llama-cpp loads the build with OpenMP and the addon patch', { timeout: 40 * 60_000 }, () => {
    const addonSource = path.join('llama', 'addon', 'AddonContext.cpp')
    const npmSource = fs.readFileSync(path.join(packageDir, addonSource))
    const first = install()
    expect(first.status, first.lines.join('\n')).toBe(0)
    expect(first.lines[0]).toMatch(/^speclab: building llama\.cpp's CPU backend with OpenMP/)
    const percents = first.lines.flatMap((line) => /CPU build (\d+)%/.exec(line)?.[1] ?? []).map(Number)
    expect(percents.length).toBeGreaterThanOrEqual(5)
    expect(percents).toEqual([...percents].sort((a, b) => a - b))
    expect(first.lines.at(-1)).toMatch(/CPU backend with OpenMP built in .*; cached in /)
    expect(loadedBinary()).toEqual({ buildType: 'localBuild', openmp: true, jsThreadCalls: true })
    expect(fs.readFileSync(path.join(packageDir, addonSource)).equals(npmSource), 'npm’s addon source is put back').toBe(true)
    // SpecLab's ggml barrier patch: compiled in (its wait yields: the upstream OpenMP build never calls sched_yield),
    // and the llama.cpp source node-llama-cpp cloned is put back.
    const ggmlCpu = path.join(packageDir, 'llama', 'localBuilds', `linux-${process.arch}`, 'Release', 'libggml-cpu.so')
    expect(fs.readFileSync(ggmlCpu).includes('sched_yield'), 'the ggml barrier patch is in the build').toBe(true)
    const clonedSource = fs.readFileSync(path.join(packageDir, 'llama', 'llama.cpp', 'ggml', 'src', 'ggml-cpu', 'ggml-cpu.c'), 'utf8')
    expect(clonedSource).toContain('#pragma omp barrier')
    expect(clonedSource).not.toContain("SpecLab's patch")
    // SpecLab's small-batch patch: its switch is read where the CPU has AVX-512 (the patch's condition), and the
    // cloned sgemm.cpp is put back.
    const avx512 = cpuHasAvx512()
    expect(hasSmallBatchRouting(path.dirname(ggmlCpu)), 'the small-batch patch is in the build').toBe(avx512)
    const clonedSgemm = fs.readFileSync(path.join(packageDir, 'llama', 'llama.cpp', 'ggml', 'src', 'ggml-cpu', 'llamafile', 'sgemm.cpp'), 'utf8')
    expect(clonedSgemm).not.toContain("SpecLab's patch")
  })

  it('is restored from the cache after node_modules is wiped', { timeout: 5 * 60_000 }, () => {
    fs.rmSync(path.join(packageDir, 'llama', 'localBuilds'), { recursive: true, force: true })
    fs.rmSync(path.join(packageDir, 'llama', 'llama.cpp'), { recursive: true, force: true })
    expect(loadedBinary()).toMatchObject({ buildType: 'prebuilt', jsThreadCalls: false })
    const again = install()
    expect(again.status).toBe(0)
    expect(again.lines).toEqual([expect.stringContaining('installed the CPU backend with OpenMP from the cache')])
    expect(again.seconds).toBeLessThan(30)
    expect(loadedBinary()).toEqual({ buildType: 'localBuild', openmp: true, jsThreadCalls: true })
  })
})
