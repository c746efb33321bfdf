/**
 * `speclab runs export` / `runs import` move runs between databases with nothing lost or duplicated, `show --format
 * md|html` renders a run's report, and `diff A B C` puts three runs side by side — through the CLI, on runs written
 * straight through the stores (test/helpers/stored-runs.ts), so no model is needed.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addStoredRun, seedStoredRuns, storedRunConfig } from '../helpers/stored-runs'
import { RunStore } from '../../electron/store/run-store'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')

let dir: string
let gpuBox: string
let laptop: string
let ids: number[]

function speclab(...args: string[]) {
  const result = spawnSync(tsx, [cli, ...args], { cwd: root, encoding: 'utf8', env: { ...process.env, SPECLAB_DB: '' } })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** Every row of the tables that hang off runs, with ids replaced by what they point at, so two databases compare. */
function contentOf(file: string, runUids?: readonly string[]) {
  const db = new Database(file, { readonly: true })
  try {
    const runs = (db.prepare('SELECT * FROM runs ORDER BY uid').all() as Record<string, unknown>[]).filter((r) => !runUids || runUids.includes(String(r.uid)))
    const uidOfRun = new Map(runs.map((r) => [r.id as number, String(r.uid)]))
    const suiteUid = new Map((db.prepare('SELECT id, uid FROM suite_runs').all() as { id: number; uid: string }[]).map((s) => [s.id, s.uid]))
    const results = (db.prepare('SELECT * FROM prompt_results').all() as Record<string, unknown>[]).filter((r) => uidOfRun.has(r.run_id as number))
    const resultKey = new Map(results.map((r) => [r.id as number, `${uidOfRun.get(r.run_id as number)}/${r.method}/${r.prompt_index}`]))
    const below = (table: string) =>
      (db.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[])
        .filter((r) => resultKey.has(r.result_id as number))
        .map(({ id: _id, result_id, ...rest }) => ({ result: resultKey.get(result_id as number), ...rest }))
        .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)))
    const withoutProvenance = ({ id: _id, suite_run_id, origin_host: _h, origin_db: _d, origin_id: _o, imported_at: _i, ...rest }: Record<string, unknown>) => ({
      ...rest,
      suite: suite_run_id === null ? null : suiteUid.get(suite_run_id as number)
    })
    const suiteRows = [...new Set(runs.map((r) => r.suite_run_id).filter((s) => s !== null))].map((s) => {
      const { id: _id, origin_host: _h, origin_db: _d, origin_id: _o, imported_at: _i, ...rest } = db.prepare('SELECT * FROM suite_runs WHERE id = ?').get(s) as Record<string, unknown>
      return rest
    })
    return {
      runs: runs.map(withoutProvenance),
      suiteRuns: suiteRows,
      promptResults: results.map(({ id: _id, run_id, ...rest }) => ({ run: uidOfRun.get(run_id as number), ...rest })).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
      steps: below('steps'),
      repeats: below('result_repeats'),
      scores: below('result_scores'),
      draftChoices: (db.prepare('SELECT * FROM draft_choices').all() as Record<string, unknown>[])
        .filter((r) => uidOfRun.has(r.run_id as number))
        .map(({ id: _id, run_id, ...rest }) => ({ run: uidOfRun.get(run_id as number), ...rest }))
    }
  } finally {
    db.close()
  }
}

const count = (file: string, table: string) => {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe('speclab runs export / import, show --format, diff of three runs', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-runs-move-'))
    gpuBox = path.join(dir, 'gpu-box.sqlite')
    laptop = path.join(dir, 'laptop.sqlite')
    ids = seedStoredRuns(gpuBox)
    // The laptop has runs of its own, so imported ones get other ids than they had.
    const store = RunStore.open(laptop)
    addStoredRun(store, storedRunConfig({ gamma: 3 }), 1.1)
    addStoredRun(store, storedRunConfig({ gamma: 5 }), 1.3)
    store.close()
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('moves every run and every row that hangs off it, with new ids and its provenance; a second import adds nothing', () => {
    const file = path.join(dir, 'all.speclab-runs')
    const exported = speclab('runs', 'export', file, '--all', '--db', gpuBox, '--json')
    expect(exported.stderr).toBe('')
    expect(exported.code).toBe(0)
    expect(JSON.parse(exported.stdout).transferred.map((r: { from: number }) => r.from)).toEqual(ids)
    expect(fs.existsSync(`${file}-wal`)).toBe(false) // one self-contained file

    const imported = speclab('runs', 'import', file, '--db', laptop, '--json')
    expect(imported.code).toBe(0)
    const summary = JSON.parse(imported.stdout)
    expect(summary.transferred.map((r: { to: number }) => r.to)).toEqual([3, 4, 5])
    expect(summary.skipped).toEqual([])

    const uids = summary.transferred.map((r: { uid: string }) => r.uid)
    expect(contentOf(laptop, uids)).toEqual(contentOf(gpuBox))

    const db = new Database(laptop, { readonly: true })
    const rows = db.prepare('SELECT id, origin_host, origin_db, origin_id, imported_at, suite_run_id FROM runs WHERE id >= 3 ORDER BY id').all() as Record<string, unknown>[]
    db.close()
    expect(rows.map((r) => r.origin_id)).toEqual(ids)
    expect(rows.every((r) => r.origin_db === path.resolve(gpuBox) && r.origin_host === os.hostname() && typeof r.imported_at === 'string')).toBe(true)
    expect(rows[0].suite_run_id).toBeNull()
    expect(rows[1].suite_run_id).toBe(rows[2].suite_run_id) // both cells under one copied suite run

    const tables = ['runs', 'prompt_results', 'steps', 'result_repeats', 'result_scores', 'draft_choices', 'suite_runs']
    const before = tables.map((t) => count(laptop, t))
    const again = speclab('runs', 'import', file, '--db', laptop)
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/^imported 0 runs from .*\n3 runs already here, skipped: #1 \(here #3\), #2 \(here #4\), #3 \(here #5\)\n$/)
    expect(tables.map((t) => count(laptop, t))).toEqual(before)

    // Moved back (the laptop's export of an imported run), the run is recognised where it came from.
    const back = path.join(dir, 'back.speclab-runs')
    expect(speclab('runs', 'export', back, '4', '5', '--db', laptop).code).toBe(0)
    expect(speclab('runs', 'import', back, '--db', gpuBox, '--json').stdout).toMatch(/"transferred":\[\],"skipped":\[\{"from":1,"to":2,/)
  })

  it('exports by filter, and a later import of more cells joins the suite run already here', () => {
    const fresh = path.join(dir, 'fresh.sqlite')
    const first = path.join(dir, 'first-cell.speclab-runs')
    expect(speclab('runs', 'export', first, String(ids[1]), '--db', gpuBox).stdout).toMatch(/^exported 1 run to .*first-cell\.speclab-runs: #2\n$/)
    expect(speclab('runs', 'import', first, '--db', fresh).code).toBe(0)
    const suite = path.join(dir, 'suite.speclab-runs')
    const bySuite = speclab('runs', 'export', suite, '--suite', 'smoke', '--db', gpuBox, '--json')
    expect(JSON.parse(bySuite.stdout).transferred.map((r: { from: number }) => r.from)).toEqual([ids[1], ids[2]])
    const imported = JSON.parse(speclab('runs', 'import', suite, '--db', fresh, '--json').stdout)
    expect(imported.transferred).toHaveLength(1)
    expect(imported.skipped).toHaveLength(1)
    expect(count(fresh, 'suite_runs')).toBe(1)
    expect(speclab('runs', 'export', path.join(dir, 'limit.x'), '--limit', '1', '--db', gpuBox, '--json').stdout).toMatch(/"transferred":\[\{"from":3,/)
  })

  it.each([
    ['a text file', (f: string) => fs.writeFileSync(f, 'not a database\n'), /^speclab: not a SpecLab database: .* is not a SQLite database\n$/],
    [
      'another application’s SQLite file',
      (f: string) => {
        const db = new Database(f)
        db.exec('CREATE TABLE photos (id INTEGER PRIMARY KEY)')
        db.close()
      },
      /^speclab: not a SpecLab database: .* has tables photos\n$/
    ],
    ['a truncated export', (f: string) => fs.writeFileSync(f, fs.readFileSync(path.join(dir, 'all.speclab-runs')).subarray(0, 3000)), /^speclab: .* is truncated: 3000 bytes where its SQLite header says \d+\n$/],
    ['an empty file', (f: string) => fs.writeFileSync(f, ''), /^speclab: .* holds no runs to import\n$/]
  ])('refuses %s in one line, exit 2, and changes nothing', (_name, make, message) => {
    const file = path.join(dir, `bad-${Math.random().toString(36).slice(2)}`)
    make(file)
    const before = count(laptop, 'runs')
    const result = speclab('runs', 'import', file, '--db', laptop)
    expect(result.stderr).toMatch(message)
    expect(result.code).toBe(2)
    expect(count(laptop, 'runs')).toBe(before)
  })

  it.each([
    ['no runs named', ['runs', 'export', 'x.speclab-runs'], /^speclab: which runs\? name run ids, or filters: --suite, --method, --status, --limit, --all\n$/],
    ['an unknown id', ['runs', 'export', 'y.speclab-runs', '99'], /^speclab: no run with id 99\n$/],
    ['an existing file', ['runs', 'export', 'EXISTING', '1'], /^speclab: .* exists: export writes a new file, choose another name\n$/]
  ])('export refuses %s in one line, exit 2', (_name, args, message) => {
    const resolved = args.map((a) => (a === 'EXISTING' ? gpuBox : a.endsWith('.speclab-runs') ? path.join(dir, a) : a))
    const result = speclab(...resolved, '--db', gpuBox)
    expect(result.stderr).toMatch(message)
    expect(result.code).toBe(2)
  })

  it('show --format md and html render the run report', () => {
    const md = speclab('show', String(ids[0]), '--format', 'md', '--db', gpuBox)
    expect(md.code).toBe(0)
    expect(md.stdout).toMatch(/^# Run 1 — gamma two\n/)
    expect(md.stdout).toMatch(/\| Decoding \| max 8 tokens · temperature 0 · top-k 40 · top-p 1 · γ 2 · seed 7 \|/)
    expect(md.stdout).toMatch(/\| sd \| 2 \| 12 \| [\d.]+ \[[\d.]+–[\d.]+\] \| 1\.\d\d× \[/)
    expect(md.stdout).toContain('| 2 | sd | done | 6 | 55 | Once upon a time 1 | output of sd on 1 |')
    const html = speclab('show', String(ids[0]), '--format', 'html', '--db', gpuBox)
    expect(html.code).toBe(0)
    expect(html.stdout).toMatch(/^<!doctype html>/)
    expect(html.stdout).toContain('<title>Run 1 — gamma two</title>')
    expect(html.stdout).not.toMatch(/<script/i)
    expect(html.stdout).toMatch(/<table id="metrics"[^>]*>.*<td>sd<\/td>/s)
    const both = speclab('show', '1', '--format', 'md', '--json', '--db', gpuBox)
    expect([both.code, both.stderr]).toEqual([2, 'speclab: --format and --json print different things: give one\n'])
    expect(speclab('show', '1', '--format', 'pdf', '--db', gpuBox).code).toBe(2)
  })

  it('diff of three runs: every run side by side, deltas from the first; two runs keep the two-run form', () => {
    const json = JSON.parse(speclab('diff', ...ids.map(String), '--json', '--db', gpuBox).stdout)
    expect(json.runs).toEqual(ids)
    expect(json.configDifferences).toEqual(expect.arrayContaining([{ key: 'gamma', values: [2, 4, 6] }]))
    const sd = json.methods.find((m: { method: string }) => m.method === 'sd')
    expect(sd.present).toEqual([true, true, true])
    expect(sd.metrics.outputTokens.values).toEqual([12, 12, 12])
    const tps = sd.metrics.tokensPerSecond
    expect(tps.deltas[0]).toBe(0)
    expect(tps.deltas[2]).toBeCloseTo(tps.values[2] - tps.values[0], 9)
    const text = speclab('diff', ...ids.map(String), '--db', gpuBox)
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^run 1 vs run 2 vs run 3: \d+ settings differ; \(Δ\) is the change from run 1\n/)
    expect(text.stdout).toMatch(/gamma\s+2\s+4\s+6/)
    const two = JSON.parse(speclab('diff', '1', '2', '--json', '--db', gpuBox).stdout)
    expect(two).toHaveProperty('a', 1)
    expect(two).toHaveProperty('b', 2)
    const twice = speclab('diff', '1', '2', '1', '--db', gpuBox)
    expect([twice.code, twice.stderr]).toEqual([2, 'speclab: a run is named twice: 1 2 1\n'])
  })
})
