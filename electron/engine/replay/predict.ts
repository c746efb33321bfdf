/**
 * Predicted speed of a replayed configuration: its rounds priced with a measured cost curve (replay/cost-curve.ts).
 *
 *   time = Σ_rounds (draftCalls · c_D + midCalls · c_M + c_T(proposed + 1)),   ar's time = L · c_T(1)
 *   tokens/s = L / time,   speedup = ar's time / time
 *
 * (a parallel round — PEARL, `sd.parallel` — pays its overlapped part as the longer of its draft calls and its
 * verification instead: cost-curve.ts roundCost)
 *
 * with L the output tokens. A replay is summarised by its rounds per kind (tokens proposed, draft calls): counted
 * from a greedy replay's step records, expected values from a sampling replay (replay/expected.ts; tokens/s is then
 * L / E[time]). Pricing is linear in the kinds, so one replay is priced under any number of cost curves (thread
 * plans, other machines) without replaying again.
 */
import type { StepRecord } from '../decoders/types'
import { roundCost, targetCost, type CostCurve } from './cost-curve'
import { countKind, type ExpectedRun, type Overlap, type RoundKind } from './expected'

/** A replay as pricing needs it (every prompt together). */
export interface ReplaySummary {
  tokens: number
  rounds: number
  /** Draft tokens proposed and accepted (expected values for a sampling replay). */
  proposed: number
  accepted: number
  kinds: RoundKind[]
  /** Prompts whose first round sends drafts to the target (its first call then evaluates the prompt as a batch). */
  firstBatchRounds: number
}

export interface Prediction {
  tokens: number
  rounds: number
  tokensPerRound: number
  proposed: number
  accepted: number
  ms: number
  /** ar's time on the same tokens. */
  arMs: number
  tokensPerSecond: number
  arTokensPerSecond: number
  speedup: number
}

function mergeKinds(kinds: readonly RoundKind[]): RoundKind[] {
  const merged = new Map<string, RoundKind>()
  for (const { count, ...shape } of kinds) countKind(merged, shape, count)
  return [...merged.values()]
}

/**
 * A parallel round's overlap, from what decoders/parallel-drafting.ts writes into its decision (`overlapCalls`,
 * `positions`); null for any other round, and for a stored parallel round recorded without them (it is then priced
 * as if its calls ran one after another).
 */
function overlapOfStep(step: StepRecord): Overlap | null {
  const calls = step.decision?.overlapCalls
  const positions = step.decision?.positions
  return typeof calls === 'number' && typeof positions === 'number' ? { draftCalls: calls, positions } : null
}

/** A round's kind from its step record: a hierarchy's (per-level counters) counts its small and mid models apart. */
export function kindOfStep(step: StepRecord): RoundKind {
  if (step.levels) return { proposed: step.proposed, draftCalls: step.levels.q1.calls, midCalls: step.levels.q2.calls, count: 1 }
  const overlap = overlapOfStep(step)
  return { proposed: step.proposed, draftCalls: step.draftCalls, ...(overlap ? { overlap } : {}), count: 1 }
}

export function summaryOfSteps(steps: readonly StepRecord[]): ReplaySummary {
  return {
    tokens: steps.reduce((n, s) => n + s.emitted, 0),
    rounds: steps.length,
    proposed: steps.reduce((n, s) => n + s.proposed, 0),
    accepted: steps.reduce((n, s) => n + s.accepted, 0),
    kinds: mergeKinds(steps.map(kindOfStep)),
    // A parallel first round (PEARL's pre-verify) may test a draft token without sending it to the target's call.
    firstBatchRounds: steps.filter((s) => s.index === 0 && (overlapOfStep(s)?.positions ?? s.proposed + 1) > 1).length
  }
}

export function summaryOfExpected(runs: readonly ExpectedRun[]): ReplaySummary {
  const sum = (pick: (run: ExpectedRun) => number) => runs.reduce((total, run) => total + pick(run), 0)
  return { tokens: sum((r) => r.tokens), rounds: sum((r) => r.rounds), proposed: sum((r) => r.proposed), accepted: sum((r) => r.accepted), kinds: mergeKinds(runs.flatMap((r) => r.kinds)), firstBatchRounds: runs.filter((r) => r.firstProposed > 0).length }
}

/** ar's replay: one target-only round per token. */
export function arSummary(tokens: number): ReplaySummary {
  return { tokens, rounds: tokens, proposed: 0, accepted: 0, kinds: [{ proposed: 0, draftCalls: 0, count: tokens }], firstBatchRounds: 0 }
}

export function predict(summary: ReplaySummary, curve: CostCurve): Prediction {
  const cost = roundCost(curve)
  const ms = summary.kinds.reduce((total, kind) => total + kind.count * cost(kind), 0)
  const arMs = summary.tokens * targetCost(curve, 1)
  return {
    tokens: summary.tokens,
    rounds: summary.rounds,
    tokensPerRound: summary.rounds > 0 ? summary.tokens / summary.rounds : 0,
    proposed: summary.proposed,
    accepted: summary.accepted,
    ms,
    arMs,
    tokensPerSecond: ms > 0 ? (1000 * summary.tokens) / ms : 0,
    arTokensPerSecond: arMs > 0 ? (1000 * summary.tokens) / arMs : 0,
    speedup: ms > 0 ? arMs / ms : 0
  }
}

/** From a greedy replay's step records (every prompt's rounds together). */
export const predictFromSteps = (steps: readonly StepRecord[], curve: CostCurve): Prediction => predict(summaryOfSteps(steps), curve)

/** From a sampling replay's expected runs (one per prompt). */
export const predictFromExpected = (runs: readonly ExpectedRun[], curve: CostCurve): Prediction => predict(summaryOfExpected(runs), curve)

/**
 * A prediction with prompt processing added (replay/cost-curve.ts measurePrefill; replay/advise.ts says what the
 * extras are): `targetExtraMs` on the candidate's time, `arTargetExtraMs` (default the same) on ar's, `draftExtraMs`
 * on the candidate's alone.
 */
export function withPrefill(p: Prediction, targetExtraMs: number, draftExtraMs: number, arTargetExtraMs = targetExtraMs): Prediction {
  const ms = p.ms + targetExtraMs + draftExtraMs
  const arMs = p.arMs + arTargetExtraMs
  return {
    ...p,
    ms,
    arMs,
    tokensPerSecond: ms > 0 ? (1000 * p.tokens) / ms : 0,
    arTokensPerSecond: arMs > 0 ? (1000 * p.tokens) / arMs : 0,
    speedup: ms > 0 ? arMs / ms : 0
  }
}
