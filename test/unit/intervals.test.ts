/**
 * Intervals (engine/stats/bootstrap.ts) against hand computations, and acceptance per draft position
 * (engine/metrics/positions.ts) folded from hand-made step streams.
 */
import { describe, expect, it } from 'vitest'
import { differenceInterval, median, medianInterval, withinNoise, type Cell } from '../../electron/engine/stats/bootstrap'
import { acceptanceByPosition, pooledAlpha } from '../../electron/engine/metrics/positions'

const cells = (values: number[][]): Cell[] => values.flatMap((repeats, prompt) => repeats.map((value, repeat) => ({ prompt, repeat, value })))

/** P(X ≥ k) for X ~ Binomial(n, p). */
function atLeast(k: number, n: number, p: number): number {
  let choose = 1
  let total = 0
  for (let i = 0; i <= n; i++) {
    if (i >= k) total += choose * p ** i * (1 - p) ** (n - i)
    choose = (choose * (n - i)) / (i + 1)
  }
  return total
}

describe('medianInterval', () => {
  it('is exact for constant cells and null without any', () => {
    expect(medianInterval(cells([[2, 2], [2, 2, 2]]))).toEqual({ median: 2, low: 2, high: 2, cells: 5, prompts: 2, repeats: 3 })
    expect(medianInterval([])).toBeNull()
    expect(medianInterval([{ prompt: 0, repeat: 0, value: Number.NaN }])).toBeNull()
  })

  it('one prompt, repeats {1, 3}: the median of a resample is 1, 2 or 3 with probability ¼, ½, ¼ — interval [1, 3]', () => {
    expect(medianInterval(cells([[1, 3]]))).toMatchObject({ median: 2, low: 1, high: 3 })
  })

  it('one prompt with repeats 1…8 and 100: the 2.5 % and 97.5 % points of the resampled median, by hand, are 2 and 8', () => {
    // The median of 9 draws is ≤ 2 iff at least 5 draws are in {1, 2} (p = 2/9), ≥ 8 iff at least 5 are in {8, 100}.
    expect(atLeast(5, 9, 1 / 9)).toBeLessThan(0.025) // P(median = 1)
    expect(atLeast(5, 9, 2 / 9)).toBeGreaterThan(0.025) // P(median ≤ 2)
    const interval = medianInterval(cells([[1, 2, 3, 4, 5, 6, 7, 8, 100]]), 20_000)
    expect(interval).toMatchObject({ median: 5, low: 2, high: 8, cells: 9, prompts: 1, repeats: 9 })
  })

  it('resamples prompts, not cells: many repeats do not hide that three prompts differ', () => {
    // Prompts at 1, 2 and 3 with 100 repeats each. Resampling prompts, the median is 1 whenever two of the three
    // picks are the first prompt (7/27), so the interval is [1, 3]; resampling the 300 cells as if independent
    // would give a median of 2 almost surely and an interval [2, 2] — far too sure of itself.
    const interval = medianInterval(cells([1, 2, 3].map((v) => Array.from({ length: 100 }, () => v))))!
    expect(interval).toMatchObject({ median: 2, low: 1, high: 3, prompts: 3, repeats: 100 })
  })

  it('narrows as repeats accumulate and keeps the true median of the noise', () => {
    const noisy = (n: number) => cells([Array.from({ length: n }, (_, i) => 100 + ((i * 37) % 21) - 10)])
    const few = medianInterval(noisy(5))!
    const many = medianInterval(noisy(200))!
    expect(many.high - many.low).toBeLessThan(few.high - few.low)
    expect(many.low).toBeLessThanOrEqual(100)
    expect(many.high).toBeGreaterThanOrEqual(100)
  })
})

describe('differenceInterval and withinNoise', () => {
  it('calls two runs with overlapping timings within noise, and clearly separated ones a real difference', () => {
    const a = cells([[50, 52, 49], [51, 53, 50]])
    const same = differenceInterval(a, cells([[51, 50, 52], [49, 52, 51]]))!
    expect(withinNoise(same)).toBe(true)
    const faster = differenceInterval(a, cells([[70, 72, 71], [69, 73, 70]]))!
    expect(faster.median).toBeCloseTo(median([70, 72, 71, 69, 73, 70]) - median([50, 52, 49, 51, 53, 50]))
    expect(faster.low).toBeGreaterThan(0)
    expect(withinNoise(faster)).toBe(false)
  })
})

describe('acceptanceByPosition', () => {
  it('folds hand-made rounds: proposed, reached, accepted and both rates per position', () => {
    // γ=3 accepted 3; γ=3 accepted 1; γ=2 accepted 0; γ=1 accepted 1; a step without drafting is ignored.
    const steps = [
      { proposed: 3, accepted: 3 },
      { proposed: 3, accepted: 1 },
      { proposed: 2, accepted: 0 },
      { proposed: 1, accepted: 1 },
      { proposed: 0, accepted: 0 }
    ]
    const positions = acceptanceByPosition(steps)
    expect(positions).toEqual([
      { position: 1, proposed: 4, reached: 4, accepted: 3, rate: 3 / 4, conditionalRate: 3 / 4 },
      { position: 2, proposed: 3, reached: 2, accepted: 1, rate: 1 / 3, conditionalRate: 1 / 2 },
      { position: 3, proposed: 2, reached: 1, accepted: 1, rate: 1 / 2, conditionalRate: 1 }
    ])
    // α̂ = accepted / looked-at = (3 + 1 + 1) / (4 + 2 + 1)
    expect(pooledAlpha(positions)).toBeCloseTo(5 / 7)
    expect(pooledAlpha(acceptanceByPosition([{ proposed: 0, accepted: 0 }]))).toBeNull()
  })
})
