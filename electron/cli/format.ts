/** Plain-text tables for the terminal (stdout stays parseable: progress and notices go to stderr). */
import path from 'node:path'
import type { IntervalSummary, MethodSummary, RunConfig, RunSummary } from '../api/runs'
import { TIMED_METRICS, type DiffMetric, type RunDiff, type RunsDiff, type TimedDifference, type TimedMetric } from '../api/run-diff'

/** Integers as they are, other numbers with `digits` decimals; missing, NaN and ±Infinity as "–". */
export function formatNumber(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–'
  return Number.isInteger(value) ? String(value) : value.toFixed(digits)
}

/** Always `digits` decimals (a column of ratios reads 1.00, 0.78), "–" when missing. */
export function formatFixed(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–'
  return value.toFixed(digits)
}

/** A number, a ratio, a count, a duration or a percentage: right-aligned; anything else left-aligned. */
const NUMERIC = /^[-+]?[\d.,/]+\s?(×|%|ms|s|KB|MB|GB)?( \[[-+]?[\d.]+–[-+]?[\d.]+\])?$/
const isNumeric = (cell: string) => cell === '–' || cell === '' || NUMERIC.test(cell)

/**
 * Columns padded to their widest cell: the first column and text columns left-aligned, numeric ones right-aligned.
 * Trailing spaces are trimmed, so a table is no wider than its content.
 */
/**
 * Text from the database or a file made safe to print on a terminal: control characters and bidirectional
 * overrides are shown as escapes (`\x1b`, `\n`, `\u202e`) instead of acting — ESC starts sequences that retitle the
 * window or clear the screen, a newline splits a table row, an override reverses what follows. `keepNewlines` keeps
 * line breaks (and tabs) of multi-line text as they are.
 */
export function terminalSafe(text: string, { keepNewlines = false } = {}): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    if (keepNewlines && (c === '\n' || c === '\t')) return c
    if (c === '\n') return '\\n'
    if (c === '\t') return '\\t'
    if (c === '\r') return '\\r'
    const code = c.charCodeAt(0)
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

/** Every cell goes through terminalSafe: names, notes and paths are the user's text, and a table is one row a line. */
export function formatTable(header: string[], unsafeRows: string[][]): string {
  const rows = unsafeRows.map((row) => row.map((cell) => terminalSafe(cell ?? '')))
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const right = header.map((_, i) => i > 0 && rows.some((r) => (r[i] ?? '') !== '' && r[i] !== '–') && rows.every((r) => isNumeric(r[i] ?? '')))
  const line = (cells: string[]) =>
    widths
      .map((w, i) => (right[i] ? (cells[i] ?? '').padStart(w) : (cells[i] ?? '').padEnd(w)))
      .join('  ')
      .trimEnd()
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}


/** "61.2 [58.0–64.1]": a median and its 95 % interval; the plain value when there is no interval. */
export function formatInterval(interval: IntervalSummary | null | undefined, fallback: number | null, digits: number, unit = ''): string {
  if (!interval) return fallback === null || !Number.isFinite(fallback) ? '–' : `${formatFixed(fallback, digits)}${unit}`
  if (interval.low === interval.high && interval.cells < 2) return `${formatFixed(interval.median, digits)}${unit}`
  return `${formatFixed(interval.median, digits)}${unit} [${formatFixed(interval.low, digits)}–${formatFixed(interval.high, digits)}]`
}

/**
 * One row per method. tok/s and speedup are medians over (prompt, repeat) with their 95 % bootstrap intervals
 * (speedups paired with ar's decode of the same prompt and repeat); the counts beside them do not depend on timing.
 */
export function methodTable(methods: readonly MethodSummary[]): string {
  return formatTable(
    ['method', 'tokens', 'tok/s [95% CI]', 'speedup [95% CI]', 'accept', 'mean acc', 'σ', 'η', 'target calls', 'overhead ms/step'],
    methods.map((m) => [
      m.method,
      String(m.outputTokens),
      formatInterval(m.tokensPerSecondInterval, m.tokensPerSecond, 1),
      m.method === 'ar' ? formatInterval(null, m.speedup, 2, '×') : formatInterval(m.speedupInterval, m.speedup, 2, '×'),
      formatFixed(m.acceptanceRate, 3),
      formatFixed(m.meanAcceptedLength),
      formatFixed(m.sigma, 3),
      formatFixed(m.eta, 3),
      String(m.targetCalls),
      formatFixed(m.overheadPerStepMs, 3)
    ])
  )
}

// ─── speclab runs ────────────────────────────────────────────────────────────────────────────────────────────────

export { bestSpeedup, type RepeatTimings, type ResultTiming } from '../api/best-speedup'
import type { BestSpeedup } from '../api/best-speedup'

export interface RunsRow {
  summary: RunSummary
  /** null when the stored config cannot be read (`show` reports why). */
  config: (Pick<RunConfig, 'models' | 'prompts'> & Partial<Pick<RunConfig, 'syntheticAcceptance'>>) | null
  best: BestSpeedup | null
}

/** Where a run's prompts came from: the built-in set's id or the prompt file's name. */
export function promptSource(prompts: RunConfig['prompts'] | undefined): string {
  if (prompts?.dataset) return prompts.dataset
  if (prompts?.file) return path.basename(prompts.file)
  return '–'
}

export function runsTable(rows: readonly RunsRow[]): string {
  return formatTable(
    ['id', 'created', 'status', 'target', 'prompts', 'methods', 'results', 'best vs ar', 'suite', 'name'],
    rows.map(({ summary: r, config, best }) => [
      String(r.id),
      r.createdAt.replace('T', ' ').slice(0, 19),
      r.status,
      config ? path.basename(config.models.target) : '?',
      config ? promptSource(config.prompts) : '?',
      r.methods.join(','),
      String(r.promptCount),
      // A synthetic-acceptance run measures the engine: its speedups are not put beside real ones.
      config?.syntheticAcceptance ? 'synthetic' : best ? `${formatFixed(best.speedup)}× ${best.method}` : '–',
      r.suite ?? '–',
      r.name ?? ''
    ])
  )
}

// ─── speclab diff ────────────────────────────────────────────────────────────────────────────────────────────────

/** Human labels and decimals of the diff's metrics, in the order they are printed. */
export const METRIC_LABELS: Record<DiffMetric, { label: string; digits: number }> = {
  tokensPerSecond: { label: 'tokens/s', digits: 1 },
  speedup: { label: 'speedup vs ar', digits: 2 },
  acceptanceRate: { label: 'acceptance', digits: 3 },
  meanAcceptedLength: { label: 'mean accepted length', digits: 2 },
  sigma: { label: 'σ', digits: 3 },
  eta: { label: 'η', digits: 3 },
  outputTokens: { label: 'output tokens', digits: 0 },
  targetCalls: { label: 'target calls', digits: 0 },
  draftTokens: { label: 'draft tokens', digits: 0 },
  acceptedTokens: { label: 'accepted tokens', digits: 0 },
  overheadPerStepMs: { label: 'overhead ms/step', digits: 3 }
}

/** A config value as a cell: lists joined with commas, long strings (paths) keep their informative end. */
function settingText(value: unknown): string {
  if (value === null || value === undefined) return '–'
  if (Array.isArray(value)) return clip(value.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(','))
  if (typeof value === 'string') return clip(value)
  if (typeof value === 'number') return String(value)
  return clip(JSON.stringify(value))
}

/** Long values (paths) keep their informative end. */
function clip(text: string, width = 60): string {
  return text.length <= width ? text : `…${text.slice(-(width - 1))}`
}

function signed(value: number | null, digits: number): string {
  if (value === null || !Number.isFinite(value)) return '–'
  if (value === 0) return '0'
  return `${value > 0 ? '+' : ''}${digits === 0 ? formatNumber(value) : value.toFixed(digits)}`
}

function change(a: number | null, b: number | null): string {
  if (a === null || b === null || a === 0 || a === b) return ''
  const percent = ((b - a) / Math.abs(a)) * 100
  return `${percent > 0 ? '+' : ''}${percent.toFixed(1)}%`
}

/**
 * Two tables: the settings that differ, then one row per (method, metric) with run a, run b, Δ and the relative
 * change. Rows with nothing to say are left out: metrics neither run has or that are 0 on every side (ar's draft
 * tokens), and ar's speedup (1 by definition).
 */
export function formatDiff(diff: RunDiff): string {
  const settings = diff.configDifferences.filter((d) => !/^modelFingerprints\.\d+\.path$/.test(d.key))
  const config =
    settings.length === 0
      ? 'configs are identical'
      : formatTable(
          ['setting', `run ${diff.a}`, `run ${diff.b}`],
          settings.map((d) => [d.key, settingText(d.a), settingText(d.b)])
        )
  const rows: string[][] = []
  const notes: string[] = []
  for (const m of diff.methods) {
    const name = m.inA && m.inB ? m.method : `${m.method} (run ${m.inA ? diff.a : diff.b} only)`
    if (m.sameDecisions) notes.push(`${m.method}: same decisions; only timing differs`)
    let first = true
    for (const [metric, { label, digits }] of Object.entries(METRIC_LABELS) as [DiffMetric, { label: string; digits: number }][]) {
      const { a, b, delta } = m.metrics[metric]
      if ([a, b].every((v) => v === null || v === 0)) continue
      if (m.method === 'ar' && metric === 'speedup') continue
      const cell = (v: number | null) => (digits === 0 ? formatNumber(v) : formatFixed(v, digits))
      const timed = (TIMED_METRICS as readonly string[]).includes(metric) ? m.timed[metric as TimedMetric] : null
      rows.push([first ? name : '', label, cell(a), cell(b), signed(delta, digits), change(a, b), precision(metric, timed, digits, m.inA && m.inB)])
      first = false
    }
  }
  const metrics =
    rows.length === 0 ? 'no metrics in either run' : formatTable(['method', 'metric', `run ${diff.a}`, `run ${diff.b}`, 'Δ', 'change', 'Δ of medians [95% CI]'], rows)
  const differ = settings.length === 0 ? 'same settings' : settings.length === 1 ? '1 setting differs' : `${settings.length} settings differ`
  if (!diff.speedComparable)
    notes.unshift('speed NOT comparable: one run used synthetic acceptance (see syntheticAcceptance above), so tokens/s and speedups measure different things')
  return [`run ${diff.a} vs run ${diff.b}: ${differ}`, config, '', metrics, ...notes].join('\n')
}

/** The diff's last column: the interval of a timed difference, "exact" for counts; nothing for one-sided rows. */
function precision(metric: DiffMetric, timed: TimedDifference | null, digits: number, inBoth: boolean): string {
  if (!inBoth) return ''
  if (timed) return noiseText(timed, digits)
  return metric === 'overheadPerStepMs' ? '–' : 'exact'
}

/** "+4.1 [+1.2–+7.3]", or "within noise [−2.0–+3.1]" when the interval of the difference holds 0. */
function noiseText(timed: TimedDifference, digits: number): string {
  const d = timed.difference
  if (!d) return '–'
  const range = `[${signed(d.low, digits)}–${signed(d.high, digits)}]`
  return timed.withinNoise ? `within noise ${range}` : `${signed(d.median, digits)} ${range}`
}

/** Three or more runs side by side: one column per run, each value with its delta from the first run. */
export function formatDiffMany(diff: RunsDiff): string {
  const runs = diff.runs.map((id) => `run ${id}`)
  const settings = diff.configDifferences.filter((d) => !/^modelFingerprints\.\d+\.path$/.test(d.key))
  const config = settings.length === 0 ? 'configs are identical' : formatTable(['setting', ...runs], settings.map((d) => [d.key, ...d.values.map(settingText)]))
  const rows: string[][] = []
  const notes: string[] = []
  for (const m of diff.methods) {
    if (m.sameDecisions) notes.push(`${m.method}: same decisions in every run that has it; only timing differs`)
    let first = true
    for (const [metric, { label, digits }] of Object.entries(METRIC_LABELS) as [DiffMetric, { label: string; digits: number }][]) {
      const { values, deltas } = m.metrics[metric]
      if (values.every((v) => v === null || v === 0)) continue
      if (m.method === 'ar' && metric === 'speedup') continue
      const cell = (v: number | null) => (digits === 0 ? formatNumber(v) : formatFixed(v, digits))
      rows.push([first ? m.method : '', label, ...values.map((v, i) => (i === 0 || v === null ? cell(v) : `${cell(v)} (${signed(deltas[i], digits)})`))])
      first = false
    }
  }
  const metrics = rows.length === 0 ? 'no metrics in any run' : formatTable(['method', 'metric', ...runs], rows)
  if (!diff.speedComparable) notes.unshift('speed NOT comparable: the runs differ in synthetic acceptance, so tokens/s and speedups measure different things')
  const differ = settings.length === 0 ? 'same settings' : settings.length === 1 ? '1 setting differs' : `${settings.length} settings differ`
  return [`${runs.join(' vs ')}: ${differ}; (Δ) is the change from run ${diff.runs[0]}`, config, '', metrics, ...notes].join('\n')
}
