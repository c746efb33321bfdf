/**
 * Suite runs (migration 6): the parent record of an experiment suite, its cells (ordinary runs linked by
 * suite_run_id + cell_key) and the perplexity scores of their outputs. Shares the run store's connection
 * (RunStore.database), like app-store.ts, so runs and their suite are one SQLite file and one WAL.
 *
 * A cell is finished when its linked run is `done`; cancelled, failed or interrupted runs of a cell stay in the
 * store (they are real records of what happened) but count as unfinished, so a resume recomputes that cell.
 * On open, suite runs left `running` by a process that is gone become `interrupted` (owner.ts, the rule of runs).
 */
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import type Database from 'better-sqlite3'
import type { RunStatus } from '../api/runs'
import { isOwnerAlive, type OwnedRow } from './owner'

export interface SuiteRunRow<Options = unknown, Plan = unknown> {
  id: number
  suite: string
  createdAt: string
  finishedAt: string | null
  quick: boolean
  options: Options
  plan: Plan
  status: RunStatus
  error: string | null
}

export interface CellRun {
  cellKey: string
  runId: number
  status: RunStatus
  createdAt: string
}

export interface OutputScore {
  resultId: number
  scorer: string
  nll: number
  tokens: number
}

interface SuiteDbRow {
  id: number
  suite: string
  created_at: string
  finished_at: string | null
  quick: number
  options: string
  plan: string
  status: RunStatus
  error: string | null
  owner_pid: number | null
  owner_host: string | null
}

const now = (): string => new Date().toISOString()
const INTERRUPTED_ERROR = 'process ended while the suite was running'

/** Suite runs this process is executing (a second store on the same file must not mark them interrupted). */
const suitesInProgressHere = new Set<number>()

export class SuiteStore {
  constructor(private readonly db: Database.Database) {
    // A read-only connection (speclab suites / report) only reads: orphaned runs are marked by the next writer.
    this.retryKept()
    if (!db.readonly) this.markInterrupted()
  }

  createSuiteRun(input: { suite: string; quick: boolean; options: unknown; plan: unknown }): number {
    const info = this.db
      .prepare(
        `INSERT INTO suite_runs (suite, created_at, quick, options, plan, status, owner_pid, owner_host, uid)
         VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)`
      )
      .run(input.suite, now(), input.quick ? 1 : 0, JSON.stringify(input.options), JSON.stringify(input.plan), process.pid, os.hostname(), randomUUID())
    const id = Number(info.lastInsertRowid)
    suitesInProgressHere.add(id)
    return id
  }

  /** Takes an unfinished suite run over for a resume: `running` again, owned by this process. */
  reopenSuiteRun(id: number): void {
    this.db
      .prepare(`UPDATE suite_runs SET status = 'running', error = NULL, finished_at = NULL, owner_pid = ?, owner_host = ? WHERE id = ?`)
      .run(process.pid, os.hostname(), id)
    suitesInProgressHere.add(id)
  }

  /**
   * Ends a suite run. `done` throws when it cannot be written; failed / cancelled never does: on a full disk the
   * mark (with the FIRST error, the one that ended the run) is kept, shown by reads, and written by the next store
   * call that can — as run-store.ts keeps its run marks.
   */
  finishSuiteRun(id: number, status: Exclude<RunStatus, 'running'>, error: string | null = null): void {
    const mark = { status, error, at: now() }
    try {
      this.writeMark(id, mark)
    } catch (failure) {
      if (status === 'done') throw failure
      // The first failure is the one that ended the run: a later mark never replaces it.
      if (!this.kept.has(id)) this.kept.set(id, mark)
    }
    suitesInProgressHere.delete(id)
  }

  /** This database file's kept marks (a process may open several files, e.g. the app's Open Database). */
  private get kept(): Map<number, KeptMark> {
    const key = this.db.name
    let marks = keptMarks.get(key)
    if (!marks) keptMarks.set(key, (marks = new Map()))
    return marks
  }

  private writeMark(id: number, mark: KeptMark): void {
    this.db.prepare(`UPDATE suite_runs SET status = ?, error = ?, finished_at = ? WHERE id = ?`).run(mark.status, mark.error, mark.at, id)
  }

  /** Writes the marks a full disk kept back, where this connection can. */
  private retryKept(): void {
    // A read-only connection, or an in-memory copy of an older file, is not where the marks belong.
    if (this.db.readonly || this.db.memory) return
    for (const [id, mark] of this.kept)
      try {
        this.writeMark(id, mark)
        this.kept.delete(id)
      } catch {
        return // still full: the next call tries again
      }
  }

  /** Links a run (just created by the runner, before any decoding) to its suite run and cell. */
  linkRun(runId: number, suiteRunId: number, cellKey: string): void {
    this.db.prepare(`UPDATE runs SET suite_run_id = ?, cell_key = ? WHERE id = ?`).run(suiteRunId, cellKey, runId)
  }

  getSuiteRun<Options, Plan>(id: number): SuiteRunRow<Options, Plan> | null {
    this.retryKept()
    const row = this.db.prepare(`SELECT * FROM suite_runs WHERE id = ?`).get(id) as SuiteDbRow | undefined
    return row ? toSuiteRun<Options, Plan>(row, this.kept) : null
  }

  /** Newest first; `suite` filters by suite id. */
  listSuiteRuns<Options, Plan>(options: { suite?: string; limit?: number } = {}): SuiteRunRow<Options, Plan>[] {
    this.retryKept()
    const rows = (
      options.suite === undefined
        ? this.db.prepare(`SELECT * FROM suite_runs ORDER BY id DESC LIMIT ?`).all(options.limit ?? 100)
        : this.db.prepare(`SELECT * FROM suite_runs WHERE suite = ? ORDER BY id DESC LIMIT ?`).all(options.suite, options.limit ?? 100)
    ) as SuiteDbRow[]
    return rows.map((row) => toSuiteRun<Options, Plan>(row, this.kept))
  }

  /** Every run linked to the suite run, oldest first (a cell may have several: a cancelled one, then a done one). */
  cellRuns(suiteRunId: number): CellRun[] {
    const rows = this.db
      .prepare(`SELECT id, cell_key, status, created_at FROM runs WHERE suite_run_id = ? ORDER BY id`)
      .all(suiteRunId) as { id: number; cell_key: string; status: RunStatus; created_at: string }[]
    return rows.map((r) => ({ cellKey: r.cell_key, runId: r.id, status: r.status, createdAt: r.created_at }))
  }

  /** Per cell key, the latest `done` run: the finished cells a resume skips and a report reads. */
  finishedCells(suiteRunId: number): Map<string, number> {
    const finished = new Map<string, number>()
    for (const cell of this.cellRuns(suiteRunId)) if (cell.status === 'done') finished.set(cell.cellKey, cell.runId)
    return finished
  }

  addScore(score: OutputScore): void {
    this.db
      .prepare(`INSERT OR REPLACE INTO result_scores (result_id, scorer, nll, tokens) VALUES (?, ?, ?, ?)`)
      .run(score.resultId, score.scorer, score.nll, score.tokens)
  }

  /** Scores of a run's prompt results, by result id. */
  scoresOfRun(runId: number): Map<number, OutputScore> {
    const rows = this.db
      .prepare(
        `SELECT s.result_id, s.scorer, s.nll, s.tokens FROM result_scores s JOIN prompt_results p ON p.id = s.result_id
         WHERE p.run_id = ?`
      )
      .all(runId) as { result_id: number; scorer: string; nll: number; tokens: number }[]
    return new Map(rows.map((r) => [r.result_id, { resultId: r.result_id, scorer: r.scorer, nll: r.nll, tokens: r.tokens }]))
  }

  /** Marks suite runs whose owner process is gone; their cells keep every finished run. */
  private markInterrupted(): void {
    const running = this.db
      .prepare(`SELECT id, owner_pid AS pid, owner_host AS host FROM suite_runs WHERE status = 'running'`)
      .all() as OwnedRow[]
    const interrupt = this.db.prepare(`UPDATE suite_runs SET status = 'interrupted', error = ?, finished_at = ? WHERE id = ?`)
    try {
      for (const run of running) if (!isOwnerAlive(run, suitesInProgressHere)) interrupt.run(INTERRUPTED_ERROR, now(), run.id)
    } catch {
      // A full disk: such rows already read as interrupted (toSuiteRun); the next writer marks them.
    }
  }
}

interface KeptMark {
  status: Exclude<RunStatus, 'running'>
  error: string | null
  at: string
}

/** Suite-run marks this process could not write yet (full disk): by database file, then suite run id. */
const keptMarks = new Map<string, Map<number, KeptMark>>()

function toSuiteRun<Options, Plan>(stored: SuiteDbRow, keptHere: ReadonlyMap<number, KeptMark>): SuiteRunRow<Options, Plan> {
  const kept = keptHere.get(stored.id)
  const row = kept ? { ...stored, status: kept.status, error: kept.error, finished_at: kept.at } : stored
  // Read-only readers do not mark orphans: a `running` row whose process is gone reads as what it is.
  const orphaned = row.status === 'running' && !isOwnerAlive({ id: row.id, pid: row.owner_pid, host: row.owner_host }, suitesInProgressHere)
  return {
    id: row.id,
    suite: row.suite,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    quick: row.quick !== 0,
    options: JSON.parse(row.options) as Options,
    plan: JSON.parse(row.plan) as Plan,
    status: orphaned ? 'interrupted' : row.status,
    error: orphaned ? INTERRUPTED_ERROR : row.error
  }
}
