/**
 * Which files the store opens (electron/store/database-file.ts): another application's SQLite file is refused with
 * one line and left byte-identical (no SpecLab tables, no WAL switch, no -wal/-shm beside it) by every entry that
 * opens a database — RunStore for writing and for reading, and the app's Open Database (EngineHost, whose AppStore
 * shares the RunStore's connection); SpecLab's files are stamped (application_id, user_version), older ones are
 * recognised by their tables; newer schemas, directories, non-SQLite, truncated files and /dev or /proc paths are
 * refused with one line naming the file. The CLI side: test/integration/store-faults.test.ts.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import { UserInputError } from '../../electron/engine/errors'
import { EngineHost } from '../../electron/host/host'
import { LATEST_VERSION, MIGRATIONS, SPECLAB_APPLICATION_ID } from '../../electron/store/migrations'
import { RunStore } from '../../electron/store/run-store'

const config = RunConfig.parse({
  suite: null,
  methods: ['ar'],
  models: { target: '/models/target.gguf' },
  prompts: { dataset: 'stories', limit: 1 },
  maxTokens: 8,
  sampling: { temperature: 0, topK: 40, topP: 1, fullVocabulary: false },
  seed: 1,
  gamma: 4,
  params: {},
  threads: 1,
  contextSize: 256
})

let dir: string

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-foreign-'))
})

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')
const listing = () => fs.readdirSync(dir).sort()

/** Another application's database: rollback journal (SQLite's default) unless `wal`. */
function foreignFile(name: string, sql: string, wal = false): string {
  const file = path.join(dir, name)
  const db = new Database(file)
  if (wal) db.pragma('journal_mode = WAL')
  db.exec(sql)
  db.close()
  return file
}

/** A SpecLab database with one finished run, closed (checkpointed: no -wal left). */
function specLabFile(name = 'runs.sqlite'): string {
  const file = path.join(dir, name)
  const store = RunStore.open(file)
  store.finishRun(store.createRun(config), 'done')
  store.close()
  return file
}

/** Runs `open` and returns its error, which must be a one-line UserInputError. */
function refusal(open: () => unknown): string {
  let caught: unknown
  try {
    const opened = open()
    ;(opened as { close?: () => void } | undefined)?.close?.()
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(UserInputError)
  const message = (caught as Error).message
  expect(message.split('\n')).toHaveLength(1)
  return message
}

const openers: [string, (file: string) => RunStore][] = [
  ['for writing', (file) => RunStore.open(file)],
  ['for reading', (file) => RunStore.open(file, { readonly: true })]
]

describe('another application’s SQLite file', () => {
  it.each(openers)('is refused %s with its tables named, and stays byte-identical', (_how, open) => {
    const file = foreignFile('shop.sqlite', 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE orders (id INTEGER); INSERT INTO users (name) VALUES (\'ada\');')
    const before = sha256(file)
    const files = listing()
    expect(refusal(() => open(file))).toBe(`not a SpecLab database: ${file} has tables users, orders`)
    expect(sha256(file)).toBe(before)
    expect(listing()).toEqual(files)
  })

  it.each(openers)('with a `runs` table of its own is refused %s, not migrated', (_how, open) => {
    const file = foreignFile('tracker.sqlite', 'CREATE TABLE runs (id INTEGER PRIMARY KEY, km REAL); INSERT INTO runs (km) VALUES (5.2);')
    const before = sha256(file)
    expect(refusal(() => open(file))).toBe(`not a SpecLab database: ${file} has tables runs`)
    expect(sha256(file)).toBe(before)
  })

  it.each(openers)('in WAL mode is refused %s without -wal or -shm files appearing beside it', (_how, open) => {
    const file = foreignFile('wal.sqlite', 'CREATE TABLE users (id INTEGER);', true)
    const before = sha256(file)
    const files = listing()
    expect(refusal(() => open(file))).toMatch(/^not a SpecLab database: .*wal\.sqlite has tables users$/)
    expect(sha256(file)).toBe(before)
    expect(listing()).toEqual(files)
  })

  it('with another application_id and no tables is refused', () => {
    const file = foreignFile('stamped.sqlite', 'PRAGMA application_id = 1234;')
    const before = sha256(file)
    expect(refusal(() => RunStore.open(file))).toBe(`not a SpecLab database: ${file} belongs to another application (application_id 0x4d2)`)
    expect(sha256(file)).toBe(before)
  })

  it('lists at most eight tables', () => {
    const file = foreignFile('many.sqlite', Array.from({ length: 10 }, (_, i) => `CREATE TABLE t${i} (x);`).join(''))
    expect(refusal(() => RunStore.open(file))).toBe(`not a SpecLab database: ${file} has tables t0, t1, t2, t3, t4, t5, t6, t7, …`)
  })

  it('is refused by the app’s Open Database, which keeps the current database', async () => {
    const host = EngineHost.open(
      { databasePath: path.join(dir, 'app.sqlite'), nativeBinding: null, downloadDirectory: path.join(dir, 'downloads'), version: 'test', mode: 'browser' },
      () => {}
    )
    try {
      const file = foreignFile('shop.sqlite', 'CREATE TABLE users (id INTEGER);')
      const before = sha256(file)
      await expect(host.request('app:open-database', { path: file })).rejects.toThrow(
        new UserInputError(`not a SpecLab database: ${file} has tables users`)
      )
      expect(sha256(file)).toBe(before)
      const info = (await host.request('app:info', {})) as { databasePath: string }
      expect(info.databasePath).toBe(path.join(dir, 'app.sqlite'))
      expect(await host.request('runs:list', { limit: 10 })).toEqual([])
    } finally {
      await host.close()
    }
  })
})

describe('SpecLab’s own files', () => {
  it('are stamped with application_id and user_version when created', () => {
    const file = specLabFile()
    const db = new Database(file, { readonly: true })
    expect(db.pragma('application_id', { simple: true })).toBe(SPECLAB_APPLICATION_ID)
    expect(db.pragma('user_version', { simple: true })).toBe(LATEST_VERSION)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    db.close()
    expect(SPECLAB_APPLICATION_ID).toBe(Buffer.from('SpLb').readUInt32BE(0))
  })

  it('made by an older build (tables, no stamp) are recognised, read without a write, stamped on the next writing open', () => {
    const file = specLabFile()
    const raw = new Database(file)
    raw.pragma('application_id = 0')
    raw.pragma('user_version = 0')
    raw.close()
    const before = sha256(file)

    const reader = RunStore.open(file, { readonly: true })
    expect(reader.listRuns().map((r) => r.status)).toEqual(['done'])
    reader.close()
    expect(sha256(file)).toBe(before)

    RunStore.open(file).close()
    const db = new Database(file, { readonly: true })
    expect(db.pragma('application_id', { simple: true })).toBe(SPECLAB_APPLICATION_ID)
    expect(db.pragma('user_version', { simple: true })).toBe(LATEST_VERSION)
    db.close()
  })

  it('at an older schema are read through a migrated copy, leaving the file as it was', () => {
    // Version 3 as an older build left it: migrations 1–3, no stamp.
    const file = path.join(dir, 'v3.sqlite')
    const raw = new Database(file)
    raw.pragma('journal_mode = WAL')
    raw.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
    for (const m of MIGRATIONS.slice(0, 3)) {
      raw.exec(m.sql)
      raw.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, 'then')
    }
    raw.prepare(`INSERT INTO runs (created_at, methods, config, status) VALUES ('then', '["ar"]', ?, 'done')`).run(JSON.stringify(config))
    raw.close()
    const before = sha256(file)

    const reader = RunStore.open(file, { readonly: true })
    expect(reader.listRuns().map((r) => r.id)).toEqual([1])
    expect(reader.getDraftChoices(1)).toEqual([]) // a table of migration 4
    reader.close()
    expect(sha256(file)).toBe(before)

    const writer = RunStore.open(file)
    expect(writer.getRun(1)!.summary.status).toBe('done')
    writer.close()
    const db = new Database(file, { readonly: true })
    expect(db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: LATEST_VERSION })
    db.close()
  })

  it('are not created by reading: a missing file reads as an empty store', () => {
    const file = path.join(dir, 'nowhere', 'runs.sqlite')
    const reader = RunStore.open(file, { readonly: true })
    expect(reader.listRuns()).toEqual([])
    reader.close()
    expect(fs.existsSync(path.dirname(file))).toBe(false)
  })

  it('read-only opens write nothing: the file is unchanged and writes through them fail', () => {
    const file = specLabFile()
    const before = sha256(file)
    const reader = RunStore.open(file, { readonly: true })
    expect(reader.recoveredInterruptedRuns).toBe(0)
    expect(() => reader.createRun(config)).toThrow(/readonly/)
    reader.close()
    expect(sha256(file)).toBe(before)
  })

  it('a run left running by a dead process reads as interrupted before any writing open marks it', () => {
    const file = specLabFile()
    const raw = new Database(file)
    raw.prepare(`UPDATE runs SET status = 'running', finished_at = NULL, owner_pid = 2147483646 WHERE id = 1`).run()
    raw.close()
    const reader = RunStore.open(file, { readonly: true })
    expect(reader.getRun(1)!.summary).toMatchObject({ status: 'interrupted', error: 'process ended while the run was in progress' })
    reader.close()
    const writer = RunStore.open(file)
    expect(writer.recoveredInterruptedRuns).toBe(1)
    writer.close()
  })
})

describe('files that cannot be opened give one line naming the file', () => {
  it.each(openers)('a newer schema, %s, and the file stays as it was', (_how, open) => {
    const file = specLabFile()
    const raw = new Database(file)
    raw.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(LATEST_VERSION + 1, 'from the future', 'later')
    raw.pragma(`user_version = ${LATEST_VERSION + 1}`)
    raw.close()
    const before = sha256(file)
    expect(refusal(() => open(file))).toBe(
      `database schema version ${LATEST_VERSION + 1} is newer than this SpecLab supports (${LATEST_VERSION}); update SpecLab to open it`
    )
    expect(sha256(file)).toBe(before)
  })

  it.each(openers)('a directory, %s', (_how, open) => {
    expect(refusal(() => open(dir))).toBe(`${dir} is a directory, not a SpecLab database`)
  })

  it.each(openers)('a file that is not SQLite, %s', (_how, open) => {
    const file = path.join(dir, 'notes.sqlite')
    fs.writeFileSync(file, 'these are notes\n'.repeat(100))
    expect(refusal(() => open(file))).toBe(`not a SpecLab database: ${file} is not a SQLite database`)
    expect(fs.readFileSync(file, 'utf8')).toBe('these are notes\n'.repeat(100))
  })

  it.each(openers)('a truncated SpecLab file, %s', (_how, open) => {
    const file = specLabFile()
    const size = fs.statSync(file).size
    fs.truncateSync(file, size / 2)
    expect(refusal(() => open(file))).toBe(`${file} is truncated: ${size / 2} bytes where its SQLite header says ${size}`)
    fs.truncateSync(file, 50)
    expect(refusal(() => open(file))).toBe(`${file} is truncated: 50 bytes, shorter than a SQLite header`)
  })

  it.each(openers)('/dev/null and /proc, %s, at once', (_how, open) => {
    expect(refusal(() => open('/dev/null'))).toBe('/dev/null is under /dev, which cannot hold a SpecLab database')
    expect(refusal(() => open('/proc/self/fd/0'))).toBe('/proc/self/fd/0 is under /proc, which cannot hold a SpecLab database')
  })
})
