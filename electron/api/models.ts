/**
 * Models: a model file by path or download URI, the load settings, a trio of library models, and what the model
 * library reports (entries, the loaded trio, inspection, the trio check with its memory estimate, the catalog of
 * recommended trios, downloads).
 */
import { z } from 'zod'
import type { ModelThreadCalibration } from '../engine/model/thread-calibration'
import type { ThreadPlan } from '../engine/model/thread-plan'
import { settingSchema } from '../engine/settings/run-settings'
import { Id, Text } from './fields'

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
  contextSize: settingSchema('contextSize'),
  /** Layers offloaded to the GPU: 'auto' lets node-llama-cpp decide, 0 = CPU only. */
  gpuLayers: settingSchema('gpuLayers'),
  /** CPU threads of every model and phase; null = measured per model and phase at load (see `calibration`). */
  threads: settingSchema('threads').nullable(),
  /** The target's threads for batched evaluations (verification, prefill); null = measured, else `threads`. */
  batchThreads: settingSchema('batchThreads').nullable().default(null),
  /** How threads are chosen when `threads` is null; absent = auto (measured once, then cached). */
  calibration: settingSchema('calibration').optional(),
  /** Transfer the full vocabulary instead of the top-k logits (exact for any warp, slower). */
  fullVocabulary: settingSchema('fullVocabulary')
})
export type LoadSettings = z.infer<typeof LoadSettings>

/** A trio by model-library ids: target M_p, optional mid M_q2 and small draft M_q1. */
export const TrioSelection = z.object({ target: Id, mid: Id.nullable(), draft: Id.nullable() })
export type TrioSelection = z.infer<typeof TrioSelection>

/** A model download: pushed as it progresses (`download:progress`) and answered by the models:download* channels. */
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

// ── What the model library reports (plain types: the host produces them, the UI renders them) ──

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
  /** Each model's threads per phase and how they were chosen (given, measured, cached, rule). */
  threadPlan?: ThreadPlan
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

/** A load's progress as one line (the Models screen's bar, the Workbench's status): which stage, which file. */
export function describeLoadProgress(p: { fileName: string; index: number; count: number; fraction: number; stage?: 'loading' | 'measuring' }): string {
  const which = `${p.fileName} (${p.index + 1}/${p.count})`
  if (p.stage === 'measuring') return p.fraction >= 1 ? `Measured the threads of ${which}` : `Measuring the threads of ${which}: the best count per token and per batch, once per model and machine…`
  return `Loading ${which} ${(p.fraction * 100).toFixed(0)}%`
}
