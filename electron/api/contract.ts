/**
 * The ONE contract shared by Electron IPC, the browser bridge and the CLI: zod schemas validate every payload
 * that crosses a process boundary, and the TypeScript types are inferred from them.
 */
import { z } from 'zod'
import type { StepRecord } from '../engine/decoders/types'

import { METHOD_IDS } from '../engine/methods/ids'
import { GAMMA_RANGE, MAX_REPEATS } from '../engine/methods/limits'
import { ModelThreadCalibration } from '../engine/model/thread-calibration'
import type { MethodInfo } from '../engine/methods/docs'
import { IntervalSummary as IntervalSummarySchema, MethodSummary, type IntervalSummary } from '../engine/metrics/summary'

/** Method ids (DESIGN.md CLI contract — keep stable): generated from the method catalog. */
export { METHOD_IDS }
export type { MethodInfo, MethodParamInfo } from '../engine/methods/docs'
export const MethodId = z.enum(METHOD_IDS)
export type MethodId = z.infer<typeof MethodId>

export const SamplingConfig = z.object({
  /** 0 = greedy (argmax verify/correct). */
  temperature: z.number().min(0).max(10),
  /** Top-k warping for draft and target alike; 0 = whole vocabulary. */
  topK: z.number().int().min(0).max(1_000_000),
  topP: z.number().gt(0).max(1),
  /** Transfer the full vocabulary from node-llama-cpp instead of the top-k (exact but ~10 ms/position at 32k). */
  fullVocabulary: z.boolean()
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

export const ParamValue = z.union([z.number(), z.string(), z.boolean()])
export type ParamValue = z.infer<typeof ParamValue>

export const RunConfig = z.object({
  suite: z.string().nullable(),
  methods: z.array(MethodId).min(1),
  models: ModelPaths,
  modelFingerprints: z.array(ModelFingerprint).default([]),
  prompts: PromptSource,
  maxTokens: z.number().int().positive().max(100_000),
  sampling: SamplingConfig,
  seed: z.number().int().min(0).max(2 ** 32 - 1),
  /** Draft length γ for fixed-window methods. */
  gamma: z.number().int().min(GAMMA_RANGE.min).max(GAMMA_RANGE.max),
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
   * machines when `threads` is the default; llama-cpp-model.ts targetThreadsFor). null: `threads` (stored runs that
   * lack this field, and models without threads).
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
  contextSize: z.number().int().positive(),
  /** Adaptive draft-model selection (004 §5) among models.drafts; null = always models.draft. */
  draftSelection: z.object({ warmupPrompts: z.number().int().min(3).max(1000) }).nullable().default(null),
  /**
   * Timed repeats of every (prompt, method) cell, interleaved (prompt → repeat → method); runs before repeats
   * existed read as 1.
   */
  repeats: z.number().int().min(1).max(MAX_REPEATS).default(1),
  /**
   * Synthetic acceptance r_1, r_2, …: verification accepted draft position i with probability r_i (llama.cpp
   * --spec-synth-rates) to measure the engine's cost curve. Outputs are NOT the target's; such runs are never
   * compared for speed with real ones. null for every real run.
   */
  syntheticAcceptance: z.array(z.number().min(0).max(1)).min(1).max(128).nullable().default(null)
})
export type RunConfig = z.infer<typeof RunConfig>

export const RunStatus = z.enum(['running', 'done', 'cancelled', 'interrupted', 'failed'])
export type RunStatus = z.infer<typeof RunStatus>

/**
 * The machine around a run (migration 9): cores, the 1/5/15-minute load averages before and after, and the CPU
 * frequency governor where Linux exposes it. `busy`: the 1-minute load exceeded the cores before or after the run
 * (the run's own threads count in the load after), so its timings are suspect.
 */
export const MachineState = z.object({
  cpus: z.number().int().positive(),
  loadBefore: z.array(z.number()).length(3),
  loadAfter: z.array(z.number()).length(3).nullable(),
  governor: z.string().nullable(),
  busy: z.boolean()
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
  /** The user's name for the run and notes on it (migration 8); null when none. */
  name: z.string().nullable().default(null),
  notes: z.string().nullable().default(null),
  /** Load and governor around the run; null for runs before migration 9 (or where it could not be read). */
  machine: MachineState.nullable().default(null)
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
  machine: MachineState.nullable().default(null)
})
export type RunReport = z.infer<typeof RunReport>

// ─── The app: models, chat, workbench, runs browser ─────────────────────────────────────────────────────────────
// Requests are validated with these schemas by the receiving side (the engine host, and Electron main before it
// forwards); events pushed from the host to the UI are validated by the UI with `HostEvent`. Request schemas
// have no defaults or transforms, so what a caller sends is exactly what a handler receives.

const Id = z.number().int().positive()
const Text = (max: number) => z.string().max(max)
const ParamsRecord = z.record(z.string().min(1).max(100), ParamValue)
const Seed = z.number().int().min(0).max(2 ** 32 - 1)

export const PROVENANCES = ['draft', 'ngram', 'branch', 'mid', 'resampled', 'bonus', 'target'] as const
export const ProvenanceName = z.enum(PROVENANCES)

export const VIEWS = ['chat', 'workbench', 'runs', 'diff', 'models'] as const
export const View = z.enum(VIEWS)
export type View = z.infer<typeof View>

/** A path the user picked or typed for a model file: the host also checks it is an existing GGUF file. */
export const ModelFilePath = Text(4096)
  .min(1)
  .refine((p) => /\.gguf$/i.test(p.trim()), 'a model file must end in .gguf')

/** A Hugging Face user, repo, file-path segment or branch segment: letters, digits, `-`, `_`, `.`, never only dots. */
const hfSegment = (part: string, extra = '') => new RegExp(`^[\\w.${extra}-]+$`).test(part) && !/^\.+$/.test(part)

/**
 * What node-llama-cpp's downloader accepts, restricted to model files: `hf:<user>/<repo>` with an optional
 * `:<quant>` or `/<path>.gguf` (and `#<branch>`), an https:// URL of a .gguf file, or http:// to this machine only
 * (localhost, 127.0.0.1, [::1]). No `.` / `..` segments, so a URI cannot name a path outside the download folder.
 */
export function isModelUri(uri: string): boolean {
  if (uri.startsWith('hf:')) {
    const match = /^hf:([^/:#]+)\/([^/:#]+)(?::([^/:#]+)|\/([^#]+\.gguf)(?:#(.+))?)?$/i.exec(uri)
    if (!match) return false
    const [, user, repo, quant, file, branch] = match
    return (
      hfSegment(user) &&
      hfSegment(repo) &&
      (quant === undefined || hfSegment(quant)) &&
      (file === undefined || file.split('/').every((part) => hfSegment(part, '+'))) &&
      (branch === undefined || branch.split('/').every((part) => hfSegment(part)))
    )
  }
  try {
    const url = new URL(uri)
    const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
    return (url.protocol === 'https:' || (url.protocol === 'http:' && local)) && /\.gguf$/i.test(url.pathname)
  } catch {
    return false
  }
}
export const ModelUri = Text(2048).refine(
  isModelUri,
  'expected hf:<user>/<repo>:<quant>, hf:<user>/<repo>/<file>.gguf, an https:// URL of a .gguf file, or http:// to localhost'
)

export const LoadSettings = z.object({
  /** Context size per model (capped by each model's training context). */
  contextSize: z.number().int().min(64).max(262_144),
  /** Layers offloaded to the GPU: 'auto' lets node-llama-cpp decide, 0 = CPU only. */
  gpuLayers: z.union([z.literal('auto'), z.number().int().min(0).max(1000)]),
  /** CPU threads per model; null = SpecLab's default (1 on ≤ 2 cores, else llama.cpp's). */
  threads: z.number().int().min(1).max(256).nullable(),
  /** The target's threads for batched evaluations (verification, prefill); null = SpecLab's default (every core on ≤ 2 cores). */
  batchThreads: z.number().int().min(1).max(256).nullable().default(null),
  /** Transfer the full vocabulary instead of the top-k logits (exact for any warp, slower). */
  fullVocabulary: z.boolean()
})
export type LoadSettings = z.infer<typeof LoadSettings>

/** A trio by model-library ids: target M_p, optional mid M_q2 and small draft M_q1. */
export const TrioSelection = z.object({ target: Id, mid: Id.nullable(), draft: Id.nullable() })
export type TrioSelection = z.infer<typeof TrioSelection>

/** Decoding settings shared by chat and the workbench (the workbench adds its method list). */
export const DecodeSettings = z.object({
  maxTokens: z.number().int().min(1).max(16_384),
  temperature: z.number().min(0).max(10),
  topK: z.number().int().min(0).max(1_000_000),
  topP: z.number().gt(0).max(1),
  gamma: z.number().int().min(GAMMA_RANGE.min).max(GAMMA_RANGE.max),
  /** null = a fresh random seed, recorded with the result. */
  seed: Seed.nullable(),
  /** Method parameters as the user gave them (the CLI's --set key=value); the host resolves and checks them. */
  params: ParamsRecord
})
export type DecodeSettings = z.infer<typeof DecodeSettings>

export const GenerationSettings = DecodeSettings.extend({ method: MethodId })
export type GenerationSettings = z.infer<typeof GenerationSettings>

export const PromptFormat = z.enum(['auto', 'chat', 'completion'])
export type PromptFormat = z.infer<typeof PromptFormat>

export const DatasetChoice = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('builtin'), id: Text(100).min(1) }),
  z.object({ kind: z.literal('file'), path: Text(4096).min(1) })
])
export type DatasetChoice = z.infer<typeof DatasetChoice>

export const WorkbenchStart = z.object({
  /** A suite id from electron/experiments/suites.ts, recorded with the run; null for an ad-hoc run. */
  suite: Text(100).min(1).nullable(),
  methods: z.array(MethodId).min(1).max(METHOD_IDS.length),
  dataset: DatasetChoice,
  limit: z.number().int().positive().max(100_000).nullable(),
  models: TrioSelection,
  load: LoadSettings,
  settings: DecodeSettings,
  /** Timed repeats per (prompt, method); absent: 3 when ar is compared with another method, else 1. */
  repeats: z.number().int().min(1).max(MAX_REPEATS).optional()
})
export type WorkbenchStart = z.infer<typeof WorkbenchStart>

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

// ── Pushed events (host → UI) ──

export const TokenPiece = z.object({ text: z.string(), provenance: ProvenanceName })
export type TokenPiece = z.infer<typeof TokenPiece>

/** Live statistics of one generation: folds over its step records (engine/metrics/fold.ts). */
export const LiveStats = z.object({
  tokens: z.number().int().min(0),
  elapsedMs: z.number().min(0),
  tokensPerSecond: z.number().min(0),
  acceptanceRate: z.number().nullable(),
  sigma: z.number().nullable(),
  eta: z.number().nullable(),
  meanAcceptedLength: z.number().nullable(),
  targetCalls: z.number().int().min(0),
  /** γ of the verification rounds so far (the last 200). */
  gammas: z.array(z.number()),
  /** From the request to the first generated token (prompt processing included); absent in older messages. */
  timeToFirstTokenMs: z.number().min(0).nullable().optional()
})
export type LiveStats = z.infer<typeof LiveStats>

export const ChatMessage = z.object({
  id: Id,
  conversationId: Id,
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  /** Assistant messages: the text in runs of one provenance. */
  segments: z.array(TokenPiece).nullable(),
  settings: GenerationSettings.nullable(),
  stats: LiveStats.nullable(),
  stopReason: z.string().nullable(),
  /** 'chat' (the model's chat template) or 'completion' (plain continuation). */
  format: z.enum(['chat', 'completion']).nullable(),
  createdAt: z.string(),
  /** Assistant messages: the model files that generated it (null for user messages and older replies). */
  models: z.object({ target: z.string(), mid: z.string().nullable(), draft: z.string().nullable() }).nullable().default(null),
  /** The reply's speedup over ar, measured on request on the same prompt tokens (chat:baseline); null until then. */
  baseline: z.lazy(() => ChatBaseline).nullable().default(null)
})
export type ChatMessage = z.infer<typeof ChatMessage>

/**
 * A reply's baseline: `ar` and the reply's own method re-run on the reply's prompt tokens with its settings and seed,
 * interleaved over `repeats`; tokens/s of each and the paired speedup as medians with 95 % intervals.
 */
export const ChatBaseline = z.object({
  repeats: z.number().int().min(1),
  arTokensPerSecond: IntervalSummarySchema,
  methodTokensPerSecond: IntervalSummarySchema,
  speedup: IntervalSummarySchema,
  measuredAt: z.string()
})
export type ChatBaseline = z.infer<typeof ChatBaseline>

export const DownloadState = z.object({
  downloadId: z.string(),
  uri: z.string(),
  state: z.enum(['downloading', 'done', 'failed', 'cancelled']),
  downloadedBytes: z.number().min(0),
  totalBytes: z.number().min(0),
  error: z.string().nullable(),
  /** The library entry once the file is in place. */
  modelId: Id.nullable(),
  fileName: z.string().nullable()
})
export type DownloadState = z.infer<typeof DownloadState>

export const WorkbenchProgress = z.object({
  jobId: z.string(),
  runId: Id.nullable(),
  phase: z.enum(['loading', 'running', 'finished']),
  message: z.string(),
  promptIndex: z.number().int().min(0),
  promptCount: z.number().int().min(0),
  method: z.string(),
  /** The timed repeat in progress (0-based) of `repeats`. */
  repeat: z.number().int().min(0),
  repeats: z.number().int().min(1),
  /** Tokens of the current (prompt, repeat, method) decode and its budget. */
  tokens: z.number().int().min(0),
  maxTokens: z.number().int().min(0),
  /** Finished (prompt, repeat, method) decodes and their total. */
  cellsDone: z.number().int().min(0),
  cellsTotal: z.number().int().min(0),
  elapsedMs: z.number().min(0),
  status: RunStatus.nullable(),
  error: z.string().nullable()
})
export type WorkbenchProgress = z.infer<typeof WorkbenchProgress>

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
  repeats: z.number().int().min(1).max(MAX_REPEATS).optional()
})
export type SuiteStart = z.infer<typeof SuiteStart>

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

export const UiCommand = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('navigate'), view: View }),
  z.object({ kind: z.literal('add-model') }),
  z.object({ kind: z.literal('start-suite'), suiteId: Text(100) }),
  z.object({ kind: z.literal('database-opened'), path: Text(4096) })
])
export type UiCommand = z.infer<typeof UiCommand>

export const HostEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('models:changed') }),
  z.object({
    type: z.literal('models:load-progress'),
    role: z.enum(['target', 'mid', 'draft']),
    fileName: z.string(),
    /** Model index within the trio being loaded, and how many there are. */
    index: z.number().int().min(0),
    count: z.number().int().min(1),
    fraction: z.number().min(0).max(1)
  }),
  z.object({ type: z.literal('download:progress'), download: DownloadState }),
  z.object({
    type: z.literal('chat:tokens'),
    generationId: z.string(),
    conversationId: Id,
    tokens: z.array(TokenPiece),
    stats: LiveStats
  }),
  z.object({
    type: z.literal('chat:done'),
    generationId: z.string(),
    conversationId: Id,
    message: ChatMessage.nullable(),
    error: z.string().nullable()
  }),
  z.object({ type: z.literal('workbench:progress'), progress: WorkbenchProgress }),
  z.object({ type: z.literal('suite:progress'), progress: SuiteJobProgress }),
  z.object({ type: z.literal('runs:changed') }),
  z.object({ type: z.literal('host:status'), state: z.enum(['ready', 'restarting', 'failed']), message: z.string().nullable() }),
  z.object({ type: z.literal('ui:command'), command: UiCommand })
])
export type HostEvent = z.infer<typeof HostEvent>

// ── Response shapes (plain types: the host produces them, the UI renders them) ──

export interface DatasetInfo {
  kind: 'builtin' | 'file'
  /** Built-in id, or the file path for an imported JSONL. */
  id: string
  label: string
  prompts: number
  categories: string[]
  preview: string[]
}
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
export interface AppInfo {
  version: string
  mode: 'electron' | 'browser'
  databasePath: string
  downloadDirectory: string
  /** Every method of the catalog, with its parameters (the UI's knobs) — generated from engine/methods/catalog.ts. */
  methods: MethodInfo[]
  datasets: DatasetInfo[]
  suites: SuiteInfo[]
  cpuCount: number
  defaultThreads: number | null
}

export interface ModelEntry {
  id: number
  path: string
  fileName: string
  source: 'file' | 'download'
  uri: string | null
  addedAt: string
  /** The file is gone (moved or deleted since it was added). */
  missing: boolean
  sizeBytes: number
  name: string
  architecture: string
  vocabularySize: number
  quantization: string | null
  parameters: number | null
  contextLength: number | null
  hasChatTemplate: boolean
  /** Why the file failed to load last time (the engine process died loading it); it is not loaded again unless asked. */
  loadError: string | null
}
export interface LoadedTrio {
  target: ModelEntry
  mid: ModelEntry | null
  draft: ModelEntry | null
  settings: LoadSettings
  /** Context size actually in effect (capped by the target's training context). */
  contextSize: number
  /** KV sequences per model (4; more after a beam / DSBD run asked for them). */
  sequences: number
  /**
   * Threads in effect: the target's single-token evaluations, its batched evaluations, and the drafts' (mid and
   * draft; null without one). The target's single tokens take more than the drafts' with an OpenMP llama.cpp.
   */
  threads: { single: number; targetBatch: number; drafts?: number | null } | null
  /** How those threads were chosen: per model its calibration (measured now or cached); null when given or by rule. */
  threadCalibration?: ModelThreadCalibration[] | null
  /** node-llama-cpp's llama.cpp binary (what a second thread is worth depends on it; llama-cpp-model.ts nativeBackend). */
  native?: { build: string; openmp: boolean | null; gpu: string }
  /**
   * Why the trio's vocabularies differ (the vocabulary check's reason), null when they pass: then only the methods
   * that draft with another tokenizer (catalog `vocabulary: 'any'`: sd-tli, sd-uad) run on it.
   */
  vocabularyMismatch: string | null
}
export interface ModelLibrary {
  models: ModelEntry[]
  loaded: LoadedTrio | null
  /** A load in progress, if any. */
  loading: boolean
}
export interface ModelInspection {
  entry: ModelEntry
  tokenizer: { model: string | null; bos: number | null; eos: number | null; vocabularySize: number }
  layers: number | null
  embeddingLength: number | null
  headCount: number | null
  chatTemplate: string | null
  /** Other scalar metadata (key → value as text), for the curious. */
  metadata: { key: string; value: string }[]
}
/**
 * What loading a trio will take (experiments/memory-estimate.ts) with the chosen GPU layers on this machine's llama.cpp
 * runtime: per file (in load order: target, mid, draft) the RAM (weights + context) and the VRAM, and how many of
 * the file's layers go to the GPU.
 */
export interface MemoryEstimate {
  files: {
    fileName: string
    role: 'target' | 'mid' | 'draft'
    /** RAM of the weights and of the context (KV cache, compute buffers): what stays on the CPU. */
    weightsBytes: number
    contextBytes: number
    contextSize: number
    /** Layers on the GPU, of the file's layers (llama.cpp counts the output layer: 6 blocks = 7 layers). */
    gpuLayers: number
    totalLayers: number
    /** VRAM of the weights and context on the GPU; 0 without one. */
    vramBytes: number
    /** false: node-llama-cpp refuses this many GPU layers in the VRAM the earlier files leave, so loading fails. */
    fitsVram: boolean
  }[]
  /** RAM needed in all. */
  totalBytes: number
  /** Free memory of this machine when estimated. */
  freeBytes: number
  sequences: number
  /** The GPU layers asked for (LoadSettings.gpuLayers). */
  gpuLayersSetting: 'auto' | number
  /** The GPU backend of this process's llama.cpp runtime; null when it runs on the CPU only. */
  gpu: 'cuda' | 'vulkan' | 'metal' | null
  /** The GPU's VRAM, and what a load can use: free now, plus what the held trio frees when another replaces it. */
  vramTotalBytes: number
  vramFreeBytes: number
  /** VRAM needed in all. */
  totalVramBytes: number
}
export interface TrioCheck {
  compatible: boolean
  /** One sentence for the UI: why the trio can or cannot run speculative decoding. */
  message: string
  /** Per draft: the failed rule (`reason`) or, when compatible, which rule held (`held`: sizes, padding, texts compared). */
  pairs: { role: 'mid' | 'draft'; compatible: boolean; reason: string | null; held?: string | null }[]
  /** With the load settings given: the memory the load needs, and a sentence saying it beside what is free. */
  memory: MemoryEstimate | null
  memoryMessage: string | null
}
export interface CatalogModel {
  role: 'target' | 'mid' | 'draft'
  label: string
  uri: string
  approxSizeMB: number
}
export interface CatalogTrio {
  id: string
  family: string
  tokenizer: string
  license: string
  notes: string
  models: CatalogModel[]
}
export interface ConversationSummary {
  id: number
  title: string
  createdAt: string
  updatedAt: string
  messages: number
}
export interface Conversation {
  summary: ConversationSummary
  messages: ChatMessage[]
}
export interface RunListItem extends RunSummary {
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
export interface PerplexityPoint {
  method: string
  /** exp(mean negative log-likelihood) of the outputs under the raw target (temperature 1). */
  perplexity: number
  tokensPerSecond: number
}

// ── The api channels: each declared once, with its request schema and its response type ──

declare const responseType: unique symbol
/** Phantom marker carrying a channel's response type; it has no runtime content. */
export interface Returns<Response> {
  readonly [responseType]: Response
}
/** `returns<T>()`: the response type of a channel (type-level only). */
export const returns = <Response>(): Returns<Response> => ({}) as Returns<Response>

/** One api channel: the zod schema its payload must pass, and (as a phantom type) what it answers. */
export interface ApiChannelSpec<Request extends z.ZodType = z.ZodType, Response = unknown> {
  readonly request: Request
  readonly response: Returns<Response>
}
const channel = <Request extends z.ZodType, Response>(
  request: Request,
  response: Returns<Response>
): ApiChannelSpec<Request, Response> => ({ request, response })

/**
 * IPC / browser-bridge channels. Request schemas have no defaults or transforms, so what a caller sends is exactly
 * what a handler receives; responses are plain types the host produces and the UI renders.
 */
export const API = {
  'runs:list': channel(z.object({ limit: z.number().int().positive().max(10_000).optional() }), returns<RunSummary[]>()),
  'runs:show': channel(z.object({ runId: z.number().int().positive() }), returns<RunReport | null>()),

  'app:info': channel(z.object({}), returns<AppInfo>()),
  /** Privileged: only Electron main's File → Open database calls it (see PRIVILEGED_CHANNELS). */
  'app:open-database': channel(z.object({ path: Text(4096).min(1) }), returns<AppInfo>()),

  'models:list': channel(z.object({}), returns<ModelLibrary>()),
  'models:add': channel(z.object({ path: ModelFilePath }), returns<ModelEntry>()),
  'models:remove': channel(z.object({ modelId: Id }), returns<{ removed: boolean }>()),
  'models:inspect': channel(z.object({ modelId: Id }), returns<ModelInspection>()),
  /** settings: the load about to be made, for the memory estimate (context size; 4 KV sequences). */
  'models:check-trio': channel(TrioSelection.extend({ settings: LoadSettings.optional() }), returns<TrioCheck>()),
  /** retryFailed: load files whose last load killed the engine process anyway (the user chose "Try again"). */
  'models:load': channel(z.object({ trio: TrioSelection, settings: LoadSettings, retryFailed: z.boolean().optional() }), returns<LoadedTrio>()),
  'models:unload': channel(z.object({}), returns<{ unloaded: boolean }>()),
  /** Measures the loaded trio's threads per model and phase again (the cache is replaced) and applies them. */
  'models:calibrate': channel(z.object({}), returns<LoadedTrio>()),
  'models:catalog': channel(z.object({}), returns<CatalogTrio[]>()),
  'models:download': channel(z.object({ uri: ModelUri }), returns<DownloadState>()),
  'models:download-cancel': channel(z.object({ downloadId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'models:downloads': channel(z.object({}), returns<DownloadState[]>()),

  'chat:conversations': channel(z.object({}), returns<ConversationSummary[]>()),
  'chat:conversation': channel(z.object({ conversationId: Id }), returns<Conversation | null>()),
  'chat:delete-conversation': channel(z.object({ conversationId: Id }), returns<{ deleted: boolean }>()),
  'chat:send': channel(
    z.object({
      conversationId: Id.nullable(),
      text: Text(100_000).refine((t) => t.trim().length > 0, 'the message is empty'),
      settings: GenerationSettings,
      format: PromptFormat,
      systemPrompt: Text(20_000),
      /**
       * Edit and regenerate: this user message of the conversation and every message after it are replaced by the
       * text sent (its own text again to regenerate the reply), once the generation has started.
       */
      replaceFrom: Id.optional()
    }),
    returns<{ conversationId: number; generationId: string; userMessage: ChatMessage }>()
  ),
  'chat:stop': channel(z.object({ generationId: Text(100).min(1) }), returns<{ stopped: boolean }>()),
  /** Measures a reply's speedup over ar on its own prompt tokens (the trio that generated it must be loaded). */
  'chat:baseline': channel(z.object({ messageId: Id }), returns<ChatMessage>()),

  'workbench:datasets': channel(z.object({}), returns<DatasetInfo[]>()),
  'workbench:import-dataset': channel(z.object({ path: Text(4096).min(1) }), returns<DatasetInfo>()),
  'workbench:start': channel(WorkbenchStart, returns<{ jobId: string }>()),
  'workbench:cancel': channel(z.object({ jobId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'workbench:status': channel(z.object({}), returns<WorkbenchProgress | null>()),

  'suites:start': channel(SuiteStart, returns<{ jobId: string }>()),
  'suites:cancel': channel(z.object({ jobId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'suites:status': channel(z.object({}), returns<SuiteJobProgress | null>()),
  'suites:runs': channel(z.object({ limit: z.number().int().positive().max(1000).optional() }), returns<SuiteRunInfo[]>()),
  'suites:report': channel(z.object({ suiteRunId: Id }), returns<SuiteReportFiles>()),

  'runs:search': channel(RunFilter, returns<RunListItem[]>()),
  'runs:details': channel(z.object({ runId: Id }), returns<RunDetails | null>()),
  'runs:steps': channel(z.object({ resultId: Id }), returns<StepRow[]>()),
  'runs:delete': channel(z.object({ runId: Id }), returns<{ deleted: boolean }>()),
  /** Names a run and keeps notes on it (empty text clears them). */
  'runs:annotate': channel(z.object({ runId: Id, name: Text(200), notes: Text(20_000) }), returns<RunSummary>()),
  'runs:export': channel(z.object({ runId: Id, format: z.enum(['csv', 'json']) }), returns<RunExport>()),
  'runs:diff': channel(z.object({ a: Id, b: Id }), returns<RunDiffDetails>()),
  'runs:perplexity': channel(z.object({ runId: Id }), returns<PerplexityPoint[]>())
} as const satisfies Record<string, ApiChannelSpec>

export type ApiChannel = keyof typeof API
export type ApiRequest<C extends ApiChannel> = z.infer<(typeof API)[C]['request']>
export type ApiResponse<C extends ApiChannel> = (typeof API)[C]['response'][typeof responseType]

/** A known api channel name (own keys of `API` only, so 'toString' or '__proto__' are not channels). */
export function isApiChannel(name: unknown): name is ApiChannel {
  return typeof name === 'string' && Object.hasOwn(API, name)
}

/** Derived views of `API`, for callers that index by channel: each channel's request schema, and response type. */
export const ApiRequests = Object.fromEntries(Object.entries(API).map(([name, spec]) => [name, spec.request])) as {
  readonly [C in ApiChannel]: (typeof API)[C]['request']
}
export type ApiResponses = { [C in ApiChannel]: ApiResponse<C> }

/**
 * Channels only Electron main may call (its menu acts on the user's choice in a native dialog). The preload
 * bridge and the browser server refuse them, so a page cannot point the app at an arbitrary file.
 */
export const PRIVILEGED_CHANNELS: ReadonlySet<ApiChannel> = new Set<ApiChannel>(['app:open-database'])

// ── Transport envelopes: Electron main ↔ utility process (MessagePort) and browser ↔ server (WebSocket) ──

export const RequestMessage = z.object({
  kind: z.literal('request'),
  id: z.number().int().min(0),
  channel: Text(100),
  payload: z.unknown()
})
export type RequestMessage = z.infer<typeof RequestMessage>
export const ResponseMessage = z.object({
  kind: z.literal('response'),
  id: z.number().int().min(0),
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: z.string().optional()
})
export type ResponseMessage = z.infer<typeof ResponseMessage>
export const EventMessage = z.object({ kind: z.literal('event'), event: HostEvent })
export type EventMessage = z.infer<typeof EventMessage>
