/**
 * The setup advisor's core: every candidate configuration replayed on one trace and priced with measured costs,
 * ranked by predicted tokens per second. A greedy trace replays each candidate exactly (replay/replay.ts); a sampled
 * trace gives expected values (replay/expected-replay.ts). `ar` is always priced too: it is the speedup baseline.
 *
 * Costs: c_T(k) of the target (replay/cost-curve.ts) and, per traced draft, its time per drafted token — with the
 * warped top-k transfer, and with every logit transferred (`fullEntropyMs`), which a policy reading the
 * whole-vocabulary entropy (svip's default) makes the draft pay.
 * A candidate the trace cannot replay (a method outside the replayable set, a rollout shorter than its drafts) is
 * listed with its reason rather than guessed.
 */
import { isGreedy } from '../sampling/warp'
import type { CostCurve } from './cost-curve'
import { readsFullEntropy, replayExpected } from './expected-replay'
import { predictFromExpected, predictFromSteps, withPrefill, type Prediction } from './predict'
import { replayGreedy, type Candidate } from './replay'
import { roundCost } from './cost-curve'
import type { Trace } from './trace'

export interface DraftCost {
  /** ms per drafted token (warped top-k transfer). */
  ms: number
  /** ms per drafted token with every logit transferred; absent = unmeasured (then `ms`). */
  fullEntropyMs?: number
}

export interface CostTable {
  /** c_T(k), k = 1 … K, ms. */
  targetMs: number[]
  /** By traced draft name. */
  drafts: Record<string, DraftCost>
  /**
   * Σ over the trace's prompts of evaluating each prompt in one call (cost-curve.ts measurePrefill): the target's
   * and each draft's. Absent: prompt processing is left out of every prediction.
   */
  prefillMs?: { target: number; drafts: Record<string, number> }
}

export interface Verdict {
  candidate: Candidate
  /** 'replayed' (greedy: the rounds themselves) or 'expected' (sampling: expected values). */
  mode: 'replayed' | 'expected'
  prediction: Prediction | null
  /** Why it could not be replayed; null when it was. */
  error: string | null
}

export const AR_CANDIDATE: Candidate = { method: 'ar', gamma: 1, params: {}, draft: null }

function curveFor(costs: CostTable, candidate: Candidate, fullEntropy: boolean): CostCurve {
  const draft = candidate.draft === null ? undefined : costs.drafts[candidate.draft]
  if (candidate.draft !== null && !draft) throw new Error(`no cost measured for the draft '${candidate.draft}'`)
  const draftMs = draft ? (fullEntropy ? (draft.fullEntropyMs ?? draft.ms) : draft.ms) : 0
  return { targetMs: costs.targetMs, draftMs }
}

/** The prediction with prompt processing (CostTable.prefillMs) in: c(prompt) − c(1) per prompt for each model used. */
function withPrompts(prediction: Prediction, trace: Trace, candidate: Candidate, costs: CostTable, curve: CostCurve): Prediction {
  const prefill = costs.prefillMs
  if (!prefill) return prediction
  const prompts = trace.prompts.length
  const draftPrefill = candidate.draft === null ? undefined : prefill.drafts[candidate.draft]
  const draftExtra = draftPrefill === undefined ? 0 : draftPrefill - prompts * curve.draftMs
  return withPrefill(prediction, prefill.target - prompts * curve.targetMs[0], draftExtra)
}

async function verdict(trace: Trace, candidate: Candidate, costs: CostTable): Promise<Verdict> {
  const priced = (prediction: Prediction, curve: CostCurve): Verdict => ({ candidate, mode, prediction: withPrompts(prediction, trace, candidate, costs, curve), error: null })
  const greedy = isGreedy(trace.warp)
  const mode = greedy ? 'replayed' : 'expected'
  try {
    if (greedy) {
      const prompts = await replayGreedy(trace, candidate)
      const curve = curveFor(costs, candidate, prompts.some((p) => p.draftFullEntropy))
      return priced(predictFromSteps(prompts.flatMap((p) => p.steps), curve), curve)
    }
    if (candidate.method === 'ar') {
      const curve = curveFor(costs, candidate, false)
      const tokens = trace.prompts.reduce((n, p) => n + p.tokens.length, 0)
      const ms = tokens * roundCost(curve)(0, 0)
      return priced(predictFromExpected([{ tokens, rounds: tokens, proposed: 0, accepted: 0, ms }], curve), curve)
    }
    const curve = curveFor(costs, candidate, readsFullEntropy(candidate))
    return priced(predictFromExpected(replayExpected(trace, candidate, roundCost(curve)), curve), curve)
  } catch (error) {
    return { candidate, mode, prediction: null, error: error instanceof Error ? error.message : String(error) }
  }
}

/** `ar` and every candidate, fastest predicted first; those that could not be replayed last, in the given order. */
export async function rankCandidates(trace: Trace, candidates: readonly Candidate[], costs: CostTable): Promise<Verdict[]> {
  const verdicts: Verdict[] = []
  for (const candidate of [AR_CANDIDATE, ...candidates.filter((c) => c.method !== 'ar')]) verdicts.push(await verdict(trace, candidate, costs))
  const speed = (v: Verdict) => v.prediction?.tokensPerSecond ?? -1
  return verdicts.map((v, i) => ({ v, i })).sort((a, b) => speed(b.v) - speed(a.v) || a.i - b.i).map(({ v }) => v)
}
