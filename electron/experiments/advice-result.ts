/**
 * What `speclab advise` reports (its --json object, its table, the file --save writes): every candidate's prediction
 * beside its measurement, the workload's profile, and the recommendation — the pure rule (engine/replay/recommend.ts)
 * applied to the verification run's report, with the commands that deploy the pick (engine/replay/deployment.ts).
 */
import type { RunReport } from '../api/runs'
import type { Verdict } from '../engine/replay/advise'
import { lmStudioChoice, llamaServerCommand, MD_ALONE_NOTE, speclabCommand, type Configuration, type DeployThreads } from '../engine/replay/deployment'
import type { WorkloadProfile } from '../engine/replay/profile'
import { recommend, type Interval, type MeasuredConfiguration } from '../engine/replay/recommend'
import type { Candidate } from '../engine/replay/replay'
import type { ParamValue } from '../engine/methods/param-spec'
import type { Advice } from './advise'
import type { VerifyArm } from './advise-verify'

export interface Measurement {
  tokensPerSecond: Interval | null
  speedup: Interval | null
}

export interface CandidateResult {
  /** Its label in the verification run (measured arms only). */
  label: string | null
  method: string
  params: Record<string, ParamValue>
  gamma: number
  draft: string | null
  plan: string | null
  predicted: { tokensPerSecond: number; speedup: number } | null
  measured?: Measurement
  error: string | null
}

export interface Recommendation {
  /** false: no configuration's interval lies above 1.0, so the advice is ar (no speculation). */
  speculate: boolean
  method: string
  params: Record<string, ParamValue>
  gamma: number
  draft: string | null
  draftFile: string | null
  threads: DeployThreads
  speedup: Interval | null
  tokensPerSecond: Interval | null
  speclabCommand: string
  llamaServerCommand: string | null
  /** The `llama-server:*` method the command is; null with llamaServerCommand. */
  llamaServerMethod: string | null
  /** Why there is no llama-server command, or what differs from SpecLab's method. */
  llamaServerNote: string | null
  lmStudio: string | null
  reason: string
  note: string
}

export interface AdviceResult {
  seed: number
  prompts: number
  tokens: number
  mode: 'replayed' | 'expected'
  /** The stored verification run; null when nothing was measured (--verify 0). */
  runId: number | null
  recommendation: Recommendation | null
  candidates: CandidateResult[]
  profile: WorkloadProfile
  verification: { arms: number; repeats: number; estimatedSeconds: number; budgetSeconds: number | null } | null
  /** The ranking and costs as the replay core gives them (engine/replay/advise.ts). */
  verdicts: Verdict[]
  costs: Advice['costs']
  plans?: Advice['plans']
}

const interval = (i: { median: number; low: number; high: number } | null | undefined): Interval | null => (i ? { median: i.median, low: i.low, high: i.high } : null)

/** The report's interval summaries of one arm. */
export function measurementOf(report: RunReport, label: string): Measurement | undefined {
  const summary = report.methods.find((m) => m.method === label)
  if (!summary) return undefined
  const tokensPerSecond = interval(summary.tokensPerSecondInterval) ?? { median: summary.tokensPerSecond, low: summary.tokensPerSecond, high: summary.tokensPerSecond }
  return { tokensPerSecond, speedup: interval(summary.speedupInterval) }
}

export interface ResultInput {
  seed: number
  advice: Advice
  profile: WorkloadProfile
  arms: readonly VerifyArm[]
  report: RunReport | null
  /** Model files: the target's, and each draft's by name. */
  targetFile: string
  draftFiles: Readonly<Record<string, string>>
  verification: AdviceResult['verification']
}

const plain = (c: Candidate) => ({ method: c.method, params: { ...c.params }, gamma: c.gamma, draft: c.draft })

function candidateResults(input: ResultInput): CandidateResult[] {
  const armOf = new Map(input.arms.map((a) => [a.candidate, a]))
  const measured = (label: string | null) => (label !== null && input.report ? measurementOf(input.report, label) : undefined)
  const rows: CandidateResult[] = input.advice.verdicts.map((v) => {
    const label = v.candidate.method === 'ar' ? (input.arms.length > 0 ? 'ar' : null) : (armOf.get(v.candidate)?.label ?? null)
    const m = measured(label)
    const predicted = v.prediction ? { tokensPerSecond: v.prediction.tokensPerSecond, speedup: v.prediction.speedup } : null
    return { label, ...plain(v.candidate), plan: v.plan ?? null, predicted, ...(m ? { measured: m } : {}), error: v.error }
  })
  // Arms that are no candidate of the grid (llama-server's default) are listed after it.
  const extra = input.arms.filter((a) => a.candidate.method !== 'ar' && !input.advice.verdicts.some((v) => v.candidate === a.candidate))
  for (const a of extra) {
    const m = measured(a.label)
    rows.push({ label: a.label, ...plain(a.candidate), plan: null, predicted: a.predicted ? { tokensPerSecond: a.predicted.tokensPerSecond, speedup: a.predicted.speedup } : null, ...(m ? { measured: m } : {}), error: null })
  }
  return rows
}

function recommendationOf(input: ResultInput): Recommendation | null {
  const report = input.report
  if (!report || input.arms.length === 0) return null
  const measured = input.arms.map((arm): MeasuredConfiguration & { arm: VerifyArm } => ({ arm, label: arm.label, method: arm.candidate.method, ...(measurementOf(report, arm.label) ?? { tokensPerSecond: null, speedup: null }) }))
  const verdict = recommend(measured, input.profile)
  const chosen = verdict.pick ?? measured.find((m) => m.method === 'ar')!
  const c = chosen.arm.candidate
  const draftFile = c.draft === null ? null : (input.draftFiles[c.draft] ?? null)
  const configuration: Configuration = { method: c.method, gamma: c.gamma, params: c.params, draftFile }
  const server = llamaServerCommand(configuration, input.targetFile, chosen.arm.threads)
  return {
    speculate: verdict.pick !== null,
    ...plain(c),
    draftFile,
    threads: chosen.arm.threads,
    speedup: chosen.speedup,
    tokensPerSecond: chosen.tokensPerSecond,
    speclabCommand: speclabCommand(configuration, input.targetFile),
    llamaServerCommand: server.command,
    llamaServerMethod: server.method,
    llamaServerNote: server.reason,
    lmStudio: lmStudioChoice(configuration),
    reason: verdict.reason,
    note: MD_ALONE_NOTE
  }
}

export function adviceResult(input: ResultInput): AdviceResult {
  const { advice } = input
  return {
    seed: input.seed,
    prompts: advice.trace.prompts.length,
    tokens: advice.trace.prompts.reduce((n, p) => n + p.tokens.length, 0),
    mode: advice.verdicts[0]?.mode ?? 'replayed',
    runId: input.report?.runId ?? null,
    recommendation: recommendationOf(input),
    candidates: candidateResults(input),
    profile: input.profile,
    verification: input.verification,
    verdicts: advice.verdicts,
    costs: advice.costs,
    ...(advice.plans ? { plans: advice.plans } : {})
  }
}
