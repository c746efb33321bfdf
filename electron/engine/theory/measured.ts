/**
 * Theory beside measurement: the closed forms of engine/theory evaluated with what a run measured, next to what it
 * measured — so a reader sees how far a method is from its model and why.
 *
 *   α̂   per-token acceptance of the i.i.d. model: accepted / draft tokens the verifier looked at (metrics/positions.ts)
 *   t_p  ms per token of `ar` in the same run (its median wall time per prompt / its tokens); c = t_draft-call / t_p
 *   v    the measured cost of one batched verification in target tokens (t_verify-call / t_p): Leviathan assumes 1,
 *        a CPU pays several (the batch is compute-bound), so both predictions are given
 *   Leviathan Eq. 1   E[tokens per target call] = (1 − α^{γ+1}) / (1 − α)
 *   Leviathan Thm 3.8 E[speedup] = E[tokens] / (γc + 1)  — and E[tokens] / (γc + v) with the measured v
 *   optimal γ         argmax over γ ∈ [1, 64] of either (Leviathan §3.4)
 *   Chen Thm 3.2/3.4  for hier-chen, with α (M_q2 vs M_p), β (M_q1 vs M_p), c = t(M_q2)/t_p, c_s = t(M_q1)/t(M_q2)
 *   DSBD Thm 3.2      E[layers per iteration] = (1 − min(t, β̄)^{γ+1}) / (1 − min(t, β̄)) with the measured β̄
 *
 * Choices: adaptive policies (and the hierarchies) have no single γ, so their predictions use the mean draft length
 * per round — the formula at the mean, which by Jensen is not the mean of the formula; it is flagged (`gammaIsMean`).
 * Without `ar` in the run there is no t_p: α̂ and the tokens per call remain, the speedups do not.
 */
import type { MethodSummary, TheorySummary } from '../metrics/summary'
import { chenExpectedTokens, chenTimeImprovement } from './chen'
import { dsbdExpectedSteps } from './dsbd'

export interface TheoryContext {
  /** The method's family in the catalog (speculative methods draft a fixed γ). */
  family: string
  /** The run's --gamma and resolved parameters. */
  gamma: number
  params: Record<string, unknown>
  /** ms per output token of ar in the same run; null without ar. */
  arMsPerToken: number | null
}

/** The gap DSBD's Theorem 3.2 leaves, as an earlier audit measured it. */
export const DSBD_LOWER_BOUND_NOTE =
  "Theorem 3.2 assumes a layer passes with probability min(t, β̄); that is a lower bound on the real chance, so the " +
  'prediction underestimates (by +0.07 layers on average across 2,399 random cases in an audit of this implementation)'

const GAMMA_MAX = 64

/** (1 − α^{γ+1}) / (1 − α) for a real γ ≥ 0 (γ + 1 at α = 1): Eq. 1 at a mean draft length. */
export function expectedTokensAt(alpha: number, gamma: number): number {
  return alpha >= 1 ? gamma + 1 : (1 - alpha ** (gamma + 1)) / (1 - alpha)
}

/** E[tokens] / (γc + v): Thm 3.8 with a verification that costs v target tokens (v = 1 is Leviathan's). */
export function speedupAt(alpha: number, gamma: number, c: number, verifyCost = 1): number {
  return expectedTokensAt(alpha, gamma) / (gamma * c + verifyCost)
}

/** The γ ∈ [1, 64] maximising speedupAt (ties → the smaller γ). */
export function bestGamma(alpha: number, c: number, verifyCost = 1): { gamma: number; speedup: number } {
  let best = { gamma: 1, speedup: speedupAt(alpha, 1, c, verifyCost) }
  for (let gamma = 2; gamma <= GAMMA_MAX; gamma++) {
    const speedup = speedupAt(alpha, gamma, c, verifyCost)
    if (speedup > best.speedup) best = { gamma, speedup }
  }
  return best
}

const ratio = (a: number | null | undefined, b: number | null | undefined): number | null => (a != null && b != null && b > 0 ? a / b : null)
const integerParam = (params: Record<string, unknown>, key: string): number | null => (typeof params[key] === 'number' ? (params[key] as number) : null)

/** The measured speedup the predictions are held against: the median paired speedup, else the aggregate. */
const measuredSpeedup = (m: MethodSummary): number | null => m.speedupInterval?.median ?? m.speedup

function chenSection(m: MethodSummary, context: TheoryContext, notes: string[]): TheorySummary['chen'] {
  const levels = m.costs?.levels
  const mGuesses = integerParam(context.params, 'chen.m')
  const nGuesses = integerParam(context.params, 'chen.n')
  if (!levels || levels.alpha === null || levels.beta === null || mGuesses === null || nGuesses === null) {
    notes.push("Chen's theorems need α and β, which this run did not measure")
    return null
  }
  const c = ratio(levels.q2MsPerCall, context.arMsPerToken)
  const cs = ratio(levels.q1MsPerCall, levels.q2MsPerCall)
  return {
    alpha: levels.alpha,
    beta: levels.beta,
    m: mGuesses,
    n: nGuesses,
    c,
    cs,
    tokensPerCall: { predicted: chenExpectedTokens(levels.alpha, levels.beta, mGuesses, nGuesses), measured: ratio(m.outputTokens, m.targetCalls) },
    timeImprovement: {
      predicted: c !== null && cs !== null ? chenTimeImprovement(levels.alpha, levels.beta, mGuesses, nGuesses, c, cs) : null,
      measured: measuredSpeedup(m)
    }
  }
}

/**
 * The other three-model methods (pre-verify, pre-self-verify, hsddw) are not Chen's Algorithm 2 — their M_q2 checks
 * M_q1's tokens before M_p sees them — so Theorems 3.2/3.4 would predict a different algorithm: the measured α, β are
 * given as a note instead of a prediction.
 */
function hierarchyNote(m: MethodSummary, notes: string[]): null {
  const levels = m.costs?.levels
  if (levels && (levels.alpha !== null || levels.beta !== null))
    notes.push(
      `α (M_q2 vs M_p) = ${levels.alpha?.toFixed(3) ?? '–'}, β (M_q1 vs M_p) = ${levels.beta?.toFixed(3) ?? '–'}; Chen's Theorems 3.2/3.4 ` +
        `model Algorithm 2 (hier-chen), not ${m.method}'s pre-verification, so they are not applied here`
    )
  return null
}

function dsbdSection(m: MethodSummary, context: TheoryContext, notes: string[]): TheorySummary['dsbd'] {
  const t = context.params['dsbd.t']
  const betaBar = m.costs?.beam?.meanBeta ?? null
  if (typeof t !== 'number' || betaBar === null) {
    notes.push('DSBD Theorem 3.2 needs β̄, which only the dynamic width measures (dsbd.fixedWidth = 0)')
    return null
  }
  notes.push(DSBD_LOWER_BOUND_NOTE)
  return {
    t,
    betaBar,
    gamma: context.gamma,
    layersPerIteration: { predicted: dsbdExpectedSteps(t, Math.min(1, Math.max(0, betaBar)), context.gamma), measured: m.costs?.beam?.layersPerStep ?? null }
  }
}

/** Theory beside measurement for one method of a run; null for methods that do not draft (ar, beam) and for nlc-draft. */
export function theoryFor(m: MethodSummary, context: TheoryContext): TheorySummary | null {
  const isDsbd = m.method === 'dsbd' || m.method === 'dsbd-1beam'
  // nlc-draft verifies inside node-llama-cpp: its target calls and costs are not ours to count.
  if ((m.alpha === null && !isDsbd) || context.family === 'peer') return null
  const notes: string[] = []
  const alpha = m.alpha
  const gammaIsMean = context.family !== 'speculative'
  const gamma = gammaIsMean ? (m.costs?.meanGamma ?? null) : context.gamma
  const c = ratio(m.costs?.draftMsPerCall, context.arMsPerToken)
  const verifyCost = ratio(m.costs?.targetMsPerCall, context.arMsPerToken)
  if (context.arMsPerToken === null) notes.push('no ar in this run: the cost ratio c, and with it every predicted speedup, needs ar')
  if (gammaIsMean && gamma !== null) notes.push(`γ = ${gamma.toFixed(2)} is the mean draft length per round: the formulas at the mean, not the mean of the formulas`)
  const predict = (verify: number | null) => (alpha !== null && gamma !== null && c !== null && verify !== null ? speedupAt(alpha, gamma, c, verify) : null)
  return {
    alpha,
    c,
    verifyCost,
    gamma,
    gammaIsMean,
    tokensPerCall: { predicted: alpha !== null && gamma !== null ? expectedTokensAt(alpha, gamma) : null, measured: ratio(m.outputTokens, m.targetCalls) },
    speedup: { predicted: predict(1), measured: measuredSpeedup(m) },
    speedupWithVerifyCost: { predicted: predict(verifyCost), measured: measuredSpeedup(m) },
    optimalGamma: alpha !== null && c !== null ? bestGamma(alpha, c) : null,
    optimalGammaWithVerifyCost: alpha !== null && c !== null && verifyCost !== null ? bestGamma(alpha, c, verifyCost) : null,
    chen: m.method === 'hier-chen' ? chenSection(m, context, notes) : hierarchyNote(m, notes),
    dsbd: isDsbd ? dsbdSection(m, context, notes) : null,
    notes
  }
}
