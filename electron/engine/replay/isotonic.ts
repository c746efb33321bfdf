/**
 * Pool-adjacent-violators: the non-decreasing sequence closest to `values` in least squares (equal weights, or
 * `weights` — e.g. how many timings each value is the mean of, so one stray timing cannot drag a well-measured one).
 * Evaluating k + 1 positions in one call cannot cost less than k, so a measured cost curve that dips is noise (the
 * shared machine's other load); pooling the violating neighbours keeps every measured point's weight.
 */
export function nonDecreasing(values: readonly number[], weights?: readonly number[]): number[] {
  const blocks: { sum: number; weight: number; count: number }[] = []
  values.forEach((value, i) => {
    const weight = weights?.[i] ?? 1
    blocks.push({ sum: value * weight, weight, count: 1 })
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1]
      const before = blocks[blocks.length - 2]
      if (before.sum / before.weight <= last.sum / last.weight) break
      before.sum += last.sum
      before.weight += last.weight
      before.count += last.count
      blocks.pop()
    }
  })
  return blocks.flatMap((block) => new Array<number>(block.count).fill(block.sum / block.weight))
}
