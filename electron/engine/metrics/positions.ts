/**
 * Acceptance per draft position (what llama.cpp's server reports per position and vLLM exposes as
 * `spec_decode_num_accepted_tokens_per_pos`): over the verification rounds of a run, for position i = 1 … γ_max,
 *   proposed_i  rounds that drafted at least i tokens
 *   reached_i   of those, rounds whose tokens 1 … i−1 were all accepted (the verifier got to look at token i)
 *   accepted_i  rounds that accepted at least i tokens
 *   rate_i = accepted_i / proposed_i          (vLLM's per-position acceptance)
 *   conditional_i = accepted_i / reached_i    (α at position i; constant under Leviathan's i.i.d. model)
 * The pooled α̂ = Σ accepted_i / Σ reached_i is the maximum-likelihood per-token acceptance of that model.
 */
import type { StepRecord } from '../decoders/types'

export interface PositionAcceptance {
  position: number
  proposed: number
  reached: number
  accepted: number
  rate: number
  conditionalRate: number | null
}

export function acceptanceByPosition(steps: readonly Pick<StepRecord, 'proposed' | 'accepted'>[]): PositionAcceptance[] {
  const proposed: number[] = []
  const reached: number[] = []
  const accepted: number[] = []
  for (const step of steps) {
    for (let i = 1; i <= step.proposed; i++) {
      proposed[i - 1] = (proposed[i - 1] ?? 0) + 1
      if (step.accepted >= i - 1) reached[i - 1] = (reached[i - 1] ?? 0) + 1
      if (step.accepted >= i) accepted[i - 1] = (accepted[i - 1] ?? 0) + 1
    }
  }
  return proposed.map((n, k) => ({
    position: k + 1,
    proposed: n,
    reached: reached[k] ?? 0,
    accepted: accepted[k] ?? 0,
    rate: (accepted[k] ?? 0) / n,
    conditionalRate: reached[k] ? (accepted[k] ?? 0) / reached[k]! : null
  }))
}

/** α̂: accepted draft tokens per draft token the verifier looked at (null without a verification). */
export function pooledAlpha(positions: readonly PositionAcceptance[]): number | null {
  const reached = positions.reduce((n, p) => n + p.reached, 0)
  return reached > 0 ? positions.reduce((n, p) => n + p.accepted, 0) / reached : null
}
