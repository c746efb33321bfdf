/**
 * The thread plan of a loaded trio: per model and phase — one token at a time, or a batch of positions — the thread
 * count in effect and how it was chosen:
 * - `given`: the user's count (`--threads`, `--batch-threads`, the Models screen's fields);
 * - `measured` / `cached`: chosen by the calibration at this load, or at an earlier one (thread-calibration.ts);
 * - `rule`: calibration off, so the rule of llama-cpp-model.ts (targetThreadsFor, targetBatchThreadsFor).
 * The loader (experiments/models.ts) makes it as it sets the counts; a run records it once (RunConfig.threadPlan),
 * reports and the app describe it (api/thread-summary.ts), and nothing reads a count back from a model.
 */
import { z } from 'zod'
import { ModelThreadCalibration } from './thread-calibration'

export const ThreadSource = z.enum(['given', 'measured', 'cached', 'rule'])
export type ThreadSource = z.infer<typeof ThreadSource>

export const PhaseCount = z.object({ threads: z.number().int().positive().max(256), source: ThreadSource })
export type PhaseCount = z.infer<typeof PhaseCount>

export const ModelThreads = z.object({
  role: z.enum(['target', 'mid', 'draft']),
  /** The model file. */
  file: z.string(),
  /** Single-token evaluations (drafting, autoregressive decoding). */
  token: PhaseCount,
  /** Evaluations of several positions (verification, prefill, several sequences at once). */
  batch: PhaseCount
})
export type ModelThreads = z.infer<typeof ModelThreads>

export const ThreadPlan = z.object({
  /** Target first, then mid, then the drafts in load order. */
  models: z.array(ModelThreads).min(1),
  /** The calibrations behind `measured` / `cached` counts (timings per thread count); null when none ran. */
  calibration: z.array(ModelThreadCalibration).nullable()
})
export type ThreadPlan = z.infer<typeof ThreadPlan>

/** What the loader decided for one model: the counts set on it, and whether the user gave them. */
export interface ModelThreadDecision {
  role: ModelThreads['role']
  file: string
  threads: number
  batchThreads: number
  /** The user gave the single-token count (then also every other phase, unless `batchGiven`). */
  given: boolean
  /** The user gave the target's batch count. */
  batchGiven: boolean
  calibration: ModelThreadCalibration | null
}

/** The plan from the loader's decisions, one entry per model. */
export function threadPlanOf(decisions: readonly ModelThreadDecision[]): ThreadPlan {
  const chosenBy = (given: boolean, calibration: ModelThreadCalibration | null): ThreadSource =>
    given ? 'given' : calibration ? calibration.source : 'rule'
  const calibrations = decisions.flatMap((d) => (d.calibration ? [d.calibration] : []))
  return {
    models: decisions.map((d) => ({
      role: d.role,
      file: d.file,
      token: { threads: d.threads, source: chosenBy(d.given, d.calibration) },
      batch: { threads: d.batchThreads, source: chosenBy(d.batchGiven || d.given, d.calibration) }
    })),
    calibration: calibrations.length > 0 ? calibrations : null
  }
}

/** The target's entry (always first). */
export const targetThreads = (plan: ThreadPlan): ModelThreads => plan.models[0]!

/** The draft's entry, else the mid model's (the model that drafts single tokens); null for a target alone. */
export const draftingThreads = (plan: ThreadPlan): ModelThreads | null =>
  plan.models.find((m) => m.role === 'draft') ?? plan.models.find((m) => m.role === 'mid') ?? null

/**
 * The per-field thread counts every run config has carried (threads, targetThreads, batchThreads, draftThreads,
 * threadCalibration): kept for readers of older fields (`--json`, stored runs), written from the plan.
 */
export function threadFieldsOf(plan: ThreadPlan): {
  threads: number
  targetThreads: number
  batchThreads: number
  draftThreads: number | null
  threadCalibration: ModelThreadCalibration[] | null
} {
  const target = targetThreads(plan)
  return {
    threads: target.token.threads,
    targetThreads: target.token.threads,
    batchThreads: target.batch.threads,
    draftThreads: draftingThreads(plan)?.token.threads ?? null,
    threadCalibration: plan.calibration
  }
}
