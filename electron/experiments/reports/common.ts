/** Pieces every suite report uses: table/column constructors, the setup block, method labels. */
import path from 'node:path'
import type { MethodSummary } from '../../api/runs'
import { describeRunThreads } from '../../api/thread-summary'
import type { SuiteDefinition } from '../suites'
import type { SuiteData } from './data'
import type { IntervalValue, ReportChart, ReportTable, TableColumn, TableValue } from './model'

export const col = {
  text: (label: string): TableColumn => ({ label, format: 'text' }),
  num: (label: string, digits = 2): TableColumn => ({ label, format: 'number', digits }),
  int: (label: string): TableColumn => ({ label, format: 'integer' }),
  x: (label: string, digits = 2): TableColumn => ({ label, format: 'speedup', digits }),
  pct: (label: string, digits = 2): TableColumn => ({ label, format: 'percent', digits }),
  ratio: (label: string, digits = 3): TableColumn => ({ label, format: 'ratio', digits })
}

/**
 * A method's speedup / tokens/s as a report cell: the median with its 95 % interval when the run timed more than one
 * (prompt, repeat), else the plain value; null when the method is missing.
 */
export function speedupCell(m: MethodSummary | null | undefined): IntervalValue | number | null {
  if (!m) return null
  if (m.method === 'ar' || !m.speedupInterval || m.speedupInterval.cells < 2) return m.speedup
  return m.speedupInterval
}
export function throughputCell(m: MethodSummary | null | undefined): IntervalValue | number | null {
  if (!m) return null
  return m.tokensPerSecondInterval && m.tokensPerSecondInterval.cells > 1 ? m.tokensPerSecondInterval : m.tokensPerSecond
}

export function table(id: string, title: string, columns: TableColumn[], rows: TableValue[][], caption?: string): ReportTable {
  return { kind: 'table', id, title, columns, rows, caption }
}

export function chart(init: Omit<ReportChart, 'kind'>): ReportChart {
  return { kind: 'chart', ...init }
}

export const METHOD_LABELS: Record<string, string> = {
  ar: 'ar (target alone)',
  sd: 'sd (constant γ)',
  'sd-heuristic': 'HF heuristic',
  svip: 'SVIP',
  'self-verify': 'self-verify',
  'pre-verify': 'pre-verify',
  'pre-self-verify': 'pre + self-verify',
  hsddw: 'HSDDW',
  'hier-chen': 'hier-chen',
  'adaptive-analytic': 'analytic (Eq 1)',
  'adaptive-fsm': 'FSM',
  'adaptive-cache-fsm': 'cache FSM',
  'adaptive-rl': 'Q-learning',
  beam: 'beam sampling',
  dsbd: 'DSBD',
  'dsbd-1beam': 'DSBD (one beam kept)'
}

export const label = (method: string): string => METHOD_LABELS[method] ?? method

/** Models, decoding settings, datasets and grid of a suite run, from its stored options and plan. */
export function setupRows(data: SuiteData, suite: SuiteDefinition): [string, string][] {
  const { options, plan } = data.suiteRun
  const fingerprint = (file: string | null) => {
    if (!file) return '–'
    const f = options.fingerprints.find((p) => p.path === file)
    return f ? `${file} (${(f.sizeBytes / 1e6).toFixed(1)} MB, ${f.fingerprint})` : file
  }
  const samplings = [...new Set(plan.map((c) => `temperature ${c.config.sampling.temperature}, top-k ${c.config.sampling.topK}, top-p ${c.config.sampling.topP}`))]
  const datasets = [...new Map(plan.map((c) => [c.dataset.label, c])).values()].map((c) => {
    const source = c.dataset.builtin ? `built-in '${c.dataset.builtin}'` : path.basename(c.config.prompts.file ?? '')
    const skipped = c.skippedTooLong > 0 ? `, ${c.skippedTooLong} passed over (too long for the context)` : ''
    return `${c.dataset.label}: ${source}, ${c.promptCount} prompt(s)${c.dataset.perCategory ? ` (≤ ${c.dataset.perCategory} per category)` : ''}${skipped}`
  })
  const lengths = [...new Set(plan.map((c) => c.maxTokens))].sort((a, b) => a - b)
  const machine = options.machine
  // The threads per phase as the cells' runs recorded them (runs before per-phase threads record one count).
  const recorded = [...new Set([...data.cells.values()].map((c) => describeRunThreads(c.report.config)))]
  const threads =
    recorded.length > 0 ? `threads: ${recorded.join(' / ')}` : options.threads === null ? 'threads: measured at load' : `${options.threads} thread(s) per model`
  return [
    ['target M_p', fingerprint(options.models.target)],
    ['mid M_q2', fingerprint(options.models.mid)],
    ['draft M_q1', fingerprint(options.models.draft)],
    ['sampling', samplings.join('; ')],
    ['tokens per prompt', lengths.join(', ')],
    ['datasets', datasets.join('; ')],
    ['seed', String(options.seed)],
    ['grid', `${plan.length} cells (${data.cells.size} finished)${options.quick ? ', --quick' : ''}; runs ${[...data.cells.values()].map((c) => c.runId).join(', ') || '–'}`],
    ['machine', machine ? `${machine.cpuModel}, ${machine.cpus} cores, ${machine.platform}, Node ${machine.node}, ${threads}` : '–'],
    ['paper', suite.paper ? `${suite.paper.title} (../shared/papers/${suite.paper.file})` : suite.id === 'smoke' ? 'none (smoke test)' : 'none']
  ]
}

/** Equal-width histogram of values over [0, max], as shares of the values (so two sets of different size compare). */
export function histogram(values: readonly number[], max: number, bins = 20): { x: number; y: number }[] {
  const width = max > 0 ? max / bins : 1 / bins
  const counts = new Array<number>(bins).fill(0)
  for (const v of values) counts[Math.min(bins - 1, Math.max(0, Math.floor(v / width)))] += 1
  const total = values.length
  return counts.map((c, i) => ({ x: i * width, y: total > 0 ? c / total : 0 }))
}
