/**
 * Closed forms of speculative decoding under the i.i.d. acceptance assumption — Leviathan, Kalman & Matias 2023
 * ("Fast Inference from Transformers via Speculative Decoding"), as restated by Chen
 * (../shared/papers/hierarchical-sd-exploration-chen.txt, §3.1 Eq. 1) and used by HSDDW, DSBD and the on-the-fly
 * adaptation paper:
 *
 *   E[tokens per target call] = (1 − α^{γ+1}) / (1 − α)                 (Leviathan Eq. 1; Chen Eq. 1)
 *   E[walltime improvement]   = (1 − α^{γ+1}) / ((1 − α)(γc + 1))       (Leviathan Thm 3.8)
 *
 * α = E[Σ_y min(p(y), q(y))] is the expected acceptance rate, γ the draft length and c the cost ratio
 * t(M_q) / t(M_p) of one forward call. At α = 1 the fraction is its limit γ + 1; we evaluate the geometric sum
 * Σ_{i=0}^{γ} α^i, which equals the fraction for α < 1 and has no 0/0 near 1.
 */

/** Σ_{i=0}^{k−1} x^i = (1 − x^k)/(1 − x) (k for x = 1), for k ≥ 0. */
export function geometricSum(x: number, k: number): number {
  let sum = 0
  let power = 1
  for (let i = 0; i < k; i++) {
    sum += power
    power *= x
  }
  return sum
}

export function checkProbability(name: string, value: number): void {
  if (!(value >= 0 && value <= 1)) throw new RangeError(`${name} must be in [0, 1], got ${value}`)
}

export function checkCount(name: string, value: number, min = 0): void {
  if (!Number.isInteger(value) || value < min) throw new RangeError(`${name} must be an integer ≥ ${min}, got ${value}`)
}

/** Expected tokens per target call (accepted drafts + the correction/bonus): (1 − α^{γ+1})/(1 − α). */
export function expectedTokens(alpha: number, gamma: number): number {
  checkProbability('α', alpha)
  checkCount('γ', gamma)
  return geometricSum(alpha, gamma + 1)
}

/**
 * Expected walltime improvement over autoregressive decoding with cost ratio c = t_draft / t_target
 * (Theorem 3.8): each round costs γ draft calls and one target call.
 */
export function expectedSpeedup(alpha: number, gamma: number, c: number): number {
  if (!(c >= 0)) throw new RangeError(`c must be ≥ 0, got ${c}`)
  return expectedTokens(alpha, gamma) / (gamma * c + 1)
}

/** The γ in [1, γ_max] that maximises expectedSpeedup (ties → the smaller γ; Leviathan §3.4). */
export function optimalGamma(alpha: number, c: number, gammaMax = 64): { gamma: number; speedup: number } {
  checkCount('γ_max', gammaMax, 1)
  let best = { gamma: 1, speedup: expectedSpeedup(alpha, 1, c) }
  for (let gamma = 2; gamma <= gammaMax; gamma++) {
    const speedup = expectedSpeedup(alpha, gamma, c)
    if (speedup > best.speedup) best = { gamma, speedup }
  }
  return best
}
