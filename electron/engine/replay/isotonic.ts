/**
 * Pool-adjacent-violators: the non-decreasing sequence closest to `values` in least squares (equal weights).
 * Evaluating k + 1 positions in one call cannot cost less than k, so a measured cost curve that dips is noise (the
 * shared machine's other load); pooling the violating neighbours keeps every measured point's weight.
 */
export function nonDecreasing(values: readonly number[]): number[] {
  const blocks: { sum: number; count: number }[] = []
  for (const value of values) {
    blocks.push({ sum: value, count: 1 })
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1]
      const before = blocks[blocks.length - 2]
      if (before.sum / before.count <= last.sum / last.count) break
      before.sum += last.sum
      before.count += last.count
      blocks.pop()
    }
  }
  return blocks.flatMap((block) => new Array<number>(block.count).fill(block.sum / block.count))
}
