/**
 * The run executor: methods × prompts on one loaded trio, every row written to the store as it happens.
 *
 * Order is prompt-major (each prompt runs every method before the next prompt), so slow drifts of the machine
 * (thermal, other load) hit all methods alike and the `ar` baseline of the speedup is measured beside them.
 * Each (prompt, method) draws from its own PRNG stream createPrng(seed, prompt index): the same prompt under
 * different methods sees the same seed, and any prompt can be replayed alone.
 * A short untimed warm-up per method first pays one-time costs (page-in of weights, first-call allocations).
 */
import type { RunConfig, RunReport } from '../api/runs'
import { buildRunReport } from '../api/runs-service'
import type { DecodeEvent, DecoderModels, StopReason } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { decodeOnce, type DecodeOutcome } from '../engine/methods/decode-once'
import type { PreparedMethod, PreparedRun } from '../engine/methods/prepare'
import type { LanguageModel } from '../engine/model/types'
import type { WarpConfig } from '../engine/sampling/warp'
import type { RunStore } from '../store/run-store'
import { RunDraftSelection } from './draft-selection'
import type { PromptItem } from './prompts'
import { machineAfter, machineBefore } from './machine-state'
import { prepareConfig, warpOfSettings } from './run-request'
import { stopLocalServers } from '../engine/peers/llama-server-process'
import { isLlamaServerMethod } from '../engine/methods/catalog'

export interface RunProgress {
  promptIndex: number
  promptCount: number
  method: string
  /** The timed repeat in progress (0-based) of `repeats`. */
  repeat: number
  repeats: number
  /** Tokens produced so far for the current (prompt, method, repeat). */
  tokens: number
  /** Finished (prompt, method, repeat) decodes and their total. */
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
  /**
   * Arms to run instead of one per method of the config, each stored under its label: several configurations of
   * one method (different γ, parameters, draft model or threads) in one interleaved run, as `speclab advise`
   * verifies its candidates. The labels must be unique; an arm labelled `ar` is the speedup baseline.
   */
  arms?: readonly Arm[]
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
  /** Timed repeats of every (prompt, arm); default 1. */
  repeats?: number
  /** Synthetic acceptance rates for every measured decode (RunConfig.syntheticAcceptance). */
  syntheticAcceptance?: readonly number[] | null
  signal?: AbortSignal
}

/** Where a cell sits in the schedule: its repeat of the prompt, and its position among all timed decodes. */
export interface CellPlace {
  promptIndex: number
  repeat: number
  order: number
}

export interface ScheduleHooks<A extends Arm> {
  /** After the warm-up, before the first measured prompt (draft selection profiles its candidates here). */
  afterWarmUp?(): Promise<void>
  /** The models of one prompt (draft selection picks its draft); default: the schedule's models. */
  modelsFor?(promptIndex: number): Promise<DecoderModels>
  /**
   * One measured (prompt, repeat, arm) decode: `decode` runs it (the prompt's PRNG stream, the arm's run state for
   * that repeat) and fills `outcome` as tokens arrive, so a failure mid-decode keeps the partial output.
   */
  cell(arm: A, place: CellPlace, decode: (onEvent: (event: DecodeEvent) => void, outcome: DecodeOutcome) => Promise<DecodeOutcome>): Promise<void>
}

/**
 * The measurement schedule every run and bench shares. An untimed warm-up per arm first pays one-time costs
 * (page-in of weights, first-call allocations) on the first prompt, from runs of its own, so state that persists
 * across prompts starts fresh for the measured run. Then prompt-major order, and within a prompt repeat-major, the
 * arms' order rotating by one from each (prompt, repeat) to the next: A B C, B C A, C A B, … — every arm runs once
 * per repeat before the next repeat, and all repeats of a prompt before the next prompt — so slow drifts of the
 * machine hit all arms alike, each repeat of an arm has a neighbour of every other arm to be paired with, and no arm
 * is always the one that runs first, right after the previous repeat's last arm (measured: the same `ar` arm first in
 * every cell of a peer-bench ran 4 % slower than its copy placed third, just after a llama-server arm). Each
 * (prompt, arm) draws from the PRNG stream (seed, prompt index), so one prompt
 * sees the same randomness under every arm and in every repeat; and each repeat has its own run state (for
 * methods whose state carries across prompts), so repeat r sees the same history as repeat 0 — repeats differ in
 * timing only, never in decisions.
 */
export async function runInterleaved<A extends Arm>(arms: readonly A[], input: ScheduleInput, hooks: ScheduleHooks<A>): Promise<void> {
  const { models, promptTokens, maxTokens, warp, seed, signal } = input
  const repeats = input.repeats ?? 1
  for (const arm of arms)
    await decodeOnce({ decoder: arm.method.newRun()(), models, promptTokens: promptTokens[0], maxTokens: 4, warp, seed, stream: 0 })
  const runs = arms.map((arm) => Array.from({ length: repeats }, () => arm.method.newRun()))
  await hooks.afterWarmUp?.()
  let order = 0
  for (let promptIndex = 0; promptIndex < promptTokens.length && !signal?.aborted; promptIndex++) {
    const promptModels = (await hooks.modelsFor?.(promptIndex)) ?? models
    for (let repeat = 0; repeat < repeats; repeat++) {
      // The arm that runs first moves on by one with every (prompt, repeat).
      const first = promptIndex * repeats + repeat
      for (let position = 0; position < arms.length; position++) {
        const a = (first + position) % arms.length
        const arm = arms[a]!
        if (signal?.aborted) return
        await hooks.cell(arm, { promptIndex, repeat, order: order++ }, (onEvent, outcome) =>
          decodeOnce(
            {
              decoder: runs[a]![repeat]!(),
              models: promptModels,
              promptTokens: promptTokens[promptIndex],
              maxTokens,
              warp,
              seed,
              stream: promptIndex,
              signal,
              onEvent,
              syntheticAcceptance: input.syntheticAcceptance
            },
            outcome
          )
        )
      }
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
  // The config records what loaded (run-request.ts withLoadedTrio: context, fingerprints, the thread plan).
  const runId = store.createRun({ ...config, params: prepared.params })
  options.onRunCreated?.(runId)
  const machine = machineBefore()
  const repeats = config.repeats
  const arms: readonly Arm[] = options.arms ?? prepared.methods.map((method) => ({ label: method.id, method }))
  const cellsTotal = prompts.length * arms.length * repeats
  let cellsDone = 0
  let selection: RunDraftSelection | null = null
  /** Repeat 0 of each (method, prompt): its stored result and output, which later repeats are timed against. */
  const firsts = new Map<string, { resultId: number; tokens: readonly number[] }>()
  try {
    const input = {
      models,
      promptTokens,
      maxTokens: config.maxTokens,
      warp: warpOfSettings(config.sampling),
      seed: config.seed,
      repeats,
      syntheticAcceptance: config.syntheticAcceptance,
      signal: options.signal
    }
    await runInterleaved(arms, input, {
      afterWarmUp: async () => {
        selection = await startDraftSelection(store, runId, config, models, promptTokens, options)
      },
      modelsFor: async (promptIndex) =>
        selection ? { ...models, draft: await selection.choose(promptIndex, promptTokens[promptIndex]) } : models,
      cell: async ({ label: method }, place, decode) => {
        const { promptIndex, repeat } = place
        let tokens = 0
        const progress = () => options.onProgress?.({ promptIndex, promptCount: prompts.length, method, repeat, repeats, tokens, cellsDone, cellsTotal })
        const countToken = (event: DecodeEvent) => {
          if (event.type !== 'token') return
          tokens += 1
          progress()
        }
        const key = `${method}/${promptIndex}`
        if (repeat === 0) {
          const first = await firstRepeat(store, runId, method, place, prompts[promptIndex], models, decode, (event) => {
            countToken(event)
            options.onEvent?.(method, promptIndex, event)
          })
          if (first) firsts.set(key, first)
        } else {
          const first = firsts.get(key)
          if (first) await laterRepeat(store, first, place, decode, countToken)
        }
        cellsDone += 1
        progress()
      }
    })
    store.setMachine(runId, machineAfter(machine))
    store.finishRun(runId, options.signal?.aborted ? 'cancelled' : 'done')
  } catch (error) {
    store.finishRun(runId, 'failed', error instanceof Error ? error.message : String(error))
    throw error
  } finally {
    // The llama-server:* methods' servers live for their run (pooled across its prompts and repeats), not longer:
    // their stderr pipes would keep a finished CLI alive, and the app's process would collect idle servers.
    if (arms.some((arm) => isLlamaServerMethod(arm.method.definition))) stopLocalServers()
  }
  return buildRunReport(store, runId)!
}

type CellDecode = (onEvent: (event: DecodeEvent) => void, outcome: DecodeOutcome) => Promise<DecodeOutcome>

/**
 * Repeat 0 of a (prompt, method): its output, provenance and every step are stored in prompt_results / steps, and
 * its wall time as the cell's repeat 0. Returns it when done (null when cancelled), for the later repeats.
 */
async function firstRepeat(
  store: RunStore,
  runId: number,
  method: string,
  place: CellPlace,
  prompt: PromptItem,
  models: DecoderModels,
  decode: CellDecode,
  onEvent: (event: DecodeEvent) => void
): Promise<{ resultId: number; tokens: readonly number[] } | null> {
  const resultId = store.startPromptResult({
    runId,
    method,
    promptIndex: place.promptIndex,
    promptId: prompt.id,
    category: prompt.category,
    promptText: prompt.text,
    seedStream: place.promptIndex
  })
  const result: DecodeOutcome = { tokens: [], provenance: '', stopReason: 'max-tokens' }
  const started = performance.now()
  const finish = (status: 'done' | 'cancelled' | 'failed', stopReason: StopReason | null, wallMs: number) =>
    store.finishPromptResult(resultId, {
      status,
      outputText: models.target.detokenize(result.tokens),
      outputTokens: result.tokens,
      provenance: result.provenance,
      stopReason,
      wallMs
    })
  try {
    await decode((event) => {
      if (event.type === 'step') store.addStep(resultId, event.record)
      onEvent(event)
    }, result)
  } catch (error) {
    finish('failed', null, performance.now() - started)
    throw error
  }
  const wallMs = performance.now() - started
  if (result.stopReason === 'cancelled') {
    finish('cancelled', result.stopReason, wallMs)
    return null
  }
  finish('done', result.stopReason, wallMs)
  store.addRepeat(resultId, { repeat: 0, runOrder: place.order, wallMs, outputCount: result.tokens.length, sameOutput: true })
  return { resultId, tokens: result.tokens }
}

/** A later repeat: decoded again and timed; only its wall time, length and agreement with repeat 0 are kept. */
async function laterRepeat(
  store: RunStore,
  first: { resultId: number; tokens: readonly number[] },
  place: CellPlace,
  decode: CellDecode,
  onEvent: (event: DecodeEvent) => void
): Promise<void> {
  const result: DecodeOutcome = { tokens: [], provenance: '', stopReason: 'max-tokens' }
  const started = performance.now()
  await decode(onEvent, result)
  const wallMs = performance.now() - started
  if (result.stopReason === 'cancelled') return
  const sameOutput = result.tokens.length === first.tokens.length && result.tokens.every((t, i) => t === first.tokens[i])
  store.addRepeat(first.resultId, { repeat: place.repeat, runOrder: place.order, wallMs, outputCount: result.tokens.length, sameOutput })
}
