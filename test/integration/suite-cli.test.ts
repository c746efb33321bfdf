/**
 * `speclab suite` / `report` / `suites` end to end through the CLI (tsx): the quick smoke suite writes both report
 * files, --json prints the suite run, its cells and the report model, `report <id>` re-renders the same files, a
 * suite killed mid-way (SIGKILL) is marked interrupted with its finished cells kept and resumes, and bad input exits
 * 2 with one line.
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunStore } from '../../electron/store/run-store'
import { SuiteStore } from '../../electron/store/suite-store'
import { killCli } from '../helpers/kill-cli'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const models = process.env.SPECLAB_MODELS ?? path.resolve(root, '../shared/models')
const haveModels = fs.existsSync(path.join(models, 'family/stories-target5M-f32.gguf'))
if (!haveModels) console.warn(`\n!!! suite CLI tests SKIPPED: no shared models at ${models} (set SPECLAB_MODELS) !!!\n`)

const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')

describe.skipIf(!haveModels)('speclab suite / report / suites', () => {
  let dir: string
  const speclab = (...args: string[]) => {
    const result = spawnSync(tsx, [cli, ...args, '--db', path.join(dir, 'runs.sqlite')], { cwd: root, encoding: 'utf8' })
    return { code: result.status, stdout: result.stdout, stderr: result.stderr }
  }
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-suite-cli-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('suite smoke --quick --json writes the HTML and Markdown reports; report <id> re-renders them', () => {
    const out = path.join(dir, 'reports')
    const run = speclab('suite', 'smoke', '--quick', '--json', '--out', out)
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout)
    expect(result.suite).toBe('smoke')
    expect(result.status).toBe('done')
    expect(result.cells).toHaveLength(1)
    expect(result.cells[0]).toMatchObject({ cellKey: 'smoke/stories', status: 'done' })
    expect(result.files.html).toBe(path.join(out, `smoke-${result.suiteRunId}.html`))
    const html = fs.readFileSync(result.files.html, 'utf8')
    const markdown = fs.readFileSync(result.files.markdown, 'utf8')
    expect(html).toMatch(/^<!doctype html>/)
    expect(html).toContain('<svg ')
    expect(markdown).toContain('# Smoke test')
    expect(result.report.sections.map((s: { id: string }) => s.id)).toEqual(['summary', 'speedup', 'gamma', 'categories', 'headlines'])

    fs.rmSync(out, { recursive: true })
    const again = speclab('report', String(result.suiteRunId), '--json', '--out', out)
    expect(again.code, again.stderr).toBe(0)
    const rerendered = JSON.parse(again.stdout)
    expect(rerendered.report).toEqual(result.report)
    expect(fs.readFileSync(rerendered.files.html, 'utf8')).toBe(html)
    expect(fs.readFileSync(rerendered.files.markdown, 'utf8')).toBe(markdown)

    const list = speclab('suites', '--json')
    expect(list.code).toBe(0)
    const suites = JSON.parse(list.stdout)
    expect(suites.suites.map((s: { id: string }) => s.id)).toEqual(['smoke', 'hsddw-ablation', 'svip', 'adaptive-window', 'hierarchy-theory', 'dsbd', 'model-free', 'peer'])
    expect(suites.runs[0]).toMatchObject({ id: result.suiteRunId, suite: 'smoke', status: 'done', cells: 1, finished: 1 })
  })

  it('a suite killed mid-way is marked interrupted, keeps its finished cells, and --resume runs only the rest', async () => {
    const crashDb = path.join(dir, 'crash.sqlite')
    // node --import tsx: no tsx wrapper between us and the CLI (its supervised worker is killCli's business).
    const child = spawn(process.execPath, ['--import', 'tsx', cli, 'suite', 'svip', '--quick', '--db', crashDb], { cwd: root, stdio: 'ignore' })
    const finishedCells = () => {
      if (!fs.existsSync(crashDb)) return new Map<string, number>()
      try {
        const peek = RunStore.open(crashDb, { readonly: true })
        try {
          return new SuiteStore(peek.database).finishedCells(1)
        } finally {
          peek.close()
        }
      } catch {
        return new Map<string, number>() // the writer may hold the schema lock while migrating; try again
      }
    }
    const deadline = Date.now() + 90_000
    let kept = finishedCells()
    while (kept.size === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      kept = finishedCells()
    }
    await killCli(child)
    expect(kept.size).toBeGreaterThan(0)

    const store = RunStore.open(crashDb)
    try {
      const suiteRun = new SuiteStore(store.database).getSuiteRun<unknown, { key: string }[]>(1)!
      expect(suiteRun.status).toBe('interrupted')
      expect(suiteRun.plan.length).toBeGreaterThan(kept.size) // killed before the end
      const stillKept = new SuiteStore(store.database).finishedCells(1)
      for (const [cell, runId] of kept) expect(stillKept.get(cell)).toBe(runId)
    } finally {
      store.close()
    }

    const resumed = spawnSync(tsx, [cli, 'suite', 'svip', '--resume', '1', '--json', '--db', crashDb, '--out', path.join(dir, 'crash-reports')], { cwd: root, encoding: 'utf8' })
    expect(resumed.status, resumed.stderr).toBe(0)
    const result = JSON.parse(resumed.stdout)
    expect(result).toMatchObject({ suiteRunId: 1, status: 'done' })
    expect(result.skipped.slice().sort()).toEqual([...kept.keys()].sort())
    expect(result.executed.some((cell: string) => kept.has(cell))).toBe(false)
    for (const [cell, runId] of kept) expect(result.cells.find((c: { cellKey: string }) => c.cellKey === cell)).toMatchObject({ runId, status: 'done' })
  }, 180_000)

  it('bad input exits 2 with one line', () => {
    for (const args of [
      ['suite', 'nope', '--quick'],
      ['suite', 'svip', '--quick', '--resume'],
      ['report', '999']
    ]) {
      const { code, stderr } = speclab(...args)
      expect(code, args.join(' ')).toBe(2)
      expect(stderr.trim().split('\n')).toHaveLength(1)
      expect(stderr).toMatch(/^speclab: /)
    }
  })
})
