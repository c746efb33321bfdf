/**
 * Loads the model trio a run names (target, optional mid and draft), checks they share one vocabulary, and
 * fingerprints the files for the run record. Everything loaded is disposed again if a later step fails.
 */
import { createHash } from 'node:crypto'
import { open } from 'node:fs/promises'
import type { ModelFingerprint, ModelPaths } from '../api/contract'
import { loadLlamaModel, type LlamaCppModel, type LlamaLoadOptions } from '../engine/model/llama-cpp-model'
import { assertSameVocabulary } from '../engine/model/vocabulary-check'
import type { DecoderModels } from '../engine/decoders/types'

export interface LoadedTrio {
  models: DecoderModels & { target: LlamaCppModel; mid?: LlamaCppModel; draft?: LlamaCppModel }
  /** Every draft given (several when the run selects a draft per prompt); models.draft is the first. */
  drafts: LlamaCppModel[]
  fingerprints: ModelFingerprint[]
  dispose(): Promise<void>
}

export async function loadTrio(paths: ModelPaths, options: LlamaLoadOptions): Promise<LoadedTrio> {
  const loaded: LlamaCppModel[] = []
  const disposeAll = async () => {
    for (const model of loaded.splice(0)) await model.dispose()
  }
  try {
    const load = async (file: string) => {
      const model = await loadLlamaModel(file, options)
      loaded.push(model)
      return model
    }
    const target = await load(paths.target)
    const mid = paths.mid ? await load(paths.mid) : undefined
    const drafts: LlamaCppModel[] = []
    for (const file of paths.drafts ?? (paths.draft ? [paths.draft] : [])) drafts.push(await load(file))
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
