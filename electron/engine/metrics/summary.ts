/**
 * What the fold (fold.ts) reports per method of a run — the CLI contract's `--json` fields (DESIGN.md; keep them,
 * add, never rename). The api contract re-exports this schema, so the engine needs nothing from api/.
 */
import { z } from 'zod'

/** Per-method aggregate — the `methods[]` entries of `speclab run --json` (DESIGN contract fields first). */
export const MethodSummary = z.object({
  method: z.string(),
  prompts: z.number().int(),
  outputTokens: z.number().int(),
  wallMs: z.number(),
  tokensPerSecond: z.number(),
  /** tokens/s ÷ `ar` tokens/s over the same prompts in the same run; null without an `ar` baseline. */
  speedup: z.number().nullable(),
  sigma: z.number().nullable(),
  eta: z.number().nullable(),
  acceptanceRate: z.number().nullable(),
  meanAcceptedLength: z.number().nullable(),
  targetCalls: z.number().int(),
  draftTokens: z.number().int(),
  acceptedTokens: z.number().int(),
  /** γ per verification round, per prompt. */
  gammaTrajectory: z.array(z.array(z.number())),
  outputs: z.array(z.string()),
  // Beyond the contract: the time split the benchmark and the UI need.
  draftMs: z.number(),
  verifyMs: z.number(),
  overheadMs: z.number(),
  steps: z.number().int(),
  overheadPerStepMs: z.number().nullable()
})
export type MethodSummary = z.infer<typeof MethodSummary>
