/**
 * What the what-if of a stored run reports (engine/replay/what-if.ts computes it): the schemas alone, so the run
 * report's contract (api/runs.ts) and the renderer read them without the method catalog behind the computation.
 */
import { z } from 'zod'

export const WhatIfPrediction = z.object({
  /** What the row is, in words: "sd γ = 3", "svip h = 0.3", "pld cap 4", "sd-pmin as run". */
  label: z.string(),
  /** fixed: sd at γ; svip: SVIP's threshold h on the recorded entropies; cap: a lookup's cap; as-run: the source's own rounds. */
  kind: z.enum(['fixed', 'svip', 'cap', 'as-run']),
  /** The catalog method that runs it, and what to pass (--gamma, --set key=value). */
  method: z.string(),
  gamma: z.number().int().nullable(),
  params: z.record(z.string(), z.union([z.number(), z.boolean()])),
  /** γ, h or the cap: the row's one varied value (null for as-run). */
  value: z.number().nullable(),
  /** Expected draft tokens proposed per round, output tokens per round. */
  proposedPerRound: z.number(),
  tokensPerRound: z.number(),
  tokensPerSecond: z.number(),
  /** Over the run's ar; null without ar. */
  speedup: z.number().nullable(),
  /** The run's own configuration (its measured point is the source's). */
  own: z.boolean(),
  supported: z.boolean(),
  /** Why the prediction leaves the run's support (null when it does not). */
  reason: z.string().nullable()
})
export type WhatIfPrediction = z.infer<typeof WhatIfPrediction>

export const WhatIfSource = z.object({
  method: z.string(),
  /** draft-model: a sequential chain method; lookup: a model-free drafter; parallel: PEARL or a `parallel` option (what-if-parallel.ts). */
  drafter: z.enum(['draft-model', 'lookup', 'parallel']),
  rounds: z.number().int(),
  maxProposed: z.number().int(),
  /** α_i for i = 1 … maxProposed (null where no round reached i), and α̂ pooled. */
  acceptance: z.array(z.number().nullable()),
  alpha: z.number().nullable(),
  /** ms per drafted token (0 for a lookup), per round outside verification and drafting. */
  draftMsPerToken: z.number(),
  roundOverheadMs: z.number(),
  /** λ: the source's wall time ÷ its recorded rounds priced with these costs (what turns round costs into wall time). */
  timeScale: z.number(),
  /** What the run measured for this method: Σ tokens ÷ Σ each prompt's median wall time, and that over ar's. */
  measured: z.object({ tokensPerSecond: z.number(), tokensPerRound: z.number(), speedup: z.number().nullable() }),
  /** A parallel source's c‖_T(n): its verifications of n positions, timed with the draft running beside them. */
  verifyBeside: z.array(z.object({ k: z.number().int(), ms: z.number(), rounds: z.number().int() })).optional(),
  predictions: z.array(WhatIfPrediction),
  notes: z.array(z.string())
})
export type WhatIfSource = z.infer<typeof WhatIfSource>

export const WhatIfReport = z.object({
  /** ar's tokens/s in this run (the speedups' denominator); null without ar. */
  arTokensPerSecond: z.number().nullable(),
  /** c_T(k) as measured from the run's rounds (after the non-decreasing fit), with the rounds behind each. */
  targetCost: z.array(z.object({ k: z.number().int(), ms: z.number(), rounds: z.number().int() })),
  sources: z.array(WhatIfSource),
  notes: z.array(z.string())
})
export type WhatIfReport = z.infer<typeof WhatIfReport>
