/**
 * Experiment suites run from the app: the start request and its progress, what a suite pre-fills in the workbench,
 * and the stored suite runs with their reports.
 */
import { z } from 'zod'
import { settingSchema } from '../engine/settings/run-settings'
import { Id, Text } from './fields'
import type { MethodId, ParamValue } from './methods'
import { TrioSelection } from './models'
import { RunStatus } from './runs'

/** A whole experiment suite (experiments/suites.ts) run from the app, as `speclab suite <id> [--quick] [--resume]`. */
export const SuiteStart = z.object({
  suite: Text(100).min(1),
  /** The reduced grid (`--quick`). */
  quick: z.boolean(),
  /** Continue this suite run (finished cells are kept, not recomputed); null = a new suite run. */
  resume: Id.nullable(),
  /** Library models to run on (roles left null fall back to the suite's files); null = the suite's default files. */
  models: TrioSelection.nullable(),
  /** Timed repeats per (prompt, method); absent: 3 for a full grid, 1 for the quick one. */
  repeats: settingSchema('repeats').optional()
})
export type SuiteStart = z.infer<typeof SuiteStart>

/** A suite run as it goes (pushed as `suite:progress`, and answered by suites:status). */
export const SuiteJobProgress = z.object({
  jobId: z.string(),
  suite: z.string(),
  /** null until the suite run row exists (models load first). */
  suiteRunId: Id.nullable(),
  quick: z.boolean(),
  phase: z.enum(['loading', 'running', 'scoring', 'finished']),
  cellKey: z.string().nullable(),
  /** 1-based cell in progress among the cells this invocation executes. */
  cellIndex: z.number().int().min(0),
  cellCount: z.number().int().min(0),
  /** Cells kept from before (a resume). */
  cellsSkipped: z.number().int().min(0),
  /** Work in token-budget units (prompts × methods × max tokens). */
  unitsDone: z.number().min(0),
  unitsTotal: z.number().min(0),
  elapsedMs: z.number().min(0),
  etaMs: z.number().min(0).nullable(),
  method: z.string().nullable(),
  status: RunStatus.nullable(),
  error: z.string().nullable()
})
export type SuiteJobProgress = z.infer<typeof SuiteJobProgress>

// ── Suites and their stored runs (plain types: the host produces them, the UI renders them) ──

/** What the Workbench pre-fills when a suite is chosen (electron/experiments/suites.ts): its main cell as one run. */
export interface SuitePreset {
  methods: MethodId[]
  /** A built-in prompt set id (resources/prompts). */
  dataset: string
  limit?: number
  maxTokens?: number
  temperature?: number
  topK?: number
  gamma?: number
  params?: Record<string, ParamValue>
}
export interface SuiteInfo {
  id: string
  name: string
  description: string
  preset: SuitePreset
  /** How long the whole grid takes on the development machine, full and --quick (shown before a suite starts). */
  estimate: { full: string; quick: string }
}
export interface SuiteRunInfo {
  id: number
  suite: string
  /** The suite's display name (the id when the suite is no longer registered). */
  name: string
  createdAt: string
  finishedAt: string | null
  quick: boolean
  status: RunStatus
  error: string | null
  cells: number
  finishedCells: number
}
/** A suite run's report, re-rendered from the store (the same renderer as `speclab report`). */
export interface SuiteReportFiles {
  suiteRunId: number
  suite: string
  /** `<suite>-<suiteRunId>`: the file names are this plus .md / .html. */
  baseName: string
  markdown: string
  /** Self-contained HTML (inline CSS and SVG, no script). */
  html: string
}
