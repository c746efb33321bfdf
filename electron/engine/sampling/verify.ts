/**
 * Verify / Correct for speculative decoding (SVIP Appendix A, Algorithms 2–5; Leviathan et al. 2023).
 *
 * Sampling: accept draft token x with probability min(1, p(x)/q(x)) (Alg. 2); on rejection sample the correction
 * from norm(max(0, p − q)) (Alg. 4 — the paper prints max(q − p, 0), a typo: the residual that makes the output
 * exactly p is max(p − q, 0), as in Leviathan et al. and HSDDW Appendix C line 24).
 * Greedy: accept iff x = argmax p (Alg. 3); correct with argmax p (Alg. 5).
 * When every draft token is accepted the caller samples a bonus token from p at position γ+1 (Alg. 6 line 18).
 */
import { argmax, fromWeights, probabilityOf, sample, type Distribution } from './distribution'
import type { Prng } from './prng'

export interface Verdict {
  /** Number of leading draft tokens accepted. */
  accepted: number
  /** The token that follows the accepted prefix: a correction (rejected=true) or a bonus (rejected=false). */
  next: number
  rejected: boolean
}

/** The accepted prefix of a draft, and the correction after it; correction null = every token was accepted. */
export interface PrefixVerdict {
  accepted: number
  correction: number | null
}

/**
 * Verify `draft` (x_1..x_γ, drafted from q_1..q_γ) against the target's p_1..p_γ, without a bonus position:
 * exactly one uniform draw per examined token plus one for the correction. PEARL's rounds (decoders/
 * parallel-drafting.ts) test a further draft token where sd would draw the bonus.
 */
export function verifyPrefix(
  draft: readonly number[],
  q: readonly Distribution[],
  p: readonly Distribution[],
  greedy: boolean,
  rng: Prng
): PrefixVerdict {
  for (let i = 0; i < draft.length; i++) {
    const accept = greedy ? acceptGreedy(p[i], draft[i]) : acceptSampling(p[i], q[i], draft[i], rng)
    if (!accept) return { accepted: i, correction: greedy ? argmax(p[i]) : sample(residual(p[i], q[i]), rng) }
  }
  return { accepted: draft.length, correction: null }
}

/** A prefix verdict completed as sd completes it: the correction, or (all accepted) a bonus drawn from p_{γ+1}. */
export function withBonus(prefix: PrefixVerdict, p: readonly Distribution[], greedy: boolean, rng: Prng): Verdict {
  if (prefix.correction !== null) return { accepted: prefix.accepted, next: prefix.correction, rejected: true }
  const last = p[prefix.accepted]
  return { accepted: prefix.accepted, next: greedy ? argmax(last) : sample(last, rng), rejected: false }
}

/**
 * Verify `draft` (x_1..x_γ, drafted from q_1..q_γ) against the target's p_1..p_{γ+1}.
 * Exactly one uniform draw per examined token plus one for the correction/bonus, in order, so runs replay.
 */
export function verifyDraft(
  draft: readonly number[],
  q: readonly Distribution[],
  p: readonly Distribution[],
  greedy: boolean,
  rng: Prng
): Verdict {
  return withBonus(verifyPrefix(draft, q, p, greedy, rng), p, greedy, rng)
}

export function acceptSampling(p: Distribution, q: Distribution, token: number, rng: Prng): boolean {
  const qx = probabilityOf(q, token)
  const px = probabilityOf(p, token)
  // r < p/q  ⇔  r·q < p (no division; q(x) > 0 because x was drawn from q).
  return rng.next() * qx < px
}

export function acceptGreedy(p: Distribution, token: number): boolean {
  return argmax(p) === token
}

/** norm(max(0, p − q)) over p's support (outside it p = 0, so the residual is 0 there). */
export function residual(p: Distribution, q: Distribution): Distribution {
  const qOf = lookup(q)
  const weights = new Float64Array(p.ids.length)
  for (let i = 0; i < p.ids.length; i++) weights[i] = Math.max(0, p.probs[i] - qOf(p.ids[i]))
  // p = q exactly leaves no residual mass; rejection then has probability 0, but guard against rounding.
  return weights.some((w) => w > 0) ? fromWeights(p.ids, weights) : p
}

/** O(1) probability look-up; a linear scan is cheaper for the default top-64 but not for a 32k vocabulary. */
function lookup(distribution: Distribution): (token: number) => number {
  if (distribution.ids.length <= 128) return (token) => probabilityOf(distribution, token)
  const map = new Map<number, number>()
  distribution.ids.forEach((id, i) => map.set(id, distribution.probs[i]))
  return (token) => map.get(token) ?? 0
}
