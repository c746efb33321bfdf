/**
 * The one run-request builder. Every path that stores a run — `speclab run`, `bench`, `ablation`, `suite`, the
 * Workbench and the app's suites — hands it the run settings as the run-settings catalog names them
 * (engine/settings/run-settings.ts), the methods, the models and the prompts, and gets back:
 * - the run config the store records (defaults filled in from the catalog, method parameters resolved, validated
 *   with the contract's schema: one refusal text whichever path sent the value);
 * - the prepared methods (validated once, before anything loads);
 * - the loader's options (threads, calibration, context, KV sequences, vocabulary rule).
 * After the load, `withLoadedTrio` records what loaded: the context in effect, the files' fingerprints and the thread
 * plan. Decoding settings (temperature, top-k, top-p → the warp; seed; γ) are shaped here and only here: Chat's
 * replies, `peer-bench`'s arms and `dsbd-bench`, which store no run config, take them from `resolveDecode` /
 * `warpOfSettings`.
 */
import { randomInt } from 'node:crypto'
import path from 'node:path'
import type { ParamValue } from '../api/methods'
import { RunConfig, type ModelFingerprint, type ModelPaths, type PromptSource } from '../api/runs'
import { UserInputError } from '../engine/errors'
import { defaultRepeats } from '../engine/methods/limits'
import { prepareRun, type PreparedRun } from '../engine/methods/prepare'
import { threadFieldsOf, type ThreadPlan } from '../engine/model/thread-plan'
import type { WarpConfig } from '../engine/sampling/warp'
import { runSetting, settingDefault, type RunSettingValues } from '../engine/settings/run-settings'
import type { LoadedTrio, TrioLoadOptions } from './models'

/** Settings by their catalog names; absent = the catalog's default, null = what empty means there. */
type Given<K extends keyof RunSettingValues> = { [Key in K]?: RunSettingValues[Key] | null }

/** The decoding settings of a run or a chat reply (seed null or absent: a fresh random seed, recorded). */
export type DecodeSettingValues = Given<'maxTokens' | 'temperature' | 'topK' | 'topP' | 'gamma' | 'seed'>

/** The load settings of a run (threads null or absent: measured per model and phase). */
export type LoadSettingValues = Given<'fullVocabulary' | 'contextSize' | 'threads' | 'batchThreads' | 'calibration' | 'gpuLayers'>

export interface RunRequest {
  /** The suite the run belongs to; null for an ad-hoc run. */
  suite: string | null
  methods: readonly string[]
  /** Model files (made absolute here, so `show` and `diff` mean the same file from any directory). */
  models: ModelPaths
  prompts: PromptSource
  decode: DecodeSettingValues
  load: LoadSettingValues
  /** null or absent: 3 when ar is compared with another method, else 1. */
  repeats?: number | null
  /** Method parameters as given (`--set key=value`, the forms' knobs); resolved by the method catalog. */
  params?: Record<string, ParamValue>
  syntheticAcceptance?: readonly number[] | null
  draftSelection?: { warmupPrompts: number } | null
}

export interface BuiltRun {
  config: RunConfig
  prepared: PreparedRun
  /** What loadTrio needs for this run (experiments/models.ts). */
  load: TrioLoadOptions
}

/**
 * The run's methods prepared once (methods/prepare.ts): unknown or duplicate methods, missing models and bad
 * parameters are refused before anything loads; the config that comes back records the RESOLVED parameters.
 */
export function prepareConfig<C extends Pick<RunConfig, 'methods' | 'models' | 'gamma' | 'params'> & { syntheticAcceptance?: readonly number[] | null }>(
  config: C
): { config: C; prepared: PreparedRun } {
  const prepared = prepareRun(config.methods, { gamma: config.gamma, params: config.params, syntheticAcceptance: config.syntheticAcceptance }, {
    draft: config.models.draft !== undefined,
    mid: config.models.mid !== undefined
  })
  return { config: { ...config, params: prepared.params }, prepared }
}

const numberDefault = (key: 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'gamma' | 'contextSize'): number =>
  settingDefault(runSetting(key)) as number

/** The sampling warp of a decode: temperature → top-k → top-p, applied identically to draft and target. */
export function warpOfSettings(decode: DecodeSettingValues): WarpConfig {
  return {
    temperature: decode.temperature ?? numberDefault('temperature'),
    topK: decode.topK ?? numberDefault('topK'),
    topP: decode.topP ?? numberDefault('topP')
  }
}

/** A decode's settings with every default filled in and a seed drawn when none was given (Chat uses this alone). */
export function resolveDecode(decode: DecodeSettingValues): Pick<RunSettingValues, 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'gamma' | 'seed'> & { warp: WarpConfig } {
  const warp = warpOfSettings(decode)
  return {
    maxTokens: decode.maxTokens ?? numberDefault('maxTokens'),
    ...warp,
    warp,
    gamma: decode.gamma ?? numberDefault('gamma'),
    seed: decode.seed ?? randomInt(2 ** 32)
  }
}

const absolute = (file: string | undefined): string | undefined => (file === undefined ? undefined : path.resolve(file))

/** The run config, prepared methods and load options of a request (nothing is loaded yet). */
export function buildRunRequest(request: RunRequest): BuiltRun {
  if (request.prompts.dataset !== undefined && request.prompts.file !== undefined) throw new UserInputError('give either --prompts or --dataset, not both')
  const decode = resolveDecode(request.decode)
  const models: ModelPaths = {
    target: absolute(request.models.target)!,
    mid: absolute(request.models.mid),
    draft: absolute(request.models.draft),
    drafts: request.models.drafts?.map((file) => path.resolve(file))
  }
  // Methods, models and parameters first: one line naming what is wrong, and parameters resolved before the schema.
  const { config: resolved, prepared } = prepareConfig({
    methods: request.methods as RunConfig['methods'],
    models,
    gamma: decode.gamma,
    params: request.params ?? {},
    syntheticAcceptance: request.syntheticAcceptance ?? null
  })
  const { load } = request
  const config = RunConfig.parse({
    suite: request.suite,
    methods: request.methods,
    models,
    prompts: { ...request.prompts, file: absolute(request.prompts.file) },
    maxTokens: decode.maxTokens,
    sampling: { ...decode.warp, fullVocabulary: load.fullVocabulary ?? false },
    seed: decode.seed,
    gamma: decode.gamma,
    params: resolved.params,
    // Until the load says what ran (withLoadedTrio): the given count, else one per model as a placeholder.
    threads: load.threads ?? 1,
    batchThreads: load.batchThreads ?? null,
    contextSize: load.contextSize ?? numberDefault('contextSize'),
    draftSelection: request.draftSelection ?? null,
    repeats: request.repeats ?? defaultRepeats(request.methods),
    syntheticAcceptance: request.syntheticAcceptance ?? null
  })
  return {
    config,
    prepared,
    load: {
      // An explicit thread count is used for every model and phase; without one each model's threads are measured.
      threads: load.threads ?? undefined,
      batchThreads: load.batchThreads ?? undefined,
      calibration: load.calibration ?? 'auto',
      contextSize: config.contextSize,
      gpuLayers: load.gpuLayers ?? 'auto',
      fullVocabulary: config.sampling.fullVocabulary,
      // Beam methods keep one KV sequence per beam / tree path (4 unless a method asks for more).
      sequences: prepared.sessions,
      // Only when every method maps between vocabularies itself (sd-tli, sd-uad) may the draft use another tokenizer;
      // draft selection profiles every draft with sd, which compares ids.
      sharedVocabulary: prepared.sharedVocabulary || config.draftSelection !== null
    }
  }
}

/** What a load decided, as the run records it. */
export interface LoadOutcome {
  contextSize: number
  fingerprints: readonly ModelFingerprint[]
  /** null for models without threads (toy models in tests). */
  threadPlan: ThreadPlan | null
}

/**
 * What a trio's load decided, for withLoadedTrio. `files`: only those files' fingerprints and thread-plan entries,
 * for a run on part of the trio (ablation's mid-as-draft run, a suite cell without the mid model).
 */
export function outcomeOf(
  trio: Pick<LoadedTrio, 'models' | 'fingerprints' | 'threadPlan'>,
  files?: ReadonlySet<string>,
  contextSize = trio.models.target.context.contextSize
): LoadOutcome {
  if (!files) return { contextSize, fingerprints: trio.fingerprints, threadPlan: trio.threadPlan }
  return {
    contextSize,
    fingerprints: trio.fingerprints.filter((f) => files.has(f.path)),
    threadPlan: { ...trio.threadPlan, models: trio.threadPlan.models.filter((m) => files.has(m.file)) }
  }
}

/**
 * The config as it ran: the context in effect (capped by the target's training context), the files' fingerprints,
 * and the thread plan — recorded once, with the per-field thread counts older readers know written from it.
 */
export function withLoadedTrio(config: RunConfig, loaded: LoadOutcome): RunConfig {
  const threads = loaded.threadPlan ? threadFieldsOf(loaded.threadPlan) : {}
  return { ...config, ...threads, contextSize: loaded.contextSize, modelFingerprints: [...loaded.fingerprints], threadPlan: loaded.threadPlan }
}
