/**
 * The best speedup of a stored run, as `speclab runs` and the app's Runs list show it beside each run: for every
 * method but `ar`, the median over (prompt, repeat) of its tokens/s ÷ ar's on the same prompt and repeat — the run's
 * one speedup (engine/metrics/fold.ts), without the interval a list would have to bootstrap for every run.
 */
import { cellsOf, timingCells, type PromptOutcome } from '../engine/metrics/fold'
import { median } from '../engine/stats/bootstrap'

export interface BestSpeedup {
  method: string
  speedup: number
}

/** What `runs` prints of one result row (structurally the store's PromptResultRow). */
export interface ResultTiming {
  id?: number
  method: string
  status: string
  promptIndex?: number
  outputCount: number
  wallMs: number | null
}

/** Each timed repeat of a result (structurally the store's RepeatRow); absent: the result's one wall time. */
export type RepeatTimings = ReadonlyMap<number, readonly { repeat: number; wallMs: number; outputCount: number }[]>

/**
 * The best speedup over `ar` in a run: for every other method, the median over (prompt, repeat) of its tokens/s ÷ ar's
 * on the same prompt and repeat (what `show` reports as the speedup's median, without the interval, which `runs`
 * would have to bootstrap for every listed run); null without a finished ar or without another method.
 */
export function bestSpeedup(results: readonly ResultTiming[], repeats: RepeatTimings = new Map()): BestSpeedup | null {
  // Each finished result as the fold sees a prompt, so the pairing with ar is the fold's own (metrics/fold.ts).
  const outcomes = new Map<string, PromptOutcome[]>()
  for (const r of results) {
    if (r.status !== 'done') continue
    const timed = (r.id !== undefined ? repeats.get(r.id) : undefined) ?? [{ repeat: 0, wallMs: r.wallMs ?? 0, outputCount: r.outputCount }]
    const list = outcomes.get(r.method) ?? []
    list.push({
      promptIndex: r.promptIndex,
      outputText: '',
      outputTokens: r.outputCount,
      wallMs: r.wallMs ?? 0,
      steps: [],
      repeats: timed.map((t) => ({ repeat: t.repeat, wallMs: t.wallMs, outputTokens: t.outputCount }))
    })
    outcomes.set(r.method, list)
  }
  const ar = outcomes.get('ar')
  if (!ar) return null
  let best: BestSpeedup | null = null
  for (const [method, prompts] of outcomes) {
    if (method === 'ar') continue
    const ratios = cellsOf(timingCells(prompts, ar), 'speedup').map((c) => c.value)
    if (ratios.length === 0) continue
    const speedup = median(ratios)
    if (best === null || speedup > best.speedup) best = { method, speedup }
  }
  return best
}

