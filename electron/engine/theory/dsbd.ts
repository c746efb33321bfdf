/**
 * Dynamic-width speculative beam decoding (../shared/papers/dsbd-dynamic-width-speculative-beam.txt) §3.2,
 * Theorem 3.2: with the per-layer width chosen so that a layer is accepted with probability min(t, β̄)
 * (t the width threshold of Eq. 6–7, β̄ = E[β^{(l)}_{W_min}] the mean probability that at least W_min beams are
 * accepted), the expected number of layers generated per iteration of γ draft layers is
 *
 *   E[steps] = (1 − min(t, β̄)^{γ+1}) / (1 − min(t, β̄))
 *
 * — Leviathan's expected-tokens formula with acceptance min(t, β̄) (the proof cites it directly).
 */
import { checkProbability, expectedTokens } from './leviathan'

export function dsbdExpectedSteps(t: number, betaBar: number, gamma: number): number {
  checkProbability('t', t)
  checkProbability('β̄', betaBar)
  return expectedTokens(Math.min(t, betaBar), gamma)
}
