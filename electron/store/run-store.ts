/**
 * The run store: every run, prompt result and decoding step in one SQLite file (DESIGN.md "Run record").
 * Rows are written as they happen under WAL, so a crash loses at most the step in flight; on open, runs left
 * `running` by a process that died are marked `interrupted`.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { RunConfig, type RunStatus, type RunSummary } from '../api/contract'
import { PROVENANCE_CODES, type LevelCounters, type StepRecord } from '../engine/decoders/types'
import type { PromptOutcome } from '../engine/metrics/fold'
import { migrate } from './migrations'
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

  /**
   * `nativeBinding`: a better-sqlite3 addon built for another runtime's ABI — under `npm start` Electron uses the
   * copy scripts/prepare-electron-native.mjs builds, while plain Node (CLI, tests) uses the installed one.
   */
  static open(file: string, options: { nativeBinding?: string } = {}): RunStore {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
    let db: Database.Database | undefined
    try {
      db = new Database(file, options.nativeBinding ? { nativeBinding: options.nativeBinding } : {})
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = NORMAL')
      db.pragma('foreign_keys = ON')
      migrate(db)
      return new RunStore(db)
    } catch (error) {
      db?.close()
      throw openError(file, error)
    }
  }

  private constructor(db: Database.Database) {
    this.db = db
    this.insertRun = db.prepare(
      `INSERT INTO runs (created_at, suite, methods, config, status, owner_pid, owner_host)
       VALUES (?, ?, ?, ?, 'running', ?, ?)`
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
    this.recoveredInterruptedRuns = this.markInterrupted()
  }

  createRun(config: RunConfig): number {
    const info = this.insertRun.run(
      now(),
      config.suite,
      JSON.stringify(config.methods),
      JSON.stringify(config),
      process.pid,
      os.hostname()
    )
    const runId = Number(info.lastInsertRowid)
    runsInProgressHere.add(runId)
    this.ownRuns.add(runId)
    return runId
  }

  finishRun(runId: number, status: RunStatus, error: string | null = null): void {
    this.updateRun.run(status, error, now(), runId)
    runsInProgressHere.delete(runId)
    this.ownRuns.delete(runId)
  }

  startPromptResult(input: PromptResultInput): number {
    const info = this.insertResult.run({ ...input, startedAt: now() })
    return Number(info.lastInsertRowid)
  }

  addStep(resultId: number, step: StepRecord): void {
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

  finishPromptResult(resultId: number, r: PromptResultFinish): void {
    checkProvenance(r.provenance, r.outputTokens.length)
    this.updateResult.run({
      id: resultId,
      status: r.status,
      outputText: r.outputText,
      outputTokens: JSON.stringify(r.outputTokens),
      provenance: r.provenance,
      outputCount: r.outputTokens.length,
      stopReason: r.stopReason,
      wallMs: r.wallMs,
      finishedAt: now()
    })
  }

  listRuns(limit = 100): RunSummary[] {
    const rows = this.db
      .prepare(`SELECT ${RUN_COLUMNS} FROM runs r ORDER BY r.id DESC LIMIT ?`)
      .all(limit) as RunRow[]
    return rows.map(toRunSummary)
  }

  getRun(runId: number): { summary: RunSummary; config: RunConfig } | null {
    const row = this.db.prepare(`SELECT ${RUN_COLUMNS} FROM runs r WHERE r.id = ?`).get(runId) as RunRow | undefined
    if (!row) return null
    return { summary: toRunSummary(row), config: RunConfig.parse(JSON.parse(row.config)) }
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

  /** Done prompt results grouped by method, in the shape summarizeMethod folds. */
  getOutcomes(runId: number): Map<string, PromptOutcome[]> {
    const stepsByResult = this.doneStepsOfRun(runId)
    const outcomes = new Map<string, PromptOutcome[]>()
    for (const result of this.getPromptResults(runId)) {
      if (result.status !== 'done') continue
      const list = outcomes.get(result.method) ?? []
      list.push({
        outputText: result.outputText,
        outputTokens: result.outputCount,
        wallMs: result.wallMs ?? 0,
        steps: stepsByResult.get(result.id) ?? []
      })
      outcomes.set(result.method, list)
    }
    return outcomes
  }

  /** 004 §5 draft-model selection: one row per warm-up decode (phase 'warmup') and per prompt's choice. */
  addDraftChoice(runId: number, choice: DraftChoiceRow): void {
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

  deleteRun(runId: number): void {
    this.db.prepare('DELETE FROM runs WHERE id = ?').run(runId)
  }

  /** The open connection, for stores of other tables in the same file (electron/store/app-store.ts). */
  get database(): Database.Database {
    return this.db
  }

  close(): void {
    for (const runId of this.ownRuns) runsInProgressHere.delete(runId)
    this.db.close()
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
    })()
  }
}

/** Runs this process is executing through an open store (a store closed mid-run leaves its runs orphaned). */
const runsInProgressHere = new Set<number>()

function openError(file: string, error: unknown): Error {
  const code = (error as { code?: string }).code
  const message = error instanceof Error ? error.message : String(error)
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new Error(`${file} is not a SpecLab database (${message})`, { cause: error })
  }
  return new Error(`cannot open the SpecLab database ${file}: ${message}`, { cause: error })
}

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
    promptCount: row.prompt_count
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
