/**
 * The trio held in memory: target M_p, optional mid M_q2 and draft M_q1, loaded by experiments/models.ts loadTrio
 * (one after the other with progress, checked to share one vocabulary, fingerprinted for run records, everything
 * disposed again when a step fails). Loading a different trio first frees the current one (memory is the scarce
 * resource).
 */
import type { LoadedTrio, LoadSettings, ModelEntry } from '../api/models'
import type { ModelFingerprint, ModelPaths } from '../api/runs'
import { UserInputError } from '../engine/errors'
import { DEFAULT_SEQUENCES } from '../engine/methods/prepare'
import type { DecoderModels } from '../engine/decoders/types'
import { nativeBackend, type LlamaCppModel, type NativeBackend } from '../engine/model/llama-cpp-model'
import { onModelActivity } from '../engine/model/model-activity'
import { calibrateLoaded, loadTrio, planOfLoaded, type LoadedTrio as SuiteTrio, type LoadStage, type TrioRole } from '../experiments/models'
import { draftingThreads, targetThreads, type ThreadPlan } from '../engine/model/thread-plan'

export type Role = TrioRole

export interface TrioEntries {
  target: ModelEntry
  mid: ModelEntry | null
  draft: ModelEntry | null
}

export interface LoadProgress {
  role: Role
  fileName: string
  index: number
  count: number
  fraction: number
  stage: LoadStage
}

export interface HeldTrio {
  entries: TrioEntries
  settings: LoadSettings
  models: DecoderModels & { target: LlamaCppModel; mid?: LlamaCppModel; draft?: LlamaCppModel }
  fingerprints: ModelFingerprint[]
  /** The smallest context of the loaded models: prompt + generated tokens must fit all of them. */
  contextSize: number
  /** KV sequences per model: beam and DSBD runs want one per path (PreparedRun.sessions, engine/methods/prepare.ts). */
  sequences: number
  /**
   * The vocabulary check's reason when the trio's vocabularies differ, else null. The Models screen loads such a trio
   * (it loads before a method is chosen) with a warning; chat and the Workbench then refuse every method that
   * compares token ids (engine/methods/prepare.ts assertVocabularyFits) and run sd-tli / sd-uad.
   */
  vocabularyMismatch: string | null
  /** Each model's threads per phase and how they were chosen (loadTrio's thread plan). */
  threadPlan: ThreadPlan
  native: NativeBackend
}

const sameSettings = (a: LoadSettings, b: LoadSettings) =>
  a.contextSize === b.contextSize && a.gpuLayers === b.gpuLayers && a.threads === b.threads && a.batchThreads === b.batchThreads && (a.calibration ?? 'auto') === (b.calibration ?? 'auto') && a.fullVocabulary === b.fullVocabulary

/**
 * Told before llama.cpp reads each file of a trio and once it has loaded, and for every file once the trio's load
 * ends either way, so a load that kills the process is known at the next start, against the file it was reading
 * (the library records it: AppStore.markLoading / recordCrashedLoads).
 */
export interface LoadGuard {
  starting(paths: readonly string[]): void
  finished(paths: readonly string[]): void
}

const NO_GUARD: LoadGuard = { starting: () => {}, finished: () => {} }

/** Bookkeeping that must not turn a result into an error (e.g. a mark on a full disk); it is logged instead. */
function bestEffort(write: () => void): void {
  try {
    write()
  } catch (error) {
    console.error(`speclab: model library bookkeeping failed: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** A file whose last load killed the engine process is loaded again only when the user asks (models:load retryFailed). */
export function refuseFailedLoads(entries: TrioEntries): void {
  const failed = [entries.target, entries.mid, entries.draft].find((e) => e?.loadError)
  if (failed) throw new UserInputError(`${failed.fileName} failed to load before: ${failed.loadError}. Choose "Try again" on the Models screen to load it anyway.`)
}

export class LoadedModels {
  private held: HeldTrio | null = null
  private loadingNow = false

  constructor(private readonly guard: LoadGuard = NO_GUARD) {}

  get current(): HeldTrio | null {
    return this.held
  }

  get loading(): boolean {
    return this.loadingNow
  }

  describe(): LoadedTrio | null {
    if (!this.held) return null
    const { entries, settings, contextSize, sequences, vocabularyMismatch, threadPlan, native } = this.held
    const target = targetThreads(threadPlan)
    const threads = { single: target.token.threads, targetBatch: target.batch.threads, drafts: draftingThreads(threadPlan)?.token.threads ?? null }
    return {
      target: entries.target,
      mid: entries.mid,
      draft: entries.draft,
      settings,
      contextSize,
      sequences,
      threads,
      threadCalibration: threadPlan.calibration,
      threadPlan,
      native: { build: native.build, openmp: native.openmp, gpu: native.gpu },
      vocabularyMismatch
    }
  }

  /**
   * VRAM the held trio takes (node-llama-cpp's accounting of each model's weights and context); 0 with none or on
   * the CPU. Loading another trio frees it first, so the trio check counts it as free for that load.
   */
  vramBytes(): number {
    const held = this.held
    if (!held) return 0
    let sum = 0
    for (const model of [held.models.target, held.models.mid, held.models.draft]) {
      if (!model) continue
      try {
        sum += model.model.memoryUsage.vram + model.context.memoryUsage.vram
      } catch {
        // disposed under us: it holds nothing
      }
    }
    return sum
  }

  /** True when exactly these files are loaded with these settings and at least `sequences` KV sequences. */
  matches(entries: TrioEntries, settings: LoadSettings, sequences = DEFAULT_SEQUENCES): boolean {
    const held = this.held
    if (!held || held.sequences < sequences) return false
    const same = (a: ModelEntry | null, b: ModelEntry | null) => (a?.path ?? null) === (b?.path ?? null)
    return (
      same(held.entries.target, entries.target) &&
      same(held.entries.mid, entries.mid) &&
      same(held.entries.draft, entries.draft) &&
      sameSettings(held.settings, settings)
    )
  }

  /**
   * Loads the trio unless it is already held with enough KV sequences. Beam and DSBD runs ask for more than the
   * default: with fewer, their session pool would evaluate the paths in several decodes — the same outputs, but not
   * the method's cost. (Sequences cost memory — contextSize KV cells each — so the default stays small.)
   */
  async load(
    entries: TrioEntries,
    settings: LoadSettings,
    onProgress: (progress: LoadProgress) => void,
    sequences = DEFAULT_SEQUENCES
  ): Promise<HeldTrio> {
    if (this.matches(entries, settings, sequences)) return this.held!
    await this.unload()
    this.loadingNow = true
    const paths = [entries.target, entries.mid, entries.draft].flatMap((e) => (e ? [e.path] : []))
    const stopMarking = this.markEachFileWhileLoading()
    try {
      const trio = await loadTrio(
        { target: entries.target.path, mid: entries.mid?.path, draft: entries.draft?.path },
        {
          contextSize: settings.contextSize,
          gpuLayers: settings.gpuLayers,
          threads: settings.threads ?? undefined,
          batchThreads: settings.batchThreads ?? undefined,
          calibration: settings.calibration,
          fullVocabulary: settings.fullVocabulary,
          sequences,
          // The method is not known yet: a trio of different vocabularies loads, marked, for sd-tli / sd-uad.
          sharedVocabulary: false,
          onProgress: ({ role, index, count, fraction, stage }) => onProgress({ role, fileName: entries[role]!.fileName, index, count, fraction, stage })
        }
      )
      const { target, mid, draft } = trio.models
      this.held = {
        entries,
        settings,
        models: trio.models,
        fingerprints: trio.fingerprints,
        contextSize: Math.min(...[target, mid, draft].flatMap((m) => (m ? [m.context.contextSize] : []))),
        sequences,
        vocabularyMismatch: trio.vocabularyMismatch ?? null,
        threadPlan: trio.threadPlan,
        native: await nativeBackend()
      }
      return this.held
    } finally {
      stopMarking()
      this.loadingNow = false
      bestEffort(() => this.guard.finished(paths)) // a mark that cannot be cleared must not hide the load's result
    }
  }

  /**
   * Marks each file only while llama.cpp reads it (model-activity.ts: from before the weights are read until its
   * context exists), so a process that dies is held against that file alone — not against the trio's other files,
   * loaded fine before it, nor against any file for a death after the loads. Returns the unsubscribe.
   */
  private markEachFileWhileLoading(): () => void {
    let loadingFile: string | null = null
    return onModelActivity((activity) => {
      if (loadingFile !== null) bestEffort(() => this.guard.finished([loadingFile!]))
      loadingFile = activity.state === 'loading' ? activity.file : null
      if (loadingFile !== null) bestEffort(() => this.guard.starting([loadingFile!]))
    })
  }

  /**
   * The held trio for a suite, when it is exactly the suite's files (paths.drafts, a selection between drafts, is
   * never lent), loaded with the suite's threads and the default top-k transfer, with enough free KV sequences on
   * every model. Its dispose does nothing: the Models screen still owns it. Anything else frees the held trio first
   * and returns null, so the suite's own copy never sits in memory beside it.
   */
  async lendOrFree(paths: ModelPaths, needs: { threads?: number; sequences: number; sharedVocabulary?: boolean }): Promise<SuiteTrio | null> {
    const held = this.held
    if (!held) return null
    const sameFiles =
      paths.drafts === undefined &&
      held.entries.target.path === paths.target &&
      (held.entries.mid?.path ?? undefined) === paths.mid &&
      (held.entries.draft?.path ?? undefined) === paths.draft
    const models = [held.models.target, held.models.mid, held.models.draft].filter((m): m is LlamaCppModel => m !== undefined)
    const compatible =
      !held.settings.fullVocabulary &&
      // Threads given on both sides and equal, or measured on both (undefined: the suite calibrates).
      (held.settings.threads ?? undefined) === needs.threads &&
      models.every((model) => model.sessionsLeft() >= needs.sequences) &&
      // A trio of different vocabularies is lent only to suites whose methods all map between vocabularies; the
      // suite's own load then refuses the mismatch with the check's line.
      (held.vocabularyMismatch === null || needs.sharedVocabulary === false)
    if (sameFiles && compatible) {
      const drafts = held.models.draft ? [held.models.draft] : []
      const { models, fingerprints, vocabularyMismatch, threadPlan } = held
      return { models, drafts, fingerprints, vocabularyMismatch, threadPlan, threadCalibration: threadPlan.calibration, dispose: async () => {} }
    }
    await this.unload()
    return null
  }

  /**
   * Measures the held trio's threads again (calibration 'refresh': the cache entries are replaced) and applies them;
   * refused when Threads was set (then the given count is used everywhere, nothing is measured).
   */
  async recalibrate(): Promise<HeldTrio> {
    const held = this.held
    if (!held) throw new UserInputError('no models are loaded: load a trio first')
    if (held.settings.threads !== null)
      throw new UserInputError(`Threads is set to ${held.settings.threads}: clear it (load with the default) to use measured threads`)
    const roles: { model: LlamaCppModel | undefined; role: Role }[] = [
      { model: held.models.target, role: 'target' },
      { model: held.models.mid, role: 'mid' },
      { model: held.models.draft, role: 'draft' }
    ]
    const present = roles.filter((r): r is { model: LlamaCppModel; role: Role } => r.model !== undefined)
    const calibrations = await calibrateLoaded(
      present.map(({ model, role }, i) => ({ model, role, fingerprint: held.fingerprints[i]!.fingerprint })),
      'refresh',
      held.settings.batchThreads ?? undefined
    )
    held.threadPlan = planOfLoaded(present, { batchThreads: held.settings.batchThreads ?? undefined }, calibrations)
    return held
  }

  async unload(): Promise<boolean> {
    const held = this.held
    if (!held) return false
    this.held = null
    for (const model of [held.models.draft, held.models.mid, held.models.target]) await model?.dispose()
    return true
  }
}
