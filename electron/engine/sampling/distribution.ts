/**
 * A sparse, normalised next-token distribution: token ids sorted by descending probability.
 * Top-k transfers make most distributions sparse; tokens absent from `ids` have probability 0.
 */
import type { Prng } from './prng'

export interface Distribution {
  ids: Int32Array
  probs: Float64Array
  /**
   * H of the model's own next-token distribution — the softmax of its RAW logits over the WHOLE vocabulary
   * (temperature 1, no top-k/top-p), in nats — present only when the session was asked for it
   * (`createSession(warp, { fullEntropy: true })`). What SVIP's authors' code thresholds (policies/svip.ts); the
   * warped `probs` are unaffected.
   */
  fullEntropy?: number
}

export function probabilityOf(distribution: Distribution, token: number): number {
  const { ids, probs } = distribution
  for (let i = 0; i < ids.length; i++) if (ids[i] === token) return probs[i]
  return 0
}

/** The most probable token (ids are sorted, so the first; ties keep the lower index, as llama.cpp does). */
export function argmax(distribution: Distribution): number {
  return distribution.ids[0]
}

/** Shannon entropy in nats, H(q) = −Σ q log q (the quantity SVIP and HSDDW threshold). */
export function entropy(distribution: Distribution): number {
  let h = 0
  for (const p of distribution.probs) if (p > 0) h -= p * Math.log(p)
  return h
}

/**
 * H of softmax(logits) over every logit given (nats), in one stable pass: with l' = l − max, W = Σ e^{l'},
 * H = log W − Σ e^{l'}·l' / W. Entries of −∞ (or a finite stand-in so low that e^{l'} underflows) contribute 0.
 */
export function softmaxEntropy(logits: ArrayLike<number>): number {
  let max = -Infinity
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i]
  if (!Number.isFinite(max)) throw new Error('cannot take the entropy of logits without a finite maximum')
  let total = 0
  let weighted = 0
  for (let i = 0; i < logits.length; i++) {
    const shifted = logits[i] - max
    const w = Math.exp(shifted)
    if (w > 0) {
      total += w
      weighted += w * shifted
    }
  }
  return Math.max(0, Math.log(total) - weighted / total)
}

/** Inverse-CDF sampling with one uniform draw from the seeded PRNG. */
export function sample(distribution: Distribution, rng: Prng): number {
  const u = rng.next()
  let cumulative = 0
  const { ids, probs } = distribution
  for (let i = 0; i < ids.length; i++) {
    cumulative += probs[i]
    if (u < cumulative) return ids[i]
  }
  // Rounding can leave Σp a hair below 1: fall back to the last token with mass.
  for (let i = ids.length - 1; i >= 0; i--) if (probs[i] > 0) return ids[i]
  throw new Error('cannot sample from an empty distribution')
}

/** Builds a distribution from unnormalised non-negative weights, dropping zeros and sorting by mass. */
export function fromWeights(ids: ArrayLike<number>, weights: ArrayLike<number>): Distribution {
  const order: number[] = []
  let total = 0
  for (let i = 0; i < ids.length; i++) {
    if (weights[i] > 0) {
      order.push(i)
      total += weights[i]
    }
  }
  if (total <= 0) throw new Error('distribution has no mass')
  sortUnlessOrdered(order, (a, b) => weights[b] - weights[a] || ids[a] - ids[b])
  const out: Distribution = { ids: new Int32Array(order.length), probs: new Float64Array(order.length) }
  order.forEach((source, i) => {
    out.ids[i] = ids[source]
    out.probs[i] = weights[source] / total
  })
  return out
}

/**
 * Sorts `order` by `compare` unless it is already strictly in that order: one pass instead of a sort where the input
 * comes ranked (node-llama-cpp returns the top-k by logit, so warp's and fromWeights' orders are usually the input's).
 * The result is the sort's either way: a comparator that orders distinct ids strictly has one sorted order.
 */
export function sortUnlessOrdered(order: number[], compare: (a: number, b: number) => number): number[] {
  for (let i = 1; i < order.length; i++) if (!(compare(order[i - 1]!, order[i]!) < 0)) return order.sort(compare)
  return order
}
