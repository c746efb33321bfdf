/**
 * The report of one run, as suites have theirs: its setup, the per-method metrics with their intervals, and each
 * prompt's output — as Markdown and as one self-contained HTML file (the suite reports' stylesheet, no script).
 * `speclab show RUN --format md|html` prints it; the app's Runs screen downloads it. Built from the stored run
 * (api/runs-service.ts buildRunReport) and its prompt results, so it can be re-rendered at any time.
 */
import { draftChain } from '../../api/advice'
import type { RunReport, RunSummary } from '../../api/runs'
import { storedAdvice, type StoredAdvice } from '../advice-result'
import { describeRunThreads } from '../../api/thread-summary'
import { escapeXml } from './format'
import type { ReportTable, TableColumn, TableValue } from './model'
import { REPORT_CSS, renderTable } from './render-html'
import { markdownTable } from './render-markdown'

/** What a prompt result contributes: the output beside its prompt. */
export interface ReportedResult {
  method: string
  promptIndex: number
  promptText: string
  status: string
  outputText: string
  outputCount: number
  wallMs: number | null
}

export interface RunReportDocument {
  runId: number
  title: string
  /** [setting, value] rows of how the run was made. */
  setup: [string, string][]
  metrics: ReportTable
  /** An advice run's candidates, predicted beside measured; null for every other run. */
  advice: ReportTable | null
  outputs: ReportTable
  notes: string[]
}

const OUTPUT_CHARS = 400

export function runReportDocument(report: RunReport, summary: RunSummary, results: readonly ReportedResult[]): RunReportDocument {
  const c = report.config
  const title = `Run ${report.runId}${summary.name ? ` — ${summary.name}` : ''}`
  const setup: [string, string][] = [
    ['Status', `${report.status}${summary.error ? ` (${summary.error})` : ''}`],
    ['Created', `${summary.createdAt}${summary.finishedAt ? ` · finished ${summary.finishedAt}` : ''}`],
    ...(summary.origin
      ? [['Imported', `${summary.origin.importedAt ?? ''} — run ${summary.origin.id} of ${summary.origin.db}${summary.origin.host ? ` on ${summary.origin.host}` : ''}`] as [string, string]]
      : []),
    ['Suite', c.suite ?? '—'],
    ['Methods', c.methods.join(', ')],
    ['Target', c.models.target],
    ...(c.models.mid ? [['Mid', c.models.mid] as [string, string]] : []),
    ...(c.models.draft ? [['Draft', c.models.draft] as [string, string]] : []),
    ['Prompts', `${c.prompts.dataset ?? c.prompts.file ?? '—'}${c.prompts.limit ? ` (first ${c.prompts.limit})` : ''}`],
    ['Decoding', `max ${c.maxTokens} tokens · temperature ${c.sampling.temperature} · top-k ${c.sampling.topK} · top-p ${c.sampling.topP} · γ ${c.gamma} · seed ${c.seed}`],
    ['Parameters', Object.keys(c.params).length > 0 ? Object.entries(c.params).map(([k, v]) => `${k}=${v}`).join(' ') : 'none'],
    ['Engine', `threads ${describeRunThreads(c)} · context ${c.contextSize}`],
    ['Repeats', String(c.repeats)],
    ...(summary.notes ? [['Notes', summary.notes] as [string, string]] : [])
  ]
  const notes: string[] = []
  if (c.syntheticAcceptance)
    notes.push(`SYNTHETIC acceptance ${c.syntheticAcceptance.join(', ')}: verification accepted draft positions with fixed probabilities, so speeds measure the engine, not the models.`)
  if (report.machine?.busy) notes.push('The machine was busy during the run (load above its cores): timings are suspect.')
  const advice = storedAdvice(report)
  if (advice?.recommendation) notes.push(recommendationNote(advice.recommendation))
  return { runId: report.runId, title, setup, metrics: metricsTable(report), advice: advice ? adviceTable(advice) : null, outputs: outputsTable(results), notes }
}

/** The advice's recommendation in one sentence, with the commands that deploy it. */
function recommendationNote(r: NonNullable<StoredAdvice['recommendation']>): string {
  const speedup = r.speedup ? ` (speedup ${r.speedup.median.toFixed(2)}× [${r.speedup.low.toFixed(2)}, ${r.speedup.high.toFixed(2)}] against ar)` : ''
  const head = r.speculate ? `Recommendation: ${r.speclabCommand}${speedup}.` : 'Recommendation: no speculation (ar).'
  const server = r.llamaServerCommand ? ` llama-server: ${r.llamaServerCommand}.` : ` llama-server: none — ${r.llamaServerNote}.`
  return `${head} ${r.reason}.${server}`
}

/** One column of a run report's table: its header and how an item of the table gives its cell. */
type Column<T> = [header: TableColumn, cell: (item: T) => TableValue]

/** A table of the report: the columns' headers, then one row per item with each column's cell. */
function itemTable<T>(id: string, title: string, columns: Column<T>[], items: readonly T[], caption?: string): ReportTable {
  return {
    kind: 'table',
    id,
    title,
    columns: columns.map(([header]) => header),
    rows: items.map((item) => columns.map(([, cell]) => cell(item))),
    ...(caption ? { caption } : {})
  }
}

const candidateName = (c: StoredAdvice['candidates'][number]) =>
  c.label ?? [c.method, `γ=${c.gamma}`, ...Object.entries(c.params).map(([k, v]) => `${k}=${v}`)].join(' ')

const ADVICE_COLUMNS: Column<StoredAdvice['candidates'][number]>[] = [
  [{ label: 'candidate', format: 'text' }, candidateName],
  [{ label: 'draft', format: 'text' }, (c) => draftChain(c) ?? '—'],
  [{ label: 'predicted tokens/s', format: 'number', digits: 1 }, (c) => c.predicted?.tokensPerSecond ?? null],
  [{ label: 'predicted speedup', format: 'number' }, (c) => c.predicted?.speedup ?? null],
  [{ label: 'measured tokens/s [95% CI]', format: 'number', digits: 1 }, (c) => c.measured?.tokensPerSecond ?? null],
  [{ label: 'measured speedup [95% CI]', format: 'speedup' }, (c) => c.measured?.speedup ?? null],
  [{ label: 'not replayable', format: 'text' }, (c) => c.error ?? '']
]

/** Which cost curve priced the llama-server rows (experiments/advise-server-pricing.ts). */
function pricingCaption(advice: StoredAdvice): string {
  if (advice.llamaServerNote) return ` ${advice.llamaServerNote}.`
  return advice.candidates.some((c) => c.pricedWith === 'llama-server') ? " llama-server rows predicted with llama-server's own measured costs (the same replayed rounds)." : ''
}

function adviceTable(advice: StoredAdvice): ReportTable {
  const trace = advice.mode === 'replayed' ? 'replayed (greedy)' : 'expected-value (sampling)'
  const caption = `Predicted from one ${trace} trace of ${advice.prompts} prompts, ${advice.tokens} tokens; measured in this run, interleaved, ${advice.repeats} repeats.${pricingCaption(advice)}`
  return itemTable('advice', 'Advice: predicted beside measured', ADVICE_COLUMNS, advice.candidates, caption)
}

const METRIC_COLUMNS: Column<RunReport['methods'][number]>[] = [
  [{ label: 'method', format: 'text' }, (m) => m.method],
  [{ label: 'prompts', format: 'integer' }, (m) => m.prompts],
  [{ label: 'output tokens', format: 'integer' }, (m) => m.outputTokens],
  [{ label: 'tokens/s [95% CI]', format: 'number', digits: 1 }, (m) => m.tokensPerSecondInterval ?? m.tokensPerSecond],
  // ar is the baseline: its speedup against itself is shown without an interval.
  [{ label: 'speedup vs ar [95% CI]', format: 'speedup' }, (m) => (m.method === 'ar' ? m.speedup : (m.speedupInterval ?? m.speedup))],
  [{ label: 'acceptance', format: 'ratio' }, (m) => m.acceptanceRate],
  [{ label: 'mean accepted', format: 'number' }, (m) => m.meanAcceptedLength],
  [{ label: 'σ', format: 'ratio' }, (m) => m.sigma],
  [{ label: 'η', format: 'ratio' }, (m) => m.eta],
  [{ label: 'target calls', format: 'integer' }, (m) => m.targetCalls]
]

function metricsTable(report: RunReport): ReportTable {
  const caption = 'Timed values: the median over (prompt, repeat) with its 95 % bootstrap interval.'
  return itemTable('metrics', 'Per-method metrics', METRIC_COLUMNS, report.methods, caption)
}

const clipOutput = (text: string) => (text.length > OUTPUT_CHARS ? `${text.slice(0, OUTPUT_CHARS)}…` : text)

const OUTPUT_COLUMNS: Column<ReportedResult>[] = [
  [{ label: '#', format: 'integer' }, (r) => r.promptIndex + 1],
  [{ label: 'method', format: 'text' }, (r) => r.method],
  [{ label: 'status', format: 'text' }, (r) => r.status],
  [{ label: 'tokens', format: 'integer' }, (r) => r.outputCount],
  [{ label: 'ms', format: 'number', digits: 0 }, (r) => r.wallMs],
  [{ label: 'prompt', format: 'text' }, (r) => clipOutput(r.promptText)],
  [{ label: 'output', format: 'text' }, (r) => clipOutput(r.outputText)]
]

function outputsTable(results: readonly ReportedResult[]): ReportTable {
  return itemTable('outputs', 'Per-prompt outputs', OUTPUT_COLUMNS, results)
}

/** The document's tables in the order both formats print them. */
function tablesOf(doc: RunReportDocument): ReportTable[] {
  return [doc.metrics, ...(doc.advice ? [doc.advice] : []), doc.outputs]
}

/** A table as an HTML section under its title (the anchor `<id>-section`). */
function htmlSection(table: ReportTable): string {
  return `<section id="${escapeXml(table.id)}-section"><h2>${escapeXml(table.title)}</h2>${renderTable(table)}</section>`
}

export function renderRunMarkdown(doc: RunReportDocument): string {
  return [
    `# ${doc.title}`,
    '',
    `_Generated by SpecLab from the stored run (speclab show ${doc.runId} --format md re-renders it)._`,
    '',
    '| setting | value |',
    '|---|---|',
    ...doc.setup.map(([k, v]) => `| ${k} | ${v.replace(/\|/g, '\\|').replace(/\n/g, ' ')} |`),
    '',
    ...doc.notes.map((n) => `> ${n}`),
    ...(doc.notes.length > 0 ? [''] : []),
    ...tablesOf(doc).flatMap(markdownTable)
  ].join('\n')
}

export function renderRunHtml(doc: RunReportDocument): string {
  const setup = doc.setup.map(([k, v]) => `<tr><td>${escapeXml(k)}</td><td>${escapeXml(v)}</td></tr>`).join('')
  const notes = doc.notes.length > 0 ? `<ul class="notes">${doc.notes.map((n) => `<li>${escapeXml(n)}</li>`).join('')}</ul>` : ''
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeXml(doc.title)}</title><style>${REPORT_CSS}</style></head><body>` +
    `<header><h1>${escapeXml(doc.title)}</h1></header><main>` +
    `<section id="setup"><h2>Setup</h2><table class="setup"><tbody>${setup}</tbody></table>${notes}</section>` +
    tablesOf(doc).map(htmlSection).join('') +
    `</main><footer><p class="meta">Generated by SpecLab from the stored run (speclab show ${doc.runId} --format html re-renders it).</p></footer></body></html>\n`
  )
}
