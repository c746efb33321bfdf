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
import { findMethod } from '../engine/decoders/registry'
import { PROVENANCE_CODES, type DecodeEvent, type Decoder, type DecoderModels, type StopReason } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { createPrng } from '../engine/sampling/prng'
import type { LanguageModel } from '../engine/model/types'
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
}

/**
 * Rejects unknown or not-yet-available methods, missing models and bad method parameters (instantiating a method
 * validates its --set values) before anything is loaded.
 */
export function validateMethods(config: Pick<RunConfig, 'methods' | 'models' | 'gamma' | 'params'>): void {
  for (const id of config.methods) {
    const method = findMethod(id)
    if (!method) throw new UserInputError(`method '${id}' is not available in this version of SpecLab`)
    if (method.needs.draft && !config.models.draft) throw new UserInputError(`method '${id}' needs --draft`)
    if (method.needs.mid && !config.models.mid) throw new UserInputError(`method '${id}' needs --mid`)
    method.forRun({ gamma: config.gamma, params: config.params })
  }
}

/** Prompt + generated tokens must fit the context; say so up front rather than failing mid-run. */
export function tokenizePrompts(models: DecoderModels, prompts: readonly PromptItem[], config: RunConfig): number[][] {
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

interface CellResult {
  tokens: number[]
  provenance: string
  stopReason: StopReason
}

interface Cell {
  method: string
  promptTokens: number[]
  /** PRNG stream: the prompt index. */
  stream: number
  maxTokens: number
}

async function decodeCell(
  models: DecoderModels,
  config: RunConfig,
  decoder: Decoder,
  cell: Cell,
  signal: AbortSignal | undefined,
  onEvent: (event: DecodeEvent) => void,
  /** Filled as tokens arrive, so a failure mid-decode keeps the partial output. */
  result: CellResult = { tokens: [], provenance: '', stopReason: 'max-tokens' }
): Promise<CellResult> {
  const request = {
    promptTokens: cell.promptTokens,
    maxTokens: cell.maxTokens,
    warp: warpOf(config),
    rng: createPrng(config.seed, cell.stream),
    params: { ...config.params, gamma: config.gamma },
    signal
  }
  for await (const event of decoder(models, request)) {
    if (event.type === 'token') {
      result.tokens.push(event.token)
      result.provenance += PROVENANCE_CODES[event.provenance]
    } else if (event.type === 'done') result.stopReason = event.stopReason
    onEvent(event)
  }
  return result
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

function decoderFactory(config: RunConfig, method: string): () => Decoder {
  return findMethod(method)!.forRun({ gamma: config.gamma, params: config.params })
}

export async function executeRun(
  store: RunStore,
  config: RunConfig,
  models: DecoderModels,
  prompts: readonly PromptItem[],
  options: RunOptions = {}
): Promise<RunReport> {
  validateMethods(config)
  const promptTokens = tokenizePrompts(models, prompts, config)
  const runId = store.createRun(config)
  options.onRunCreated?.(runId)
  try {
    // Warm-up instances are separate, so state that persists across prompts starts fresh for the measured run.
    for (const method of config.methods)
      await decodeCell(models, config, decoderFactory(config, method)(), { method, promptTokens: promptTokens[0], stream: 0, maxTokens: 4 }, undefined, () => {})
    const factories = new Map(config.methods.map((method) => [method, decoderFactory(config, method)]))
    const selection = await startDraftSelection(store, runId, config, models, promptTokens, options)
    const cellsTotal = prompts.length * config.methods.length
    let cellsDone = 0
    for (let promptIndex = 0; promptIndex < prompts.length && !options.signal?.aborted; promptIndex++) {
      const promptModels = selection
        ? { ...models, draft: await selection.choose(promptIndex, promptTokens[promptIndex]) }
        : models
      for (const method of config.methods) {
        if (options.signal?.aborted) break
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
        const cell = { method, promptTokens: promptTokens[promptIndex], stream: promptIndex, maxTokens: config.maxTokens }
        const result: CellResult = { tokens: [], provenance: '', stopReason: 'max-tokens' }
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
          await decodeCell(promptModels, config, factories.get(method)!(), cell, options.signal, onEvent, result)
        } catch (error) {
          finish('failed', null)
          throw error
        }
        finish(result.stopReason === 'cancelled' ? 'cancelled' : 'done', result.stopReason)
        cellsDone += 1
        options.onProgress?.({ promptIndex, promptCount: prompts.length, method, tokens, cellsDone, cellsTotal })
      }
    }
    store.finishRun(runId, options.signal?.aborted ? 'cancelled' : 'done')
  } catch (error) {
    store.finishRun(runId, 'failed', error instanceof Error ? error.message : String(error))
    throw error
  }
  return buildRunReport(store, runId)!
}
