/**
 * The CLI's model commands run supervised (electron/cli/supervise.ts): when the process doing the model work dies
 * the way a llama.cpp assertion kills it (SIGABRT), the CLI prints one line, exits 2, and the run is already marked
 * interrupted with its finished prompts kept.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shouldSupervise } from '../../electron/cli/supervise'
import { RunStore } from '../../electron/store/run-store'
import { describeWithModels, modelPath } from '../helpers/gguf'
import { until } from '../helpers/until'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const cli = path.join(root, 'electron/cli.ts')
const TARGET = 'family/stories-target5M-f32.gguf'
const withModels = describeWithModels('test/integration/cli-crash.test.ts', [TARGET])

it('supervises the commands that load models, not the ones that read the database', () => {
  const argv = (...args: string[]) => ['node', 'cli.ts', ...args]
  expect(shouldSupervise(argv('run', '--target', 'x.gguf'), {})).toBe(true)
  expect(shouldSupervise(argv('suite', 'smoke'), {})).toBe(true)
  expect(shouldSupervise(argv('runs'), {})).toBe(false)
  expect(shouldSupervise(argv('show', '1'), {})).toBe(false)
  expect(shouldSupervise(argv('run', '--help'), {})).toBe(false)
  expect(shouldSupervise(argv('run'), { SPECLAB_SUPERVISED: '1' })).toBe(false)
})

withModels('speclab run when the model process aborts', () => {
  let dir: string
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-crash-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('prints one line, exits 2, and the run is interrupted with its finished prompts', async () => {
    const db = path.join(dir, 'runs.sqlite')
    const parent = spawn(process.execPath, ['--import', 'tsx', cli, 'run', '--target', modelPath(TARGET), '--methods', 'ar', '--max-tokens', '400', '--limit', '8', '--temperature', '0', '--db', db], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stderr = ''
    parent.stderr.on('data', (chunk) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => parent.once('exit', (code) => resolve(code)))
    // Wait for a finished prompt, then abort the process that does the model work (the supervised child).
    const deadline = Date.now() + 60_000
    let finished = 0
    while (finished === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200))
      if (!fs.existsSync(db)) continue
      try {
        const peek = RunStore.open(db, { readonly: true })
        finished = peek.listRuns().length > 0 ? peek.getPromptResults(1).filter((r) => r.status === 'done').length : 0
        peek.close()
      } catch {
        // the writer may hold the schema lock while migrating; try again
      }
    }
    expect(finished).toBeGreaterThan(0)
    const child = Number(execFileSync('pgrep', ['-P', String(parent.pid)], { encoding: 'utf8' }).trim().split('\n')[0])
    process.kill(child, 'SIGABRT')
    const code = await exited
    expect(code, stderr).toBe(2)
    const lines = stderr.split('\n').filter((l) => l.startsWith('speclab:'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^speclab: the model process crashed \(SIGABRT\)/)
    const store = RunStore.open(db)
    try {
      expect(store.listRuns()[0].status).toBe('interrupted')
      expect(store.getPromptResults(1).filter((r) => r.status === 'done').length).toBeGreaterThanOrEqual(finished)
    } finally {
      store.close()
    }
  }, 120_000)
})

describe('the supervisor, with a stand-in model process', () => {
  const fixture = path.join(root, 'test/fixtures/supervised-child.ts')
  const start = (mode: string) =>
    spawn(process.execPath, ['--import', 'tsx', fixture], { cwd: root, env: { ...process.env, SPECLAB_FIXTURE: mode }, stdio: ['ignore', 'pipe', 'pipe'] })
  const ended = (child: ChildProcess) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      let stderr = ''
      child.stderr!.on('data', (chunk) => (stderr += chunk))
      child.on('close', (code) => resolve({ code, stderr }))
    })

  it('a second SIGTERM ends a model process that is stuck and ignores the first: one line, exit 143, run interrupted', async () => {
    const parent = start('stuck')
    const done = ended(parent)
    let stderr = ''
    parent.stderr!.on('data', (chunk) => (stderr += chunk))
    await until(() => (stderr.includes('ready') ? true : undefined), 30_000)
    parent.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(parent.exitCode).toBeNull() // forwarded, and the stuck child cannot act on it
    const t0 = Date.now()
    parent.kill('SIGTERM')
    const { code } = await done
    expect(Date.now() - t0).toBeLessThan(5000)
    expect(code).toBe(143)
    expect(stderr.trim().split('\n').slice(1)).toEqual([
      'marked interrupted',
      'speclab: stopped at once on a second SIGTERM; finished prompts are stored, the run is marked interrupted'
    ])
  }, 60_000)

  it('blames a model only when one was being loaded or evaluated', async () => {
    const idle = await ended(start('abort-idle'))
    expect(idle.code).toBe(2)
    expect(idle.stderr).toMatch(/^speclab: the model process crashed \(SIGABRT\) with no model loaded\. Finished prompts are stored; the run is marked interrupted$/m)
    expect(idle.stderr).not.toMatch(/model file/)
    const loading = await ended(start('abort-loading'))
    expect(loading.code).toBe(2)
    expect(loading.stderr).toMatch(/^speclab: the model process crashed \(SIGABRT\) while loading \/models\/x\.gguf — a model file llama\.cpp cannot run\?/m)
  }, 60_000)
})
