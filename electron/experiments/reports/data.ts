/**
 * The stored data of a suite run, as reports read it: the plan, and for every finished cell its run report
 * (buildRunReport — the folds of engine/metrics over the stored steps) and its prompt results with their steps,
 * categories and perplexity scores. Every number a report prints is computed from these rows, never from the live
 * run: `speclab report <id>` re-renders the same report from the database alone.
 */
import type { MethodSummary, RunReport } from '../../api/runs'
import { buildRunReport } from '../../api/runs-service'
import type { StepRecord } from '../../engine/decoders/types'
import { beamWidthTotals, foldSteps, summarizeMethod, type PromptOutcome } from '../../engine/metrics/fold'
import { UserInputError } from '../../engine/errors'
import type { DraftChoiceRow, RunStore } from '../../store/run-store'
import { SuiteStore, type OutputScore, type SuiteRunRow } from '../../store/suite-store'
import type { PlannedCell, SuiteRunOptions } from '../suite-runner'

export interface ResultRecord {
  resultId: number
  method: string
  promptIndex: number
  promptId: string | null
  category: string | null
  promptText: string
  outcome: PromptOutcome
  score: OutputScore | null
}

export interface CellData {
  cell: PlannedCell
  runId: number
  report: RunReport
  /** Done prompt results, in prompt order then method order. */
  results: ResultRecord[]
  /** 004 §5 draft choices of a draft-selection cell (empty otherwise). */
  draftChoices: DraftChoiceRow[]
}

export interface SuiteData {
  suiteRun: SuiteRunRow<SuiteRunOptions, PlannedCell[]>
  /** Finished cells by key (the latest `done` run of each). */
  cells: Map<string, CellData>
  missing: string[]
}

export function loadSuiteData(store: RunStore, suiteRunId: number): SuiteData {
  const suites = new SuiteStore(store.database)
  const suiteRun = suites.getSuiteRun<SuiteRunOptions, PlannedCell[]>(suiteRunId)
  if (!suiteRun) throw new UserInputError(`no suite run with id ${suiteRunId}`)
  const finished = suites.finishedCells(suiteRunId)
  const cells = new Map<string, CellData>()
  const missing: string[] = []
  for (const cell of suiteRun.plan) {
    const runId = finished.get(cell.key)
    if (runId === undefined) {
      missing.push(cell.key)
      continue
    }
    const report = buildRunReport(store, runId)!
    const scores = suites.scoresOfRun(runId)
    const repeats = store.getRepeats(runId)
    const results = store
      .getPromptResults(runId)
      .filter((r) => r.status === 'done')
      .map((r) => ({
        resultId: r.id,
        method: r.method,
        promptIndex: r.promptIndex,
        promptId: r.promptId,
        category: r.category,
        promptText: r.promptText,
        outcome: {
          promptIndex: r.promptIndex,
          outputText: r.outputText,
          outputTokens: r.outputCount,
          wallMs: r.wallMs ?? 0,
          steps: store.getSteps(r.id),
          repeats: repeats.get(r.id)?.map((x) => ({ repeat: x.repeat, wallMs: x.wallMs, outputTokens: x.outputCount }))
        },
        score: scores.get(r.id) ?? null
      }))
    cells.set(cell.key, { cell, runId, report, results, draftChoices: store.getDraftChoices(runId) })
  }
  return { suiteRun, cells, missing }
}

/** The run report's summary of `method` (speedup against the same run's ar). */
export function methodOf(cell: CellData | undefined, method: string): MethodSummary | null {
  return cell?.report.methods.find((m) => m.method === method) ?? null
}

/**
 * A method summarised over a subset of the cell's prompts (e.g. one category), with the speedup against `ar` over
 * exactly those prompts of the same run — the fold buildRunReport uses, on fewer rows.
 */
export function summaryWhere(cell: CellData | undefined, method: string, keep: (r: ResultRecord) => boolean): MethodSummary | null {
  if (!cell) return null
  const rows = cell.results.filter((r) => keep(r))
  const mine = outcomesOf(rows, method)
  if (mine.length === 0) return null
  const ar = outcomesOf(rows, 'ar')
  return summarizeMethod(method, mine, ar.length > 0 ? ar : null)
}

/**
 * `method` summarised against `baseline`, another method of the same run, instead of ar: its `speedup` is the ratio
 * of their throughputs and `speedupInterval` pairs every (prompt, repeat) of the two. Null when either is missing.
 */
export function summaryAgainst(cell: CellData | undefined, method: string, baseline: string): MethodSummary | null {
  if (!cell) return null
  const mine = outcomesOf(cell.results, method)
  const base = outcomesOf(cell.results, baseline)
  return mine.length > 0 && base.length > 0 ? summarizeMethod(method, mine, base) : null
}

function outcomesOf(rows: readonly ResultRecord[], method: string): PromptOutcome[] {
  return rows.filter((r) => r.method === method).map((r) => r.outcome)
}

export function stepsOf(cell: CellData | undefined, method: string, keep: (r: ResultRecord) => boolean = () => true): StepRecord[] {
  return cell ? cell.results.filter((r) => r.method === method && keep(r)).flatMap((r) => [...r.outcome.steps]) : []
}

/** exp(Σ NLL / Σ tokens) of the method's scored outputs; null when none was scored. */
export function perplexityOf(cell: CellData | undefined, method: string): number | null {
  if (!cell) return null
  let nll = 0
  let tokens = 0
  for (const r of cell.results)
    if (r.method === method && r.score) {
      nll += r.score.nll
      tokens += r.score.tokens
    }
  return tokens > 0 ? Math.exp(nll / tokens) : null
}

/** Categories of the cell's prompts in first-seen order (uncategorised prompts are left out). */
export function categoriesOf(cell: CellData | undefined): string[] {
  if (!cell) return []
  return [...new Set(cell.results.map((r) => r.category).filter((c): c is string => c !== null))]
}


/** Per verification round (proposed > 0): mean draft length, mean accepted length, acceptance. */
export function draftLengths(steps: readonly StepRecord[]): { draftLength: number | null; acceptedLength: number | null; acceptance: number | null } {
  const t = foldSteps(steps)
  return {
    draftLength: t.verifications > 0 ? t.proposed / t.verifications : null,
    acceptedLength: t.verifications > 0 ? t.accepted / t.verifications : null,
    acceptance: t.proposed > 0 ? t.accepted / t.proposed : null
  }
}

/** Average accepted width W̄ of beam methods (DSBD App. C.1): metrics/fold.ts beamWidthTotals over the steps. */
export const meanWidth = (steps: readonly StepRecord[]): number | null => beamWidthTotals(steps).meanWidth

export const mean = (values: readonly number[]): number | null =>
  values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : null
