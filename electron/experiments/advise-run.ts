/**
 * One advice from options to stored run — what `speclab advise` and the app's Advisor screen both call: the
 * candidate grid the options allow, the run request, the prediction on loaded models (advise.ts), the arms that fit
 * the time budget, and the verification run stored as a run of suite 'advise' (advise-verify.ts). Callers own the
 * models (the CLI loads them, the app may lend its loaded trio) and the store, and watch the stages through hooks.
 */
import path from 'node:path'
import { randomInt } from 'node:crypto'
import { UserInputError } from '../engine/errors'
import { candidateGrid } from '../engine/replay/candidates'
import { PROFILE_POSITIONS, type Verdict } from '../engine/replay/advise'
import { workloadProfile } from '../engine/replay/profile'
import { planVerification } from '../engine/replay/recommend'
import type { TraceProgress } from '../engine/replay/record'
import { findLlamaServer } from '../engine/peers/llama-server-binary'
import { crossVocabularyMethods } from '../engine/methods/prepare'
import { decodeOnce } from '../engine/methods/decode-once'
import type { WarpConfig } from '../engine/sampling/warp'
import { vocabularyMismatch } from '../engine/model/vocabulary-check'
import { setThreads } from '../engine/model/thread-calibration'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'
import type { LanguageModel } from '../engine/model/types'
import type { RunSettingValues } from '../engine/settings/run-settings'
import type { RunReport } from '../api/runs'
import type { RunStore } from '../store/run-store'
import { adviseWorkload, measurementOf, type Advice, type ThreadChoice } from './advise'
import { priceServerArms, type MeasureServerCosts, type RunServerArm } from './advise-server-pricing'
import { llamaServerCosts } from './llama-server-costs'
import { adviceRecord, armMethods, chooseArms, gridAsServed, runnerArms, runVerification, servable, type Deploy, type VerifyArm } from './advise-verify'
import { adviceResult, type AdviceResult } from './advice-result'
import type { LoadedTrio, TrioLoadOptions } from './models'
import { loadPrompts, type PromptItem } from './prompts'
import { buildRunRequest, outcomeOf, warpOfSettings, withLoadedTrio, type BuiltRun, type RunRequest } from './run-request'
import { tokenizePrompts, type RunProgress } from './runner'

export interface AdviseOptions
  extends Pick<RunSettingValues, 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'calibration' | 'contextSize' | 'repeats'>,
    Partial<Pick<RunSettingValues, 'limit' | 'seed' | 'threads' | 'batchThreads' | 'gpuLayers'>> {
  target: string
  draft: string[]
  /** The mid model M_q2 (`--mid`): a draft candidate too, and with each other draft the hierarchy `hier-chen`. */
  mid?: string
  prompts?: string
  dataset?: string
  /** Comma-separated method ids of the candidate grid to keep. */
  methods?: string
  verify: number
  /** The draft pass's tokens per call (adviseWorkload's default when absent). */
  batch?: number
  tryThreads?: number[]
  deploy: Deploy
  budget?: number
}

/** What the advisor is doing: the stages of adviseWorkload, then the verification run. */
export type AdviseStage = 'trace' | 'draft-pass' | 'replay' | 'costs' | 'verify'

export interface AdviseHooks {
  /** A stage begins or moves on (the trace and draft pass per prompt). */
  onStage?(stage: AdviseStage, detail?: TraceProgress): void
  /** The arms chosen for the verification, before it starts. */
  onVerifyPlan?(plan: { arms: string[]; repeats: number; estimatedSeconds: number }): void
  onVerifyProgress?(progress: RunProgress): void
  onRunCreated?(runId: number): void
  /** Stops between stages and prompts; the verification run then ends `cancelled` with its finished cells stored. */
  signal?: AbortSignal
}

/** A draft's name in the advice: its file name without .gguf (the file itself when two share a name). */
export function draftNames(files: readonly string[]): string[] {
  const names = files.map((file) => path.basename(file).replace(/\.gguf$/i, ''))
  return names.map((name, i) => (names.indexOf(name) === i && names.lastIndexOf(name) === i ? name : files[i]))
}

/** Every method of the grid: a draft of the target's vocabulary, one of another, none. */
export const GRID_METHODS = [...new Set([...candidateGrid(['same', 'mid'], new Set(), 'mid'), ...candidateGrid(['foreign'], new Set(['foreign']))].map((c) => c.method))]

const methodsOf = (options: AdviseOptions) => options.methods?.split(',').map((m) => m.trim()).filter(Boolean)

/**
 * Before the load: the methods the grid may hold for these drafts, whichever vocabularies they turn out to have;
 * --methods must name one of them.
 */
function possibleMethods(options: AdviseOptions, names: readonly string[], mid: string | null): string[] {
  const methods = methodsOf(options)
  const possible = [...candidateGrid(names, new Set(), mid), ...candidateGrid(names, new Set(names))].map((c) => c.method).filter((m) => !methods || methods.includes(m))
  if (possible.length === 0) throw new UserInputError(`no candidate of the grid is among --methods ${options.methods}`)
  return [...new Set(possible)]
}

/**
 * The grid the options allow: `foreign` drafts (another vocabulary than the target's) get sd-tli / sd-uad, the rest
 * the id-comparing methods; --methods, and with --deploy llama-server only what llama-server can run. A foreign
 * draft that --methods leaves without a cross-vocabulary method is refused with the vocabulary check's reason.
 */
function gridOf(options: AdviseOptions, names: readonly string[], foreign: ReadonlyMap<string, string>, mid: string | null) {
  const methods = methodsOf(options)
  const grid = candidateGrid(names, new Set(foreign.keys()), mid).filter((c) => !methods || methods.includes(c.method))
  for (const [name, reason] of foreign)
    if (!grid.some((c) => c.draft === name))
      throw new UserInputError(`${name} has another vocabulary than the target (${reason}); only ${crossVocabularyMethods().join(' and ')} draft with it, and --methods ${options.methods} leaves neither`)
  if (grid.length === 0) throw new UserInputError(`no candidate of the grid is among --methods ${options.methods}`)
  if (options.deploy !== 'llama-server') return grid
  const served = grid.filter(servable)
  if (served.length === 0) throw new UserInputError(`--deploy llama-server: llama-server runs none of the candidates (${[...new Set(grid.map((c) => c.method))].join(', ')}); it runs sd, sd-pmin and ngram-simple`)
  return served
}

/** Each draft whose vocabulary is not the target's, with the vocabulary check's reason. */
function foreignDraftsOf(trio: Pick<LoadedTrio, 'models'>, drafts: Readonly<Record<string, LanguageModel>>): Map<string, string> {
  const foreign = new Map<string, string>()
  for (const [name, draft] of Object.entries(drafts)) {
    const mismatch = vocabularyMismatch(trio.models.target, draft)
    if (mismatch !== null) foreign.set(name, mismatch)
  }
  return foreign
}

/**
 * The loaded drafts by name, the mid model last under its own name (`names` has it last): the advisor traces,
 * prices and measures it as one of the drafts, and names it as the hierarchy's M_q2. A mid model of another
 * vocabulary is refused: every three-model method compares token ids.
 */
function draftModelsOf(trio: Pick<LoadedTrio, 'models' | 'drafts'>, names: readonly string[], mid: string | null): Record<string, LlamaCppModel> {
  const drafts: Record<string, LlamaCppModel> = Object.fromEntries(trio.drafts.map((draft, i) => [names[i], draft]))
  if (mid === null) return drafts
  if (!trio.models.mid) throw new Error('the mid model was not loaded')
  const mismatch = vocabularyMismatch(trio.models.target, trio.models.mid)
  if (mismatch !== null) throw new UserInputError(`--mid must share the target's vocabulary: ${mismatch}`)
  return { ...drafts, [mid]: trio.models.mid }
}

/** The files the advice traces as drafts, in the order of `names`: the --draft files, then the mid model's. */
const advisedDraftFiles = (options: AdviseOptions): string[] => (options.mid ? [...options.draft, options.mid] : options.draft)

/** The mid model's name in the advice (its place in `names`), or null without --mid. */
const midNameOf = (options: AdviseOptions, names: readonly string[]) => (options.mid ? names[names.length - 1] : null)

/** The run request of the verification (suite 'advise'): the arms' methods, the workload, the load settings. */
function requestOf(options: AdviseOptions, seed: number, methods: readonly string[], repeats: number): RunRequest {
  return {
    suite: 'advise',
    methods,
    models: { target: options.target, mid: options.mid, draft: options.draft[0], drafts: options.draft.length > 1 ? options.draft : undefined },
    prompts: { dataset: options.prompts ? undefined : (options.dataset ?? 'stories'), file: options.prompts, limit: options.limit },
    decode: { maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, topP: options.topP, seed },
    load: { contextSize: options.contextSize, threads: options.threads, batchThreads: options.batchThreads, calibration: options.calibration, gpuLayers: options.gpuLayers },
    repeats
  }
}

/** An advice checked and ready to run: everything decided before a model loads. */
export interface PreparedAdvice {
  options: AdviseOptions
  seed: number
  /** The drafts' names in the advice, the mid model's last (with --mid). */
  names: string[]
  prompts: PromptItem[]
  /** The run request over every method the grid may hold: it validates the options and names the models. */
  preliminary: BuiltRun
  /**
   * What the models must be loaded with: the request's settings without the shared-vocabulary check, since a draft
   * of another vocabulary is a candidate for the cross-vocabulary methods (the grid is decided per draft once loaded).
   */
  load: TrioLoadOptions
}

/**
 * Checks the options before anything loads: one workload, a mid model beside at least one draft, and the request
 * that every method the grid may hold validates. The grid itself depends on each draft's vocabulary and is decided
 * on the loaded models.
 */
export function prepareAdvice(options: AdviseOptions): PreparedAdvice {
  if (options.prompts && options.dataset) throw new UserInputError('give either --prompts or --dataset, not both')
  if (options.mid && options.draft.length === 0) throw new UserInputError('--mid needs a --draft: the hierarchy drafts with the small model and checks with the mid model')
  if (options.mid && options.draft.some((file) => path.resolve(file) === path.resolve(options.mid!))) throw new UserInputError(`--mid ${options.mid} is also a --draft: the hierarchy needs two models`)
  const seed = options.seed ?? randomInt(2 ** 32)
  const names = draftNames(advisedDraftFiles(options))
  const preliminary = buildRunRequest(requestOf(options, seed, ['ar', ...possibleMethods(options, names, midNameOf(options, names))], options.repeats))
  const prompts = loadPrompts(preliminary.config.prompts)
  return { options, seed, names, prompts, preliminary, load: { ...preliminary.load, sharedVocabulary: false } }
}

/** Loaded llama.cpp models take their phase threads at each evaluation (llama-cpp-model.ts), so plans switch in place. */
const LLAMA_THREADS = (counts: number[]): ThreadChoice => ({
  counts,
  apply: (model, phase) => setThreads(model as LlamaCppModel, phase),
  current: (model) => ({ ...(model as LlamaCppModel).phaseThreads })
})

/** The threads an arm runs with: its thread plan's (--try-threads), else the models' as loaded. */
function threadsFor(trio: Pick<LoadedTrio, 'models' | 'drafts'>, plans: Advice['plans']) {
  const target = { ...trio.models.target.phaseThreads }
  const draftThreads = trio.drafts[0]?.phaseThreads.threads ?? target.threads
  return (verdict: Verdict | undefined) => {
    const plan = verdict?.plan === undefined ? undefined : plans?.[verdict.plan]
    if (plan) return { threads: plan.target.threads, batchThreads: plan.target.batchThreads, draftThreads: plan.draft }
    return { threads: target.threads, batchThreads: target.batchThreads, draftThreads }
  }
}

/**
 * One request of a llama-server arm on one prompt, as the verification runs it (the same decoder, threads and pooled
 * server, which the verification then reuses): the server's own generation ms.
 */
function runServerArm(
  trio: Pick<LoadedTrio, 'models'>,
  drafts: Readonly<Record<string, LlamaCppModel>>,
  prompts: readonly (readonly number[])[],
  settings: { warp: WarpConfig; seed: number; maxTokens: number; signal: AbortSignal | undefined }
): RunServerArm {
  return async (arm, prompt) => {
    const [{ method }] = runnerArms([arm], drafts)
    let generationMs: number | null = null
    await decodeOnce({
      decoder: method.newRun()(),
      models: trio.models,
      promptTokens: prompts[prompt],
      maxTokens: settings.maxTokens,
      warp: settings.warp,
      seed: settings.seed,
      stream: prompt,
      signal: settings.signal,
      onEvent: (event) => {
        const ms = event.type === 'step' ? event.record.decision?.serverPredictedMs : undefined
        if (typeof ms === 'number') generationMs = ms
      }
    })
    return generationMs
  }
}

/** The arms that fit --budget (ar always), and their repeats; one line when nothing fits. */
function fitBudget(arms: VerifyArm[], options: AdviseOptions): { arms: VerifyArm[]; repeats: number; estimatedSeconds: number } {
  const [ar, ...rest] = arms
  const arMs = ar.predicted?.ms ?? 0
  const plan = planVerification(arMs, rest.map((a) => a.predicted?.ms ?? arMs), options.repeats, options.budget === undefined ? null : options.budget * 1000)
  if (!plan) {
    const once = (arMs + (rest[0]?.predicted?.ms ?? arMs)) / 1000
    throw new UserInputError(`--budget ${options.budget} s is too small: measuring ar and the best candidate once takes about ${once.toFixed(1)} s`)
  }
  return { arms: [ar, ...rest.slice(0, plan.candidates)], repeats: plan.repeats, estimatedSeconds: plan.estimatedMs / 1000 }
}

/** llama-server's costs for this trio and workload at an arm's threads (llama-server-costs.ts), from `binary`. */
function serverCostsOf(binary: string, advice: Advice, trio: Pick<LoadedTrio, 'models' | 'fingerprints'>, files: { target: string; drafts: Readonly<Record<string, string>> }, signal: AbortSignal | undefined): MeasureServerCosts {
  const fingerprintOf = (file: string) => trio.fingerprints.find((f) => path.resolve(f.path) === path.resolve(file))?.fingerprint ?? path.resolve(file)
  return (threads, drafts) =>
    llamaServerCosts({
      binary,
      target: { file: files.target, fingerprint: fingerprintOf(files.target) },
      drafts: Object.fromEntries(drafts.map((name) => [name, { file: files.drafts[name], fingerprint: fingerprintOf(files.drafts[name]) }])),
      threads,
      contextSize: trio.models.target.context.contextSize,
      measurement: measurementOf(advice.trace, advice.costs.targetMs.length, undefined),
      prompts: advice.trace.prompts.map((p) => p.promptTokens),
      signal
    })
}

const cancelled = (signal: AbortSignal | undefined) => {
  if (signal?.aborted) throw new UserInputError('cancelled')
}

/**
 * The advice on `trio` (loaded with `prepared.preliminary.load`): predicted from one trace, the best measured beside
 * ar in one stored run (nothing stored with verify 0 or no store).
 */
export async function runAdvice(prepared: PreparedAdvice, trio: Pick<LoadedTrio, 'models' | 'drafts' | 'fingerprints' | 'threadPlan'>, store: RunStore | null, hooks: AdviseHooks = {}): Promise<AdviceResult> {
  const { options, seed, names, prompts } = prepared
  const warp = warpOfSettings({ maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, topP: options.topP })
  const mid = midNameOf(options, names)
  const drafts = draftModelsOf(trio, names, mid)
  const grid = gridAsServed(gridOf(options, names, foreignDraftsOf(trio, drafts), mid), options.deploy, warp)
  const files = advisedDraftFiles(options)
  const draftFiles = Object.fromEntries(names.map((name, i) => [name, path.resolve(files[i])]))
  const promptTokens = tokenizePrompts(trio.models, prompts, { maxTokens: options.maxTokens, contextSize: options.contextSize })
  const advice = await adviseWorkload({
    target: trio.models.target,
    drafts,
    prompts: promptTokens,
    warp,
    seed,
    maxTokens: options.maxTokens,
    candidates: grid,
    verifyTop: 0,
    batch: options.batch,
    ...(options.tryThreads ? { threads: LLAMA_THREADS(options.tryThreads) } : {}),
    onProgress: (stage, detail) => {
      cancelled(hooks.signal)
      const named: AdviseStage = stage === 'trace' ? (detail && detail.model !== 'target' ? 'draft-pass' : 'trace') : stage === 'replay' ? 'replay' : 'costs'
      hooks.onStage?.(named, detail)
    }
  })
  cancelled(hooks.signal)
  const profile = workloadProfile(advice.trace, advice.costs, PROFILE_POSITIONS, advice.roundAcceptance)
  const base = { seed, advice, profile, targetFile: path.resolve(options.target), draftFiles }
  if (options.verify === 0 || !store) return adviceResult({ ...base, arms: [], report: null, verification: null })
  const binary = findLlamaServer().path
  const chosen = chooseArms(advice.verdicts, {
    top: options.verify,
    deploy: options.deploy,
    serverAvailable: binary !== null,
    severalDrafts: names.length > 1,
    threadsOf: threadsFor(trio, advice.plans)
  })
  // llama-server's arms (only chosen where a binary exists) are priced with llama-server's own costs.
  const priced =
    binary === null
      ? { arms: chosen, server: undefined }
      : await priceServerArms(
          chosen,
          advice,
          serverCostsOf(binary, advice, trio, { target: base.targetFile, drafts: draftFiles }, hooks.signal),
          () => hooks.onStage?.('costs'),
          runServerArm(trio, drafts, promptTokens, { warp, seed, maxTokens: options.maxTokens, signal: hooks.signal })
        )
  cancelled(hooks.signal)
  const { arms, repeats, estimatedSeconds } = fitBudget(priced.arms, options)
  const built = buildRunRequest(requestOf(options, seed, armMethods(arms), repeats))
  const config = { ...withLoadedTrio(built.config, outcomeOf(trio)), advice: adviceRecord(advice, profile, draftFiles, arms, priced.server) }
  hooks.onStage?.('verify')
  hooks.onVerifyPlan?.({ arms: arms.map((a) => a.label), repeats, estimatedSeconds })
  const report: RunReport = await runVerification(store, config, trio.models, prompts, runnerArms(arms, drafts), {
    prepared: built.prepared,
    signal: hooks.signal,
    onProgress: hooks.onVerifyProgress,
    onRunCreated: hooks.onRunCreated
  })
  const verification = { arms: arms.length, repeats, estimatedSeconds, budgetSeconds: options.budget ?? null }
  return adviceResult({ ...base, arms, report, verification, server: priced.server })
}
