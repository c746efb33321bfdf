/**
 * Runs an experiment suite (experiments/suites.ts): plans its cells, loads the models once, and executes every
 * cell as an ordinary stored run (executeRun) linked to one suite run (store/suite-store.ts). Used by
 * `speclab suite` and callable from the app's engine host (progress events, AbortSignal).
 *
 * - Plan: the grid is expanded once, when the suite run is created, into full RunConfigs kept in suite_runs.plan;
 *   prompts are the dataset's first ones that fit the context with the cell's token budget (per category where
 *   the suite asks), so a resume re-selects exactly the same prompts from the same file.
 * - Cancel: the signal stops the run in progress (executeRun marks it `cancelled`) and the suite run is marked
 *   `cancelled`. A crash leaves the suite run `running`; the next open marks it `interrupted`. Either way every
 *   finished cell keeps its `done` run.
 * - Resume (`resume: id`): only cells without a `done` run are executed — finished cells are never recomputed —
 *   with the stored options and plan, after checking the model files are the ones the suite run started with.
 * - Perplexity: cells with `score` measure each output's NLL under the raw target right after the run and store it
 *   per prompt result (result_scores); reports fold those rows (a resume scores done cells that lack them).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { ModelFingerprint, ModelPaths, RunConfig, RunStatus } from '../api/runs'
import { buildRunRequest, outcomeOf, withLoadedTrio } from './run-request'
import { DEFAULT_REPEATS } from '../engine/methods/limits'
import { ownedParams, prepareRun } from '../engine/methods/prepare'
import type { DecoderModels } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import type { LlamaLoadOptions } from '../engine/model/llama-cpp-model'
import type { LanguageModel } from '../engine/model/types'
import type { RunStore } from '../store/run-store'
import { SuiteStore } from '../store/suite-store'
import { loadTrio, type LoadedTrio } from './models'
import { firstPerCategory, loadBuiltinDataset, loadPromptFile, type PromptItem } from './prompts'
import { executeRun, type RunProgress } from './runner'
import { sharedDatasetsDirectory, sharedModelsDirectory } from './shared-paths'
import { requireSuite, type DatasetSpec, type SuiteCell, type SuiteDefinition } from './suites'

export interface SuiteRunRequest {
  suite: string
  quick: boolean
  /** Model files (default: the suite's files in the shared models folder). */
  models?: { target?: string; mid?: string; draft?: string }
  /** Replaces the suite's datasets (--dataset / --prompts). */
  datasets?: DatasetSpec[]
  /** Prompts per dataset (replaces each dataset's limit). */
  limit?: number
  /** Tokens per prompt for cells that do not sweep the generation length. */
  maxTokens?: number
  seed?: number
  threads?: number
  contextSize?: number
  /** Timed repeats of every cell's (prompt, method); default suiteRepeats(quick). */
  repeats?: number
  /** Continue this suite run (its stored options and plan win over the fields above). */
  resume?: number
}

/** What the suite run stores as `options`. */
export interface SuiteRunOptions {
  quick: boolean
  models: { target: string; mid: string | null; draft: string }
  fingerprints: ModelFingerprint[]
  datasets: DatasetSpec[]
  limit: number | null
  maxTokens: number | null
  seed: number
  /** Threads of every model and phase when given (calibrated false); null when measured at load. */
  threads: number | null
  /**
   * True when no thread count was given: the trio's threads were measured per model and phase at load (absent in
   * suite runs stored before calibration: those resume with `threads` everywhere).
   */
  calibrated?: boolean
  contextSize: number
  /** Timed repeats per (prompt, method); absent in suite runs stored before repeats (read as 1). */
  repeats?: number
  /** Where it ran (reports print it: speeds mean nothing without the machine). */
  machine: { cpus: number; cpuModel: string; platform: string; node: string }
}

/** One cell as planned: the grid point plus the run config and the prompt selection it resolved to. */
export interface PlannedCell extends SuiteCell {
  config: RunConfig
  /** Prompts selected, and how many were passed over because they do not fit the context. */
  promptCount: number
  skippedTooLong: number
}

export interface SuiteProgress {
  suiteRunId: number
  suite: string
  phase: 'loading' | 'running' | 'scoring' | 'finished'
  cellKey: string | null
  /** 1-based index of the cell in progress among the cells this invocation executes. */
  cellIndex: number
  cellCount: number
  /** Cells already finished before this invocation (a resume) — not recomputed. */
  cellsSkipped: number
  /** Work in token budget units (prompts × methods × max tokens), for a fair bar and ETA. */
  unitsDone: number
  unitsTotal: number
  elapsedMs: number
  /** null until something was measured. */
  etaMs: number | null
  run: RunProgress | null
  status: RunStatus | null
}

/** The counters of a suite that is still loading its models (the app's job progress starts from them too). */
export const LOADING_PROGRESS = {
  phase: 'loading',
  cellKey: null,
  cellIndex: 0,
  cellCount: 0,
  cellsSkipped: 0,
  unitsDone: 0,
  unitsTotal: 0,
  elapsedMs: 0,
  etaMs: null,
  status: null
} as const satisfies Partial<SuiteProgress>

export interface SuiteRunHooks {
  signal?: AbortSignal
  onProgress?(progress: SuiteProgress): void
  /** One-line notices (skipped prompts, resumed cells) for stderr or the UI. */
  onNotice?(message: string): void
  /** Called before each executed cell (tests count executions). */
  onCellStart?(cell: PlannedCell): void
  /** Called once the suite run row exists. */
  onSuiteRunCreated?(suiteRunId: number): void
  /**
   * Loads the suite's models (default: loadTrio). The app passes one that lends the trio it already holds when it
   * is the same files with compatible settings, so a suite never keeps a second copy of the weights in memory.
   */
  loadModels?(paths: ModelPaths, options: LlamaLoadOptions & { sequences: number; threads?: number; sharedVocabulary: boolean }): Promise<LoadedTrio>
}

export interface SuiteRunResult {
  suiteRunId: number
  suite: string
  status: RunStatus
  executed: string[]
  skipped: string[]
}

/** Absolute model paths: the request's, else the suite's files in the shared models folder. */
export function suiteModelPaths(suite: SuiteDefinition, request: Pick<SuiteRunRequest, 'models' | 'quick'>): SuiteRunOptions['models'] {
  const dir = sharedModelsDirectory()
  const resolve = (given: string | undefined, file: string | null) =>
    given ? path.resolve(given) : file === null ? null : path.join(dir, file)
  return {
    target: resolve(request.models?.target, request.quick ? suite.models.quickTarget : suite.models.target)!,
    mid: resolve(request.models?.mid, suite.models.mid),
    draft: resolve(request.models?.draft, suite.models.draft)!
  }
}

/** The prompts of a dataset spec that fit `contextSize` with `budget` new tokens, per category and limit applied. */
export function selectPrompts(
  spec: DatasetSpec,
  tokenCount: (text: string) => number,
  contextSize: number,
  budget: number
): { prompts: PromptItem[]; skippedTooLong: number } {
  const all = spec.builtin ? loadBuiltinDataset(spec.builtin) : loadPromptFile(datasetFile(spec))
  const fitting = all.filter((p) => tokenCount(p.text) + budget <= contextSize)
  const perCategory = spec.perCategory ? firstPerCategory(fitting, spec.perCategory) : fitting
  const prompts = spec.limit ? perCategory.slice(0, spec.limit) : perCategory
  // How many of the prompts that would have been taken without the context filter were passed over.
  const unfiltered = spec.perCategory ? firstPerCategory(all, spec.perCategory) : all
  const wanted = spec.limit ? Math.min(spec.limit, unfiltered.length) : unfiltered.length
  if (prompts.length === 0)
    throw new UserInputError(`dataset ${spec.label}: no prompt fits the context of ${contextSize} tokens with ${budget} new tokens`)
  return { prompts, skippedTooLong: Math.max(0, wanted - prompts.length) }
}

function datasetFile(spec: DatasetSpec): string {
  if (spec.file) return spec.file
  if (spec.shared) {
    const file = path.join(sharedDatasetsDirectory(), spec.shared)
    if (!fs.existsSync(file))
      throw new UserInputError(`dataset ${spec.label}: ${file} not found (set SPECLAB_DATASETS, or give --dataset / --prompts)`)
    return file
  }
  throw new UserInputError(`dataset ${spec.id} names no built-in set and no file`)
}

/** A dataset spec for --dataset <builtin id> or --prompts <file.jsonl>. */
export function datasetOverride(options: { dataset?: string; prompts?: string }): DatasetSpec | undefined {
  if (options.dataset && options.prompts) throw new UserInputError('give either --prompts or --dataset, not both')
  if (options.dataset) return { id: options.dataset, label: options.dataset, builtin: options.dataset }
  if (options.prompts) {
    const file = path.resolve(options.prompts)
    const name = path.basename(file).replace(/\.jsonl$/i, '')
    return { id: name.replace(/[^\w.-]+/g, '-'), label: name, file }
  }
  return undefined
}

function cellModels(cell: SuiteCell, paths: SuiteRunOptions['models'], needsMid: boolean): RunConfig['models'] {
  const mid = paths.mid ?? undefined
  if (cell.draft === 'mid' && !mid) throw new UserInputError(`cell ${cell.key} drafts with the mid model: give --mid`)
  return {
    target: paths.target,
    mid: needsMid ? mid : undefined,
    draft: cell.draft === 'mid' ? mid : paths.draft,
    drafts: cell.selectDraft ? [paths.draft, mid!] : undefined
  }
}

const THREE_MODEL_METHODS = new Set(['pre-verify', 'pre-self-verify', 'hsddw', 'hier-chen'])

function planCells(
  suite: SuiteDefinition,
  options: SuiteRunOptions,
  target: LanguageModel,
  notice: (message: string) => void
): PlannedCell[] {
  const datasets = options.datasets.map((d) => (options.limit ? { ...d, limit: options.limit } : d))
  const cells = suite.cells({ quick: options.quick, datasets, maxTokens: options.maxTokens ?? undefined })
  const keys = new Set<string>()
  const tokenCount = promptTokenCounter(target)
  return cells.map((cell) => {
    if (keys.has(cell.key)) throw new Error(`suite ${suite.id}: duplicate cell key ${cell.key}`)
    keys.add(cell.key)
    const selection = selectPrompts(cell.dataset, tokenCount, options.contextSize, cell.fitTokens ?? cell.maxTokens)
    if (selection.skippedTooLong > 0)
      notice(`${cell.key}: ${selection.skippedTooLong} prompt(s) of ${cell.dataset.label} do not fit the context and were passed over`)
    const needsMid = cell.methods.some((m) => THREE_MODEL_METHODS.has(m))
    const { config } = buildRunRequest({
      suite: suite.id,
      methods: cell.methods,
      models: cellModels(cell, options.models, needsMid),
      prompts: cell.dataset.builtin
        ? { dataset: cell.dataset.builtin, limit: cell.dataset.limit, perCategory: cell.dataset.perCategory }
        : { file: datasetFile(cell.dataset), limit: cell.dataset.limit, perCategory: cell.dataset.perCategory },
      decode: { maxTokens: cell.maxTokens, ...cell.sampling, seed: options.seed, gamma: cell.gamma },
      load: { threads: givenThreads(options), contextSize: options.contextSize },
      repeats: options.repeats ?? 1,
      params: cell.params ?? {},
      draftSelection: cell.selectDraft ? { warmupPrompts: 3 } : null
    })
    return { ...cell, config, promptCount: selection.prompts.length, skippedTooLong: selection.skippedTooLong }
  })
}

/** The thread count the suite was given; undefined when its trio's threads are measured at load. */
const givenThreads = (options: SuiteRunOptions): number | undefined => (options.calibrated === true ? undefined : (options.threads ?? undefined))

function promptTokenCounter(target: LanguageModel): (text: string) => number {
  const bos = target.info.bos === null ? 0 : 1
  return (text) => bos + target.tokenize(text).length
}

/**
 * Plans stored before a run's parameters were checked against its methods may hold keys that never applied (the
 * hsddw-ablation Figure 7 cells carried selfverify.maxDraft without self-verify): a resume keeps the owned keys.
 */
function ownParamsOnly(plan: readonly PlannedCell[]): PlannedCell[] {
  return plan.map((cell) => ({
    ...cell,
    params: ownedParams(cell.methods, cell.params ?? {}),
    // Plans stored before repeats have none: one repeat, as they ran.
    config: { ...cell.config, params: ownedParams(cell.methods, cell.config.params), repeats: cell.config.repeats ?? 1 }
  }))
}

/** Prompts of a planned cell, re-selected exactly as planned (the plan's count is checked). */
function cellPrompts(cell: PlannedCell, target: LanguageModel, contextSize: number): PromptItem[] {
  const { prompts } = selectPrompts(cell.dataset, promptTokenCounter(target), contextSize, cell.fitTokens ?? cell.maxTokens)
  if (prompts.length !== cell.promptCount)
    throw new UserInputError(`${cell.key}: the dataset now yields ${prompts.length} prompts, the suite run planned ${cell.promptCount} (did the file change?)`)
  return prompts
}

const units = (cell: PlannedCell) => cell.promptCount * cell.methods.length * cell.maxTokens * cell.config.repeats

/**
 * Repeats of a suite when none are asked for: a full grid compares speeds, so DEFAULT_REPEATS; `--quick` checks that
 * everything runs, so 1.
 */
export const suiteRepeats = (quick: boolean): number => (quick ? 1 : DEFAULT_REPEATS)

/** Scores every done output of a run under the raw target: NLL and token count per prompt result. */
export async function scoreRunOutputs(
  store: RunStore,
  suites: SuiteStore,
  runId: number,
  target: LanguageModel,
  methods: boolean | readonly string[] = true
): Promise<void> {
  const existing = suites.scoresOfRun(runId)
  const bos = target.info.bos
  const wanted = (method: string) => methods === true || (Array.isArray(methods) && methods.includes(method))
  for (const result of store.getPromptResults(runId)) {
    if (result.status !== 'done' || result.outputTokens.length === 0 || existing.has(result.id) || !wanted(result.method)) continue
    const prompt = [...(bos === null ? [] : [bos]), ...target.tokenize(result.promptText)]
    const logProbabilities = await target.logProbabilities([...prompt, ...result.outputTokens])
    const outputPart = logProbabilities.slice(prompt.length - 1)
    suites.addScore({
      resultId: result.id,
      scorer: target.info.path,
      nll: -outputPart.reduce((sum, lp) => sum + lp, 0),
      tokens: outputPart.length
    })
  }
}

export async function runSuite(store: RunStore, request: SuiteRunRequest, hooks: SuiteRunHooks = {}): Promise<SuiteRunResult> {
  const suites = new SuiteStore(store.database)
  const notice = hooks.onNotice ?? (() => {})
  const resumed = request.resume !== undefined ? suites.getSuiteRun<SuiteRunOptions, PlannedCell[]>(request.resume) : null
  if (request.resume !== undefined && !resumed) throw new UserInputError(`no suite run with id ${request.resume}`)
  if (resumed?.status === 'running') throw new UserInputError(`suite run ${resumed.id} is still running in another process`)
  const suite = requireSuite(resumed?.suite ?? request.suite)
  if (resumed && resumed.suite !== request.suite)
    throw new UserInputError(`suite run ${resumed.id} is a run of '${resumed.suite}', not '${request.suite}'`)

  const options: SuiteRunOptions = resumed?.options ?? {
    quick: request.quick,
    models: suiteModelPaths(suite, request),
    fingerprints: [],
    datasets: request.datasets ?? suite.datasets(request.quick),
    limit: request.limit ?? null,
    maxTokens: request.maxTokens ?? null,
    seed: request.seed ?? 1,
    threads: request.threads ?? null,
    calibrated: request.threads === undefined,
    contextSize: request.contextSize ?? 512,
    repeats: request.repeats ?? suiteRepeats(request.quick),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', platform: `${os.platform()} ${os.arch()}`, node: process.version }
  }
  for (const file of [options.models.target, options.models.mid, options.models.draft])
    if (file && !fs.existsSync(file)) throw new UserInputError(`model file not found: ${file} (set SPECLAB_MODELS or give --target/--mid/--draft)`)

  // The grid (without prompts) is known before loading: every cell's methods are prepared (a bad cell fails now,
  // not an hour in), and they say how many KV sequences the beam methods want.
  const resumedPlan = resumed ? ownParamsOnly(resumed.plan) : null
  const draftGrid = resumedPlan ?? suite.cells({ quick: options.quick, datasets: options.datasets, maxTokens: options.maxTokens ?? undefined })
  const preparedCells = draftGrid.map((c) => prepareRun(c.methods, { gamma: c.gamma, params: c.params ?? {} }))
  const sequences = Math.max(...preparedCells.map((p) => p.sessions))
  // A cell whose methods compare token ids needs the trio to pass the vocabulary check (experiments/models.ts).
  const sharedVocabulary = preparedCells.some((p) => p.sharedVocabulary)
  const started = performance.now()
  const progress: SuiteProgress = {
    ...LOADING_PROGRESS,
    suiteRunId: resumed?.id ?? 0,
    suite: suite.id,
    run: null
  }
  /** The ETA extrapolates the rate since the first cell started (model loading is not part of the rate). */
  let runningSince: number | null = null
  const emit = (patch: Partial<SuiteProgress>) => {
    Object.assign(progress, patch, { elapsedMs: performance.now() - started })
    if (progress.phase !== 'loading') runningSince ??= performance.now()
    const rateMs = runningSince === null ? 0 : performance.now() - runningSince
    progress.etaMs = progress.unitsDone > 0 ? (rateMs / progress.unitsDone) * (progress.unitsTotal - progress.unitsDone) : null
    hooks.onProgress?.({ ...progress })
  }
  emit({})

  const trio = await (hooks.loadModels ?? loadTrio)(
    { target: options.models.target, mid: options.models.mid ?? undefined, draft: options.models.draft },
    { threads: givenThreads(options), contextSize: options.contextSize, sequences, sharedVocabulary }
  )
  let suiteRunId = resumed?.id ?? 0
  try {
    const contextSize = Math.min(options.contextSize, trio.models.target.context.contextSize)
    let plan: PlannedCell[]
    if (resumed) {
      checkFingerprints(resumed.options.fingerprints, trio.fingerprints)
      plan = resumedPlan!
      suites.reopenSuiteRun(resumed.id)
    } else {
      options.fingerprints = trio.fingerprints
      options.contextSize = contextSize
      plan = planCells(suite, options, trio.models.target, notice)
      suiteRunId = suites.createSuiteRun({ suite: suite.id, quick: options.quick, options, plan })
    }
    hooks.onSuiteRunCreated?.(suiteRunId)
    const finished = suites.finishedCells(suiteRunId)
    const pending = plan.filter((cell) => !finished.has(cell.key))
    const skipped = plan.filter((cell) => finished.has(cell.key)).map((c) => c.key)
    if (resumed && skipped.length > 0) notice(`resuming suite run ${suiteRunId}: ${skipped.length} finished cell(s) kept, ${pending.length} to run`)
    emit({ suiteRunId, phase: 'running', cellCount: pending.length, cellsSkipped: skipped.length, unitsTotal: pending.reduce((n, c) => n + units(c), 0) })

    // Finished cells whose outputs still lack scores (a run stopped while scoring).
    for (const cell of plan)
      if (cell.score && finished.has(cell.key)) await scoreRunOutputs(store, suites, finished.get(cell.key)!, trio.models.target, cell.score)

    const executed: string[] = []
    let unitsBefore = 0
    for (const [index, cell] of pending.entries()) {
      if (hooks.signal?.aborted) break
      hooks.onCellStart?.(cell)
      emit({ cellKey: cell.key, cellIndex: index + 1, run: null })
      const prompts = cellPrompts(cell, trio.models.target, contextSize)
      const report = await executeRun(
        store,
        withLoadedTrio(cell.config, outcomeOf(trio, filesOf(cell.config), contextSize)),
        modelsOf(cell, trio),
        prompts,
        {
          signal: hooks.signal,
          draftCandidates: cell.selectDraft ? [trio.models.draft!, trio.models.mid!] : undefined,
          onRunCreated: (runId) => suites.linkRun(runId, suiteRunId, cell.key),
          // The last cell's tokens still count after it is done: never past this run's share.
          onProgress: (run) =>
            emit({ run, unitsDone: unitsBefore + Math.min(units(cell), run.cellsDone * cell.maxTokens + Math.min(run.tokens, cell.maxTokens)) })
        }
      )
      if (report.status !== 'done') break
      if (cell.score) {
        emit({ phase: 'scoring' })
        await scoreRunOutputs(store, suites, report.runId, trio.models.target, cell.score)
        emit({ phase: 'running' })
      }
      unitsBefore += units(cell)
      executed.push(cell.key)
      emit({ unitsDone: unitsBefore })
    }
    const status: RunStatus = executed.length === pending.length ? 'done' : 'cancelled'
    suites.finishSuiteRun(suiteRunId, status)
    emit({ phase: 'finished', status, run: null })
    return { suiteRunId, suite: suite.id, status, executed, skipped }
  } catch (error) {
    if (suiteRunId > 0) suites.finishSuiteRun(suiteRunId, 'failed', error instanceof Error ? error.message : String(error))
    emit({ phase: 'finished', status: 'failed' })
    throw error
  } finally {
    await trio.dispose()
  }
}

function modelsOf(cell: PlannedCell, trio: LoadedTrio): DecoderModels {
  const { target, mid, draft } = trio.models
  return {
    target,
    mid: cell.config.models.mid ? mid : undefined,
    draft: cell.draft === 'mid' ? mid : draft
  }
}

/** The files of one cell's run (its fingerprints and part of the thread plan are recorded with it). */
const filesOf = (config: RunConfig): ReadonlySet<string> =>
  new Set([config.models.target, config.models.mid, config.models.draft, ...(config.models.drafts ?? [])].filter((f): f is string => f !== undefined))

function checkFingerprints(stored: readonly ModelFingerprint[], loaded: readonly ModelFingerprint[]): void {
  for (const model of stored) {
    const now = loaded.find((f) => f.path === model.path)
    if (!now || now.fingerprint !== model.fingerprint)
      throw new UserInputError(`cannot resume: ${model.path} is not the file the suite run started with (fingerprint changed)`)
  }
}
