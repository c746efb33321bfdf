/**
 * Runs between databases: `speclab runs export` writes chosen runs to a file, `speclab runs import` (and the app's
 * Runs screen) adds a file's runs to the current database.
 *
 * The file is itself a SpecLab database holding only the chosen runs — the same schema, stamped and migrated like
 * any other — so it is checked by the rules every database is (database-file.ts: another application's SQLite file,
 * a truncated or damaged one, a newer schema are refused in one line), an older build's export is read through the
 * migrations, and any SpecLab database (a copied app database too) can be imported. It is one file (no -wal beside
 * it) so it can be copied between machines as is.
 *
 * Every row that hangs off a run moves with it: its prompt results, their steps, repeats and output scores, its
 * draft-model choices, and the suite run it is a cell of. Ids are new in the receiving database; `uid` (migration
 * 10) is the run's identity everywhere, so a run (or suite run) already there is skipped — importing a file twice
 * adds nothing. Provenance is kept: origin_host / origin_db / origin_id name where the run was first recorded (set
 * once, at the first export or import, and carried unchanged after), imported_at when it arrived here.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type Database from 'better-sqlite3'
import { UserInputError } from '../engine/errors'
import { describeOpenError, openDatabase } from './database-file'

/** Where a run (or suite run) was first recorded. */
interface Origin {
  host: string | null
  db: string
  id: number
}

type Row = Record<string, unknown>

/** The tables below a prompt result, keyed by its id: copied with result_id remapped. */
const RESULT_CHILDREN = ['steps', 'result_repeats', 'result_scores'] as const

export interface TransferredRun {
  /** Id in the file (export: in the source database). */
  from: number
  /** Id in the receiving database; for a skipped run, the id it already has there. */
  to: number
  uid: string
}

export interface TransferSummary {
  file: string
  transferred: TransferredRun[]
  /** Runs the receiving database already held (same uid): nothing was written for them. */
  skipped: TransferredRun[]
}

/**
 * Writes `runIds` of `source` (read-only is enough) to `file`, a new SpecLab database. Refuses a file that exists,
 * an unknown id and a run still in progress (its rows are not all written yet).
 */
export function exportRuns(source: Database.Database, sourceFile: string, runIds: readonly number[], file: string): TransferSummary {
  if (runIds.length === 0) throw new UserInputError('no runs to export: name run ids, or filters that match runs')
  if (fs.existsSync(file)) throw new UserInputError(`${file} exists: export writes a new file, choose another name`)
  const runs = runIds.map((id) => {
    const row = source.prepare('SELECT * FROM runs WHERE id = ?').get(id) as Row | undefined
    if (!row) throw new UserInputError(`no run with id ${id}`)
    if (row.status === 'running') throw new UserInputError(`run ${id} is still running: export it once it has ended`)
    return row
  })
  const target = openDatabase(file)
  try {
    const here = path.resolve(sourceFile)
    const summary = copyRuns(source, target, runs, { importedAt: null, origin: (row) => ({ host: os.hostname(), db: here, id: row.id as number }) })
    // One self-contained file: the WAL folded in and switched off, so nothing has to travel beside it.
    target.pragma('journal_mode = DELETE')
    return { ...summary, file }
  } catch (error) {
    target.close()
    fs.rmSync(file, { force: true })
    throw error
  } finally {
    if (target.open) target.close()
  }
}

/**
 * Adds every run of `file` (a SpecLab database: an export, or a copied database) to `target`, in one transaction.
 * Refuses, in one line, a file that is not a SpecLab database, is damaged, or holds no runs.
 */
export function importRuns(target: Database.Database, file: string): TransferSummary {
  let source: Database.Database | undefined
  try {
    source = openDatabase(file, { readonly: true })
    const runs = source.prepare('SELECT * FROM runs ORDER BY id').all() as Row[]
    if (runs.length === 0) throw new UserInputError(`${file} holds no runs to import`)
    const here = path.resolve(file)
    const importedAt = new Date().toISOString()
    return { ...copyRuns(source, target, runs, { importedAt, origin: (row) => ({ host: (row.owner_host as string | null) ?? null, db: here, id: row.id as number }) }), file }
  } catch (error) {
    // Damage deep in the file shows only when its pages are read: still one line naming the file. A write refused
    // by this database (a constraint, a full disk) is not the file's fault, and a lock held on it by another
    // process names this database, not the file.
    const code = String((error as { code?: unknown }).code)
    if (code.startsWith('SQLITE_CONSTRAINT') || code.startsWith('SQLITE_FULL')) throw error
    throw describeOpenError(code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_READONLY') ? target.name : file, error)
  } finally {
    source?.close()
  }
}

interface CopyOptions {
  /** Stamped on each copied run and suite run (null in an export: it was not imported anywhere yet). */
  importedAt: string | null
  /** The origin of a row that has none recorded yet. */
  origin: (row: Row) => Origin
}

function copyRuns(source: Database.Database, target: Database.Database, runs: readonly Row[], options: CopyOptions): Omit<TransferSummary, 'file'> {
  const columns = new ColumnCache(target)
  const transferred: TransferredRun[] = []
  const skipped: TransferredRun[] = []
  // Immediate: the transaction reads before it writes, and SQLite refuses such an upgrade at once (no busy wait)
  // when the app or a CLI run writes the same file meanwhile.
  target.transaction(() => {
    const suiteIds = new Map<number, number>()
    for (const run of runs) {
      const uid = identityOf(run, 'run')
      const existing = target.prepare('SELECT id FROM runs WHERE uid = ?').get(uid) as { id: number } | undefined
      if (existing) {
        skipped.push({ from: run.id as number, to: existing.id, uid })
        continue
      }
      const suiteRunId = run.suite_run_id === null || run.suite_run_id === undefined ? null : copySuiteRun(source, target, run.suite_run_id as number, suiteIds, columns, options)
      const to = insert(target, columns, 'runs', { ...run, uid, ...provenance(run, options), suite_run_id: suiteRunId }, ['id'])
      copyRunChildren(source, target, run.id as number, to, columns)
      transferred.push({ from: run.id as number, to, uid })
    }
  }).immediate()
  return { transferred, skipped }
}

/** The suite run a copied cell belongs to: the receiving database's own (same uid), or a copy made once. */
function copySuiteRun(
  source: Database.Database,
  target: Database.Database,
  id: number,
  done: Map<number, number>,
  columns: ColumnCache,
  options: CopyOptions
): number | null {
  const known = done.get(id)
  if (known !== undefined) return known
  const row = source.prepare('SELECT * FROM suite_runs WHERE id = ?').get(id) as Row | undefined
  if (!row) return null // ON DELETE SET NULL left a dangling id: the cell moves without its suite
  const uid = identityOf(row, 'suite')
  const existing = target.prepare('SELECT id FROM suite_runs WHERE uid = ?').get(uid) as { id: number } | undefined
  const to = existing ? existing.id : insert(target, columns, 'suite_runs', { ...row, uid, ...provenance(row, options) }, ['id'])
  done.set(id, to)
  return to
}

function copyRunChildren(source: Database.Database, target: Database.Database, from: number, to: number, columns: ColumnCache): void {
  for (const result of source.prepare('SELECT * FROM prompt_results WHERE run_id = ? ORDER BY id').all(from) as Row[]) {
    const resultId = insert(target, columns, 'prompt_results', { ...result, run_id: to }, ['id'])
    for (const table of RESULT_CHILDREN)
      for (const child of source.prepare(`SELECT * FROM ${table} WHERE result_id = ? ORDER BY rowid`).all(result.id) as Row[])
        insert(target, columns, table, { ...child, result_id: resultId }, ['id'])
  }
  for (const choice of source.prepare('SELECT * FROM draft_choices WHERE run_id = ? ORDER BY id').all(from) as Row[])
    insert(target, columns, 'draft_choices', { ...choice, run_id: to }, ['id'])
}

/**
 * A row's identity: its uid, or — for a row written without one (by hand, or by a tool that predates it) — the one
 * migration 10 derives for older rows, so the same row always gets the same identity.
 */
function identityOf(row: Row, kind: 'run' | 'suite'): string {
  if (typeof row.uid === 'string' && row.uid !== '') return row.uid
  return `${kind}:${row.owner_host ?? ''}:${row.owner_pid ?? ''}:${row.created_at}:${row.id}`
}

/** A row's provenance as it leaves: the first origin it was given stays; imported_at is this transfer's. */
function provenance(row: Row, options: CopyOptions): Row {
  const origin = row.origin_db ? { host: row.origin_host, db: row.origin_db, id: row.origin_id } : options.origin(row)
  return { origin_host: origin.host, origin_db: origin.db, origin_id: origin.id, imported_at: options.importedAt }
}

/** Inserts the columns the table has (less `omit`, so SQLite assigns a new id) and returns the new rowid. */
function insert(db: Database.Database, columns: ColumnCache, table: string, row: Row, omit: readonly string[]): number {
  const names = columns.of(table).filter((c) => !omit.includes(c) && c in row)
  const sql = `INSERT INTO ${table} (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`
  return Number(db.prepare(sql).run(...names.map((c) => row[c])).lastInsertRowid)
}

class ColumnCache {
  private readonly byTable = new Map<string, string[]>()
  constructor(private readonly db: Database.Database) {}
  of(table: string): string[] {
    let names = this.byTable.get(table)
    if (!names) {
      names = (this.db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as { name: string }[]).map((c) => c.name)
      this.byTable.set(table, names)
    }
    return names
  }
}
