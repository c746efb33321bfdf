/**
 * What the fold (fold.ts) reports per method of a run — the CLI contract's `--json` fields (DESIGN.md; keep them,
 * add, never rename). The api (api/runs.ts) re-exports this schema, so the engine needs nothing from api/.
 */
import { z } from 'zod'

/** A median with its 95 % bootstrap interval (engine/stats/bootstrap.ts). */
export const IntervalSummary = z.object({
  median: z.number(),
  low: z.number(),
  high: z.number(),
  cells: z.number().int(),
  prompts: z.number().int(),
  repeats: z.number().int()
})
export type IntervalSummary = z.infer<typeof IntervalSummary>

/** Acceptance at one draft position (metrics/positions.ts). */
export const PositionSummary = z.object({
  position: z.number().int(),
  proposed: z.number().int(),
  reached: z.number().int(),
  accepted: z.number().int(),
  rate: z.number(),
  conditionalRate: z.number().nullable()
})

/** One timed decode: a prompt's repeat, with its tokens/s and (paired with ar's same prompt and repeat) speedup. */
export const TimingCell = z.object({
  prompt: z.number().int(),
  repeat: z.number().int(),
  wallMs: z.number(),
  tokens: z.number().int(),
  tokensPerSecond: z.number(),
  speedup: z.number().nullable()
})
export type TimingCell = z.infer<typeof TimingCell>

/**
 * What the closed forms of engine/theory need from a run, measured (fold.ts): per-call costs of each model, the
 * mean draft length, and for hierarchies and beam methods their own rates.
 */
export const MeasuredCosts = z.object({
  /** Mean ms of one draft forward call (draftMs / draftCalls). */
  draftMsPerCall: z.number().nullable(),
  /** Mean ms of one target forward call of this method (a batched verification for drafting methods). */
  targetMsPerCall: z.number().nullable(),
  /** Mean draft tokens proposed per verification round (γ for fixed-γ methods, the policy's mean otherwise). */
  meanGamma: z.number().nullable(),
  /** Three-model hierarchies: Chen's α (M_q2 vs M_p) and β (M_q1 vs M_p), and each draft level's ms per call. */
  levels: z
    .object({ alpha: z.number().nullable(), beta: z.number().nullable(), q2MsPerCall: z.number().nullable(), q1MsPerCall: z.number().nullable() })
    .nullable(),
  /** Beam methods: layers generated per iteration and DSBD's mean β_{W_min} (Theorem 3.2's β̄). */
  beam: z.object({ layersPerStep: z.number().nullable(), meanBeta: z.number().nullable() }).nullable()
})
export type MeasuredCosts = z.infer<typeof MeasuredCosts>

/** One prediction of a closed form next to the measurement it predicts. */
const Prediction = z.object({ predicted: z.number().nullable(), measured: z.number().nullable() })

/** Theory beside measurement for one method of a run (engine/theory/measured.ts). */
export const TheorySummary = z.object({
  /** α̂, and the costs relative to one target token of `ar` in the same run (null without ar). */
  alpha: z.number().nullable(),
  c: z.number().nullable(),
  verifyCost: z.number().nullable(),
  /** The γ the predictions use; `gammaIsMean`: the policy's mean draft length (adaptive methods). */
  gamma: z.number().nullable(),
  gammaIsMean: z.boolean(),
  /** Leviathan Eq. 1: tokens per target call; measured: output tokens / target calls. */
  tokensPerCall: Prediction,
  /** Leviathan Thm 3.8 (a verification costs one target token); measured: the median paired speedup. */
  speedup: Prediction,
  /** The same with the measured cost of a batched verification instead of 1 (what a CPU really pays). */
  speedupWithVerifyCost: Prediction,
  /** The γ that maximises Thm 3.8 for α̂ and c, and with the measured verification cost. */
  optimalGamma: z.object({ gamma: z.number().int(), speedup: z.number() }).nullable(),
  optimalGammaWithVerifyCost: z.object({ gamma: z.number().int(), speedup: z.number() }).nullable(),
  /** Chen Thm 3.2 / 3.4 (hier-chen), with the measured α, β, c, c_s. */
  chen: z
    .object({
      alpha: z.number(),
      beta: z.number(),
      m: z.number().int(),
      n: z.number().int(),
      c: z.number().nullable(),
      cs: z.number().nullable(),
      tokensPerCall: Prediction,
      timeImprovement: Prediction
    })
    .nullable(),
  /** DSBD Thm 3.2 with the measured β̄ and the run's t and γ, beside the measured layers per iteration. */
  dsbd: z.object({ t: z.number(), betaBar: z.number(), gamma: z.number().int(), layersPerIteration: Prediction }).nullable(),
  /** Why a prediction is missing, or what to keep in mind reading it. */
  notes: z.array(z.string())
})
export type TheorySummary = z.infer<typeof TheorySummary>

/** Per-method aggregate — the `methods[]` entries of `speclab run --json` (DESIGN contract fields first). */
export const MethodSummary = z.object({
  method: z.string(),
  prompts: z.number().int(),
  outputTokens: z.number().int(),
  /** Σ over prompts of the median wall time of the prompt's repeats (the one wall time when repeats = 1). */
  wallMs: z.number(),
  /** The median over (prompt, repeat) cells of each timed decode's tokens/s (outputTokens / wallMs without cells). */
  tokensPerSecond: z.number(),
  /**
   * The speedup: the median over (prompt, repeat) cells of tokens/s ÷ `ar`'s tokens/s on the same prompt and repeat
   * in the same run (`speedupInterval` is its 95 % interval); null without an `ar` baseline.
   */
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
  overheadPerStepMs: z.number().nullable(),
  // Repeats, intervals, acceptance per position and theory inputs: the defaults keep stored reports that lack them readable.
  /** Timed repeats of each prompt (the most any prompt got). */
  repeats: z.number().int().default(1),
  /** tokens/s per (prompt, repeat): median and 95 % interval. */
  tokensPerSecondInterval: IntervalSummary.nullable().default(null),
  /** Speedup per (prompt, repeat), each paired with `ar` on the same prompt and repeat; null without `ar`. */
  speedupInterval: IntervalSummary.nullable().default(null),
  /** Σ output tokens ÷ Σ each prompt's median wall time: the aggregate throughput (a ratio of totals, not `tokensPerSecond`). */
  aggregateTokensPerSecond: z.number().nullable().default(null),
  /** aggregateTokensPerSecond ÷ `ar`'s: a ratio of totals, where longer outputs weigh more (not `speedup`). */
  throughputRatio: z.number().nullable().default(null),
  /** Acceptance at draft position 1, 2, …; empty for methods that do not draft. */
  acceptanceByPosition: z.array(PositionSummary).default([]),
  /** α̂: per-token acceptance under the i.i.d. model (accepted / draft tokens the verifier looked at). */
  alpha: z.number().nullable().default(null),
  /** Every timed decode, nothing averaged away (the intervals and the Diff's noise test are computed from these). */
  timings: z.array(TimingCell).default([]),
  /**
   * A digest of every decision (per step: stage, proposed, accepted, emitted, resampled, bonus, draft tokens) and of
   * the outputs: two runs with equal digests made the same decisions, and differ in timing only.
   */
  decisionDigest: z.string().default(''),
  /** Costs and rates the theory needs (null in stored reports that lack them). */
  costs: MeasuredCosts.nullable().default(null),
  /** The closed forms of the papers with this run's measured α, c, β beside what was measured (theory/measured.ts). */
  theory: TheorySummary.nullable().default(null),
  /**
   * String-level cross-tokenizer drafting (sd-uad): characters of draft text that ended up in the output / characters
   * drafted, over every round (Σ decision.keptChars / Σ decision.draftChars); absent for other methods.
   */
  textKept: z.number().nullable().optional()
})
export type MethodSummary = z.infer<typeof MethodSummary>
