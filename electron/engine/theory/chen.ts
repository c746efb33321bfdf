/**
 * Chen, "An Exploration of Hierarchical Speculative Decoding" (../shared/papers/hierarchical-sd-exploration-chen.txt)
 * §3, under the i.i.d. acceptance assumption: the target M_p accepts a guess of the medium model M_q with
 * probability α and a guess of the small model M_s with probability β; Algorithm 2 makes m medium guesses per
 * target call, each after n small guesses.
 *
 *   Theorem 3.2   E[tokens] = (1 − β^{n+1})/(1 − β) · (1 − Q^m)/(1 − Q) + Q^m,   Q = α·β^n            (Eq. 2)
 *   Theorem 3.4   E[time improvement] = E[tokens] / (1 + m·c + m·n·c·c_s)                             (Eq. 3)
 *
 * c = t(M_q)/t(M_p), c_s = t(M_s)/t(M_q) (Definition 3.3). Special cases the paper lists: n = 0 gives Leviathan's
 * (1 − α^{m+1})/(1 − α); m = 1 with α = β gives (1 − β^{n+2})/(1 − β); n → ∞ gives 1/(1 − β).
 * `tokensDistribution` is Table A.1 (Appendix A), the law whose mean Theorem 3.2 is.
 */
import { checkCount, checkProbability, geometricSum } from './leviathan'

/** Q = α·β^n: the probability that one medium guess and its n small guesses are all accepted. */
export function chenQ(alpha: number, beta: number, n: number): number {
  checkProbability('α', alpha)
  checkProbability('β', beta)
  checkCount('n', n)
  return alpha * beta ** n
}

/** Theorem 3.2: expected tokens produced by one run of Algorithm 2 (one target call). */
export function chenExpectedTokens(alpha: number, beta: number, m: number, n: number): number {
  checkCount('m', m, 1)
  const q = chenQ(alpha, beta, n)
  return geometricSum(beta, n + 1) * geometricSum(q, m) + q ** m
}

/** Theorem 3.4: expected improvement factor in total time over M_p alone. */
export function chenTimeImprovement(alpha: number, beta: number, m: number, n: number, c: number, cs: number): number {
  if (!(c >= 0) || !(cs >= 0)) throw new RangeError(`c and c_s must be ≥ 0, got ${c}, ${cs}`)
  return chenExpectedTokens(alpha, beta, m, n) / (1 + m * c + m * n * c * cs)
}

/**
 * Table A.1: P(X = k) for k = 1 … m(n+1)+1, X the tokens one run produces (index k − 1 of the array). Guess
 * positions are tested in order (n small, then one medium, m times); X = 1 + the accepted ones before the first
 * rejection.
 */
export function tokensDistribution(alpha: number, beta: number, m: number, n: number): number[] {
  checkProbability('α', alpha)
  checkProbability('β', beta)
  checkCount('m', m, 1)
  checkCount('n', n)
  const out: number[] = []
  let survive = 1
  for (let i = 0; i < m; i++) {
    for (let j = 0; j <= n; j++) {
      const accept = j < n ? beta : alpha
      out.push(survive * (1 - accept))
      survive *= accept
    }
  }
  out.push(survive)
  return out
}
