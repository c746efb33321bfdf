/**
 * Predicted speed of a replayed configuration: its rounds priced with a measured cost curve (replay/cost-curve.ts).
 *
 *   time = Σ_rounds (draftCalls · c_D + c_T(proposed + 1)),   ar's time = L · c_T(1)
 *   tokens/s = L / time,   speedup = ar's time / time
 *
 * with L the output tokens; greedy replays give the rounds themselves (step records), sampling replays their
 * expected values (replay/expected.ts: E[time] and E[rounds]; tokens/s is then L / E[time]).
 */
import type { StepRecord } from '../decoders/types'
import { roundCost, targetCost, type CostCurve } from './cost-curve'
import type { ExpectedRun } from './expected'

export interface Prediction {
  tokens: number
  rounds: number
  tokensPerRound: number
  /** Draft tokens proposed and accepted (expected values for a sampling replay). */
  proposed: number
  accepted: number
  ms: number
  /** ar's time on the same tokens. */
  arMs: number
  tokensPerSecond: number
  arTokensPerSecond: number
  speedup: number
}

function prediction(tokens: number, rounds: number, proposed: number, accepted: number, ms: number, curve: CostCurve): Prediction {
  const arMs = tokens * targetCost(curve, 1)
  return {
    tokens,
    rounds,
    tokensPerRound: rounds > 0 ? tokens / rounds : 0,
    proposed,
    accepted,
    ms,
    arMs,
    tokensPerSecond: ms > 0 ? (1000 * tokens) / ms : 0,
    arTokensPerSecond: arMs > 0 ? (1000 * tokens) / arMs : 0,
    speedup: ms > 0 ? arMs / ms : 0
  }
}

/** From a greedy replay's step records (every prompt's rounds together). */
export function predictFromSteps(steps: readonly StepRecord[], curve: CostCurve): Prediction {
  const cost = roundCost(curve)
  let tokens = 0
  let proposed = 0
  let accepted = 0
  let ms = 0
  for (const step of steps) {
    tokens += step.emitted
    proposed += step.proposed
    accepted += step.accepted
    ms += cost(step.proposed, step.draftCalls)
  }
  return prediction(tokens, steps.length, proposed, accepted, ms, curve)
}

/** From a sampling replay's expected runs (one per prompt, priced with the same curve). */
export function predictFromExpected(runs: readonly ExpectedRun[], curve: CostCurve): Prediction {
  const sum = (pick: (run: ExpectedRun) => number) => runs.reduce((total, run) => total + pick(run), 0)
  return prediction(sum((r) => r.tokens), sum((r) => r.rounds), sum((r) => r.proposed), sum((r) => r.accepted), sum((r) => r.ms), curve)
}

/**
 * A prediction with prompt processing added (replay/cost-curve.ts measurePrefill): `targetExtraMs` = Σ_prompts
 * c_T(prompt) − c_T(1), paid by ar and the candidate alike; `draftExtraMs` = Σ_prompts c_D(prompt) − c_D, paid by a
 * candidate that drafts with a model.
 */
export function withPrefill(p: Prediction, targetExtraMs: number, draftExtraMs: number): Prediction {
  const ms = p.ms + targetExtraMs + draftExtraMs
  const arMs = p.arMs + targetExtraMs
  return {
    ...p,
    ms,
    arMs,
    tokensPerSecond: ms > 0 ? (1000 * p.tokens) / ms : 0,
    arTokensPerSecond: arMs > 0 ? (1000 * p.tokens) / arMs : 0,
    speedup: ms > 0 ? arMs / ms : 0
  }
}
