/**
 * Loads the model trio a run names (target, optional mid and draft), checks they share one vocabulary, and
 * fingerprints the files for the run record. Everything loaded is disposed again if a later step fails.
 * The one loader of the project: the CLI commands, suites and the app's Models screen (host/loaded-models.ts) all
 * load through it.
 */
import { createHash } from 'node:crypto'
import { open } from 'node:fs/promises'
import type { ModelFingerprint, ModelPaths } from '../api/contract'
import { loadLlamaModel, type LlamaCppModel, type LlamaLoadOptions } from '../engine/model/llama-cpp-model'
import { assertSameVocabulary } from '../engine/model/vocabulary-check'
import type { DecoderModels } from '../engine/decoders/types'
import { DEFAULT_SEQUENCES } from '../engine/methods/prepare'
import { checkTrioFits } from './memory-estimate'

export type TrioRole = 'target' | 'mid' | 'draft'

/** Loading progress of one file of the trio; files load one after the other (index of count). */
export interface TrioLoadProgress {
  role: TrioRole
  /** The file as given in the paths. */
  file: string
  index: number
  count: number
  /** 0 before the file starts, node-llama-cpp's progress clamped to 0…1 while it loads, 1 once it is loaded. */
  fraction: number
}

export interface TrioLoadOptions extends Omit<LlamaLoadOptions, 'onLoadProgress'> {
  onProgress?: (progress: TrioLoadProgress) => void
}

export interface LoadedTrio {
  models: DecoderModels & { target: LlamaCppModel; mid?: LlamaCppModel; draft?: LlamaCppModel }
  /** Every draft given (several when the run selects a draft per prompt); models.draft is the first. */
  drafts: LlamaCppModel[]
  fingerprints: ModelFingerprint[]
  dispose(): Promise<void>
}

export async function loadTrio(paths: ModelPaths, options: TrioLoadOptions): Promise<LoadedTrio> {
  const { onProgress, ...loadOptions } = options
  const files: { role: TrioRole; file: string }[] = [
    { role: 'target', file: paths.target },
    ...(paths.mid ? [{ role: 'mid' as const, file: paths.mid }] : []),
    ...(paths.drafts ?? (paths.draft ? [paths.draft] : [])).map((file) => ({ role: 'draft' as const, file }))
  ]
  const loaded: LlamaCppModel[] = []
  const disposeAll = async () => {
    for (const model of loaded.splice(0)) await model.dispose()
  }
  // What cannot fit is refused before llama.cpp tries (memory-estimate.ts).
  await checkTrioFits(files, {
    contextSize: loadOptions.contextSize ?? 2048,
    sequences: loadOptions.sequences ?? DEFAULT_SEQUENCES,
    gpuLayers: loadOptions.gpuLayers ?? 'auto'
  })
  try {
    for (const [index, { role, file }] of files.entries()) {
      const progress = onProgress
        ? (fraction: number) => onProgress({ role, file, index, count: files.length, fraction: Math.min(1, Math.max(0, fraction)) })
        : undefined
      progress?.(0)
      loaded.push(await loadLlamaModel(file, progress ? { ...loadOptions, onLoadProgress: progress } : loadOptions))
      progress?.(1)
    }
    const target = loaded[0]
    const mid = paths.mid ? loaded[1] : undefined
    const drafts = loaded.slice(paths.mid ? 2 : 1)
    assertSameVocabulary(loaded)
    const fingerprints = await Promise.all(loaded.map(fingerprintModel))
    return { models: { target, mid, draft: drafts[0] }, drafts, fingerprints, dispose: disposeAll }
  } catch (error) {
    await disposeAll()
    throw error
  }
}

const EDGE_BYTES = 1 << 20

/**
 * sha256 over the size, the first and the last MiB: identifies a multi-GB GGUF in milliseconds (the header holds
 * the metadata and tensor table, the tail the last weights), which is enough to tell model files apart in diffs.
 */
export async function fingerprintModel(model: LlamaCppModel): Promise<ModelFingerprint> {
  const size = model.info.sizeBytes ?? 0
  const hash = createHash('sha256').update(String(size))
  const handle = await open(model.info.path, 'r')
  try {
    for (const offset of [0, Math.max(0, size - EDGE_BYTES)]) {
      const buffer = Buffer.alloc(Math.min(EDGE_BYTES, size))
      await handle.read(buffer, 0, buffer.length, offset)
      hash.update(buffer)
    }
  } finally {
    await handle.close()
  }
  return {
    path: model.info.path,
    sizeBytes: size,
    fingerprint: hash.digest('hex').slice(0, 16),
    architecture: model.info.architecture,
    vocabularySize: model.info.vocabularySize
  }
}
