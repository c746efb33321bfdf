/**
 * The soak's targets as one verdict: after the warm-up the engine's resident memory and open descriptors flat within
 * the tolerance (flatness.ts), every request answered, every job the workload started ended (a chat generation with
 * chat:done, a Workbench run finished, a download in a final state) the way it was meant to, no run left `running`
 * in the database, and the engine never restarted. Each miss is one line; none means PASS.
 */
import type { RequestCounts } from './counted-client'
import type { Flatness } from './flatness'

export interface JobCounts {
  started: number
  /** Ended the way the workload meant (a reply, a cancel that cancelled, a bad server's download failed...). */
  endedAsExpected: number
  endedOtherwise: number
  /** Still not ended when the soak gave up waiting. */
  neverEnded: number
}

export interface SoakOutcome {
  tolerancePercent: number
  engineRss: Flatness
  engineFds: Flatness
  requests: RequestCounts
  jobs: Record<string, JobCounts>
  /** Rows with status 'running' in runs, prompt_results and suite_runs once the soak is over. */
  runsLeftRunning: number
  engineRestarts: number
}

const describe = (name: string, f: Flatness, tolerance: number) =>
  f.samples === 0
    ? `${name}: no samples after the warm-up`
    : `${name} changed ${f.changePercent.toFixed(1)} % after the warm-up (median of the first third ${f.startMedian} → last third ${f.endMedian}; limit ±${tolerance} %, ${f.samples} samples)`

export function soakFailures(outcome: SoakOutcome): string[] {
  const failures: string[] = []
  const tolerance = outcome.tolerancePercent
  if (!outcome.engineRss.flat) failures.push(describe('engine resident memory', outcome.engineRss, tolerance))
  if (!outcome.engineFds.flat) failures.push(describe('engine open descriptors', outcome.engineFds, tolerance))
  const { unanswered, failedUnexpectedly } = outcome.requests
  if (unanswered > 0) failures.push(`${unanswered} request(s) never answered`)
  if (failedUnexpectedly > 0) failures.push(`${failedUnexpectedly} request(s) failed unexpectedly`)
  for (const [name, jobs] of Object.entries(outcome.jobs)) {
    if (jobs.neverEnded > 0) failures.push(`${jobs.neverEnded} ${name} never ended`)
    if (jobs.endedOtherwise > 0) failures.push(`${jobs.endedOtherwise} ${name} ended otherwise than meant`)
  }
  if (outcome.runsLeftRunning > 0) failures.push(`${outcome.runsLeftRunning} run row(s) left 'running' in the database`)
  if (outcome.engineRestarts > 0) failures.push(`the engine process restarted ${outcome.engineRestarts} time(s)`)
  return failures
}
