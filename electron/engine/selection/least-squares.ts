/**
 * Ordinary least squares without intercept, Ẑ = (Σ_p b_p b_pᵀ)⁻¹ Σ_p b_p α_p — the estimator of 004 §5 (the
 * equation after Eq 5). Solved by Gaussian elimination with partial pivoting on the normal equations (r is 3).
 */
export function ordinaryLeastSquares(rows: readonly (readonly number[])[], targets: readonly number[]): number[] {
  if (rows.length === 0 || rows.length !== targets.length) throw new Error('least squares needs one target per row')
  const r = rows[0].length
  const gram = Array.from({ length: r }, (_, i) => Array.from({ length: r }, (_, j) => rows.reduce((s, b) => s + b[i] * b[j], 0)))
  const moment = Array.from({ length: r }, (_, i) => rows.reduce((s, b, p) => s + b[i] * targets[p], 0))
  return solveLinearSystem(gram, moment)
}

/** Solves A x = y; throws when A is singular (the rows do not span ℝʳ — the paper asks for independent prompts). */
export function solveLinearSystem(matrix: readonly (readonly number[])[], rhs: readonly number[]): number[] {
  const n = rhs.length
  const a = matrix.map((row, i) => [...row, rhs[i]])
  const scale = Math.max(...a.flat().map(Math.abs), 1)
  for (let col = 0; col < n; col++) {
    let pivot = col
    for (let row = col + 1; row < n; row++) if (Math.abs(a[row][col]) > Math.abs(a[pivot][col])) pivot = row
    if (Math.abs(a[pivot][col]) <= 1e-12 * scale) throw new Error('singular system: the warm-up prompts are not linearly independent')
    ;[a[col], a[pivot]] = [a[pivot], a[col]]
    for (let row = 0; row < n; row++) {
      if (row === col) continue
      const factor = a[row][col] / a[col][col]
      for (let k = col; k <= n; k++) a[row][k] -= factor * a[col][k]
    }
  }
  return a.map((row, i) => row[n] / row[i])
}
