/**
 * Adaptive draft-model selection — 004 §5 (../shared/papers/on-the-fly-adaptation-speculative-decoding.txt,
 * lines 128–165, Theorem 2 Eq 3, Theorem 3 Eq 4, Eq 5 and the OLS estimator after it).
 *
 * Each prompt is embedded as u = (length in tokens, perplexity under the draft, TF-IDF score against the prompts
 * seen) (line 159). Per draft, the single-token acceptance follows α_u = uᵀZ + ε (Eq 5); Z is fitted by ordinary
 * least squares on r warm-up prompts decoded with every draft (α observed by Eq 2 over their verifications).
 * For a new prompt the selector predicts α̂ per draft and picks the draft with the highest predicted throughput.
 *
 * Choices (also in the CLI help):
 * - Throughput (Theorem 2, Eq 3): R = L / (b_p(γ)·n + a_q·L/ρ) with L = d·n·ρ (Eq 8) reduces to
 *   R = (Σ_{i=0}^{d} α^i) / (d·a_q + b_p(d)) — exactly Eq 1's objective at γ = d, and the paper takes d from the
 *   optimum of Eq 1 (line 140). So predicted throughput = max_γ Eq 1 (bestWindow), per draft with its own measured
 *   a_q and b_p(γ). Comparing these throughputs decides Theorem 3's condition (Eq 4) for every pair at once.
 * - Eq 5 has no intercept; we keep it so. A singular warm-up (prompts not linearly independent) is an error.
 * - α̂ is clipped to [0, Acc_max = 0.98] before use (Eq 1's cap, line 102).
 * - The warm-up decodes (r prompts × every draft, with `sd` at γ_max) are profiling, as in the paper's server
 *   setting: they are recorded with the run's draft choices but are not part of any method's tokens/s.
 */
import type { StepRecord } from '../decoders/types'
import { bestWindow, estimateAcceptance, fitVerifyCost } from '../policies/adaptive-analytic'
import { ordinaryLeastSquares } from './least-squares'

export interface PromptFeatures {
  length: number
  perplexity: number
  tfidf: number
}

export const featureVector = (f: PromptFeatures): number[] => [f.length, f.perplexity, f.tfidf]

/** exp of the mean negative log-likelihood of the prompt's tokens (after BOS) under the model. */
export function perplexity(logProbabilities: readonly number[]): number {
  if (logProbabilities.length === 0) return 1
  return Math.exp(-logProbabilities.reduce((s, l) => s + l, 0) / logProbabilities.length)
}

export interface DraftObservation {
  features: PromptFeatures
  /** Eq 2 over the warm-up decode's verification rounds. */
  acceptance: number
}

export interface DraftPrediction {
  acceptance: number
  gamma: number
  /** Predicted tokens per ms (Eq 1 at its optimum = Theorem 2's R). */
  throughput: number
}

export interface SelectionOptions {
  gammaMax: number
  accMax: number
}

/** One draft model's warm-up evidence, fitted coefficients and cost model. */
class DraftProfile {
  readonly observations: DraftObservation[] = []
  private draftMs = 0
  private drafted = 0
  private readonly verifyPoints: { gamma: number; ms: number }[] = []
  coefficients: number[] | null = null

  observe(features: PromptFeatures, steps: readonly StepRecord[]): DraftObservation {
    const { acc } = estimateAcceptance(steps)
    const observation = { features, acceptance: acc ?? 0 }
    this.observations.push(observation)
    // The first round carries both models' prompt prefill; like the analytic policy, leave it out of the costs.
    for (const step of steps.slice(1)) {
      if (step.proposed === 0) continue
      this.draftMs += step.draftMs
      this.drafted += step.draftTokens
      this.verifyPoints.push({ gamma: step.proposed, ms: step.verifyMs })
    }
    return observation
  }

  fit(): void {
    this.coefficients = ordinaryLeastSquares(
      this.observations.map((o) => featureVector(o.features)),
      this.observations.map((o) => o.acceptance)
    )
  }

  predict(features: PromptFeatures, options: SelectionOptions): DraftPrediction {
    if (!this.coefficients) throw new Error('draft selection used before its warm-up was fitted')
    const raw = featureVector(features).reduce((s, x, i) => s + x * this.coefficients![i], 0)
    const acceptance = Math.min(options.accMax, Math.max(0, raw))
    const aq = this.drafted > 0 ? this.draftMs / this.drafted : 0
    const cost = fitVerifyCost(this.verifyPoints) ?? { b0: 1, b1: 0 }
    const choice = bestWindow(acceptance, options.gammaMax, aq, (g) => Math.max(1e-6, cost.b0 + cost.b1 * g))
    return { acceptance, gamma: choice.gamma, throughput: choice.objective }
  }
}

export interface SelectionDecision {
  chosen: number
  predictions: DraftPrediction[]
}

export class DraftModelSelector {
  private readonly profiles: DraftProfile[]

  constructor(
    draftCount: number,
    readonly warmupPrompts: number,
    private readonly options: SelectionOptions
  ) {
    if (draftCount < 2) throw new Error('draft selection needs at least two draft models')
    if (warmupPrompts < 3) throw new Error('draft selection needs at least 3 warm-up prompts (one per feature)')
    this.profiles = Array.from({ length: draftCount }, () => new DraftProfile())
  }

  recordWarmup(draft: number, features: PromptFeatures, steps: readonly StepRecord[]): DraftObservation {
    return this.profiles[draft].observe(features, steps)
  }

  /** Eq 5's OLS per draft, once every draft has seen the warm-up prompts. */
  fit(): void {
    for (const profile of this.profiles) profile.fit()
  }

  coefficients(): (number[] | null)[] {
    return this.profiles.map((p) => p.coefficients)
  }

  /** `features[d]`: the prompt's embedding under draft d (perplexity differs per draft). */
  choose(features: readonly PromptFeatures[]): SelectionDecision {
    const predictions = this.profiles.map((profile, d) => profile.predict(features[d], this.options))
    let chosen = 0
    predictions.forEach((p, d) => {
      if (p.throughput > predictions[chosen].throughput) chosen = d
    })
    return { chosen, predictions }
  }
}
