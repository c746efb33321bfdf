/**
 * Diff of two runs: which config values differ, and every method's metrics side by side with deltas.
 * Pure data — the CLI prints it, the app's Diff screen renders it.
 */
import type { MethodSummary, RunReport } from './runs'
import { cellsOf } from '../engine/metrics/fold'
import { differenceInterval, withinNoise, type Interval } from '../engine/stats/bootstrap'

export const DIFF_METRICS = [
  'tokensPerSecond',
  'speedup',
  'acceptanceRate',
  'meanAcceptedLength',
  'sigma',
  'eta',
  'outputTokens',
  'targetCalls',
  'draftTokens',
  'acceptedTokens',
  'overheadPerStepMs'
] as const satisfies readonly (keyof MethodSummary)[]
export type DiffMetric = (typeof DIFF_METRICS)[number]

export interface MetricDelta {
  a: number | null
  b: number | null
  /** b − a, null when either side is missing. */
  delta: number | null
}

/** The metrics that depend on timing: their difference gets an interval, and is "within noise" when it holds 0. */
export const TIMED_METRICS = ['tokensPerSecond', 'speedup'] as const satisfies readonly DiffMetric[]
export type TimedMetric = (typeof TIMED_METRICS)[number]

/** median(b) − median(a) of a timed metric over both runs' (prompt, repeat) cells, with its 95 % interval. */
export interface TimedDifference {
  difference: Interval | null
  /** The interval holds 0: the runs cannot be told apart on this metric. null without cells on both sides. */
  withinNoise: boolean | null
}

export interface RunDiff {
  a: number
  b: number
  /** False when one run used synthetic acceptance and the other did not (or other rates): timings not comparable. */
  speedComparable: boolean
  configDifferences: { key: string; a: unknown; b: unknown }[]
  methods: {
    method: string
    inA: boolean
    inB: boolean
    metrics: Record<DiffMetric, MetricDelta>
    timed: Record<TimedMetric, TimedDifference>
    /** Both runs made exactly the same decisions and outputs (equal decision digests): only timing differs. */
    sameDecisions: boolean
  }[]
}

function timedDifference(left: MethodSummary | undefined, right: MethodSummary | undefined, metric: TimedMetric, comparable: boolean): TimedDifference {
  const difference = comparable && left && right ? differenceInterval(cellsOf(left.timings, metric), cellsOf(right.timings, metric)) : null
  return { difference, withinNoise: difference ? withinNoise(difference) : null }
}

/** Runs whose acceptance was synthetic measure the engine, not the models: their speed is only comparable among equals. */
export function speedComparable(a: RunReport, b: RunReport): boolean {
  return JSON.stringify(a.config.syntheticAcceptance ?? null) === JSON.stringify(b.config.syntheticAcceptance ?? null)
}

/**
 * Flattens nested config objects (and arrays of objects, by index) to dotted keys, so each difference points at
 * one setting; arrays of plain values (the method list) stay whole.
 */
function flatten(value: unknown, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  const nested = Array.isArray(value) ? value.some((v) => v !== null && typeof v === 'object') : value !== null && typeof value === 'object'
  if (!nested) {
    out[prefix] = value
    return out
  }
  for (const [key, inner] of Object.entries(value as object)) flatten(inner, prefix ? `${prefix}.${key}` : key, out)
  return out
}

/**
 * A thread calibration's timings, standard errors, date and source differ between any two loads that measured; what
 * a diff needs is what they chose (`threadCalibration.N.chosen.*`, the thread plan's counts per model and phase, and
 * the run's targetThreads / batchThreads / draftThreads), so the measurement details are left out — also where the
 * thread plan carries them (`threadPlan.calibration.*`), and whether a measured count was measured now or cached.
 */
const CALIBRATION_DETAIL = /^threadCalibration\.\d+\.(?!chosen\.|role$|path$)|^threadPlan\.calibration\.|^threadPlan\.models\.\d+\.(token|batch)\.source$/
/**
 * An advice run's costs, profile and predictions are measurements that differ between any two runs; what a diff
 * needs is which configurations were measured (`advice.arms.N` without its prediction) and the trace's size.
 */
const ADVICE_DETAIL = /^advice\.(profile|predictions)\.|^advice\.arms\.\d+\.predicted\./

export function diffConfigs(a: object, b: object): RunDiff['configDifferences'] {
  const flatA = flatten(a)
  const flatB = flatten(b)
  const keys = [...new Set([...Object.keys(flatA), ...Object.keys(flatB)])].filter((key) => !CALIBRATION_DETAIL.test(key) && !ADVICE_DETAIL.test(key)).sort()
  return keys
    .filter((key) => JSON.stringify(flatA[key]) !== JSON.stringify(flatB[key]))
    .map((key) => ({ key, a: flatA[key] ?? null, b: flatB[key] ?? null }))
}

export function diffRuns(a: RunReport, b: RunReport): RunDiff {
  const names = [...new Set([...a.methods.map((m) => m.method), ...b.methods.map((m) => m.method)])]
  const comparable = speedComparable(a, b)
  return {
    a: a.runId,
    b: b.runId,
    speedComparable: comparable,
    configDifferences: diffConfigs(a.config, b.config),
    methods: names.map((method) => {
      const left = a.methods.find((m) => m.method === method)
      const right = b.methods.find((m) => m.method === method)
      const metrics = Object.fromEntries(
        DIFF_METRICS.map((metric) => {
          const va = left ? (left[metric] as number | null) : null
          const vb = right ? (right[metric] as number | null) : null
          return [metric, { a: va, b: vb, delta: va !== null && vb !== null ? vb - va : null }]
        })
      ) as Record<DiffMetric, MetricDelta>
      const timed = Object.fromEntries(TIMED_METRICS.map((metric) => [metric, timedDifference(left, right, metric, comparable)])) as Record<TimedMetric, TimedDifference>
      const sameDecisions = !!left && !!right && left.decisionDigest !== '' && left.decisionDigest === right.decisionDigest
      return { method, inA: !!left, inB: !!right, metrics, timed, sameDecisions }
    })
  }
}

/** Three or more runs side by side: every value per run, and each run's delta from the first (the reference). */
export interface RunsDiff {
  runs: number[]
  /** False when the runs do not all share one synthetic-acceptance setting (or all have none). */
  speedComparable: boolean
  /** The settings that differ between any two of the runs, with each run's value. */
  configDifferences: { key: string; values: unknown[] }[]
  methods: {
    method: string
    /** Per run: whether it has this method. */
    present: boolean[]
    metrics: Record<DiffMetric, { values: (number | null)[]; deltas: (number | null)[] }>
    /** Every run that has the method made the same decisions and outputs (equal decision digests). */
    sameDecisions: boolean
  }[]
}

/** The n-run form of `diffRuns`; with two runs it holds the same values (deltas are b − a). */
export function diffManyRuns(reports: readonly RunReport[]): RunsDiff {
  if (reports.length < 2) throw new Error('a diff needs at least two runs')
  const flat = reports.map((r) => flatten(r.config))
  const keys = [...new Set(flat.flatMap((f) => Object.keys(f)))].filter((key) => !CALIBRATION_DETAIL.test(key) && !ADVICE_DETAIL.test(key)).sort()
  const configDifferences = keys
    .filter((key) => new Set(flat.map((f) => JSON.stringify(f[key] ?? null))).size > 1)
    .map((key) => ({ key, values: flat.map((f) => f[key] ?? null) }))
  const names = [...new Set(reports.flatMap((r) => r.methods.map((m) => m.method)))]
  const speedComparableAll = reports.every((r) => speedComparable(reports[0], r))
  return {
    runs: reports.map((r) => r.runId),
    speedComparable: speedComparableAll,
    configDifferences,
    methods: names.map((method) => {
      const summaries = reports.map((r) => r.methods.find((m) => m.method === method))
      const metrics = Object.fromEntries(
        DIFF_METRICS.map((metric) => {
          const values = summaries.map((s) => (s ? (s[metric] as number | null) : null))
          const deltas = values.map((v) => (v !== null && values[0] !== null ? v - values[0] : null))
          return [metric, { values, deltas }]
        })
      ) as RunsDiff['methods'][number]['metrics']
      const digests = summaries.filter((s): s is MethodSummary => !!s).map((s) => s.decisionDigest)
      const sameDecisions = digests.length >= 2 && digests[0] !== '' && digests.every((d) => d === digests[0])
      return { method, present: summaries.map((s) => !!s), metrics, sameDecisions }
    })
  }
}
