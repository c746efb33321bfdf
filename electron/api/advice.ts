/**
 * What an advice run (`speclab advise`) stores in its config beside the usual fields: the trace it predicted from,
 * the workload's profile, every prediction, and which candidate each measured arm is. The measurements themselves
 * are the run's own cells (prompt results and repeats, one `method` label per arm), folded by the report like any
 * run's — not copied here — so `show`, `diff` and exports read them the usual way, and the recommendation is
 * recomputed from them by the pure rule (engine/replay/recommend.ts).
 */
import { z } from 'zod'
import { ParamValue } from './methods'

const Threads = z.object({ threads: z.number().int().positive(), batchThreads: z.number().int().positive(), draftThreads: z.number().int().positive() })

export const AdviceCandidate = z.object({
  method: z.string(),
  gamma: z.number().int(),
  params: z.record(z.string(), ParamValue),
  /** The draft's name (a key of `drafts`); null for ar and the lookups. */
  draft: z.string().nullable()
})
export type AdviceCandidate = z.infer<typeof AdviceCandidate>

export const AdvicePrediction = AdviceCandidate.extend({
  /** The thread plan that priced it (`--try-threads`); null: the threads as loaded. */
  plan: z.string().nullable(),
  tokensPerSecond: z.number().nullable(),
  speedup: z.number().nullable(),
  /** Why the trace could not replay it; null when it could. */
  error: z.string().nullable()
})
export type AdvicePrediction = z.infer<typeof AdvicePrediction>

export const AdviceArm = AdviceCandidate.extend({
  /** The `method` its cells are stored under. */
  label: z.string(),
  threads: Threads,
  predicted: z.object({ tokensPerSecond: z.number(), speedup: z.number() }).nullable()
})
export type AdviceArm = z.infer<typeof AdviceArm>

export const AdviceRecord = z.object({
  trace: z.object({ prompts: z.number().int(), tokens: z.number().int(), mode: z.enum(['replayed', 'expected']) }),
  /** Draft name → file. */
  drafts: z.record(z.string(), z.string()),
  profile: z.object({
    targetMs: z.array(z.number()),
    verifyCost: z.array(z.number()),
    drafts: z.record(z.string(), z.object({ acceptance: z.array(z.number().nullable()), acceptanceFrom: z.enum(['trace', 'rounds']).optional(), msPerToken: z.number().nullable(), relativeCost: z.number().nullable() }))
  }),
  /** ar and every candidate, fastest predicted first. */
  predictions: z.array(AdvicePrediction),
  arms: z.array(AdviceArm)
})
export type AdviceRecord = z.infer<typeof AdviceRecord>
