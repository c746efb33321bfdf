/**
 * Diff of two runs: which config values differ, and every method's metrics side by side with deltas.
 * Pure data — the CLI prints it, the app's Diff screen renders it.
 */
import type { MethodSummary, RunReport } from './contract'

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

export interface RunDiff {
  a: number
  b: number
  configDifferences: { key: string; a: unknown; b: unknown }[]
  methods: { method: string; inA: boolean; inB: boolean; metrics: Record<DiffMetric, MetricDelta> }[]
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

export function diffConfigs(a: object, b: object): RunDiff['configDifferences'] {
  const flatA = flatten(a)
  const flatB = flatten(b)
  const keys = [...new Set([...Object.keys(flatA), ...Object.keys(flatB)])].sort()
  return keys
    .filter((key) => JSON.stringify(flatA[key]) !== JSON.stringify(flatB[key]))
    .map((key) => ({ key, a: flatA[key] ?? null, b: flatB[key] ?? null }))
}

export function diffRuns(a: RunReport, b: RunReport): RunDiff {
  const names = [...new Set([...a.methods.map((m) => m.method), ...b.methods.map((m) => m.method)])]
  return {
    a: a.runId,
    b: b.runId,
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
      return { method, inA: !!left, inB: !!right, metrics }
    })
  }
}
