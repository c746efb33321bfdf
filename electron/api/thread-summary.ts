/**
 * The threads a run or a loaded trio used, in words — one wording for the CLI's reports, `speclab models calibrate`
 * and the app (Models screen, run details). Pure (the renderer imports it through renderer-kit.ts).
 */
import { TIE_TOLERANCE, type ModelThreadCalibration, type ThreadTiming } from '../engine/model/thread-calibration'
import type { RunConfig } from './runs'
import { draftingThreads, targetThreads, type ThreadPlan } from '../engine/model/thread-plan'

type ThreadFields = Pick<RunConfig, 'threads' | 'targetThreads' | 'batchThreads' | 'draftThreads' | 'threadCalibration' | 'models'> & {
  threadPlan?: ThreadPlan | null
}

/** "target 2 per token, 2 per batch; draft 1 — measured at load (cached)": from the run's thread plan where it has one. */
export function describeRunThreads(config: ThreadFields): string {
  if (config.threadPlan) return describeThreadPlan(config.threadPlan)
  const hasDraft = Boolean(config.models.draft || config.models.mid || config.models.drafts?.length)
  const parts = [
    `target ${config.targetThreads ?? config.threads} per token, ${config.batchThreads ?? config.threads} per batch`,
    ...(hasDraft ? [`draft ${config.draftThreads ?? config.threads}`] : [])
  ]
  return `${parts.join('; ')} — ${howChosen(config.threadCalibration)}`
}

/** A thread plan in words: the counts per phase, and how they were chosen (given, measured, cached, by rule). */
export function describeThreadPlan(plan: ThreadPlan): string {
  const target = targetThreads(plan)
  const drafting = draftingThreads(plan)
  const parts = [`target ${target.token.threads} per token, ${target.batch.threads} per batch`, ...(drafting ? [`draft ${drafting.token.threads}`] : [])]
  const sources = new Set(plan.models.flatMap((m) => [m.token.source, m.batch.source]))
  let how: string
  if (plan.calibration) how = `${howChosen(plan.calibration)}${target.batch.source === 'given' ? "; the target's batch count given" : ''}`
  else if (sources.size === 1 && sources.has('given')) how = 'given (not measured)'
  else if (sources.has('given')) how = 'given, the rest by rule (not measured)'
  else how = 'by rule (not measured)'
  return `${parts.join('; ')} — ${how}`
}

/** How threads were chosen: measured now, at an earlier load (cached), or given / by rule (no calibration). */
export function howChosen(calibrations: readonly ModelThreadCalibration[] | null | undefined): string {
  if (!calibrations || calibrations.length === 0) return 'given or by rule (not measured)'
  const cached = calibrations.filter((c) => c.source === 'cached').length
  if (cached === calibrations.length) return 'measured at an earlier load (cached)'
  return cached === 0 ? 'measured at load' : 'measured at load (some cached)'
}

/** "1: 7.10 · 2: 8.42 ms" with the chosen count marked "*". */
export function timingsText(timings: readonly ThreadTiming[] | null, chosen: number): string {
  if (!timings || timings.length === 0) return '–'
  return `${timings.map((t) => `${t.threads}${t.threads === chosen ? '*' : ''}: ${t.ms.toFixed(2)}`).join(' · ')} ms`
}

/** What the timings of a calibration are and how the choice was made (under the table, CLI and app). */
export function calibrationNote(calibration: ModelThreadCalibration | undefined): string {
  if (!calibration) return ''
  return (
    `mean ms per evaluation at ${calibration.contextTokens} tokens of context, ${calibration.rounds} interleaved rounds after a ` +
    `warm-up; * = chosen: the fewest threads that no larger count beats by more than ${TIE_TOLERANCE * 100} % and two standard errors`
  )
}

/**
 * One model's calibration in words: "1 thread per token (7.1 ms; 2 threads: 8.4 ms), 2 per batch (14.0 ms; 1 thread:
 * 23.6 ms) — measured at load". The runner-up is the fastest count not chosen, so the choice reads as a comparison.
 */
export function calibrationInWords(calibration: ModelThreadCalibration): string {
  const phase = (timings: readonly ThreadTiming[] | null, chosen: number, what: string) => {
    const mine = timings?.find((t) => t.threads === chosen)
    const other = timings?.filter((t) => t.threads !== chosen).sort((a, b) => a.ms - b.ms)[0]
    const threads = (n: number) => `${n} thread${n === 1 ? '' : 's'}`
    if (!mine) return `${threads(chosen)} ${what}`
    return `${threads(chosen)} ${what} (${mine.ms.toFixed(1)} ms${other ? `; ${threads(other.threads)}: ${other.ms.toFixed(1)} ms` : ''})`
  }
  const single = phase(calibration.single, calibration.chosen.threads, 'per token')
  const batch = calibration.batch ? phase(calibration.batch, calibration.chosen.batchThreads, 'per batch') : 'its one-token count for batches'
  return `${single}, ${batch} — ${calibration.source === 'cached' ? 'measured at an earlier load (cached)' : 'measured at load'}`
}
