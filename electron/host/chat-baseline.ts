/**
 * A chat reply's speedup over `ar`, measured on request: `ar` and the reply's own method decode the reply's exact
 * prompt tokens with its settings and seed, interleaved over `repeats` (the runner's schedule: untimed warm-up,
 * A B, A B, …), and the reply's tokens/s is paired with ar's of the same repeat. One prompt, so the interval is
 * over repeats only: it says how steady this machine is, not how the method does on other prompts.
 */
import type { ChatBaseline, ChatMessage } from '../api/chat'
import type { DecoderModels } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { DEFAULT_REPEATS } from '../engine/methods/limits'
import { prepare } from '../engine/methods/prepare'
import { cellsOf, timingCells, type PromptOutcome, type RepeatTiming } from '../engine/metrics/fold'
import { medianInterval } from '../engine/stats/bootstrap'
import { runInterleaved } from '../experiments/runner'
import { warpOfSettings } from '../experiments/run-request'

export async function measureBaseline(
  models: DecoderModels,
  reply: ChatMessage & { settings: NonNullable<ChatMessage['settings']> },
  promptTokens: readonly number[],
  repeats = DEFAULT_REPEATS
): Promise<ChatBaseline> {
  const { settings } = reply
  const method = prepare(settings.method, { gamma: settings.gamma, params: settings.params })
  const ar = prepare('ar', { gamma: settings.gamma, params: {} })
  const timed = new Map<string, RepeatTiming[]>([
    ['ar', []],
    ['method', []]
  ])
  await runInterleaved(
    [
      { label: 'ar', method: ar },
      { label: 'method', method }
    ],
    {
      models,
      promptTokens: [promptTokens],
      maxTokens: settings.maxTokens,
      warp: warpOfSettings(settings),
      seed: settings.seed ?? 0,
      repeats
    },
    {
      cell: async ({ label }, { repeat }, decode) => {
        const started = performance.now()
        const outcome = await decode(() => {}, { tokens: [], provenance: '', stopReason: 'max-tokens' })
        timed.get(label)!.push({ repeat, wallMs: performance.now() - started, outputTokens: outcome.tokens.length })
      }
    }
  )
  // The fold's own pairing (metrics/fold.ts): each repeat's tokens/s over ar's of the same repeat.
  const outcome = (label: string): PromptOutcome => ({ promptIndex: 0, outputText: '', outputTokens: 0, wallMs: 0, steps: [], repeats: timed.get(label)! })
  const arCells = cellsOf(timingCells([outcome('ar')], null), 'tokensPerSecond')
  const methodTimings = timingCells([outcome('method')], [outcome('ar')])
  const methodCells = cellsOf(methodTimings, 'tokensPerSecond')
  const speedups = cellsOf(methodTimings, 'speedup')
  if (speedups.length === 0) throw new UserInputError('the baseline produced no tokens to time (the prompt ends the generation at once)')
  return {
    repeats,
    arTokensPerSecond: medianInterval(arCells)!,
    methodTokensPerSecond: medianInterval(methodCells)!,
    speedup: medianInterval(speedups)!,
    measuredAt: new Date().toISOString()
  }
}
