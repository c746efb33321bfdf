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
