/**
 * The report of one run, as suites have theirs: its setup, the per-method metrics with their intervals, and each
 * prompt's output — as Markdown and as one self-contained HTML file (the suite reports' stylesheet, no script).
 * `speclab show RUN --format md|html` prints it; the app's Runs screen downloads it. Built from the stored run
 * (api/runs-service.ts buildRunReport) and its prompt results, so it can be re-rendered at any time.
 */
import type { RunReport, RunSummary } from '../../api/runs'
import { storedAdvice, type StoredAdvice } from '../advice-result'
import { describeRunThreads } from '../../api/thread-summary'
import { escapeXml } from './format'
import type { ReportTable } from './model'
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

/** Which cost curve priced the llama-server rows (experiments/advise-server-pricing.ts). */
function pricingCaption(advice: StoredAdvice): string {
  if (advice.llamaServerNote) return ` ${advice.llamaServerNote}.`
  return advice.candidates.some((c) => c.pricedWith === 'llama-server') ? " llama-server rows predicted with llama-server's own measured costs (the same replayed rounds)." : ''
}

function adviceTable(advice: StoredAdvice): ReportTable {
  return {
    kind: 'table',
    id: 'advice',
    title: 'Advice: predicted beside measured',
    columns: [
      { label: 'candidate', format: 'text' },
      { label: 'draft', format: 'text' },
      { label: 'predicted tokens/s', format: 'number', digits: 1 },
      { label: 'predicted speedup', format: 'number' },
      { label: 'measured tokens/s [95% CI]', format: 'number', digits: 1 },
      { label: 'measured speedup [95% CI]', format: 'speedup' },
      { label: 'not replayable', format: 'text' }
    ],
    rows: advice.candidates.map((c) => [
      c.label ?? [c.method, `γ=${c.gamma}`, ...Object.entries(c.params).map(([k, v]) => `${k}=${v}`)].join(' '),
      c.draft ?? '—',
      c.predicted?.tokensPerSecond ?? null,
      c.predicted?.speedup ?? null,
      c.measured?.tokensPerSecond ?? null,
      c.measured?.speedup ?? null,
      c.error ?? ''
    ]),
    caption: `Predicted from one ${advice.mode === 'replayed' ? 'replayed (greedy)' : 'expected-value (sampling)'} trace of ${advice.prompts} prompts, ${advice.tokens} tokens; measured in this run, interleaved, ${advice.repeats} repeats.${pricingCaption(advice)}`
  }
}

function metricsTable(report: RunReport): ReportTable {
  return {
    kind: 'table',
    id: 'metrics',
    title: 'Per-method metrics',
    columns: [
      { label: 'method', format: 'text' },
      { label: 'prompts', format: 'integer' },
      { label: 'output tokens', format: 'integer' },
      { label: 'tokens/s [95% CI]', format: 'number', digits: 1 },
      { label: 'speedup vs ar [95% CI]', format: 'speedup' },
      { label: 'acceptance', format: 'ratio' },
      { label: 'mean accepted', format: 'number' },
      { label: 'σ', format: 'ratio' },
      { label: 'η', format: 'ratio' },
      { label: 'target calls', format: 'integer' }
    ],
    rows: report.methods.map((m) => [
      m.method,
      m.prompts,
      m.outputTokens,
      m.tokensPerSecondInterval ?? m.tokensPerSecond,
      m.method === 'ar' ? m.speedup : (m.speedupInterval ?? m.speedup),
      m.acceptanceRate,
      m.meanAcceptedLength,
      m.sigma,
      m.eta,
      m.targetCalls
    ]),
    caption: 'Timed values: the median over (prompt, repeat) with its 95 % bootstrap interval.'
  }
}

function outputsTable(results: readonly ReportedResult[]): ReportTable {
  const clip = (text: string) => (text.length > OUTPUT_CHARS ? `${text.slice(0, OUTPUT_CHARS)}…` : text)
  return {
    kind: 'table',
    id: 'outputs',
    title: 'Per-prompt outputs',
    columns: [
      { label: '#', format: 'integer' },
      { label: 'method', format: 'text' },
      { label: 'status', format: 'text' },
      { label: 'tokens', format: 'integer' },
      { label: 'ms', format: 'number', digits: 0 },
      { label: 'prompt', format: 'text' },
      { label: 'output', format: 'text' }
    ],
    rows: results.map((r) => [r.promptIndex + 1, r.method, r.status, r.outputCount, r.wallMs, clip(r.promptText), clip(r.outputText)])
  }
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
    ...markdownTable(doc.metrics),
    ...(doc.advice ? markdownTable(doc.advice) : []),
    ...markdownTable(doc.outputs)
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
    `<section id="metrics-section"><h2>${escapeXml(doc.metrics.title)}</h2>${renderTable(doc.metrics)}</section>` +
    (doc.advice ? `<section id="advice-section"><h2>${escapeXml(doc.advice.title)}</h2>${renderTable(doc.advice)}</section>` : '') +
    `<section id="outputs-section"><h2>${escapeXml(doc.outputs.title)}</h2>${renderTable(doc.outputs)}</section>` +
    `</main><footer><p class="meta">Generated by SpecLab from the stored run (speclab show ${doc.runId} --format html re-renders it).</p></footer></body></html>\n`
  )
}
