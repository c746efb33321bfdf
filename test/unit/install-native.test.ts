/**
 * scripts/install-native.ts, the postinstall step that installs the CPU build of llama.cpp: run as a child process
 * (as npm runs it, in the project's directory) against a fake project whose node-llama-cpp answers the GPU question
 * from FAKE_GPUS, with the cache in a temp dir. The real build is not run here (minutes; see
 * test/integration/native-build.test.ts, opt-in).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cpuBuildStatus, localCpuBuildDir, storeCpuBuild } from '../../electron/engine/model/native-cpu-build'

const root = path.resolve(__dirname, '../..')
const tsxLoader = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href
let project: string
let packageDir: string
let cache: string

beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-install-native-'))
  cache = path.join(project, 'cache')
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'fake-project' }))
  packageDir = path.join(project, 'node_modules', 'node-llama-cpp')
  fs.mkdirSync(path.join(packageDir, 'llama'), { recursive: true })
  fs.mkdirSync(path.join(packageDir, 'dist'), { recursive: true })
  fs.writeFileSync(
    path.join(packageDir, 'package.json'),
    JSON.stringify({ name: 'node-llama-cpp', version: '9.9.9', type: 'module', exports: { '.': './dist/index.js' } })
  )
  fs.writeFileSync(path.join(packageDir, 'dist', 'index.js'), 'export async function getLlamaGpuTypes() { return [...JSON.parse(process.env.FAKE_GPUS ?? "[]"), false] }\n')
  fs.writeFileSync(path.join(packageDir, 'llama', 'gitRelease.bundle'), `# v2 git bundle\n${'c'.repeat(40)} HEAD\n\n`)
})
afterEach(() => fs.rmSync(project, { recursive: true, force: true }))

function run(env: Record<string, string> = {}, args: string[] = []) {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, SPECLAB_CACHE_DIR: cache, ...env }
  for (const name of ['SPECLAB_NATIVE_BUILD', 'NODE_LLAMA_CPP_GPU', 'npm_lifecycle_event']) if (!(name in env)) delete childEnv[name]
  // tsx from SpecLab's node_modules (the fake project has none), the script in SpecLab's scripts/.
  const result = spawnSync(process.execPath, ['--import', tsxLoader, path.join(root, 'scripts', 'install-native.ts'), ...args], {
    cwd: project,
    env: childEnv,
    encoding: 'utf8'
  })
  const lines = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.trim() !== '')
  return { status: result.status, lines }
}

function fakeBuild(folder: string): void {
  fs.mkdirSync(path.join(folder, 'Release'), { recursive: true })
  for (const file of ['Release/llama-addon.node', 'Release/_nlcBuildMetadata.json', 'buildDone.status']) fs.writeFileSync(path.join(folder, file), '')
}

describe('install-native.ts', () => {
  it('skips with SPECLAB_NATIVE_BUILD=0, in one line saying what building buys and how', () => {
    const { status, lines } = run({ SPECLAB_NATIVE_BUILD: '0' })
    expect(status).toBe(0)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^speclab: SPECLAB_NATIVE_BUILD=0: .*1\.4x faster.*npm run build:native/)
    expect(fs.existsSync(path.join(packageDir, 'llama', 'localBuilds'))).toBe(false)
  })

  for (const gpus of [['cuda'], ['vulkan'], ['metal']])
    it(`never builds beside a GPU backend (${gpus[0]})`, () => {
      const { status, lines } = run({ FAKE_GPUS: JSON.stringify(gpus), PATH: '' })
      expect(status).toBe(0)
      expect(lines).toEqual([expect.stringContaining(`a GPU backend is available (${gpus[0]})`)])
      expect(fs.existsSync(path.join(packageDir, 'llama', 'localBuilds'))).toBe(false)
    })

  it('without the tools: one line with what to install, the prebuilt binary stays; --strict fails', () => {
    const { status, lines } = run({ PATH: path.join(project, 'empty-bin') })
    expect(status).toBe(0)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/using node-llama-cpp's prebuilt CPU binary; .*1\.4x faster.*missing cmake, a C\+\+ compiler/)
    expect(lines[0]).toContain('npm run build:native')
    expect(run({ PATH: path.join(project, 'empty-bin') }, ['--strict']).status).toBe(1)
  })

  it('restores the cached build after node_modules was wiped, with no tools needed', () => {
    process.env.SPECLAB_CACHE_DIR = cache
    try {
      fakeBuild(localCpuBuildDir(packageDir))
      storeCpuBuild(packageDir, 300)
      fs.rmSync(path.join(packageDir, 'llama', 'localBuilds'), { recursive: true })
      const { status, lines } = run({ PATH: '' })
      expect(status).toBe(0)
      expect(lines).toEqual([expect.stringContaining('installed the CPU backend with OpenMP from the cache')])
      expect(cpuBuildStatus(packageDir).installed).toBe('speclab')
      // Installed: a second install says nothing.
      expect(run({ PATH: '' })).toEqual({ status: 0, lines: [] })
    } finally {
      delete process.env.SPECLAB_CACHE_DIR
    }
  })

  it('replaces its own build made for another key (a stale one) with this key’s, saying so', () => {
    process.env.SPECLAB_CACHE_DIR = cache
    try {
      fakeBuild(localCpuBuildDir(packageDir))
      storeCpuBuild(packageDir, 300)
      // The installed build's marker names another key (an older recipe): SpecLab's own, but not for this one.
      const marker = path.join(localCpuBuildDir(packageDir), 'speclab-cpu-build.json')
      fs.writeFileSync(marker, JSON.stringify({ key: 'cccccccccccc-9.9.9-linux-x64-000000000000-r1' }))
      expect(cpuBuildStatus(packageDir)).toMatchObject({ installed: null, stale: true })
      const { status, lines } = run({ PATH: '' })
      expect(status).toBe(0)
      expect(lines).toEqual([expect.stringContaining('made for another llama.cpp, CPU or build recipe: replacing it'), expect.stringContaining('from the cache')])
      expect(cpuBuildStatus(packageDir)).toMatchObject({ installed: 'speclab', stale: false })
    } finally {
      delete process.env.SPECLAB_CACHE_DIR
    }
  })

  it("leaves a local build it did not make alone", () => {
    fakeBuild(localCpuBuildDir(packageDir))
    const { status, lines } = run({ PATH: '' })
    expect(status).toBe(0)
    expect(lines).toEqual([expect.stringContaining('did not make; it stays in use')])
  })
})
