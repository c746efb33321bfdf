/**
 * The verifier seam of a speculative round (decoders/round.ts): which rule turns the target's distributions over a
 * proposed chain into a verdict. Chosen once per decode, from the request and the method's exact rule:
 *   standard   exact rejection sampling (Leviathan et al. 2023, Alg. 1; SVIP App. A Alg. 2–6): accept x_i with
 *              min(1, p_i(x_i)/q_i(x_i)), correct from norm(max(0, p_i − q_i)), bonus from p_{γ+1} (sampling/verify.ts)
 *   match      sample-then-match (llama.cpp common_sampler_sample_and_accept_n; sd-uad.ts sampleThenMatch, passed in
 *              as the exact rule): draw y_i ~ p_i and keep x_i
 *              while y_i = x_i — equal in law to `standard` with q = δ(x_i), and needs no q
 *   synthetic  accept position i with probability r_i whatever the models say (sampling/synthetic-acceptance.ts):
 *              the engine's cost curve at chosen acceptance rates; NOT lossless, so it replaces the exact rule only
 *              when the request carries rates
 * The tree verifier (multi-draft recursive rejection sampling over a token tree) walks a tree, not a chain: it lives
 * with the tree it verifies (decoders/sd-tree.ts), whose rounds keep their own loop.
 *
 * Terms (as sampling/verify.ts):
 *   chain      x_1..x_γ, the proposed tokens in the target's vocabulary, in order
 *   q_i        the law x_i was drawn from (the draft's warped q, δ(x) for a looked-up token); `match` and
 *              `synthetic` ignore it
 *   p_i        the target's warped distribution at position i; p_{γ+1} follows the whole chain
 *   verdict    the accepted prefix length n (0 ≤ n ≤ γ) and the token after it: a correction (`rejected`) drawn from
 *              the residual, or a bonus from p_{γ+1} when the whole chain passed
 *   prefix verdict  the same without a bonus position (PEARL tests one more draft token there instead)
 */
import type { Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { verifySynthetic, verifySyntheticPrefix } from '../sampling/synthetic-acceptance'
import { verifyDraft, verifyPrefix, type PrefixVerdict, type Verdict } from '../sampling/verify'
import { isGreedy } from '../sampling/warp'
import type { DecodeRequest } from './types'

/** A lossless rule that verifies a chain: x_1..x_γ, their laws q, the target's p_1..p_{γ+1}. */
export type ExactRule = (tokens: readonly number[], q: readonly Distribution[], p: readonly Distribution[], greedy: boolean, rng: Prng) => Verdict

/** A lossless rule that verifies a prefix without a bonus position (PEARL's rounds): exact rejection sampling. */
export type ExactPrefixRule = (tokens: readonly number[], q: readonly Distribution[], p: readonly Distribution[], greedy: boolean, rng: Prng) => PrefixVerdict

/** The chain verifier of one decode: the request's greedy flag, PRNG and synthetic rates are bound. */
export type ChainVerifier = (tokens: readonly number[], q: readonly Distribution[], p: readonly Distribution[]) => Verdict

/** The same without the bonus position (p_1..p_γ suffice). */
export type PrefixVerifier = (tokens: readonly number[], q: readonly Distribution[], p: readonly Distribution[]) => PrefixVerdict

/** `standard`: exact rejection sampling against each token's q. */
export const rejectionSampling: ExactRule = verifyDraft

/**
 * The chain verifier a decode uses: synthetic acceptance when the request asks for it (a cost measurement), the
 * method's exact rule otherwise.
 */
export function chainVerifier(request: DecodeRequest, exact: ExactRule = rejectionSampling): ChainVerifier {
  const greedy = isGreedy(request.warp)
  const rates = request.syntheticAcceptance
  if (rates) return (tokens, _q, p) => verifySynthetic(tokens, p, rates, greedy, request.rng)
  return (tokens, q, p) => exact(tokens, q, p, greedy, request.rng)
}

/**
 * The prefix verifier a decode uses (PEARL's rounds): synthetic when asked for, else the exact rule (rejection
 * sampling; a test's negative control passes a broken one).
 */
export function prefixVerifier(request: DecodeRequest, exact: ExactPrefixRule = verifyPrefix): PrefixVerifier {
  const greedy = isGreedy(request.warp)
  const rates = request.syntheticAcceptance
  if (rates) return (tokens, _q, p) => verifySyntheticPrefix(tokens, p, rates, greedy, request.rng)
  return (tokens, q, p) => exact(tokens, q, p, greedy, request.rng)
}
