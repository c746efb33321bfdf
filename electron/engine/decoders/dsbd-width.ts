/**
 * DSBD dynamic width (../shared/papers/dsbd-dynamic-width-speculative-beam.txt §3.2, Eq 2–7), pure functions.
 *
 *   Eq 4   α_j = Σ_x q_beam(x) · min(1, p_j(x) / q_beam(x)) = Σ_x min(p_j(x), q_beam(x)),
 *          p_1 = p_beam, p_k = norm(max(p_{k−1} − q_beam, 0)) — the probability that the j-th draft beam is accepted
 *          given that the j−1 before it (since the last acceptance) were rejected (Appendix A's α_j, same chain)
 *   Eq 3   P̃(m, i) = α_i · Π_{j<i} (1 − α_j)                 — the i-th of m beams is the first accepted
 *   Eq 2   P(m, k) = Σ_{i=1..m} P̃(m, i) · P(m − i, k − 1)    — k of m beams accepted (p' resets to p_beam after
 *                                                              an acceptance, so the chain restarts at α_1)
 *          with P(0, 0) = 1 and P(m, k) = 0 for k > m (as printed). Not printed but needed: P(m, 0) = Π_{j≤m}(1 − α_j)
 *          (none accepted) and P(m, k) = 0 for k < 0.
 *   Eq 5/7 P(at least K accepted) = 1 − Σ_{k=0..K−1} P(M, k). Eq 5 prints the sum from k = 1, which would count
 *          "none accepted" as success; Eq 7 (and probability) has k = 0 — we use k = 0.
 *   Eq 7   W̃(t) = max{K ∈ ℕ | P(≥ K) ≥ t}, K ranging over 0…M (K > M can never be reached by drafts; without the cap
 *          t = 0 would make W̃ unbounded)
 *   Eq 6   W_L = max(W_min, W̃(t))
 *
 * M is the number of draft beams that reach the layer's verification (W_S at the first layer; at later layers the
 * ones whose parent was accepted — the paper writes M_S / W_S). β_{W_min} = P(≥ W_min) (§3.2, before Theorem 3.2).
 */

/** Eq 4 on aligned probability vectors over the layer's candidates: α_1 … α_m. */
export function acceptanceChain(pBeam: ArrayLike<number>, qBeam: ArrayLike<number>, m: number): number[] {
  const n = pBeam.length
  if (qBeam.length !== n) throw new Error('p_beam and q_beam must be aligned')
  const alphas: number[] = []
  let p = Float64Array.from(pBeam)
  for (let j = 1; j <= m; j++) {
    let alpha = 0
    for (let x = 0; x < n; x++) alpha += Math.min(p[x], qBeam[x])
    alpha = Math.min(1, Math.max(0, alpha))
    alphas.push(alpha)
    if (j === m) break
    // p_{j+1} = norm(max(p_j − q, 0)); no residual mass means α_j = 1 (p_j ≤ q everywhere): the chain stops here
    // with certainty, and the α's after it carry no weight — 1 keeps them well defined.
    const next = new Float64Array(n)
    let mass = 0
    for (let x = 0; x < n; x++) {
      next[x] = Math.max(0, p[x] - qBeam[x])
      mass += next[x]
    }
    if (mass <= 1e-15) {
      while (alphas.length < m) alphas.push(1)
      break
    }
    for (let x = 0; x < n; x++) next[x] /= mass
    p = next
  }
  return alphas
}

/** Eq 3: P̃(m, i) = α_i Π_{j<i} (1 − α_j) (independent of m for i ≤ m). */
export function firstAcceptance(alphas: readonly number[], i: number): number {
  let product = alphas[i - 1]
  for (let j = 0; j < i - 1; j++) product *= 1 - alphas[j]
  return product
}

/**
 * Eq 2: the table P(m', k) for m' = 0 … m, k = 0 … m' (row m' = how many of m' verified beams are accepted).
 * `alphas` must hold at least m values.
 */
export function acceptedCountTable(alphas: readonly number[], m: number): number[][] {
  if (alphas.length < m) throw new Error(`need ${m} α values, got ${alphas.length}`)
  const firsts = Array.from({ length: m }, (_, i) => firstAcceptance(alphas, i + 1))
  const table: number[][] = [[1]]
  for (let rows = 1; rows <= m; rows++) {
    const row = new Array<number>(rows + 1).fill(0)
    let none = 1
    for (let j = 0; j < rows; j++) none *= 1 - alphas[j]
    row[0] = none
    for (let k = 1; k <= rows; k++) {
      let sum = 0
      for (let i = 1; i <= rows; i++) {
        const rest = table[rows - i]
        if (k - 1 < rest.length) sum += firsts[i - 1] * rest[k - 1]
      }
      row[k] = sum
    }
    table.push(row)
  }
  return table
}

/** Eq 5/7: P(at least K of the M beams accepted) = 1 − Σ_{k=0}^{K−1} P(M, k), for K = 0 … M (index K). */
export function atLeast(row: readonly number[]): number[] {
  const out: number[] = []
  let below = 0
  for (let K = 0; K < row.length; K++) {
    out.push(Math.min(1, Math.max(0, 1 - below)))
    below += row[K]
  }
  return out
}

export interface LayerWidth {
  /** W_L^{(l)} = max(W_min, W̃_L^{(l)}(t)) (Eq 6). */
  width: number
  /** W̃_L^{(l)}(t) (Eq 7). */
  wTilde: number
  /** α_1 … α_M (Eq 4). */
  alphas: number[]
  /** P(M, k), k = 0 … M (Eq 2). */
  counts: number[]
  /** P(≥ K), K = 0 … M (Eq 5/7). */
  atLeast: number[]
  /** β_{W_min} = P(≥ W_min): the layer-acceptance probability when W_L = W_min (Theorem 3.2's β). */
  beta: number
  /** P(≥ W_L): the probability that this layer is accepted with the width chosen. */
  acceptance: number
}

/** Eq 6–7 from given α's (M = alphas.length). */
export function widthFromAlphas(alphas: readonly number[], t: number, wMin: number): LayerWidth {
  if (!(t >= 0 && t <= 1)) throw new RangeError(`t must lie in [0, 1], got ${t}`)
  if (!Number.isInteger(wMin) || wMin < 1) throw new RangeError(`W_min must be a positive integer, got ${wMin}`)
  const m = alphas.length
  const counts = acceptedCountTable(alphas, m)[m]
  const probAtLeast = atLeast(counts)
  let wTilde = 0
  // Tolerance: P(≥ K) is a sum of products and may miss t = 1 or a hand-computed value by rounding only.
  for (let K = 0; K <= m; K++) if (probAtLeast[K] >= t - 1e-12) wTilde = K
  const width = Math.max(wMin, wTilde)
  const at = (K: number) => (K <= m ? probAtLeast[K] : 0)
  return { width, wTilde, alphas: [...alphas], counts, atLeast: probAtLeast, beta: at(wMin), acceptance: at(width) }
}

/** Eq 4 then Eq 6–7: the width of a layer whose M draft beams come from q_beam and are verified against p_beam. */
export function dynamicWidth(
  pBeam: ArrayLike<number>,
  qBeam: ArrayLike<number>,
  m: number,
  t: number,
  wMin: number
): LayerWidth {
  return widthFromAlphas(acceptanceChain(pBeam, qBeam, m), t, wMin)
}
