/**
 * The run store: every run, prompt result and decoding step in one SQLite file (DESIGN.md "Run record").
 * Rows are written as they happen under WAL, so a crash loses at most the step in flight; on open, runs left
 * `running` by a process that died are marked `interrupted`. Which files it opens, and how: database-file.ts.
 *
 * A write that fails (a full disk) fails the run with that first error. Marking the run (or a prompt result)
 * failed or cancelled never throws: when that write fails too, the mark is kept in memory — and shown by reads —
 * and retried on every later write and read of the store, every few seconds, on close (after truncating the WAL,
 * which frees space) and on the next open of the file in this process; a run whose process is gone is
 * `interrupted` on the next writing open. While a run is in progress a small reserve file beside the database
 * (disk-reserve.ts) keeps room for its marks: a failed mark deletes it and is written again at once, so a run ended
 * by a full disk is stored `failed` with its error even though the disk stays full.
 */
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import type Database from 'better-sqlite3'
import { MachineState, RunConfig, type RunStatus, type RunSummary } from '../api/runs'
import { PROVENANCE_CODES, type LevelCounters, type StepRecord } from '../engine/decoders/types'
import type { PromptOutcome } from '../engine/metrics/fold'
import { describeOpenError, openDatabase } from './database-file'
import { DiskReserve } from './disk-reserve'
import { isOwnerAlive, type OwnedRow } from './owner'

export type PromptResultStatus = 'running' | 'done' | 'cancelled' | 'failed'

export interface PromptResultInput {
  runId: number
  method: string
  promptIndex: number
  promptId: string | null
  category: string | null
  promptText: string
  seedStream: number
}

export interface PromptResultFinish {
  status: PromptResultStatus
  outputText: string
  outputTokens: number[]
  /** One PROVENANCE_CODES character per output token. */
  provenance: string
  stopReason: string | null
  wallMs: number
}

/** One timed repeat of a (prompt, method) cell (migration 9); repeat 0 is the decode prompt_results holds. */
export interface RepeatRow {
  repeat: number
  /** Position of this decode in the run's schedule (0, 1, … across all cells and repeats). */
  runOrder: number
  wallMs: number
  outputCount: number
  /** The repeat produced exactly repeat 0's tokens (decisions depend on the seed only, so it should). */
  sameOutput: boolean
}

export interface DraftChoiceRow {
  promptIndex: number
  phase: 'warmup' | 'choice'
  draftPath: string
  detail: Record<string, unknown>
}

export interface PromptResultRow {
  id: number
  runId: number
  method: string
  promptIndex: number
  promptId: string | null
  category: string | null
  promptText: string
  seedStream: number
  status: PromptResultStatus
  outputText: string
  outputTokens: number[]
  provenance: string
  outputCount: number
  stopReason: string | null
  wallMs: number | null
  startedAt: string
  finishedAt: string | null
}

/** A `runs` row with its prompt-result count, as listRuns and the app's run search select it. */
export interface RunRow {
  id: number
  created_at: string
  finished_at: string | null
  suite: string | null
  methods: string
  config: string
  status: RunStatus
  error: string | null
  prompt_count: number
  name?: string | null
  notes?: string | null
  machine?: string | null
  owner_pid?: number | null
  owner_host?: string | null
  /** Migration 10: where an imported run was first recorded, and when it arrived. */
  origin_host?: string | null
  origin_db?: string | null
  origin_id?: number | null
  imported_at?: string | null
}

interface PromptResultDbRow {
  id: number
  run_id: number
  method: string
  prompt_index: number
  prompt_id: string | null
  category: string | null
  prompt_text: string
  seed_stream: number
  status: PromptResultStatus
  output_text: string
  output_tokens: string
  provenance: string
  output_count: number
  stop_reason: string | null
  wall_ms: number | null
  started_at: string
  finished_at: string | null
}

interface StepDbRow {
  result_id: number
  step_index: number
  stage: string
  proposed: number
  accepted: number
  resampled: number
  bonus: number
  emitted: number
  draft_tokens: number
  accepted_draft_tokens: number
  draft_entropies: string
  threshold: number | null
  decision: string | null
  target_calls: number
  draft_calls: number
  draft_ms: number
  verify_ms: number
  total_ms: number
  /** JSON LevelCounters (migration 3); NULL for two-model methods. */
  levels: string | null
}

const INTERRUPTED_ERROR = 'process ended while the run was in progress'
const PROVENANCE_CHARS = new Set(Object.values(PROVENANCE_CODES))
const RUN_COLUMNS = `r.*, (SELECT COUNT(*) FROM prompt_results p WHERE p.run_id = r.id) AS prompt_count`

const now = (): string => new Date().toISOString()
/** How often marks that could not be written are tried again while the store is open. */
const RETRY_MS = 5000

type FinalStatus = Exclude<RunStatus, 'running'>

/** Marks this process could not write yet, per database file (path.resolve), in the order they were made. */
interface PendingMarks {
  runs: Map<number, { status: FinalStatus; error: string | null; at: string }>
  results: Map<number, { finish: PromptResultFinish; at: string }>
}
const pendingByFile = new Map<string, PendingMarks>()

export class RunStore {
  /** How many runs `open` found left `running` by an earlier process and marked `interrupted`. */
  readonly recoveredInterruptedRuns: number

  private readonly db: Database.Database
  // Prepared once: addStep runs once per decoding step and must not re-parse SQL each time.
  private readonly insertRun: Database.Statement
  private readonly updateRun: Database.Statement
  private readonly insertResult: Database.Statement
  private readonly updateResult: Database.Statement
  private readonly insertStep: Database.Statement
  /** Runs created through this instance and not finished yet. */
  private readonly ownRuns = new Set<number>()
  private readonly pending: PendingMarks
  private retryTimer: NodeJS.Timeout | null = null
  /** Room for the marks of this store's runs in progress (none for a read-only store). */
  private readonly reserve: DiskReserve | null

  /**
   * `nativeBinding`: a better-sqlite3 addon built for another runtime's ABI — under `npm start` Electron uses the
   * copy scripts/prepare-electron-native.mjs builds, while plain Node (CLI, tests) uses the installed one.
   * `readonly`: for reading commands — nothing is written (no migration, no recovery), so it works on a full disk
   * and on read-only files; runs whose process is gone read as `interrupted`.
   * Throws a UserInputError naming the file when it is not a SpecLab database or cannot be opened.
   */
  static open(file: string, options: { nativeBinding?: string; readonly?: boolean } = {}): RunStore {
    const db = openDatabase(file, options)
    try {
      return new RunStore(db, path.resolve(file), options.readonly ?? false)
    } catch (error) {
      db.close()
      throw describeOpenError(file, error)
    }
  }

  private constructor(
    db: Database.Database,
    file: string,
    private readonly readonly: boolean
  ) {
    this.db = db
    this.reserve = readonly ? null : new DiskReserve(file)
    const pending = pendingByFile.get(file) ?? { runs: new Map(), results: new Map() }
    if (!readonly) pendingByFile.set(file, pending)
    this.pending = pending
    this.insertRun = db.prepare(
      `INSERT INTO runs (created_at, suite, methods, config, status, owner_pid, owner_host, uid)
       VALUES (?, ?, ?, ?, 'running', ?, ?, ?)`
    )
    this.updateRun = db.prepare(`UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE id = ?`)
    this.insertResult = db.prepare(
      `INSERT INTO prompt_results (run_id, method, prompt_index, prompt_id, category, prompt_text, seed_stream,
         status, started_at)
       VALUES (@runId, @method, @promptIndex, @promptId, @category, @promptText, @seedStream, 'running', @startedAt)`
    )
    this.updateResult = db.prepare(
      `UPDATE prompt_results SET status = @status, output_text = @outputText, output_tokens = @outputTokens,
         provenance = @provenance, output_count = @outputCount, stop_reason = @stopReason, wall_ms = @wallMs,
         finished_at = @finishedAt
       WHERE id = @id`
    )
    this.insertStep = db.prepare(
      `INSERT INTO steps (result_id, step_index, stage, proposed, accepted, resampled, bonus, emitted, draft_tokens,
         accepted_draft_tokens, draft_entropies, threshold, decision, target_calls, draft_calls, draft_ms, verify_ms,
         total_ms, levels)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
    )
    if (readonly) {
      this.recoveredInterruptedRuns = 0
      return
    }
    this.retryPending()
    this.recoveredInterruptedRuns = this.markInterrupted()
  }

  createRun(config: RunConfig): number {
    this.retryPending()
    const info = this.insertRun.run(
      now(),
      config.suite,
      JSON.stringify(config.methods),
      JSON.stringify(config),
      process.pid,
      os.hostname(),
      randomUUID()
    )
    const runId = Number(info.lastInsertRowid)
    runsInProgressHere.add(runId)
    this.ownRuns.add(runId)
    this.reserve?.keep()
    return runId
  }

  /**
   * `done` throws when it cannot be written (the caller then fails the run). Any other status never throws: `error`
   * is the run's first failure and must survive a second one, so an unwritten mark is kept and retried (see above).
   * Prompt results still `running` end with the run (failed, or cancelled).
   */
  finishRun(runId: number, status: FinalStatus, error: string | null = null): void {
    this.retryPending()
    const mark = { status, error, at: now() }
    if (status === 'done') {
      this.writeRunMark(runId, mark)
      this.settleRun(runId)
      return
    }
    try {
      this.writeRunMark(runId, mark)
      this.settleRun(runId)
    } catch {
      if (!this.pending.runs.has(runId)) this.pending.runs.set(runId, mark)
      this.makeRoomAndRetry()
    }
  }

  startPromptResult(input: PromptResultInput): number {
    this.retryPending()
    const info = this.insertResult.run({ ...input, startedAt: now() })
    return Number(info.lastInsertRowid)
  }

  addStep(resultId: number, step: StepRecord): void {
    if (this.pending.runs.size + this.pending.results.size > 0) this.retryPending()
    this.insertStep.run(
      resultId,
      step.index,
      step.stage,
      step.proposed,
      step.accepted,
      step.resampled ? 1 : 0,
      step.bonus ? 1 : 0,
      step.emitted,
      step.draftTokens,
      step.acceptedDraftTokens,
      JSON.stringify(step.draftEntropies),
      step.threshold,
      step.decision === null ? null : JSON.stringify(step.decision),
      step.targetCalls,
      step.draftCalls,
      step.draftMs,
      step.verifyMs,
      step.totalMs,
      step.levels === undefined ? null : JSON.stringify(step.levels)
    )
  }

  /** Like finishRun: `done` throws when it cannot be written, failed or cancelled is kept and retried instead. */
  finishPromptResult(resultId: number, r: PromptResultFinish): void {
    checkProvenance(r.provenance, r.outputTokens.length)
    this.retryPending()
    const at = now()
    if (r.status === 'done') return this.writeResult(resultId, r, at)
    try {
      this.writeResult(resultId, r, at)
    } catch {
      if (!this.pending.results.has(resultId)) this.pending.results.set(resultId, { finish: r, at })
      this.makeRoomAndRetry()
    }
  }

  /** After a mark failed to write: frees the reserve kept for it and writes the marks now, else retries later. */
  private makeRoomAndRetry(): void {
    if (this.reserve?.release() && this.retryPending()) return
    this.scheduleRetry()
  }

  listRuns(limit = 100): RunSummary[] {
    this.retryPending()
    const rows = this.db
      .prepare(`SELECT ${RUN_COLUMNS} FROM runs r ORDER BY r.id DESC LIMIT ?`)
      .all(limit) as RunRow[]
    return rows.map((row) => this.summaryOf(row))
  }

  getRun(runId: number): { summary: RunSummary; config: RunConfig } | null {
    this.retryPending()
    const row = this.db.prepare(`SELECT ${RUN_COLUMNS} FROM runs r WHERE r.id = ?`).get(runId) as RunRow | undefined
    if (!row) return null
    return { summary: this.summaryOf(row), config: RunConfig.parse(JSON.parse(row.config)) }
  }

  getPromptResults(runId: number): PromptResultRow[] {
    // id breaks prompt_index ties, so methods come back in the order they ran.
    const rows = this.db
      .prepare('SELECT * FROM prompt_results WHERE run_id = ? ORDER BY prompt_index, id')
      .all(runId) as PromptResultDbRow[]
    return rows.map(toPromptResult)
  }

  getSteps(resultId: number): StepRecord[] {
    const rows = this.db
      .prepare('SELECT * FROM steps WHERE result_id = ? ORDER BY step_index')
      .all(resultId) as StepDbRow[]
    return rows.map(toStepRecord)
  }

  /** Records one timed repeat of a cell; like addStep, a failed write fails the run. */
  addRepeat(resultId: number, row: RepeatRow): void {
    this.db
      .prepare(`INSERT INTO result_repeats (result_id, repeat, run_order, wall_ms, output_count, same_output) VALUES (?, ?, ?, ?, ?, ?)`)
      .run(resultId, row.repeat, row.runOrder, row.wallMs, row.outputCount, row.sameOutput ? 1 : 0)
  }

  /**
   * Every timed repeat of the run's results, by result id, in repeat order. A result without rows (a run from
   * before repeats, or a database opened read-only before its migration) reads as one repeat: its own wall time.
   */
  getRepeats(runId: number): Map<number, RepeatRow[]> {
    const byResult = new Map<number, RepeatRow[]>()
    if (!this.hasTable('result_repeats')) return byResult
    const rows = this.db
      .prepare(
        `SELECT x.* FROM result_repeats x JOIN prompt_results p ON p.id = x.result_id
         WHERE p.run_id = ? ORDER BY x.result_id, x.repeat`
      )
      .all(runId) as { result_id: number; repeat: number; run_order: number; wall_ms: number; output_count: number; same_output: number }[]
    for (const r of rows) {
      const list = byResult.get(r.result_id) ?? []
      list.push({ repeat: r.repeat, runOrder: r.run_order, wallMs: r.wall_ms, outputCount: r.output_count, sameOutput: r.same_output !== 0 })
      byResult.set(r.result_id, list)
    }
    return byResult
  }

  /** Load and governor around a run (migration 9); silently skipped on a database too old to hold them. */
  setMachine(runId: number, machine: MachineState): void {
    if (this.hasColumn('runs', 'machine')) this.db.prepare('UPDATE runs SET machine = ? WHERE id = ?').run(JSON.stringify(machine), runId)
  }

  /** Done prompt results grouped by method, in the shape summarizeMethod folds. */
  getOutcomes(runId: number): Map<string, PromptOutcome[]> {
    const stepsByResult = this.doneStepsOfRun(runId)
    const repeatsByResult = this.getRepeats(runId)
    const outcomes = new Map<string, PromptOutcome[]>()
    for (const result of this.getPromptResults(runId)) {
      if (result.status !== 'done') continue
      const list = outcomes.get(result.method) ?? []
      const repeats = repeatsByResult.get(result.id) ?? [{ repeat: 0, wallMs: result.wallMs ?? 0, outputCount: result.outputCount }]
      list.push({
        promptIndex: result.promptIndex,
        outputText: result.outputText,
        outputTokens: result.outputCount,
        wallMs: result.wallMs ?? 0,
        steps: stepsByResult.get(result.id) ?? [],
        repeats: repeats.map((r) => ({ repeat: r.repeat, wallMs: r.wallMs, outputTokens: r.outputCount }))
      })
      outcomes.set(result.method, list)
    }
    return outcomes
  }

  /** 004 §5 draft-model selection: one row per warm-up decode (phase 'warmup') and per prompt's choice. */
  addDraftChoice(runId: number, choice: DraftChoiceRow): void {
    this.retryPending()
    this.db
      .prepare(`INSERT INTO draft_choices (run_id, prompt_index, phase, draft_path, detail) VALUES (?, ?, ?, ?, ?)`)
      .run(runId, choice.promptIndex, choice.phase, choice.draftPath, JSON.stringify(choice.detail))
  }

  getDraftChoices(runId: number): DraftChoiceRow[] {
    const rows = this.db
      .prepare(`SELECT prompt_index, phase, draft_path, detail FROM draft_choices WHERE run_id = ? ORDER BY id`)
      .all(runId) as { prompt_index: number; phase: 'warmup' | 'choice'; draft_path: string; detail: string }[]
    return rows.map((r) => ({ promptIndex: r.prompt_index, phase: r.phase, draftPath: r.draft_path, detail: JSON.parse(r.detail) }))
  }

  /** The user's name and notes for a run; blank text clears them. False when there is no such run. */
  annotateRun(runId: number, label: { name: string; notes: string }): boolean {
    const blankToNull = (text: string) => (text.trim() === '' ? null : text.trim())
    return this.db.prepare('UPDATE runs SET name = ?, notes = ? WHERE id = ?').run(blankToNull(label.name), blankToNull(label.notes), runId).changes > 0
  }

  deleteRun(runId: number): void {
    this.retryPending()
    this.db.prepare('DELETE FROM runs WHERE id = ?').run(runId)
  }

  private hasTable(name: string): boolean {
    return this.db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined
  }

  private hasColumn(table: string, column: string): boolean {
    return (this.db.prepare(`SELECT 1 FROM pragma_table_info(?) WHERE name = ?`).get(table, column) as unknown) !== undefined
  }

  /** The open connection, for stores of other tables in the same file (electron/store/app-store.ts). */
  get database(): Database.Database {
    return this.db
  }

  /** Marks still unwritten get a last try (after the WAL is truncated, which frees space) and else wait in memory. */
  close(): void {
    if (!this.db.open) return
    if (this.retryTimer) clearInterval(this.retryTimer)
    this.retryTimer = null
    if (!this.readonly && !this.retryPending()) {
      try {
        this.db.pragma('wal_checkpoint(TRUNCATE)')
      } catch {
        // the checkpoint needs space too
      }
      this.retryPending()
    }
    // A run whose failure is not written yet stays "in progress here": a later open in this process writes its mark
    // (with its own error) rather than calling it interrupted.
    for (const runId of this.ownRuns) if (!this.pending.runs.has(runId)) runsInProgressHere.delete(runId)
    this.reserve?.release() // a store closed mid-run leaves no reserve behind
    this.db.close()
  }

  /** What a row reads as: a mark not written yet, or `interrupted` when its process is gone and no open marked it. */
  private summaryOf(row: RunRow): RunSummary {
    const summary = toRunSummary(row)
    if (summary.status !== 'running') return summary
    const mark = this.pending.runs.get(row.id)
    if (mark) return { ...summary, status: mark.status, error: mark.error, finishedAt: mark.at }
    const owner = { id: row.id, pid: row.owner_pid ?? null, host: row.owner_host ?? null }
    if (!isOwnerAlive(owner, runsInProgressHere)) return { ...summary, status: 'interrupted', error: INTERRUPTED_ERROR }
    return summary
  }

  private writeResult(resultId: number, r: PromptResultFinish, finishedAt: string): void {
    this.updateResult.run({
      id: resultId,
      status: r.status,
      outputText: r.outputText,
      outputTokens: JSON.stringify(r.outputTokens),
      provenance: r.provenance,
      outputCount: r.outputTokens.length,
      stopReason: r.stopReason,
      wallMs: r.wallMs,
      finishedAt
    })
  }

  private writeRunMark(runId: number, mark: { status: FinalStatus; error: string | null; at: string }): void {
    this.db.transaction(() => {
      if (mark.status !== 'done')
        this.db
          .prepare(`UPDATE prompt_results SET status = ?, finished_at = ? WHERE run_id = ? AND status = 'running'`)
          .run(mark.status === 'cancelled' ? 'cancelled' : 'failed', mark.at, runId)
      this.updateRun.run(mark.status, mark.error, mark.at, runId)
    })()
  }

  private settleRun(runId: number): void {
    runsInProgressHere.delete(runId)
    this.ownRuns.delete(runId)
    // The reserve is for runs in progress: with none left here it is not kept (the next run creates it again).
    if (this.ownRuns.size === 0) this.reserve?.release()
  }

  /**
   * Writes the marks kept after a failed write; true when none is left. Prompt results first (with their output;
   * when even that does not fit, the status alone), then runs. Never throws.
   */
  private retryPending(): boolean {
    const { runs, results } = this.pending
    if (runs.size + results.size === 0) return true
    if (this.readonly || !this.db.open || this.db.inTransaction) return false
    for (const [resultId, { finish, at }] of results) {
      try {
        this.writeResult(resultId, finish, at)
      } catch {
        try {
          this.db.prepare(`UPDATE prompt_results SET status = ?, finished_at = ? WHERE id = ?`).run(finish.status, at, resultId)
        } catch {
          continue
        }
      }
      results.delete(resultId)
    }
    for (const [runId, mark] of runs) {
      try {
        this.writeRunMark(runId, mark)
      } catch {
        continue
      }
      runs.delete(runId)
      this.settleRun(runId)
    }
    const done = runs.size + results.size === 0
    if (done && this.retryTimer) {
      clearInterval(this.retryTimer)
      this.retryTimer = null
    }
    return done
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.readonly) return
    this.retryTimer = setInterval(() => this.retryPending(), RETRY_MS)
    this.retryTimer.unref()
  }

  /** One query for the whole run rather than one per prompt result. */
  private doneStepsOfRun(runId: number): Map<number, StepRecord[]> {
    const rows = this.db
      .prepare(
        `SELECT s.* FROM steps s JOIN prompt_results p ON p.id = s.result_id
         WHERE p.run_id = ? AND p.status = 'done' ORDER BY s.result_id, s.step_index`
      )
      .all(runId) as StepDbRow[]
    const byResult = new Map<number, StepRecord[]>()
    for (const row of rows) {
      const list = byResult.get(row.result_id) ?? []
      list.push(toStepRecord(row))
      byResult.set(row.result_id, list)
    }
    return byResult
  }

  /**
   * Runs still `running` whose owner process is gone ended without finishing. A run owned by a live process on
   * this host (the app while the CLI opens the file, or the reverse) is left alone; runs from another host or
   * from before owners were recorded cannot be checked and count as ended.
   */
  private markInterrupted(): number {
    try {
      return this.interruptOrphans()
    } catch (error) {
      // A full disk or a locked file must not keep the store from opening: reads show these runs interrupted
      // (summaryOf), and the next open tries again.
      if (String((error as { code?: unknown }).code).startsWith('SQLITE_')) return 0
      throw error
    }
  }

  private interruptOrphans(): number {
    return this.db.transaction(() => {
      const running = this.db
        .prepare(`SELECT id, owner_pid AS pid, owner_host AS host FROM runs WHERE status = 'running'`)
        .all() as OwnedRow[]
      const orphans = running.filter((run) => !isOwnerAlive(run, runsInProgressHere))
      const failPrompts = this.db.prepare(
        `UPDATE prompt_results SET status = 'failed', finished_at = ? WHERE status = 'running' AND run_id = ?`
      )
      const interrupt = this.db.prepare(`UPDATE runs SET status = 'interrupted', error = ?, finished_at = ? WHERE id = ?`)
      for (const run of orphans) {
        failPrompts.run(now(), run.id)
        interrupt.run(INTERRUPTED_ERROR, now(), run.id)
      }
      return orphans.length
    }).immediate() // it reads before it writes: taking the write lock first lets it wait for a writer elsewhere
  }
}

/** Runs this process is executing through an open store (a store closed mid-run leaves its runs orphaned). */
const runsInProgressHere = new Set<number>()

function checkProvenance(provenance: string, tokenCount: number): void {
  if (provenance.length !== tokenCount) {
    throw new Error(`provenance has ${provenance.length} codes for ${tokenCount} output tokens`)
  }
  for (const code of provenance) {
    if (!PROVENANCE_CHARS.has(code)) throw new Error(`unknown provenance code ${JSON.stringify(code)}`)
  }
}

export function toRunSummary(row: RunRow): RunSummary {
  return {
    id: row.id,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    suite: row.suite,
    methods: JSON.parse(row.methods) as string[],
    status: row.status,
    error: row.error,
    promptCount: row.prompt_count,
    name: row.name ?? null,
    notes: row.notes ?? null,
    machine: parseMachine(row.machine),
    origin:
      row.origin_db && row.origin_id !== null && row.origin_id !== undefined && row.imported_at
        ? { host: row.origin_host ?? null, db: row.origin_db, id: row.origin_id, importedAt: row.imported_at }
        : null
  }
}

/** The stored machine state, or null (older runs, or JSON this build does not understand). */
function parseMachine(json: string | null | undefined): MachineState | null {
  if (!json) return null
  try {
    return MachineState.parse(JSON.parse(json))
  } catch {
    return null
  }
}

function toPromptResult(row: PromptResultDbRow): PromptResultRow {
  return {
    id: row.id,
    runId: row.run_id,
    method: row.method,
    promptIndex: row.prompt_index,
    promptId: row.prompt_id,
    category: row.category,
    promptText: row.prompt_text,
    seedStream: row.seed_stream,
    status: row.status,
    outputText: row.output_text,
    outputTokens: JSON.parse(row.output_tokens) as number[],
    provenance: row.provenance,
    outputCount: row.output_count,
    stopReason: row.stop_reason,
    wallMs: row.wall_ms,
    startedAt: row.started_at,
    finishedAt: row.finished_at
  }
}

function toStepRecord(row: StepDbRow): StepRecord {
  return {
    index: row.step_index,
    stage: row.stage,
    proposed: row.proposed,
    accepted: row.accepted,
    resampled: row.resampled !== 0,
    bonus: row.bonus !== 0,
    emitted: row.emitted,
    draftTokens: row.draft_tokens,
    acceptedDraftTokens: row.accepted_draft_tokens,
    draftEntropies: JSON.parse(row.draft_entropies) as number[],
    threshold: row.threshold,
    decision: row.decision === null ? null : (JSON.parse(row.decision) as StepRecord['decision']),
    targetCalls: row.target_calls,
    draftCalls: row.draft_calls,
    draftMs: row.draft_ms,
    verifyMs: row.verify_ms,
    totalMs: row.total_ms,
    // Only hierarchies have levels: two-model records come back without the key, exactly as they were written.
    ...(row.levels === null || row.levels === undefined ? {} : { levels: JSON.parse(row.levels) as LevelCounters })
  }
}
