/**
 * Moving runs between databases (store/run-transfer.ts) in process, the identity older databases derive for their
 * runs, the n-run diff (api/run-diff.ts diffManyRuns), the run report (experiments/reports/run-report.ts) and the
 * Workbench form of "Run again" (renderer/src/lib/rerun-form.ts).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { AdviceRecord } from '../../electron/api/advice'
import { diffManyRuns, diffRuns } from '../../electron/api/run-diff'
import { buildRunReport } from '../../electron/api/runs-service'
import { renderRunHtml, renderRunMarkdown, runReportDocument } from '../../electron/experiments/reports/run-report'
import { MIGRATIONS } from '../../electron/store/migrations'
import { RunStore } from '../../electron/store/run-store'
import { exportRuns, importRuns } from '../../electron/store/run-transfer'
import { RunMover } from '../../electron/host/run-mover'
import { rerunForm } from '../../renderer/src/lib/rerun-form'
import { addStoredRun, seedStoredRuns, storedRunConfig } from '../helpers/stored-runs'
import { holdWriteLock } from '../helpers/write-lock'

let dir: string
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-runs-move-unit-'))
})
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

const rowsOf = (file: string, sql: string) => {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare(sql).all() as Record<string, unknown>[]
  } finally {
    db.close()
  }
}

describe('run transfer', () => {
  it('round trip: new ids, every child row, provenance; the same file twice adds nothing', () => {
    const source = path.join(dir, 'a.sqlite')
    const ids = seedStoredRuns(source)
    const file = path.join(dir, 'out.speclab-runs')
    const store = RunStore.open(source, { readonly: true })
    const exported = exportRuns(store.database, source, ids, file)
    store.close()
    expect(exported.transferred.map((r) => r.from)).toEqual(ids)

    const target = RunStore.open(path.join(dir, 'b.sqlite'))
    addStoredRun(target, storedRunConfig(), 1.5)
    const first = importRuns(target.database, file)
    expect(first.transferred.map((r) => r.to)).toEqual([2, 3, 4])
    const second = importRuns(target.database, file)
    expect(second.transferred).toEqual([])
    expect(second.skipped.map((r) => r.to)).toEqual([2, 3, 4])
    // What the app and the CLI read back is what was measured.
    for (const [i, id] of ids.entries()) {
      const before = RunStore.open(source, { readonly: true })
      const original = buildRunReport(before, id)!
      before.close()
      const copy = buildRunReport(target, first.transferred[i].to)!
      expect({ ...copy, runId: id }).toEqual(original)
      expect(target.getDraftChoices(first.transferred[i].to)).toHaveLength(2)
    }
    target.close()
    const rows = rowsOf(path.join(dir, 'b.sqlite'), 'SELECT origin_id, origin_db, imported_at FROM runs WHERE id > 1 ORDER BY id')
    expect(rows.map((r) => r.origin_id)).toEqual(ids)
    expect(new Set(rows.map((r) => r.origin_db))).toEqual(new Set([path.resolve(source)]))
    const reopened = RunStore.open(path.join(dir, 'b.sqlite'), { readonly: true })
    expect(reopened.getRun(3)!.summary.origin).toEqual({ host: os.hostname(), db: path.resolve(source), id: ids[1], importedAt: expect.any(String) })
    expect(reopened.getRun(1)!.summary.origin).toBeNull()
    reopened.close()
  })

  it('an import waits while another process writes the database, instead of failing at once', async () => {
    const source = path.join(dir, 'a.sqlite')
    const ids = seedStoredRuns(source)
    const file = path.join(dir, 'out.speclab-runs')
    const store = RunStore.open(source, { readonly: true })
    exportRuns(store.database, source, ids, file)
    store.close()
    const targetFile = path.join(dir, 'b.sqlite')
    const target = RunStore.open(targetFile)
    // The app writing a chat reply, or a CLI run writing its steps, holds the write lock for a moment.
    const writer = await holdWriteLock(targetFile, 300)
    expect(importRuns(target.database, file).transferred).toHaveLength(ids.length)
    // A lock held past the wait (3 s, against a 100 ms busy timeout) names the database that is locked, not the file
    // being imported.
    const holder = await holdWriteLock(targetFile, 3000)
    target.database.pragma('busy_timeout = 100')
    expect(() => importRuns(target.database, file)).toThrow(`${targetFile} is locked by another process`)
    target.close()
    await Promise.all([writer.released, holder.released])
  })

  it('refuses a run still in progress, an unknown id and an existing file', () => {
    const source = path.join(dir, 'a.sqlite')
    const store = RunStore.open(source)
    const running = store.createRun(storedRunConfig())
    expect(() => exportRuns(store.database, source, [running], path.join(dir, 'x'))).toThrow(`run ${running} is still running: export it once it has ended`)
    expect(() => exportRuns(store.database, source, [99], path.join(dir, 'y'))).toThrow('no run with id 99')
    expect(() => exportRuns(store.database, source, [running], source)).toThrow('exists: export writes a new file')
    expect(fs.existsSync(path.join(dir, 'x'))).toBe(false)
    store.finishRun(running, 'cancelled')
    store.close()
  })

  it('an older database derives the same identity for a run on every open, read-only or migrated', () => {
    const file = path.join(dir, 'old.sqlite')
    const db = new Database(file)
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
    for (const m of MIGRATIONS.filter((m) => m.version <= 9)) {
      db.exec(m.sql)
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, 'then')
    }
    db.prepare(`INSERT INTO runs (created_at, methods, config, status, owner_pid, owner_host) VALUES ('2026-01-01T00:00:00.000Z', '[]', '{}', 'done', 42, 'gpu-box')`).run()
    db.close()
    const uid = () => {
      const store = RunStore.open(file, { readonly: true })
      try {
        return (store.database.prepare('SELECT uid FROM runs').get() as { uid: string }).uid
      } finally {
        store.close()
      }
    }
    const first = uid()
    expect(first).toBe('run:gpu-box:42:2026-01-01T00:00:00.000Z:1')
    expect(uid()).toBe(first)
    RunStore.open(file).close() // migrates the file itself
    expect(rowsOf(file, 'SELECT uid FROM runs')[0].uid).toBe(first)
  })
})

describe('the Runs screen’s export and upload (host/run-mover.ts)', () => {
  it('exports the chosen runs as bytes; an upload in pieces imports them once; a lost piece or a foreign file is one line', async () => {
    const source = path.join(dir, 'a.sqlite')
    const ids = seedStoredRuns(source)
    const from = RunStore.open(source)
    const events: string[] = []
    const file = new RunMover(() => from, () => source, (e) => events.push(e.type)).exportFile([ids[0], ids[2]])
    from.close()
    expect([file.fileName, file.runs]).toEqual(['speclab-2-runs.speclab-runs', 2])

    const here = RunStore.open(path.join(dir, 'b.sqlite'))
    const mover = new RunMover(() => here, () => path.join(dir, 'b.sqlite'), (e) => events.push(e.type))
    const handlers = mover.handlers()
    // Pieces cut at multiples of 4 base64 characters, as the page cuts them.
    const pieces = [file.base64.slice(0, 4000), file.base64.slice(4000, 8000), file.base64.slice(8000)]
    const send = (uploadId: string, index: number) =>
      handlers['runs:import-upload']({ uploadId, fileName: 'box.speclab-runs', index, last: index === pieces.length - 1, data: pieces[index] })
    expect((await send('u1', 0)).imported).toBeNull()
    expect((await send('u1', 1)).imported).toBeNull()
    const done = await send('u1', 2)
    expect(done.imported!.file).toBe('box.speclab-runs')
    expect(done.imported!.transferred.map((r) => r.to)).toEqual([1, 2])
    expect(events).toEqual(['runs:changed'])
    await send('u2', 0)
    expect(() => send('u2', 2)).toThrow('the upload of box.speclab-runs lost a piece (got part 3, expected 2): try again')
    const again = await handlers['runs:import-upload']({ uploadId: 'u3', fileName: 'box.speclab-runs', index: 0, last: true, data: file.base64 })
    expect([again.imported!.transferred.length, again.imported!.skipped.length]).toEqual([0, 2])
    expect(events).toEqual(['runs:changed']) // nothing new, nothing to reload
    const foreign = Buffer.from('not a database\n').toString('base64')
    expect(() => handlers['runs:import-upload']({ uploadId: 'u4', fileName: 'notes.txt', index: 0, last: true, data: foreign })).toThrow(
      /^not a SpecLab database: notes\.txt is not a SQLite database$/
    )
    here.close()
  })
})

describe('diff of three or more runs', () => {
  it('every value per run and its delta from the first; with two runs the same numbers as diffRuns', () => {
    const file = path.join(dir, 'a.sqlite')
    const ids = seedStoredRuns(file)
    const store = RunStore.open(file, { readonly: true })
    const reports = ids.map((id) => buildRunReport(store, id)!)
    store.close()
    const many = diffManyRuns(reports)
    expect(many.runs).toEqual(ids)
    expect(many.configDifferences.find((d) => d.key === 'gamma')?.values).toEqual([2, 4, 6])
    expect(many.configDifferences.find((d) => d.key === 'suite')?.values).toEqual([null, 'smoke', 'smoke'])
    const sd = many.methods.find((m) => m.method === 'sd')!
    const tps = sd.metrics.tokensPerSecond
    expect(tps.deltas).toEqual([0, tps.values[1]! - tps.values[0]!, tps.values[2]! - tps.values[0]!])
    expect(sd.sameDecisions).toBe(true) // the helper's runs make the same steps; only timing differs

    const pair = diffManyRuns(reports.slice(0, 2))
    const two = diffRuns(reports[0], reports[1])
    expect(pair.configDifferences.map((d) => [d.key, ...d.values])).toEqual(two.configDifferences.map((d) => [d.key, d.a, d.b]))
    for (const m of two.methods)
      for (const [metric, v] of Object.entries(m.metrics)) {
        const other = pair.methods.find((x) => x.method === m.method)!.metrics[metric as keyof typeof m.metrics]
        expect([other.values, other.deltas[1]]).toEqual([[v.a, v.b], v.delta])
      }
    expect(() => diffManyRuns(reports.slice(0, 1))).toThrow('at least two runs')
  })
})

describe('run report', () => {
  it('Markdown and HTML of the same document; text from the run cannot break either', () => {
    const file = path.join(dir, 'a.sqlite')
    const store = RunStore.open(file)
    const runId = addStoredRun(store, storedRunConfig(), 1.5, { name: 'a | b <script>alert(1)</script>' })
    const doc = runReportDocument(buildRunReport(store, runId)!, store.getRun(runId)!.summary, store.getPromptResults(runId))
    store.close()
    expect(doc.setup.find(([k]) => k === 'Methods')?.[1]).toBe('ar, sd')
    expect(doc.metrics.rows.map((r) => r[0])).toEqual(['ar', 'sd'])
    expect(doc.outputs.rows).toHaveLength(4)
    const md = renderRunMarkdown(doc)
    expect(md.split('\n')[0]).toBe('# Run 1 — a | b <script>alert(1)</script>')
    expect(md).toContain('| Notes | notes on a \\| b <script>alert(1)</script> |')
    const html = renderRunHtml(doc)
    expect(html).not.toContain('<script>')
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
  })

  it('an advice run adds its candidates, predicted beside measured, between the metrics and the outputs in both formats', () => {
    const store = RunStore.open(path.join(dir, 'a.sqlite'))
    const threads = { threads: 2, batchThreads: 2, draftThreads: 2 }
    const advice: AdviceRecord = {
      trace: { prompts: 2, tokens: 16, mode: 'replayed' },
      drafts: { draft: '/models/draft.gguf' },
      profile: { targetMs: [10, 11, 12, 13, 14], verifyCost: [1, 1.1, 1.2, 1.3, 1.4], drafts: { draft: { acceptance: [0.8, 0.6, 0.5, 0.4], msPerToken: 1, relativeCost: 0.1 } } },
      predictions: [
        { method: 'sd', gamma: 4, params: { 'sd.parallel': false }, draft: 'draft', plan: null, tokensPerSecond: 150.25, speedup: 1.5, error: null },
        { method: 'ar', gamma: 4, params: {}, draft: null, plan: null, tokensPerSecond: 100, speedup: 1, error: null },
        { method: 'pld', gamma: 3, params: {}, draft: null, plan: null, tokensPerSecond: null, speedup: null, error: 'no | lookup <b>' }
      ],
      arms: [
        { label: 'ar', method: 'ar', gamma: 4, params: {}, draft: null, threads, predicted: { tokensPerSecond: 100, speedup: 1 } },
        { label: 'sd', method: 'sd', gamma: 4, params: { 'sd.parallel': false }, draft: 'draft', threads, predicted: { tokensPerSecond: 150.25, speedup: 1.5 } }
      ]
    }
    const runId = addStoredRun(store, storedRunConfig({ suite: 'advise', advice }), 1.7)
    const doc = runReportDocument(buildRunReport(store, runId)!, store.getRun(runId)!.summary, store.getPromptResults(runId))
    store.close()

    const md = renderRunMarkdown(doc)
    const adviceAt = md.indexOf('**Advice: predicted beside measured** <a id="advice"></a>')
    expect(adviceAt).toBeGreaterThan(md.indexOf('**Per-method metrics**'))
    expect(adviceAt).toBeLessThan(md.indexOf('**Per-prompt outputs**'))
    expect(md).toContain(
      [
        '| candidate | draft | predicted tokens/s | predicted speedup | measured tokens/s [95% CI] | measured speedup [95% CI] | not replayable |',
        '|---|---|---:|---:|---:|---:|---|'
      ].join('\n')
    )
    expect(md).toMatch(/\n\| sd \| draft \| 150\.3 \| 1\.50 \| [\d.]+ \[[\d.]+–[\d.]+\] \| [\d.]+× \[[\d.]+–[\d.]+×\] \| {3}\|\n\| ar \| — \| 100\.0 \| 1\.00 \| /)
    expect(md).toContain('\n| pld γ=3 | — | – | – | – | – | no \\| lookup <b> |\n\n_Predicted from one replayed (greedy) trace of 2 prompts, 16 tokens; measured in this run, interleaved, 2 repeats._\n')

    const html = renderRunHtml(doc)
    expect(html).toContain(
      '</section><section id="advice-section"><h2>Advice: predicted beside measured</h2><div class="scroll"><table id="advice" data-title="Advice: predicted beside measured">' +
        '<thead><tr><th>candidate</th><th>draft</th><th>predicted tokens/s</th><th>predicted speedup</th><th>measured tokens/s [95% CI]</th><th>measured speedup [95% CI]</th><th>not replayable</th></tr></thead>'
    )
    expect(html).toContain('<tr><td>pld γ=3</td><td>—</td><td class="n">–</td><td class="n">–</td><td class="n">–</td><td class="n">–</td><td>no | lookup &lt;b&gt;</td></tr></tbody><caption>Predicted from one replayed')
    expect(html.indexOf('id="advice-section"')).toBeLessThan(html.indexOf('id="outputs-section"'))
  })
})

describe('run again: a run config as the Workbench form', () => {
  const library = [
    { id: 3, path: '/models/target.gguf' },
    { id: 5, path: '/models/draft.gguf' }
  ]
  it('fills methods, prompts, models by path and every decoding setting and parameter', () => {
    const form = rerunForm(storedRunConfig({ gamma: 6, suite: 'smoke', params: { 'sd.parallel': true } }), library, ['smoke'])
    expect(form).toMatchObject({
      methods: ['ar', 'sd'],
      dataset: 'builtin:stories',
      limit: '2',
      repeats: '2',
      suite: 'smoke',
      models: { target: 3, mid: null, draft: 5 },
      contextSize: '512',
      decode: { maxTokens: '8', temperature: '0', topK: '40', topP: '1', gamma: '6', seed: '7', params: { 'sd.parallel': 'true' }, extra: '' },
      notes: []
    })
  })
  it('says what it could not fill: a model not in the library, a suite this build does not know, a prompt file', () => {
    const form = rerunForm(storedRunConfig({ suite: 'gone', models: { target: '/elsewhere/big.gguf', draft: '/models/draft.gguf' }, prompts: { file: '/data/p.jsonl' } }), library, ['smoke'])
    expect(form.models).toEqual({ target: null, mid: null, draft: 5 })
    expect(form.suite).toBe('')
    expect(form.dataset).toBe('file:/data/p.jsonl')
    expect(form.limit).toBe('')
    expect(form.notes).toEqual([
      'The target big.gguf is not in the model library: add it on the Models screen (/elsewhere/big.gguf), or choose another.',
      "The run was part of suite 'gone', which this SpecLab does not know: it runs as an ad-hoc run."
    ])
  })
})
