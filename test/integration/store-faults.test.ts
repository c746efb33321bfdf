/**
 * The database when things go wrong, end to end: every CLI entry that opens a database refuses another
 * application's SQLite file with one line and exit 2 and leaves it byte-identical; files that cannot be opened give
 * one line and exit 2 (never "internal error" and a stack trace); a disk that fills mid-run fails the run with the
 * FIRST error, marks it as soon as a write succeeds again (never `running` while its process lives), and the
 * reading commands still work on a full disk; `show | head` ends quietly. Runs in-process on toy models (a full
 * disk through SQLite's max_page_count) and, with the shared models, the CLI under `ulimit -f` and on a real full
 * disk (a small tmpfs; skipped with a warning where mounting is not permitted).
 */
import { spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import { executeRun } from '../../electron/experiments/runner'
import { LATEST_VERSION } from '../../electron/store/migrations'
import { RunStore } from '../../electron/store/run-store'
import { SuiteStore } from '../../electron/store/suite-store'
import { describeWithModels, modelPath } from '../helpers/gguf'
import { toyDraft, toyTarget } from '../helpers/toy-models'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')
const TARGET = 'stories260K-f32.gguf'
const DRAFT = 'stories260K-q4_0.gguf'

let dir: string

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-faults-'))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

function speclab(args: string[], options: { uid?: number } = {}) {
  const result = spawnSync(tsx, [cli, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid })
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** Exit 2 and exactly one line on stderr, which matches `message`; no stack trace. */
function expectOneLine(result: { code: number | null; stderr: string }, message: string | RegExp): void {
  expect(result.stderr).not.toMatch(/internal error|\n\s+at /)
  expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(typeof message === 'string' ? exact(`speclab: ${message}`) : message)])
  expect(result.code).toBe(2)
}

const exact = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)
const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')

function foreignFile(name: string): string {
  const file = path.join(dir, name)
  const db = new Database(file)
  db.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');`)
  db.close()
  return file
}

const config = RunConfig.parse({
  suite: null,
  methods: ['ar', 'sd'],
  models: { target: 'toy-target', draft: 'toy-draft' },
  prompts: { dataset: 'stories', limit: 2 },
  maxTokens: 300,
  sampling: { temperature: 1, topK: 0, topP: 1, fullVocabulary: false },
  seed: 5,
  gamma: 3,
  params: {},
  threads: 1,
  contextSize: 1024
})
const prompts = [
  { id: 'p1', category: null, text: 'abc' },
  { id: 'p2', category: null, text: 'cab' }
]

/** A SpecLab file holding one finished run (for the reading commands). */
function specLabFile(name: string): string {
  const file = path.join(dir, name)
  const store = RunStore.open(file)
  store.finishRun(store.createRun(config), 'done')
  store.close()
  return file
}

describe('the reading commands', () => {
  it.each([
    ['runs', (db: string) => ['runs', '--db', db]],
    ['show', (db: string) => ['show', '1', '--db', db]],
    ['diff', (db: string) => ['diff', '1', '2', '--db', db]]
  ])('%s refuses another application’s file with one line, exit 2, the file byte-identical', (_name, args) => {
    const file = foreignFile(`shop-${_name}.sqlite`)
    const before = sha256(file)
    const files = fs.readdirSync(dir).sort()
    expectOneLine(speclab(args(file)), `not a SpecLab database: ${file} has tables users`)
    expect(sha256(file)).toBe(before)
    expect(fs.readdirSync(dir).sort()).toEqual(files)
  })

  it.each([
    ['a newer schema', () => {
      const file = specLabFile('newer.sqlite')
      const db = new Database(file)
      db.pragma(`user_version = ${LATEST_VERSION + 1}`)
      db.close()
      return file
    }, /newer than this SpecLab supports/],
    ['a directory', () => dir, /is a directory, not a SpecLab database$/],
    ['a file that is not SQLite', () => {
      const file = path.join(dir, 'notes.sqlite')
      fs.writeFileSync(file, 'notes\n'.repeat(500))
      return file
    }, /^speclab: not a SpecLab database: .*notes\.sqlite is not a SQLite database$/],
    ['a truncated SpecLab file', () => {
      const file = specLabFile('truncated.sqlite')
      fs.truncateSync(file, fs.statSync(file).size / 2)
      return file
    }, /truncated\.sqlite is truncated: \d+ bytes where its SQLite header says \d+$/],
    ['/dev/null', () => '/dev/null', /^speclab: \/dev\/null is under \/dev/],
    ['a path under /proc (which would hang)', () => '/proc/self/fd/0', /^speclab: \/proc\/self\/fd\/0 is under \/proc/]
  ])('%s: one line, exit 2', (_name, make, message) => {
    const file = make()
    expectOneLine(speclab(['runs', '--db', file]), message)
  })

  it('show 1 | head -1 (and | true) end quietly, without a stack trace', () => {
    const file = specLabFile('piped.sqlite')
    const head = spawnSync('bash', ['-c', `"${tsx}" "${cli}" show 1 --db "${file}" | head -1`], { cwd: root, encoding: 'utf8' })
    expect(head.stdout).toBe('run 1 (done)\n')
    expect(head.stderr).toBe('')
    // `true` reads nothing and exits at once: the CLI's first write meets a closed pipe (EPIPE).
    const closed = spawnSync('bash', ['-c', `set -o pipefail; "${tsx}" "${cli}" show 1 --json --db "${file}" | true`], { cwd: root, encoding: 'utf8' })
    expect(closed.stderr).toBe('')
    expect(closed.status).toBe(0)
  })
})

describe('a suite run ended while writes fail (a full disk, simulated by a trigger)', () => {
  it('keeps the first error, reads as failed, and is written as soon as writes work again', () => {
    const store = RunStore.open(path.join(dir, 'suite-full.sqlite'))
    try {
      const suites = new SuiteStore(store.database)
      const id = suites.createSuiteRun({ suite: 'smoke', quick: true, options: {}, plan: [] })
      store.database.exec(`CREATE TEMP TRIGGER disk_full BEFORE UPDATE ON suite_runs BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END`)
      expect(() => suites.finishSuiteRun(id, 'failed', 'the first error')).not.toThrow()
      expect(() => suites.finishSuiteRun(id, 'done')).toThrow(/full/) // a success that cannot be recorded is an error
      expect(suites.getSuiteRun(id)).toMatchObject({ status: 'failed', error: 'the first error' })
      expect(store.database.prepare('SELECT status FROM suite_runs WHERE id = ?').get(id)).toEqual({ status: 'running' })
      store.database.exec('DROP TRIGGER disk_full')
      suites.listSuiteRuns() // the next call that can write writes the kept mark
      expect(store.database.prepare('SELECT status, error FROM suite_runs WHERE id = ?').get(id)).toEqual({ status: 'failed', error: 'the first error' })
    } finally {
      store.close()
    }
  })
})

describe('a disk that fills up mid-run (max_page_count)', () => {
  /** A store whose file may grow by only a few pages; `firstFailure` is the first write that failed. */
  function cramped(name: string) {
    const file = path.join(dir, name)
    const store = RunStore.open(file)
    const pages = store.database.pragma('page_count', { simple: true }) as number
    store.database.pragma(`max_page_count = ${pages + 3}`)
    const failures: unknown[] = []
    const addStep = store.addStep.bind(store)
    store.addStep = (resultId, step) => {
      try {
        addStep(resultId, step)
      } catch (error) {
        failures.push(error)
        throw error
      }
    }
    return { file, store, failures }
  }

  it('fails the run with the first error and keeps it readable by runs and show', async () => {
    const { file, store, failures } = cramped('full.sqlite')
    const failure = await executeRun(store, config, { target: toyTarget(), draft: toyDraft() }, prompts).catch((e: unknown) => e)
    expect(failures.length).toBeGreaterThan(0)
    expect(failure).toBe(failures[0]) // the error thrown is the first write's, not a later one's
    expect(failure).toMatchObject({ code: 'SQLITE_FULL', message: 'database or disk is full' })
    const run = store.listRuns()[0]
    expect(run).toMatchObject({ status: 'failed', error: 'database or disk is full' })
    expect(store.getPromptResults(run.id).every((r) => r.status !== 'running')).toBe(true)

    // Still full: the reading commands open read-only and work; the stored row says failed with the first error.
    const runs = speclab(['runs', '--json', '--db', file])
    expect(runs.code).toBe(0)
    expect(JSON.parse(runs.stdout)).toMatchObject([{ id: run.id, status: 'failed', error: 'database or disk is full' }])
    const shown = speclab(['show', String(run.id), '--json', '--db', file])
    expect(shown.code).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({ runId: run.id, status: 'failed' })
    store.close()
  })

  it('when marking the run fails too, the mark keeps the first error, reads as failed, and is written once it can be', async () => {
    const { file, store, failures } = cramped('full-twice.sqlite')
    // Every later update fails as well (a second, different error that must not replace the first): marking the
    // prompt result failed, then the run.
    for (const table of ['runs', 'prompt_results'])
      store.database.exec(`CREATE TEMP TRIGGER no_room_${table} BEFORE UPDATE ON ${table} BEGIN SELECT RAISE(ABORT, 'second failure'); END`)
    const failure = await executeRun(store, config, { target: toyTarget(), draft: toyDraft() }, prompts).catch((e: unknown) => e)
    expect(failure).toBe(failures[0])
    const raw = () => {
      const db = new Database(file, { readonly: true })
      const run = db.prepare('SELECT status, error FROM runs WHERE id = 1').get()
      const results = db.prepare('SELECT status FROM prompt_results WHERE run_id = 1').all()
      db.close()
      return { run, results }
    }
    expect(raw()).toMatchObject({ run: { status: 'running', error: null }, results: expect.arrayContaining([{ status: 'running' }]) })
    // This process is alive and its store knows better: reads show the mark that waits to be written.
    expect(store.getRun(1)!.summary).toMatchObject({ status: 'failed', error: 'database or disk is full' })

    for (const table of ['runs', 'prompt_results']) store.database.exec(`DROP TRIGGER temp.no_room_${table}`) // space again
    expect(store.listRuns()[0].status).toBe('failed') // any read or write of the store retries
    const after = raw()
    expect(after.run).toEqual({ status: 'failed', error: 'database or disk is full' })
    expect(after.results.length).toBeGreaterThan(0)
    expect(after.results.every((r) => (r as { status: string }).status !== 'running')).toBe(true)
    store.close()
  })

  it('a mark that could not be written before close is written by the next open, not called interrupted', async () => {
    const { file, store } = cramped('full-close.sqlite')
    store.database.exec(`CREATE TEMP TRIGGER no_room BEFORE UPDATE ON runs BEGIN SELECT RAISE(ABORT, 'second failure'); END`)
    await executeRun(store, config, { target: toyTarget(), draft: toyDraft() }, prompts).catch(() => {})
    store.close() // the trigger lives as long as this connection: the last tries on close fail
    const reopened = RunStore.open(file)
    expect(reopened.recoveredInterruptedRuns).toBe(0)
    expect(reopened.getRun(1)!.summary).toMatchObject({ status: 'failed', error: 'database or disk is full' })
    reopened.close()
    const db = new Database(file, { readonly: true })
    expect(db.prepare('SELECT status, error FROM runs WHERE id = 1').get()).toEqual({ status: 'failed', error: 'database or disk is full' })
    db.close()
  })
})

const withModels = describeWithModels('test/integration/store-faults.test.ts', [TARGET, DRAFT])

withModels('the run command (shared models)', () => {
  const run = (db: string, extra: string[] = []) => [
    'run', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), '--methods', 'ar,sd', '--limit', '2', '--seed', '3', ...extra, '--db', db
  ]

  it('refuses another application’s file before loading any model, the file byte-identical', () => {
    const file = foreignFile('shop-run.sqlite')
    const before = sha256(file)
    expectOneLine(speclab(run(file, ['--max-tokens', '8'])), `not a SpecLab database: ${file} has tables users`)
    expect(sha256(file)).toBe(before)
  })

  it('refuses a database it may not write, up front', () => {
    // root may write anyway: run the CLI as nobody there, when nobody can read the checkout and the models
    const asUser = process.getuid?.() === 0 ? { uid: 65534 } : {}
    const check = `require('fs').accessSync(${JSON.stringify(tsx)}); require('fs').accessSync(${JSON.stringify(modelPath(TARGET))})`
    if (spawnSync(process.execPath, ['-e', check], asUser).status !== 0) {
      console.warn('store-faults: skipping the read-only database check: user nobody cannot read the checkout or the models')
      return
    }
    const ro = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-ro-'))
    try {
      fs.chmodSync(ro, 0o777)
      const file = path.join(ro, 'runs.sqlite')
      RunStore.open(file).close()
      fs.chmodSync(file, 0o444)
      expectOneLine(speclab(run(file, ['--max-tokens', '8']), asUser), `cannot write the SpecLab database ${file}: permission denied`)
      expect(speclab(['runs', '--db', file], asUser).code).toBe(0) // reading needs no write
    } finally {
      fs.rmSync(ro, { recursive: true, force: true })
    }
  })

  it('on a disk that fills up (a tmpfs) the run ends failed with one line, exit 1, and the file opens normally after', () => {
    const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-tmpfs-'))
    // Room for a fresh database (every migration, its -wal and the 64 KiB reserve beside it) and a little more: the
    // disk fills during the run, not while the file is being created.
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=448k', 'tmpfs', mount]).status !== 0) {
      console.warn('store-faults: SKIPPED the full-disk check: mounting a tmpfs is not permitted here (needs root)')
      fs.rmSync(mount, { recursive: true, force: true })
      return
    }
    try {
      const file = path.join(mount, 'runs.sqlite')
      const result = speclab(run(file, ['--max-tokens', '200', '--limit', '8']))
      expect(result.stderr).not.toMatch(/internal error|\n\s+at /)
      const lines = result.stderr.trim().split('\n').filter((l) => l.startsWith('speclab:'))
      expect(lines).toEqual([`speclab: database error: database or disk is full — free space on the disk holding ${mount}`])
      expect(result.code).toBe(1)
      // Still full: the run reads back failed with its error (the reserve beside the database made room for the
      // mark), and the file is not taken for truncated although a checkpoint could not complete.
      const stored = () => JSON.parse(speclab(['runs', '--json', '--db', file]).stdout)
      expect(stored()).toMatchObject([{ id: 1, status: 'failed', error: 'database or disk is full' }])
      expect(speclab(['show', '1', '--db', file])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^run 1 \(failed\)/) })
      expect(fs.readdirSync(mount).filter((f) => f.endsWith('-reserve'))).toEqual([])
      // Room again: a writing open checkpoints, and the database is whole.
      expect(spawnSync('mount', ['-o', 'remount,size=8m', mount]).status).toBe(0)
      const store = RunStore.open(file)
      expect(store.database.pragma('integrity_check', { simple: true })).toBe('ok')
      expect(store.listRuns()[0]).toMatchObject({ id: 1, status: 'failed' })
      store.close()
      expect(stored()).toMatchObject([{ id: 1, status: 'failed' }])
    } finally {
      spawnSync('umount', [mount])
      fs.rmSync(mount, { recursive: true, force: true })
    }
  })

  it('under ulimit -f the run fails with the first error in one line, is marked failed, and reads back on a still-full disk', () => {
    const file = path.join(dir, 'ulimit.sqlite')
    // Node resets signal dispositions at start, so SIGXFSZ (which would kill it) is ignored from inside: writes past
    // the limit then fail with EFBIG, as on a full disk.
    const ignoreXfsz = 'data:text/javascript,process.on("SIGXFSZ",()=>{})'
    const node = (limitKb: number, args: string[]) =>
      spawnSync('bash', ['-c', `ulimit -f ${limitKb}; exec "$0" --import tsx --import '${ignoreXfsz}' "$@"`, process.execPath, cli, ...args], {
        cwd: root,
        encoding: 'utf8',
        timeout: 120_000
      })
    // 300 KiB per file: a fresh database's -wal (every migration) fits, the run's steps do not.
    const result = node(300, run(file, ['--max-tokens', '200', '--limit', '4']))
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /)
    const lines = result.stderr.trim().split('\n').filter((l) => l.startsWith('speclab:'))
    expect(lines).toHaveLength(1)
    const message = lines[0].replace(/^speclab: database error: /, '')
    expect(message).toMatch(/disk I\/O error|database or disk is full/)
    expect(result.status).toBe(1)

    // Reading works with no room at all (ulimit -f 0): nothing is written to open the file.
    const runs = node(0, ['runs', '--json', '--db', file])
    expect(runs.stderr).toBe('')
    expect(JSON.parse(runs.stdout)).toMatchObject([{ id: 1, status: 'failed', error: message }])
    const shown = node(0, ['show', '1', '--db', file])
    expect(shown.status).toBe(0)
    expect(shown.stdout).toMatch(/^run 1 \(failed\)/)
  })
})
