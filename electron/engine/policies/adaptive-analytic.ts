/**
 * `adaptive-analytic` — Method 1 ("Analytical Model-Guided Adaption") of Liu, Park & Shen, "A Drop-In Solution for
 * On-the-Fly Adaptation of Speculative Decoding in Large Language Models"
 * (../shared/papers/on-the-fly-adaptation-speculative-decoding.txt, §4.1 lines 83–102, Appendix B.1–B.2 lines
 * 391–429). Before every speculation step choose
 *
 *   γ* = argmax_{γ ∈ [1, γ_max]}  (1 − Acc^{γ+1}) / ((1 − Acc) · (γ·a_q + b_p(γ)))                       (Eq 1)
 *
 * the expected number of tokens per round (truncated geometric, Appendix B.1 Eq 9: Σ_{i=0}^{γ} Acc^i) divided by
 * the round's latency, with
 *
 *   Acc = Σ_j V_j / (Σ_j V_j + Σ_j 1(V_j < γ(j)))      over the last h verifications, capped at Acc_max     (Eq 2)
 *
 * where γ(j) is the window of the j-th most recent verification and V_j the draft tokens it accepted.
 *
 * Choices where the paper is silent or ambiguous (also in the method summary):
 * - Eq 2 vs Appendix B.2. B.2 models Y = accepted tokens + 1 as a TRUNCATED geometric on 1..γ+1 (Eq 10), whose MLE
 *   is the root of a (γ+2)-degree polynomial (Eq 11), and calls Eq 2 a linear-interpolation approximation of it
 *   (line 429). Eq 2 is in fact the EXACT MLE of the CENSORED geometric model that Appendix B.1 uses for the
 *   expectation (Eq 9: P(V = k) = β^k(1−β) for k < γ, P(V = γ) = β^γ; log L = ΣV log β + F log(1 − β), F = the
 *   number of windows with a rejection, so β̂ = ΣV/(ΣV + F)). We implement Eq 2 as printed, with V = accepted DRAFT
 *   tokens (0..γ, the correction/bonus token not counted — otherwise "V < γ(j)" could not mean a rejection) and
 *   γ(j) = the tokens actually proposed (drafting can stop early at end-of-generation or the token budget).
 * - h (analytic.history) defaults to 6, the history length that wins most cells of the paper's sensitivity study
 *   (Appendix D.6, Table 12, lines 679–691); Acc_max (analytic.accMax) to 0.98 (line 102).
 * - a_q and b_p(γ): "derived by observing the most recent steps" (line 98) — not specified further. We use the
 *   last analytic.timingHistory (default 32) timed rounds: a_q = Σ draftMs / Σ proposed (ratio of sums, so long
 *   rounds weigh more), and b_p(γ) = b0 + b1·γ fitted to (proposed, verifyMs) by least squares constrained to
 *   b0, b1 ≥ 0 (verification never gets cheaper with more tokens; with one distinct γ the fit is the mean, b1 = 0).
 *   The first round of each prompt is not timed: it includes both models' prompt prefill.
 *   b_p is floored at 1e-6 ms so Eq 1's denominator never vanishes (toy models run in microseconds).
 * - Warm-up: until one verification and one timed round exist, γ = γ_max (= --gamma, "considered an upper limit,
 *   γ_max", line 118), i.e. the first rounds behave like `sd`.
 * - Acc → 1: the expected-tokens factor is evaluated as the sum Σ_{i=0}^{γ} Acc^i (Eq 9), which equals the
 *   fraction for Acc < 1, is exactly γ + 1 at Acc = 1 and has no cancellation near 1; with accMax = 1 allowed, no
 *   NaN can arise. Ties in Eq 1 go to the smaller γ.
 * - Persistence: the acceptance history and the timings persist across the prompts of a run (the catalog's newRun closure).
 *   The paper optimises "for each prompt" (line 85) but estimates from "the last h speculations" with no reset;
 *   the timings describe the hardware, and after h rounds of a new prompt its own acceptance dominates anyway.
 */
import type { DraftLengthPolicy, PolicyExplanation } from './types'

const MIN_COST_MS = 1e-6

/**
 * Eq 1 for one γ: expected tokens per round Σ_{i=0}^{γ} acc^i = (1 − acc^{γ+1})/(1 − acc), divided by the
 * round's latency γ·a_q + b_p (b_p = b_p(γ), already evaluated).
 */
export function analyticObjective(acc: number, gamma: number, aq: number, bp: number): number {
  if (!(acc >= 0 && acc <= 1)) throw new RangeError(`Acc must be in [0, 1], got ${acc}`)
  if (!Number.isInteger(gamma) || gamma < 0) throw new RangeError(`γ must be a non-negative integer, got ${gamma}`)
  if (!(aq >= 0) || !(bp >= 0)) throw new RangeError(`a_q and b_p must be ≥ 0, got ${aq}, ${bp}`)
  const cost = gamma * aq + bp
  if (!(cost > 0) || !Number.isFinite(cost)) throw new RangeError(`γ·a_q + b_p must be positive and finite, got ${cost}`)
  let expected = 0
  let power = 1
  for (let i = 0; i <= gamma; i++) {
    expected += power
    power *= acc
  }
  return expected / cost
}

export interface WindowChoice {
  gamma: number
  objective: number
  /** b_p(γ*) */
  bp: number
}

/** argmax of Eq 1 over γ ∈ [1, γ_max] (ties → the smaller γ). `bp` is b_p(γ) or a constant. */
export function bestWindow(acc: number, gammaMax: number, aq: number, bp: number | ((gamma: number) => number)): WindowChoice {
  if (!Number.isInteger(gammaMax) || gammaMax < 1) throw new RangeError(`γ_max must be an integer ≥ 1, got ${gammaMax}`)
  const cost = typeof bp === 'number' ? () => bp : bp
  let best: WindowChoice = { gamma: 1, objective: -Infinity, bp: cost(1) }
  for (let gamma = 1; gamma <= gammaMax; gamma++) {
    const b = cost(gamma)
    const objective = analyticObjective(acc, gamma, aq, b)
    if (objective > best.objective) best = { gamma, objective, bp: b }
  }
  return best
}

export interface Verification {
  proposed: number
  accepted: number
}

/** Eq 2 (uncapped): successes ΣV, failures Σ1(V < γ(j)); acc is null when there is no information yet. */
export function estimateAcceptance(window: readonly Verification[]): { acc: number | null; successes: number; failures: number } {
  let successes = 0
  let failures = 0
  for (const { proposed, accepted } of window) {
    if (proposed <= 0) continue
    successes += accepted
    if (accepted < proposed) failures += 1
  }
  const total = successes + failures
  return { acc: total > 0 ? successes / total : null, successes, failures }
}

export interface LinearCost {
  b0: number
  b1: number
}

/** Least squares b_p(γ) = b0 + b1·γ with b0, b1 ≥ 0 (exact 2-variable NNLS); null without points. */
export function fitVerifyCost(points: readonly { gamma: number; ms: number }[]): LinearCost | null {
  const n = points.length
  if (n === 0) return null
  let sg = 0
  let sy = 0
  for (const p of points) {
    sg += p.gamma
    sy += p.ms
  }
  const mg = sg / n
  const my = sy / n
  let sxx = 0
  let sxy = 0
  let sgg = 0
  let sgy = 0
  for (const p of points) {
    sxx += (p.gamma - mg) ** 2
    sxy += (p.gamma - mg) * (p.ms - my)
    sgg += p.gamma * p.gamma
    sgy += p.gamma * p.ms
  }
  if (sxx > 0) {
    const b1 = sxy / sxx
    const b0 = my - b1 * mg
    if (b1 >= 0 && b0 >= 0) return { b0, b1 }
  } else return { b0: Math.max(0, my), b1: 0 }
  // The unconstrained optimum is infeasible: the optimum lies on a boundary, b1 = 0 (the mean) or b0 = 0.
  const sse = ({ b0, b1 }: LinearCost) => points.reduce((s, p) => s + (p.ms - b0 - b1 * p.gamma) ** 2, 0)
  const flat: LinearCost = { b0: Math.max(0, my), b1: 0 }
  const origin: LinearCost = { b0: 0, b1: sgg > 0 ? Math.max(0, sgy / sgg) : 0 }
  return sse(origin) < sse(flat) ? origin : flat
}

export interface AnalyticOptions {
  gammaMax: number
  history: number
  accMax: number
  timingHistory: number
}

interface TimedRound {
  proposed: number
  draftMs: number
  verifyMs: number
}


export function adaptiveAnalyticPolicy(options: AnalyticOptions): DraftLengthPolicy {
  const { gammaMax, history, accMax, timingHistory } = options
  const verifications: Verification[] = []
  const timed: TimedRound[] = []
  /** The next round carries the prompt's prefill: its timings are not a_q / b_p samples. */
  let prefillRound = false
  let decided: PolicyExplanation = { threshold: null, decision: null }

  const choose = (): number => {
    const { acc: raw, successes, failures } = estimateAcceptance(verifications)
    let draftTokens = 0
    let draftMs = 0
    for (const round of timed) {
      draftTokens += round.proposed
      draftMs += round.draftMs
    }
    const fit = fitVerifyCost(timed.map((round) => ({ gamma: round.proposed, ms: round.verifyMs })))
    const base = { gammaMax, successes, failures, window: verifications.length, timedRounds: timed.length }
    if (raw === null || fit === null || draftTokens === 0) {
      decided = {
        threshold: null,
        decision: {
          ...base,
          gamma: gammaMax,
          reason: raw === null ? 'warm-up: no verification yet, γ = γ_max' : 'warm-up: no timed round yet, γ = γ_max',
          acc: raw === null ? null : Math.min(raw, accMax),
          accRaw: raw
        }
      }
      return gammaMax
    }
    const acc = Math.min(raw, accMax)
    const aq = draftMs / draftTokens
    const bp = (gamma: number) => Math.max(MIN_COST_MS, fit.b0 + fit.b1 * gamma)
    const best = bestWindow(acc, gammaMax, aq, bp)
    decided = {
      threshold: acc,
      decision: {
        ...base,
        gamma: best.gamma,
        reason: 'argmax of Eq 1',
        acc,
        accRaw: raw,
        aq,
        b0: fit.b0,
        b1: fit.b1,
        bp: best.bp,
        objective: best.objective
      }
    }
    return best.gamma
  }

  return {
    id: 'adaptive-analytic',
    startPrompt() {
      prefillRound = true
    },
    draftLength: choose,
    shouldStop: () => false,
    update(outcome) {
      if (outcome.proposed <= 0) return
      verifications.push({ proposed: outcome.proposed, accepted: outcome.accepted })
      if (verifications.length > history) verifications.shift()
      if (prefillRound) prefillRound = false
      else {
        timed.push({ proposed: outcome.proposed, draftMs: Math.max(0, outcome.draftMs), verifyMs: Math.max(0, outcome.verifyMs) })
        if (timed.length > timingHistory) timed.shift()
      }
    },
    explain: () => decided
  }
}
