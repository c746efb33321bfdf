/**
 * Intervals for timing measurements: a percentile bootstrap of the median, resampled hierarchically — prompts with
 * replacement, then each chosen prompt's repeats with replacement — because prompts differ far more than repeats of
 * one prompt do, and treating every (prompt, repeat) cell as independent would make intervals too narrow.
 * (Efron & Tibshirani, "An Introduction to the Bootstrap", ch. 13 percentile intervals; the two-stage resampling of
 * clustered data is Davison & Hinkley 1997 §3.8.) The median rather than the mean: one cell slowed by another
 * process on this shared machine must not move the headline.
 * Seeded, so the same measurements always give the same interval.
 */
import { createPrng, type Prng } from '../sampling/prng'

/** One measured value: of a prompt, in one repeat. */
export interface Cell {
  prompt: number
  repeat: number
  value: number
}

export interface Interval {
  /** Median of the measured cells (not of the bootstrap). */
  median: number
  /** 95 % percentile-bootstrap interval of the median. */
  low: number
  high: number
  /** Cells, distinct prompts and the most repeats of one prompt behind it. */
  cells: number
  prompts: number
  repeats: number
}

export const BOOTSTRAP_RESAMPLES = 4000
const BOOTSTRAP_SEED = 0x5eed
const LEVEL = 0.95

export function mean(values: readonly number[]): number {
  return values.reduce((sum, v) => sum + v, 0) / values.length
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The cells' values grouped by prompt (finite values only). */
function byPrompt(cells: readonly Cell[]): number[][] {
  const groups = new Map<number, number[]>()
  for (const cell of cells) {
    if (!Number.isFinite(cell.value)) continue
    const group = groups.get(cell.prompt) ?? []
    group.push(cell.value)
    groups.set(cell.prompt, group)
  }
  return [...groups.values()]
}

const pick = <T>(items: readonly T[], prng: Prng): T => items[Math.floor(prng.next() * items.length)]!

/** One two-stage resample: prompts with replacement, then repeats with replacement within each. */
function resample(groups: readonly number[][], prng: Prng): number[] {
  const out: number[] = []
  for (let p = 0; p < groups.length; p++) {
    const group = pick(groups, prng)
    for (let r = 0; r < group.length; r++) out.push(pick(group, prng))
  }
  return out
}

/** The (1 − level)/2 and (1 + level)/2 order statistics of sorted bootstrap values (nearest rank). */
function percentiles(sorted: readonly number[]): { low: number; high: number } {
  const tail = (1 - LEVEL) / 2
  const low = sorted[Math.max(0, Math.ceil(tail * sorted.length) - 1)]!
  const high = sorted[Math.min(sorted.length - 1, Math.ceil((1 - tail) * sorted.length) - 1)]!
  return { low, high }
}

function describe(groups: readonly number[][]): Pick<Interval, 'cells' | 'prompts' | 'repeats'> {
  return { cells: groups.reduce((n, g) => n + g.length, 0), prompts: groups.length, repeats: Math.max(...groups.map((g) => g.length)) }
}

/** The median of the cells and its 95 % interval; null without a finite cell. */
export function medianInterval(cells: readonly Cell[], resamples = BOOTSTRAP_RESAMPLES): Interval | null {
  const groups = byPrompt(cells)
  if (groups.length === 0) return null
  const prng = createPrng(BOOTSTRAP_SEED)
  const medians = Array.from({ length: resamples }, () => median(resample(groups, prng))).sort((a, b) => a - b)
  return { median: median(groups.flat()), ...percentiles(medians), ...describe(groups) }
}

/**
 * The difference median(b) − median(a) of two independent sets of cells (two runs), with the 95 % interval of
 * the difference (each side resampled on its own); null when either side has no finite cell.
 */
export function differenceInterval(a: readonly Cell[], b: readonly Cell[], resamples = BOOTSTRAP_RESAMPLES): Interval | null {
  const groupsA = byPrompt(a)
  const groupsB = byPrompt(b)
  if (groupsA.length === 0 || groupsB.length === 0) return null
  const prng = createPrng(BOOTSTRAP_SEED)
  const differences = Array.from({ length: resamples }, () => median(resample(groupsB, prng)) - median(resample(groupsA, prng))).sort((x, y) => x - y)
  const both = describe([...groupsA, ...groupsB])
  return { median: median(groupsB.flat()) - median(groupsA.flat()), ...percentiles(differences), ...both, prompts: Math.max(groupsA.length, groupsB.length) }
}

/** True when the interval of a difference contains 0: the measurements cannot tell the two apart. */
export const withinNoise = (difference: Pick<Interval, 'low' | 'high'>): boolean => difference.low <= 0 && difference.high >= 0
