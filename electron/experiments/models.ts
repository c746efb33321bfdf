/**
 * Loads the model trio a run names (target, optional mid and draft), checks they share one vocabulary (refused unless
 * every method of the run maps between vocabularies: `sharedVocabulary: false`), and fingerprints the files for the
 * run record. Everything loaded is disposed again if a later step fails.
 * The one loader of the project: the CLI commands, suites and the app's Models screen (host/loaded-models.ts) all
 * load through it.
 */
import { createHash } from 'node:crypto'
import os from 'node:os'
import { open } from 'node:fs/promises'
import type { ModelFingerprint, ModelPaths } from '../api/runs'
import { loadLlamaModel, nativeBackend, targetBatchThreadsFor, targetThreadsFor, type LlamaCppModel, type LlamaLoadOptions } from '../engine/model/llama-cpp-model'
import { assertSameVocabulary } from '../engine/model/vocabulary-check'
import type { DecoderModels } from '../engine/decoders/types'
import { crossVocabularyAdvice, DEFAULT_SEQUENCES } from '../engine/methods/prepare'
import { UserInputError } from '../engine/errors'
import { checkTrioFits } from './memory-estimate'
import { calibrateThreads, setThreads, type ModelThreadCalibration } from '../engine/model/thread-calibration'
import { threadPlanOf, type ThreadPlan } from '../engine/model/thread-plan'
import type { CalibrationMode } from '../engine/settings/run-settings'
import { cachedCalibration, calibrationKey, storeCalibration } from './thread-calibration-cache'

export type TrioRole = 'target' | 'mid' | 'draft'

/**
 * What a load is doing: reading a file's weights (node-llama-cpp's progress), or measuring a loaded model's threads
 * per phase (seconds per model on a first load; a cached choice takes no time).
 */
export type LoadStage = 'loading' | 'measuring'

/** Progress of one file of the trio; files load one after the other (index of count), then are measured in turn. */
export interface TrioLoadProgress {
  role: TrioRole
  /** The file as given in the paths. */
  file: string
  index: number
  count: number
  /** Loading: 0 before the file starts, node-llama-cpp's progress clamped to 0…1, 1 once loaded. Measuring: 0, then 1. */
  fraction: number
  stage: LoadStage
}

/** `batchThreads` is the TARGET's (default targetBatchThreadsFor(threads)); drafts evaluate batches with `threads`. */
export interface TrioLoadOptions extends Omit<LlamaLoadOptions, 'onLoadProgress'> {
  onProgress?: (progress: TrioLoadProgress) => void
  /**
   * Whether the run compares token ids across models (PreparedRun.sharedVocabulary; default true): the trio must
   * then pass the vocabulary check, and a mismatch is refused with one line that names sd-tli / sd-uad. False (every
   * method maps between vocabularies itself, or the app's Models screen, which loads before a method is chosen):
   * the check still runs, and its reason is returned as `vocabularyMismatch` instead of thrown.
   */
  sharedVocabulary?: boolean
  /**
   * Threads per model and phase measured at load (engine/model/thread-calibration.ts), cached per model file +
   * machine + binary (thread-calibration-cache.ts): 'auto' reads the cache and measures what is not there, 'refresh'
   * measures again, 'off' uses the rule (targetThreadsFor / targetBatchThreadsFor). Default 'auto'. Ignored when
   * `threads` is given (an explicit count is used for every model and phase); an explicit `batchThreads` overrides
   * the target's calibrated batch count.
   */
  calibration?: CalibrationMode
}

export type { CalibrationMode }

export interface LoadedTrio {
  models: DecoderModels & { target: LlamaCppModel; mid?: LlamaCppModel; draft?: LlamaCppModel }
  /** Every draft given (several when the run selects a draft per prompt); models.draft is the first. */
  drafts: LlamaCppModel[]
  fingerprints: ModelFingerprint[]
  /** Each model's threads per phase as loaded, and how they were chosen (given, measured, cached, rule). */
  threadPlan: ThreadPlan
  /** Each model's thread calibration (target, mid, drafts in load order); null when calibration was off. */
  threadCalibration: ModelThreadCalibration[] | null
  /**
   * Why the trio's vocabularies differ (the vocabulary check's message), or null when they pass; only methods with
   * catalog `vocabulary: 'any'` can run on a trio that has one. Absent = null.
   */
  vocabularyMismatch?: string | null
  dispose(): Promise<void>
}

export async function loadTrio(paths: ModelPaths, options: TrioLoadOptions): Promise<LoadedTrio> {
  const { onProgress, sharedVocabulary = true, calibration, ...loadOptions } = options
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
    // The target's single-token threads depend on how node-llama-cpp's llama.cpp was built (targetThreadsFor).
    const targetThreads = targetThreadsFor(loadOptions.threads, (await nativeBackend()).openmp)
    for (const [index, { role, file }] of files.entries()) {
      const progress = onProgress
        ? (fraction: number) => onProgress({ role, file, index, count: files.length, fraction: Math.min(1, Math.max(0, fraction)), stage: 'loading' })
        : undefined
      // A tiny draft on two threads is ~35× slower (llama-cpp-model.ts): only the target batches on more.
      const batchThreads = role === 'target' ? (loadOptions.batchThreads ?? targetBatchThreadsFor(loadOptions.threads)) : loadOptions.threads
      const modelOptions = { ...loadOptions, batchThreads, ...(role === 'target' ? { threads: targetThreads } : {}) }
      // The file shows as loading once llama.cpp works on it (and a crash now would be blamed on it), not before.
      loaded.push(await loadLlamaModel(file, progress ? { ...modelOptions, onLoadStarted: () => progress(0), onLoadProgress: progress } : modelOptions))
      progress?.(1)
    }
    const target = loaded[0]
    const mid = paths.mid ? loaded[1] : undefined
    const drafts = loaded.slice(paths.mid ? 2 : 1)
    const vocabularyMismatch = checkVocabulary(loaded, sharedVocabulary)
    const fingerprints = await Promise.all(loaded.map(fingerprintModel))
    // An explicit thread count wins over any calibration mode.
    const mode = loadOptions.threads !== undefined ? 'off' : (calibration ?? 'auto')
    const roles = loaded.map((model, i) => ({ model, role: files[i]!.role, fingerprint: fingerprints[i]!.fingerprint }))
    const measuring = onProgress
      ? (index: number, fraction: number) => onProgress({ role: files[index]!.role, file: files[index]!.file, index, count: files.length, fraction, stage: 'measuring' })
      : undefined
    const threadCalibration = mode === 'off' ? null : await calibrateLoaded(roles, mode, loadOptions.batchThreads, measuring)
    const threadPlan = planOfLoaded(roles, { threads: loadOptions.threads, batchThreads: loadOptions.batchThreads }, threadCalibration)
    return { models: { target, mid, draft: drafts[0] }, drafts, fingerprints, vocabularyMismatch, threadPlan, threadCalibration, dispose: disposeAll }
  } catch (error) {
    await disposeAll()
    throw error
  }
}

/**
 * Each model's threads per phase from its cached calibration, or measured now (and cached); `targetBatchThreads`,
 * when given, overrides the target's batch count. Models are measured one at a time, so none competes with another.
 */
export async function calibrateLoaded(
  models: readonly { model: LlamaCppModel; role: TrioRole; fingerprint: string }[],
  mode: Exclude<CalibrationMode, 'off'>,
  targetBatchThreads: number | undefined,
  onMeasuring?: (index: number, fraction: number) => void
): Promise<ModelThreadCalibration[]> {
  const native = await nativeBackend()
  const calibrations: ModelThreadCalibration[] = []
  for (const [index, { model, role, fingerprint }] of models.entries()) {
    const key = calibrationKey({ fingerprint, role, gpuLayers: model.model.gpuLayers, native })
    let calibration = mode === 'auto' ? cachedCalibration(key, model.info.path) : null
    if (!calibration) {
      onMeasuring?.(index, 0)
      calibration = await calibrateThreads(model, { role, cores: os.cpus().length, contextSize: model.context.contextSize })
      storeCalibration(key, calibration)
      onMeasuring?.(index, 1)
    }
    const batchThreads = role === 'target' && targetBatchThreads !== undefined ? targetBatchThreads : calibration.chosen.batchThreads
    setThreads(model, { threads: calibration.chosen.threads, batchThreads })
    calibrations.push(calibration)
  }
  return calibrations
}

/**
 * The thread plan of loaded models: the counts the loader set on each (the load's rule, or the calibration's choice)
 * and how each was chosen. Read here, where the counts were just set, and nowhere else: everyone after the load
 * reads the plan.
 */
export function planOfLoaded(
  models: readonly { model: LlamaCppModel; role: TrioRole }[],
  given: { threads?: number; batchThreads?: number },
  calibrations: readonly ModelThreadCalibration[] | null
): ThreadPlan {
  return threadPlanOf(
    models.map(({ model, role }, i) => ({
      role,
      file: model.info.path,
      threads: model.phaseThreads.threads,
      batchThreads: model.phaseThreads.batchThreads,
      given: given.threads !== undefined,
      batchGiven: role === 'target' && given.batchThreads !== undefined,
      calibration: calibrations?.[i] ?? null
    }))
  )
}

/**
 * The vocabulary check on the loaded models (model/vocabulary-check.ts). When the run compares token ids a mismatch
 * is refused, its message followed by what can run on such a pair; otherwise the message is returned.
 */
function checkVocabulary(models: readonly LlamaCppModel[], required: boolean): string | null {
  try {
    assertSameVocabulary(models)
    return null
  } catch (error) {
    if (!(error instanceof UserInputError)) throw error
    const message = error.message.replace(/\.?$/, '')
    if (required) throw new UserInputError(`${message}; ${crossVocabularyAdvice()}`)
    return message
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
