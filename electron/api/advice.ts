/**
 * What an advice run (`speclab advise`) stores in its config beside the usual fields: the trace it predicted from,
 * the workload's profile, every prediction, and which candidate each measured arm is. The measurements themselves
 * are the run's own cells (prompt results and repeats, one `method` label per arm), folded by the report like any
 * run's — not copied here — so `show`, `diff` and exports read them the usual way, and the recommendation is
 * recomputed from them by the pure rule (engine/replay/recommend.ts).
 */
import { z } from 'zod'
import type { ParamValue as ParamValueType } from '../engine/methods/param-spec'
import type { DeployThreads } from '../engine/replay/deployment'
import type { WorkloadProfile } from '../engine/replay/profile'
import type { Interval } from '../engine/replay/recommend'
import { ParamValue } from './methods'
import type { RunStatus } from './fields'

const Threads = z.object({ threads: z.number().int().positive(), batchThreads: z.number().int().positive(), draftThreads: z.number().int().positive() })

/**
 * Which cost curve priced a prediction: SpecLab's own (every grid candidate), or llama-server's own costs measured
 * on the same trio at the arm's threads (a `llama-server:*` arm, where they were measured: experiments/advise-server-pricing.ts).
 */
export const PricedWith = z.enum(['speclab', 'llama-server'])
export type PricedWith = z.infer<typeof PricedWith>

/** llama-server's cost table at one arm's threads, as the advice priced with it (measured now or from the cache). */
export const ServerCosts = z.object({
  threads: Threads,
  /** c_T(k), k = 1 … K, ms. */
  targetMs: z.array(z.number()),
  /** ms per drafted token, by draft name. */
  draftMs: z.record(z.string(), z.number()),
  /**
   * By draft name, where one real request scaled that draft's costs (advise-server-pricing.ts serverCalibration):
   * s, by which `draftMs` and the draft's c_T(k ≥ 2) were multiplied. Absent in advices stored before it existed.
   */
  roundScale: z.record(z.string(), z.number()).optional(),
  source: z.enum(['measured', 'cached'])
})
export type ServerCosts = z.infer<typeof ServerCosts>

/** What the advice says about llama-server's own costs: the tables, and one line when they could not be measured. */
export interface ServerPricingRecord {
  costs: ServerCosts[]
  note: string | null
}

export const AdviceCandidate = z.object({
  method: z.string(),
  gamma: z.number().int(),
  params: z.record(z.string(), ParamValue),
  /** The draft's name (a key of `drafts`); null for ar and the lookups. */
  draft: z.string().nullable(),
  /** The mid model's name (a key of `drafts`) of a three-model method (`--mid`); absent or null for the others. */
  mid: z.string().nullable().optional()
})
export type AdviceCandidate = z.infer<typeof AdviceCandidate>

/** A candidate's drafting models as the advice tables show them: "D", "D → M" for a hierarchy, null without a draft. */
export const draftChain = (c: { draft: string | null; mid?: string | null }): string | null => (c.mid ? `${c.draft} → ${c.mid}` : c.draft)

export const AdvicePrediction = AdviceCandidate.extend({
  /** The thread plan that priced it (`--try-threads`); null: the threads as loaded. */
  plan: z.string().nullable(),
  tokensPerSecond: z.number().nullable(),
  speedup: z.number().nullable(),
  /** The curve that priced it; absent in runs stored before it was recorded (then SpecLab's). */
  pricedWith: PricedWith.optional(),
  /** Why the trace could not replay it; null when it could. */
  error: z.string().nullable()
})
export type AdvicePrediction = z.infer<typeof AdvicePrediction>

export const AdviceArm = AdviceCandidate.extend({
  /** The `method` its cells are stored under. */
  label: z.string(),
  threads: Threads,
  predicted: z.object({ tokensPerSecond: z.number(), speedup: z.number() }).nullable(),
  /** The curve that priced `predicted` (null without one); absent in runs stored before it was recorded (then SpecLab's). */
  pricedWith: PricedWith.nullable().optional()
})
export type AdviceArm = z.infer<typeof AdviceArm>

export const AdviceRecord = z.object({
  trace: z.object({ prompts: z.number().int(), tokens: z.number().int(), mode: z.enum(['replayed', 'expected']) }),
  /** Draft name → file. */
  drafts: z.record(z.string(), z.string()),
  profile: z.object({
    targetMs: z.array(z.number()),
    verifyCost: z.array(z.number()),
    /** What each decode paid outside its rounds and its prompt's processing, ms (absent: not measured). */
    decodeOutsideMs: z.number().optional(),
    drafts: z.record(z.string(), z.object({ acceptance: z.array(z.number().nullable()), acceptanceFrom: z.enum(['trace', 'rounds']).optional(), msPerToken: z.number().nullable(), relativeCost: z.number().nullable() }))
  }),
  /** ar and every candidate, fastest predicted first. */
  predictions: z.array(AdvicePrediction),
  arms: z.array(AdviceArm),
  /** llama-server's own cost tables that priced its arms (absent: no llama-server arm, or none measured). */
  llamaServerCosts: z.array(ServerCosts).optional(),
  /** Why llama-server's arms were priced with SpecLab's curve instead (its costs could not be measured); null: they were not. */
  llamaServerNote: z.string().nullable().optional()
})
export type AdviceRecord = z.infer<typeof AdviceRecord>

// ── What `speclab advise` reports and the Advisor screen shows (experiments/advice-result.ts builds them) ──

export interface Measurement {
  tokensPerSecond: Interval | null
  speedup: Interval | null
}

export interface CandidateResult {
  /** Its label in the verification run (measured arms only). */
  label: string | null
  method: string
  params: Record<string, ParamValueType>
  gamma: number
  draft: string | null
  /** The mid model of a three-model method; null for the others. */
  mid: string | null
  plan: string | null
  predicted: { tokensPerSecond: number; speedup: number } | null
  /** The curve that priced `predicted`; null without a prediction. */
  pricedWith: PricedWith | null
  measured?: Measurement
  error: string | null
}

export interface Recommendation {
  /** false: no configuration's interval lies above 1.0, so the advice is ar (no speculation). */
  speculate: boolean
  method: string
  params: Record<string, ParamValueType>
  gamma: number
  draft: string | null
  draftFile: string | null
  /** The mid model of a three-model method, and its file; null for the others. */
  mid: string | null
  midFile: string | null
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

/** An advice as a stored run holds it: the run's report (its arms' cells) and config.advice (api/advice.ts). */
export interface StoredAdvice {
  runId: number
  status: RunStatus
  seed: number
  prompts: number
  tokens: number
  mode: 'replayed' | 'expected'
  /** The workload: a built-in set's id or a prompt file, and the limit. */
  workload: { dataset: string | null; file: string | null; limit: number | null }
  targetFile: string
  /** Draft name → file. */
  draftFiles: Record<string, string>
  repeats: number
  recommendation: Recommendation | null
  candidates: CandidateResult[]
  profile: WorkloadProfile
  /** llama-server's own cost tables that priced its arms; [] when none did. */
  llamaServerCosts: ServerCosts[]
  /** Why llama-server's arms were priced with SpecLab's curve (its costs could not be measured); null otherwise. */
  llamaServerNote: string | null
}
