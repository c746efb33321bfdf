/**
 * The CLI's model commands run supervised (electron/cli/supervise.ts): when the process doing the model work dies
 * the way a llama.cpp assertion kills it (SIGABRT), the CLI prints one line, exits 2, and the run is already marked
 * interrupted with its finished prompts kept.
 */
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { shouldSupervise } from '../../electron/cli/supervise'
import { RunStore } from '../../electron/store/run-store'
import { describeWithModels, modelPath } from '../helpers/gguf'

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
