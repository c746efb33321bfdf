/** Plain-text tables for the terminal (stdout stays parseable: progress and notices go to stderr). */
import type { MethodSummary } from '../api/contract'

export function formatNumber(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '–'
  return Number.isInteger(value) ? String(value) : value.toFixed(digits)
}

export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

export function methodTable(methods: readonly MethodSummary[]): string {
  return formatTable(
    ['method', 'tokens', 'tok/s', 'speedup', 'accept', 'mean acc', 'σ', 'η', 'target calls', 'overhead ms/step'],
    methods.map((m) => [
      m.method,
      String(m.outputTokens),
      formatNumber(m.tokensPerSecond, 1),
      m.speedup === null ? '–' : `${formatNumber(m.speedup)}×`,
      formatNumber(m.acceptanceRate, 3),
      formatNumber(m.meanAcceptedLength),
      formatNumber(m.sigma, 3),
      formatNumber(m.eta, 3),
      String(m.targetCalls),
      formatNumber(m.overheadPerStepMs, 3)
    ])
  )
}
