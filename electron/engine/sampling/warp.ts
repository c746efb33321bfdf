/**
 * Logits → warped next-token distribution. Draft and target go through this one function with the same
 * config, so speculative sampling is exact with respect to the target's WARPED distribution.
 *
 * Order (Hugging Face's): temperature → top-k → top-p. llama.cpp applies temperature last; the difference only
 * matters for top-p, and we choose HF's order because the papers' reference code is HF-based.
 * Temperature 0 means greedy: the distribution is then the temperature-1 softmax (so entropies stay meaningful)
 * and decoders take its argmax.
 */
import { fromWeights, sortUnlessOrdered, type Distribution } from './distribution'

export interface WarpConfig {
  /** 0 = greedy. */
  temperature: number
  /** Keep the k most likely tokens; 0 = whole vocabulary. */
  topK: number
  /** Nucleus mass in (0, 1]; 1 = off. */
  topP: number
}

export const DEFAULT_WARP: WarpConfig = { temperature: 1, topK: 64, topP: 1 }

export function isGreedy(warp: WarpConfig): boolean {
  return warp.temperature === 0
}

/** `ids`/`logits` may be any subset of the vocabulary that contains the top-k (node-llama-cpp returns the top-k). */
export function warp(ids: ArrayLike<number>, logits: ArrayLike<number>, config: WarpConfig): Distribution {
  const n = ids.length
  const temperature = config.temperature > 0 ? config.temperature : 1
  // Plain arrays for the scratch work: this runs once per evaluated position, and a typed array's allocation or
  // Array.from costs more than the 64 exponentials (docs/performance.md, "Measured on an H100": SpecLab's own share).
  const order: number[] = []
  for (let i = 0; i < n; i++) order.push(i)
  sortUnlessOrdered(order, (a, b) => logits[b] - logits[a] || ids[a] - ids[b])
  const keep = config.topK > 0 ? Math.min(config.topK, n) : n
  const maxLogit = logits[order[0]]
  const keptIds: number[] = []
  const weights: number[] = []
  let total = 0
  for (let i = 0; i < keep; i++) {
    keptIds.push(ids[order[i]])
    weights.push(Math.exp((logits[order[i]] - maxLogit) / temperature))
    total += weights[i]
  }
  const nucleus = config.topP < 1 ? nucleusSize(weights, total, config.topP) : keep
  return nucleus < keep ? fromWeights(keptIds.slice(0, nucleus), weights.slice(0, nucleus)) : fromWeights(keptIds, weights)
}

/** Smallest prefix (weights sorted descending) whose mass reaches topP; always ≥ 1 token. */
function nucleusSize(weights: readonly number[], total: number, topP: number): number {
  let cumulative = 0
  for (let i = 0; i < weights.length; i++) {
    cumulative += weights[i] / total
    if (cumulative >= topP) return i + 1
  }
  return weights.length
}
