/**
 * The run executor: methods × prompts on one loaded trio, every row written to the store as it happens.
 *
 * Order is prompt-major (each prompt runs every method before the next prompt), so slow drifts of the machine
 * (thermal, other load) hit all methods alike and the `ar` baseline of the speedup is measured beside them.
 * Each (prompt, method) draws from its own PRNG stream createPrng(seed, prompt index): the same prompt under
 * different methods sees the same seed, and any prompt can be replayed alone.
 * A short untimed warm-up per method first pays one-time costs (page-in of weights, first-call allocations).
 */
import type { RunConfig, RunReport } from '../api/contract'
import { buildRunReport } from '../api/runs-service'
import type { DecodeEvent, DecoderModels, StopReason } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { decodeOnce, type DecodeOutcome } from '../engine/methods/decode-once'
import { prepareRun, type PreparedMethod, type PreparedRun } from '../engine/methods/prepare'
import type { LanguageModel } from '../engine/model/types'
import type { WarpConfig } from '../engine/sampling/warp'
import type { RunStore } from '../store/run-store'
import { RunDraftSelection } from './draft-selection'
import type { PromptItem } from './prompts'
import { warpOf } from './runner-config'

export interface RunProgress {
  promptIndex: number
  promptCount: number
  method: string
  /** Tokens produced so far for the current (prompt, method). */
  tokens: number
  /** Finished (prompt, method) cells and their total. */
  cellsDone: number
  cellsTotal: number
}

export interface RunOptions {
  signal?: AbortSignal
  onProgress?(progress: RunProgress): void
  /** Every decoder event, e.g. for streaming to a chat view. */
  onEvent?(method: string, promptIndex: number, event: DecodeEvent): void
  /** The candidate drafts of a run with config.draftSelection (004 §5), in models.drafts order. */
  draftCandidates?: readonly LanguageModel[]
  /** Called once the run row exists (before any decoding), e.g. so the app can show and link the run. */
  onRunCreated?(runId: number): void
  /** The methods as the caller already prepared them for this config (prepareConfig), so they are validated once. */
  prepared?: PreparedRun
}

/**
 * The run's methods prepared once (methods/prepare.ts): unknown or duplicate methods, missing models and bad
 * parameters are refused before anything loads; the config that comes back records the RESOLVED parameters.
 */
export function prepareConfig<C extends Pick<RunConfig, 'methods' | 'models' | 'gamma' | 'params'>>(config: C): { config: C; prepared: PreparedRun } {
  const prepared = prepareRun(config.methods, { gamma: config.gamma, params: config.params }, {
    draft: config.models.draft !== undefined,
    mid: config.models.mid !== undefined
  })
  return { config: { ...config, params: prepared.params }, prepared }
}

/** Prompt + generated tokens must fit the context; say so up front rather than failing mid-run. */
export function tokenizePrompts(models: DecoderModels, prompts: readonly PromptItem[], config: Pick<RunConfig, 'maxTokens' | 'contextSize'>): number[][] {
  const bos = models.target.info.bos
  return prompts.map((prompt, index) => {
    const tokens = [...(bos === null ? [] : [bos]), ...models.target.tokenize(prompt.text)]
    if (tokens.length + config.maxTokens > config.contextSize)
      throw new UserInputError(
        `prompt ${index + 1} has ${tokens.length} tokens; with --max-tokens ${config.maxTokens} it does not fit ` +
          `the context size ${config.contextSize}`
      )
    return tokens
  })
}

/** With config.draftSelection: profile every candidate draft on the warm-up prompts and fit the predictor. */
async function startDraftSelection(
  store: RunStore,
  runId: number,
  config: RunConfig,
  models: DecoderModels,
  promptTokens: number[][],
  options: RunOptions
): Promise<RunDraftSelection | null> {
  if (!config.draftSelection) return null
  const candidates = options.draftCandidates ?? []
  if (candidates.length < 2) throw new UserInputError('draft selection needs at least two --draft models')
  const selection = new RunDraftSelection(store, runId, config, models, candidates)
  await selection.warmUp(promptTokens, options.signal)
  return selection
}

/** One arm of an interleaved schedule: a prepared method (a run's method, or one setting of a bench). */
export interface Arm {
  label: string
  method: PreparedMethod
}

export interface ScheduleInput {
  models: DecoderModels
  promptTokens: readonly (readonly number[])[]
  maxTokens: number
  warp: WarpConfig
  seed: number
  signal?: AbortSignal
}

export interface ScheduleHooks<A extends Arm> {
  /** After the warm-up, before the first measured prompt (draft selection profiles its candidates here). */
  afterWarmUp?(): Promise<void>
  /** The models of one prompt (draft selection picks its draft); default: the schedule's models. */
  modelsFor?(promptIndex: number): Promise<DecoderModels>
  /**
   * One measured (prompt, arm) cell: `decode` runs it (the prompt's PRNG stream, the arm's run state) and fills
   * `outcome` as tokens arrive, so a failure mid-decode keeps the partial output.
   */
  cell(arm: A, promptIndex: number, decode: (onEvent: (event: DecodeEvent) => void, outcome: DecodeOutcome) => Promise<DecodeOutcome>): Promise<void>
}

/**
 * The measurement schedule every run and bench shares. An untimed warm-up per arm first pays one-time costs
 * (page-in of weights, first-call allocations) on the first prompt, from runs of its own, so state that persists
 * across prompts starts fresh for the measured run. Then prompt-major order: every arm on a prompt before the next
 * prompt, so slow drifts of the machine hit all arms alike; each (prompt, arm) draws from the PRNG stream
 * (seed, prompt index), so one prompt sees the same randomness under every arm and replays alone.
 */
export async function runInterleaved<A extends Arm>(arms: readonly A[], input: ScheduleInput, hooks: ScheduleHooks<A>): Promise<void> {
  const { models, promptTokens, maxTokens, warp, seed, signal } = input
  for (const arm of arms)
    await decodeOnce({ decoder: arm.method.newRun()(), models, promptTokens: promptTokens[0], maxTokens: 4, warp, seed, stream: 0 })
  const runs = arms.map((arm) => arm.method.newRun())
  await hooks.afterWarmUp?.()
  for (let promptIndex = 0; promptIndex < promptTokens.length && !signal?.aborted; promptIndex++) {
    const promptModels = (await hooks.modelsFor?.(promptIndex)) ?? models
    for (const [a, arm] of arms.entries()) {
      if (signal?.aborted) break
      await hooks.cell(arm, promptIndex, (onEvent, outcome) =>
        decodeOnce(
          { decoder: runs[a](), models: promptModels, promptTokens: promptTokens[promptIndex], maxTokens, warp, seed, stream: promptIndex, signal, onEvent },
          outcome
        )
      )
    }
  }
}

export async function executeRun(
  store: RunStore,
  config: RunConfig,
  models: DecoderModels,
  prompts: readonly PromptItem[],
  options: RunOptions = {}
): Promise<RunReport> {
  const prepared = options.prepared ?? prepareConfig(config).prepared
  const promptTokens = tokenizePrompts(models, prompts, config)
  const runId = store.createRun({ ...config, params: prepared.params })
  options.onRunCreated?.(runId)
  const cellsTotal = prompts.length * config.methods.length
  let cellsDone = 0
  let selection: RunDraftSelection | null = null
  try {
    const arms = prepared.methods.map((method) => ({ label: method.id, method }))
    const input = { models, promptTokens, maxTokens: config.maxTokens, warp: warpOf(config), seed: config.seed, signal: options.signal }
    await runInterleaved(arms, input, {
      afterWarmUp: async () => {
        selection = await startDraftSelection(store, runId, config, models, promptTokens, options)
      },
      modelsFor: async (promptIndex) =>
        selection ? { ...models, draft: await selection.choose(promptIndex, promptTokens[promptIndex]) } : models,
      cell: async ({ label: method }, promptIndex, decode) => {
        const prompt = prompts[promptIndex]
        const resultId = store.startPromptResult({
          runId,
          method,
          promptIndex,
          promptId: prompt.id,
          category: prompt.category,
          promptText: prompt.text,
          seedStream: promptIndex
        })
        let tokens = 0
        const started = performance.now()
        const onEvent = (event: DecodeEvent) => {
          if (event.type === 'step') store.addStep(resultId, event.record)
          if (event.type === 'token') {
            tokens += 1
            options.onProgress?.({ promptIndex, promptCount: prompts.length, method, tokens, cellsDone, cellsTotal })
          }
          options.onEvent?.(method, promptIndex, event)
        }
        const result: DecodeOutcome = { tokens: [], provenance: '', stopReason: 'max-tokens' }
        const finish = (status: 'done' | 'cancelled' | 'failed', stopReason: StopReason | null) =>
          store.finishPromptResult(resultId, {
            status,
            outputText: models.target.detokenize(result.tokens),
            outputTokens: result.tokens,
            provenance: result.provenance,
            stopReason,
            wallMs: performance.now() - started
          })
        try {
          await decode(onEvent, result)
        } catch (error) {
          finish('failed', null)
          throw error
        }
        finish(result.stopReason === 'cancelled' ? 'cancelled' : 'done', result.stopReason)
        cellsDone += 1
        options.onProgress?.({ promptIndex, promptCount: prompts.length, method, tokens, cellsDone, cellsTotal })
      }
    })
    store.finishRun(runId, options.signal?.aborted ? 'cancelled' : 'done')
  } catch (error) {
    store.finishRun(runId, 'failed', error instanceof Error ? error.message : String(error))
    throw error
  }
  return buildRunReport(store, runId)!
}
