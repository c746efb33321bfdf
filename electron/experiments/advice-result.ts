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
import type { CandidateResult, Measurement, Recommendation, ServerCosts, ServerPricingRecord, StoredAdvice } from '../api/advice'

// The shapes the app reads live in the api (api/advice.ts), so the contract never imports experiments/.
export type { CandidateResult, Measurement, Recommendation, StoredAdvice }

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
  /** llama-server's own cost tables that priced its arms (experiments/advise-server-pricing.ts); [] when none were. */
  llamaServerCosts: ServerCosts[]
  /** Why llama-server's arms were priced with SpecLab's curve (its costs could not be measured); null otherwise. */
  llamaServerNote: string | null
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
  /** llama-server's costs, where its arms were priced with them or could not be. */
  server?: ServerPricingRecord
}

const plain = (c: Candidate) => ({ method: c.method, params: { ...c.params }, gamma: c.gamma, draft: c.draft, mid: c.mid ?? null })

function candidateResults(input: ResultInput): CandidateResult[] {
  const armOf = new Map(input.arms.map((a) => [a.candidate, a]))
  const measured = (label: string | null) => (label !== null && input.report ? measurementOf(input.report, label) : undefined)
  const rows: CandidateResult[] = input.advice.verdicts.map((v) => {
    const label = v.candidate.method === 'ar' ? (input.arms.length > 0 ? 'ar' : null) : (armOf.get(v.candidate)?.label ?? null)
    const m = measured(label)
    const predicted = v.prediction ? { tokensPerSecond: v.prediction.tokensPerSecond, speedup: v.prediction.speedup } : null
    return { label, ...plain(v.candidate), plan: v.plan ?? null, predicted, pricedWith: predicted ? 'speclab' : null, ...(m ? { measured: m } : {}), error: v.error }
  })
  // Arms that are no candidate of the grid (llama-server's default) are listed after it.
  const extra = input.arms.filter((a) => a.candidate.method !== 'ar' && !input.advice.verdicts.some((v) => v.candidate === a.candidate))
  for (const a of extra) {
    const m = measured(a.label)
    const predicted = a.predicted ? { tokensPerSecond: a.predicted.tokensPerSecond, speedup: a.predicted.speedup } : null
    rows.push({ label: a.label, ...plain(a.candidate), plan: null, predicted, pricedWith: a.predicted?.pricedWith ?? null, ...(m ? { measured: m } : {}), error: null })
  }
  return rows
}

/** What the recommendation reads of an arm: its stored label, its configuration and its threads. */
type ArmOfRun = Pick<VerifyArm, 'label' | 'candidate' | 'threads'>

function recommendationOf(input: Pick<ResultInput, 'report' | 'profile' | 'targetFile' | 'draftFiles'> & { arms: readonly ArmOfRun[] }): Recommendation | null {
  const report = input.report
  if (!report || input.arms.length === 0) return null
  const measured = input.arms.map((arm): MeasuredConfiguration & { arm: ArmOfRun } => ({ arm, label: arm.label, method: arm.candidate.method, ...(measurementOf(report, arm.label) ?? { tokensPerSecond: null, speedup: null }) }))
  const verdict = recommend(measured, input.profile)
  const chosen = verdict.pick ?? measured.find((m) => m.method === 'ar')!
  const c = chosen.arm.candidate
  const draftFile = c.draft === null ? null : (input.draftFiles[c.draft] ?? null)
  const midFile = c.mid ? (input.draftFiles[c.mid] ?? null) : null
  const configuration: Configuration = { method: c.method, gamma: c.gamma, params: c.params, draftFile, midFile }
  const server = llamaServerCommand(configuration, input.targetFile, chosen.arm.threads)
  return {
    speculate: verdict.pick !== null,
    ...plain(c),
    draftFile,
    midFile,
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
    ...(advice.plans ? { plans: advice.plans } : {}),
    llamaServerCosts: input.server?.costs ?? [],
    llamaServerNote: input.server?.note ?? null
  }
}

/** The same configuration (ar is ar whatever its γ). */
const sameConfiguration = (a: Omit<Candidate, 'params'> & { params: Record<string, unknown> }, b: typeof a) =>
  a.method === b.method && (a.method === 'ar' || (a.gamma === b.gamma && a.draft === b.draft && (a.mid ?? null) === (b.mid ?? null) && JSON.stringify(a.params) === JSON.stringify(b.params)))

/**
 * The advice of a stored run (suite 'advise'), as `speclab advise` printed it when it ran: every prediction beside
 * its arm's measurement, and the recommendation recomputed from the run's cells by the same rule. Null for a run
 * that holds no advice.
 */
export function storedAdvice(report: RunReport): StoredAdvice | null {
  const record = report.config.advice
  if (!record) return null
  const arms: ArmOfRun[] = record.arms.map((a) => ({ label: a.label, candidate: { method: a.method, gamma: a.gamma, params: a.params, draft: a.draft, mid: a.mid ?? null }, threads: a.threads }))
  const measured = (label: string) => measurementOf(report, label)
  const candidates: CandidateResult[] = record.predictions.map((p) => {
    const arm = record.arms.find((a) => sameConfiguration(a, p))
    const m = arm ? measured(arm.label) : undefined
    const predicted = p.tokensPerSecond !== null && p.speedup !== null ? { tokensPerSecond: p.tokensPerSecond, speedup: p.speedup } : null
    const pricedWith = predicted ? (p.pricedWith ?? 'speclab') : null
    return { label: arm?.label ?? null, method: p.method, params: { ...p.params }, gamma: p.gamma, draft: p.draft, mid: p.mid ?? null, plan: p.plan, predicted, pricedWith, ...(m ? { measured: m } : {}), error: p.error }
  })
  // Arms that are no candidate of the grid (llama-server's default) are listed after it, as advise lists them.
  for (const a of record.arms.filter((a) => !record.predictions.some((p) => sameConfiguration(a, p)))) {
    const m = measured(a.label)
    const pricedWith = a.predicted ? (a.pricedWith ?? 'speclab') : null
    candidates.push({ label: a.label, method: a.method, params: { ...a.params }, gamma: a.gamma, draft: a.draft, mid: a.mid ?? null, plan: null, predicted: a.predicted, pricedWith, ...(m ? { measured: m } : {}), error: null })
  }
  const config = report.config
  return {
    runId: report.runId,
    status: report.status,
    seed: config.seed,
    prompts: record.trace.prompts,
    tokens: record.trace.tokens,
    mode: record.trace.mode,
    workload: { dataset: config.prompts.dataset ?? null, file: config.prompts.file ?? null, limit: config.prompts.limit ?? null },
    targetFile: config.models.target,
    draftFiles: { ...record.drafts },
    repeats: config.repeats,
    recommendation: recommendationOf({ report, arms, profile: record.profile, targetFile: config.models.target, draftFiles: record.drafts }),
    candidates,
    profile: record.profile,
    llamaServerCosts: record.llamaServerCosts ?? [],
    llamaServerNote: record.llamaServerNote ?? null
  }
}
