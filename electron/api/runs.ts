/**
 * Runs: a run's configuration as stored and re-run (models, prompts, sampling, threads), its status and the
 * machine around it, its report (per-method metrics), and the runs browser's filter and views of stored runs.
 */
import { z } from 'zod'
import type { StepRecord } from '../engine/decoders/types'
import { ModelThreadCalibration } from '../engine/model/thread-calibration'
import { ThreadPlan } from '../engine/model/thread-plan'
import { settingSchema } from '../engine/settings/run-settings'
import { MethodSummary, type IntervalSummary } from '../engine/metrics/summary'
import type { BestSpeedup } from './best-speedup'
import { RunStatus, Text } from './fields'
import { MethodId, ParamValue } from './methods'
import { AdviceRecord } from './advice'
import { WhatIfReport } from '../engine/replay/what-if-report'

/** The sampling warp and the logits transfer; bounds and help in the run-settings catalog. */
export const SamplingConfig = z.object({
  temperature: settingSchema('temperature'),
  topK: settingSchema('topK'),
  topP: settingSchema('topP'),
  fullVocabulary: settingSchema('fullVocabulary')
})
export type SamplingConfig = z.infer<typeof SamplingConfig>

export const ModelPaths = z.object({
  target: z.string().min(1),
  mid: z.string().min(1).optional(),
  draft: z.string().min(1).optional(),
  /** Every candidate draft when the run selects a draft per prompt (004 §5); `draft` is then the first. */
  drafts: z.array(z.string().min(1)).optional()
})
export type ModelPaths = z.infer<typeof ModelPaths>

/** What a model file was when the run used it: size + a hash of its head and tail (fast on multi-GB files). */
export const ModelFingerprint = z.object({
  path: z.string(),
  sizeBytes: z.number(),
  fingerprint: z.string(),
  architecture: z.string(),
  vocabularySize: z.number()
})
export type ModelFingerprint = z.infer<typeof ModelFingerprint>

export const PromptSource = z.object({
  /** Built-in prompt set id (resources/prompts) … */
  dataset: z.string().optional(),
  /** … or a JSONL file with `turns`, `question`, `prompt` or `text` per line. */
  file: z.string().optional(),
  limit: z.number().int().positive().optional(),
  /** At most this many prompts of each category, in file order, before `limit` (suites: per-category tables). */
  perCategory: z.number().int().positive().optional()
})
export type PromptSource = z.infer<typeof PromptSource>

export const RunConfig = z.object({
  suite: z.string().nullable(),
  methods: z.array(MethodId).min(1),
  models: ModelPaths,
  modelFingerprints: z.array(ModelFingerprint).default([]),
  prompts: PromptSource,
  maxTokens: settingSchema('maxTokens'),
  sampling: SamplingConfig,
  seed: settingSchema('seed'),
  /** Draft length γ for fixed-window methods. */
  gamma: settingSchema('gamma'),
  /** The run's method parameters, resolved by the method catalog: every key of its methods, defaults filled in. */
  params: z.record(z.string(), ParamValue),
  threads: z.number().int().positive().max(256),
  /**
   * The target's threads for evaluations of several tokens (verification, prefill); single tokens use `threads`.
   * null: resolved at load (all cores on ≤ 2-core machines when `threads` is the default, else `threads`) and stored
   * as loaded; runs before per-phase threads read null = `threads`.
   */
  batchThreads: z.number().int().positive().max(256).nullable().default(null),
  /**
   * The target's threads for single tokens as loaded (with a llama.cpp built with OpenMP, every core on ≤ 2-core
   * machines when `threads` is the default; llama-cpp-model.ts targetThreadsFor). null: `threads` (every run before
   * this field, and models without threads).
   */
  targetThreads: z.number().int().positive().max(256).nullable().default(null),
  /** The draft's (else the mid model's) single-token threads as loaded; null: `threads` (runs before this field). */
  draftThreads: z.number().int().positive().max(256).nullable().default(null),
  /**
   * How the threads were chosen when they were measured at load (engine/model/thread-calibration.ts): per model its
   * timings per thread count and phase, and the counts chosen; null when `threads` was given or calibration was off
   * (then the rule of llama-cpp-model.ts targetThreadsFor), and for every run before calibration existed.
   */
  threadCalibration: z.array(ModelThreadCalibration).nullable().default(null),
  /**
   * Each model's threads per phase as loaded and how they were chosen (given, measured, cached, rule): the one record
   * of a run's threads (engine/model/thread-plan.ts); `threads`, `targetThreads`, `batchThreads`, `draftThreads` and
   * `threadCalibration` are written from it for their readers. null for runs stored without one (and toy models).
   */
  threadPlan: ThreadPlan.nullable().default(null),
  contextSize: z.number().int().positive(),
  /** Adaptive draft-model selection (004 §5) among models.drafts; null = always models.draft. */
  draftSelection: z.object({ warmupPrompts: z.number().int().min(3).max(1000) }).nullable().default(null),
  /**
   * Timed repeats of every (prompt, method) cell, interleaved (prompt → repeat → method); runs before repeats
   * existed read as 1.
   */
  repeats: settingSchema('repeats').default(1),
  /**
   * Synthetic acceptance r_1, r_2, …: verification accepted draft position i with probability r_i (llama.cpp
   * --spec-synth-rates) to measure the engine's cost curve. Outputs are NOT the target's; such runs are never
   * compared for speed with real ones. null for every real run.
   */
  syntheticAcceptance: z.array(z.number().min(0).max(1)).min(1).max(128).nullable().default(null),
  /**
   * A `speclab advise` verification run (suite 'advise'): its arms are candidate configurations stored under their
   * own labels (several may share a method at different γ or parameters), and this says which is which, with the
   * trace and predictions they were chosen from (api/advice.ts). null for every other run.
   */
  advice: AdviceRecord.nullable().default(null)
})
export type RunConfig = z.infer<typeof RunConfig>

export { RunStatus }

/**
 * The machine around a run: cores, the 1/5/15-minute load averages before and after, and the CPU frequency
 * governor where Linux exposes it. `busy`: the 1-minute load exceeded the cores before or after the run (the run's
 * own threads count in the load after), so its timings are suspect.
 */
export const MachineState = z.object({
  cpus: z.number().int().positive(),
  loadBefore: z.array(z.number()).length(3),
  loadAfter: z.array(z.number()).length(3).nullable(),
  governor: z.string().nullable(),
  busy: z.boolean(),
  /**
   * node-llama-cpp's llama.cpp binary the run's models ran on: 'prebuilt' or 'localBuild' (SpecLab's OpenMP CPU
   * build), OpenMP or not (null where it cannot be told), llama.cpp release, 'cpu' or the GPU backend. Absent in
   * runs recorded before it was kept, null when no llama.cpp runtime ran (synthetic models).
   */
  native: z
    .object({ build: z.string(), openmp: z.boolean().nullable(), release: z.string(), gpu: z.string(), libuvWorkers: z.number().int().optional(), directEvaluation: z.boolean().optional(), jsThreadEvaluation: z.boolean().optional(), topLogitsRead: z.boolean().optional(), smallBatchMatmul: z.boolean().optional() })
    .nullable()
    .optional()
})
export type MachineState = z.infer<typeof MachineState>

export const RunSummary = z.object({
  id: z.number().int(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  suite: z.string().nullable(),
  methods: z.array(z.string()),
  status: RunStatus,
  error: z.string().nullable(),
  promptCount: z.number().int(),
  /** The user's name for the run and notes on it; null when none. */
  name: z.string().nullable().default(null),
  notes: z.string().nullable().default(null),
  /** Load and governor around the run; null for runs stored before the machine was recorded (or where it could not be read). */
  machine: MachineState.nullable().default(null),
  /**
   * Where an imported run was first recorded (machine, database file, id there) and when it arrived here
   * (`speclab runs import`); null (or absent) for a run recorded in this database.
   */
  origin: z
    .object({ host: z.string().nullable(), db: z.string(), id: z.number().int(), importedAt: z.string().nullable() })
    .nullable()
    .optional()
})
export type RunSummary = z.infer<typeof RunSummary>

/** Per-method metrics of a run: the engine's fold (engine/metrics/summary.ts) defines them. */
export { MethodSummary }
export type { IntervalSummary }

export const RunReport = z.object({
  runId: z.number().int(),
  config: RunConfig,
  status: RunStatus,
  methods: z.array(MethodSummary),
  /** Load and governor around the run (see MachineState). */
  machine: MachineState.nullable().default(null),
  /**
   * Other γ, length policies, lookup caps and parallel windows priced on this run's recorded rounds
   * (engine/replay/what-if.ts); null when no method drafts with a draft model or a lookup, for synthetic-acceptance
   * runs, and in reports stored before it existed.
   */
  whatIf: WhatIfReport.nullable().default(null)
})
export type RunReport = z.infer<typeof RunReport>

// ── The runs browser: its filter (a request) and what it shows of stored runs (plain types the host produces) ──

export const RunFilter = z.object({
  /** Free text: run id, suite, methods, model paths, dataset, error. */
  search: Text(200).optional(),
  suite: Text(100).optional(),
  method: Text(50).optional(),
  /** Part of a model path (any role). */
  model: Text(500).optional(),
  status: RunStatus.optional(),
  /** ISO dates (YYYY-MM-DD or full timestamps), inclusive. */
  from: Text(40).optional(),
  to: Text(40).optional(),
  limit: z.number().int().positive().max(10_000).optional()
})
export type RunFilter = z.infer<typeof RunFilter>

export interface RunListItem extends RunSummary {
  /**
   * The run's best speedup over `ar` (api/best-speedup.ts); null without a finished ar and another method, and for
   * a synthetic-acceptance run (`synthetic`), whose speedups measure the engine and are not put beside real ones.
   */
  bestSpeedup?: BestSpeedup | null
  synthetic?: boolean
  models: { target: string; mid: string | null; draft: string | null }
  dataset: string | null
  gamma: number
  maxTokens: number
}
export interface PromptResultInfo {
  id: number
  method: string
  promptIndex: number
  promptId: string | null
  category: string | null
  promptText: string
  status: string
  outputText: string
  outputCount: number
  /** One provenance code per output token (d m r b t). */
  provenance: string
  stopReason: string | null
  wallMs: number | null
  steps: number
}
export interface EntropyHistogram {
  method: string
  /** Bin edges in nats (bins.length = counts.length + 1). */
  bins: number[]
  accepted: number[]
  rejected: number[]
}
export interface RunDetails {
  summary: RunSummary
  report: RunReport
  results: PromptResultInfo[]
  entropy: EntropyHistogram[]
}
/** A stored step as the UI shows it: the engine's step record (per-level counters are read through `levels`). */
export type StepRow = StepRecord
export interface RunExport {
  fileName: string
  mimeType: string
  content: string
}
export interface RunDiffDetails {
  a: RunReport
  b: RunReport
  /** False when one run used synthetic acceptance (other rates, or none): their timings are not compared. */
  speedComparable: boolean
  configDifferences: { key: string; a: unknown; b: unknown }[]
  methods: {
    method: string
    inA: boolean
    inB: boolean
    metrics: Record<string, { a: number | null; b: number | null; delta: number | null }>
    /** tokensPerSecond and speedup: the difference's median and 95 % interval, and whether it holds 0. */
    timed: Record<'tokensPerSecond' | 'speedup', { difference: IntervalSummary | null; withinNoise: boolean | null }>
    /** Same decisions and outputs in both runs: only timing differs. */
    sameDecisions: boolean
  }[]
  /** Per (method, prompt index): both outputs, for the text diff. */
  outputs: { method: string; promptIndex: number; promptText: string; a: string | null; b: string | null }[]
}
/** A run's report (experiments/reports/run-report.ts), as `speclab show RUN --format md|html` prints it. */
export interface RunReportFiles {
  runId: number
  /** File name without extension: speclab-run-<id>. */
  baseName: string
  markdown: string
  html: string
}
/** Runs written for another database (store/run-transfer.ts): a SpecLab database file, base64-encoded for the transport. */
export interface RunsFile {
  fileName: string
  mimeType: string
  base64: string
  runs: number
}
/** One run moved between databases: its id in the file, its id here, its identity. */
export interface MovedRun {
  from: number
  to: number
  uid: string
}
/** What an import did: the runs added, and those already here (skipped, with their id here). */
export interface RunsImport {
  file: string
  transferred: MovedRun[]
  skipped: MovedRun[]
}
/** A diff puts at most this many runs side by side (columns of a terminal table, and of the Diff screen). */
export const MAX_DIFF_RUNS = 8
/** base64 characters per upload chunk: well under the browser transport's 1 MiB message limit. */
export const UPLOAD_CHUNK_CHARS = 512 * 1024
/** Three to eight runs side by side (api/run-diff.ts diffManyRuns), with each run's report for the screen. */
export interface RunsDiffDetails {
  runs: number[]
  speedComparable: boolean
  configDifferences: { key: string; values: unknown[] }[]
  methods: {
    method: string
    present: boolean[]
    metrics: Record<string, { values: (number | null)[]; deltas: (number | null)[] }>
    sameDecisions: boolean
  }[]
  reports: RunReport[]
}
export interface PerplexityPoint {
  method: string
  /** exp(mean negative log-likelihood) of the outputs under the raw target (temperature 1). */
  perplexity: number
  tokensPerSecond: number
}
