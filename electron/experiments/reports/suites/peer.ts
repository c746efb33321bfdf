/**
 * The peer suite's report: SpecLab's methods and llama.cpp's own server on the same prompts, models and threads.
 * Every ratio pairs the two methods' decodes of one (prompt, repeat) — decoded next to each other in the
 * interleaved schedule — and is the median of those ratios with its 95 % bootstrap interval (data.ts summaryAgainst).
 */
import { describeRunThreads } from '../../../api/thread-summary'
import type { MethodSummary } from '../../../api/runs'
import { isLlamaServerMethod } from '../../../engine/methods/catalog'
import { findMethod } from '../../../engine/methods/prepare'
import { summaryAgainst, type CellData, type SuiteData } from '../data'
import { chart, col, speedupCell, table, throughputCell } from '../common'
import type { ReportSection } from '../model'

/** The pairs the report compares (numerator, denominator), when both ran. */
const PAIRS: readonly [string, string][] = [
  ['sd', 'llama-server:draft'],
  ['sd-pmin', 'llama-server:draft'],
  ['pearl', 'llama-server:draft'],
  ['ar', 'llama-server:ar'],
  ['llama-server:draft', 'llama-server:ar']
]

const engineOf = (method: string) => {
  const definition = findMethod(method)
  return definition && isLlamaServerMethod(definition) ? 'llama.cpp' : 'SpecLab'
}

/** The method of one engine with the highest median tok/s. */
function fastest(methods: readonly MethodSummary[], engine: string): MethodSummary | null {
  const median = (m: MethodSummary) => m.tokensPerSecondInterval?.median ?? m.tokensPerSecond
  return methods.filter((m) => engineOf(m.method) === engine).reduce<MethodSummary | null>((top, m) => (top && median(top) >= median(m) ? top : m), null)
}

/** Prompts whose output text equals ar's, and the first that does not. */
function greedyAgainstAr(cell: CellData, method: string): { same: number; prompts: number; firstDifferent: number | null } {
  const reference = new Map(cell.results.filter((r) => r.method === 'ar').map((r) => [r.promptIndex, r.outcome.outputText]))
  const mine = cell.results.filter((r) => r.method === method)
  const different = mine.filter((r) => reference.get(r.promptIndex) !== r.outcome.outputText).map((r) => r.promptIndex)
  return { same: mine.length - different.length, prompts: mine.length, firstDifferent: different.length > 0 ? Math.min(...different) : null }
}

export function peerReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const cell = [...data.cells.values()].find((c) => c.cell.key.startsWith('peer/'))
  const methods = cell?.report.methods ?? []
  const summary = table(
    'summary',
    'Every method on the same prompts, models and threads (speedup vs SpecLab ar of the same run)',
    [col.text('method'), col.text('engine'), col.int('prompts'), col.int('tokens'), col.num('tok/s', 1), col.x('speedup vs ar'), col.ratio('acceptance'), col.num('mean accepted')],
    methods.map((m) => [m.method, engineOf(m.method), m.prompts, m.outputTokens, throughputCell(m), speedupCell(m), m.acceptanceRate, m.meanAcceptedLength]),
    'tok/s and speedup: medians over prompts × repeats with 95 % intervals. llama-server counts its own drafted and accepted tokens per prompt (acceptance from those totals; no acceptance per position).'
  )
  const present = new Set(methods.map((m) => m.method))
  const ours = fastest(methods, 'SpecLab')
  const theirs = fastest(methods, 'llama.cpp')
  const pairs: [string, string, string][] = PAIRS.filter(([a, b]) => present.has(a) && present.has(b)).map(([a, b]) => [`${a} / ${b}`, a, b])
  if (ours && theirs) pairs.push([`fastest SpecLab (${ours.method}) / fastest llama-server (${theirs.method})`, ours.method, theirs.method])
  const ratios = table(
    'ratios',
    'SpecLab against llama-server: ratio of tokens/s, paired per (prompt, repeat)',
    [col.text('comparison'), col.x('ratio')],
    pairs.map(([name, a, b]) => [name, speedupCell(summaryAgainst(cell, a, b))]),
    'Median of the per-(prompt, repeat) ratios with a 95 % hierarchical bootstrap interval; "fastest" is chosen by median tok/s, and its interval does not account for that choice.'
  )
  const greedyRows = cell && cell.report.config.sampling.temperature === 0 ? methods.filter((m) => m.method !== 'ar').map((m) => ({ method: m.method, ...greedyAgainstAr(cell, m.method) })) : []
  const greedy = table(
    'greedy',
    "Greedy outputs equal to SpecLab's ar (same llama.cpp: they must be)",
    [col.text('method'), col.int('same'), col.int('prompts'), col.text('first different prompt')],
    greedyRows.map((g) => [g.method, g.same, g.prompts, g.firstDifferent === null ? '–' : String(g.firstDifferent)])
  )
  const throughput = chart({
    id: 'throughput',
    title: 'Tokens per second (median over prompts × repeats)',
    x: { label: 'method', type: 'band', categories: methods.map((m) => m.method) },
    y: { label: 'tokens/s', type: 'linear' },
    series: [{ name: 'tok/s', style: 'bar', points: methods.map((m) => ({ x: m.method, y: m.tokensPerSecondInterval?.median ?? m.tokensPerSecond })) }]
  })
  const threads = cell ? `Threads of both engines: ${describeRunThreads(cell.report.config)}.` : ''
  return {
    sections: [
      { id: 'summary', title: 'Every method on the same prompts and threads', measured: [summary], paper: null, notes: threads ? [threads] : [] },
      { id: 'throughput', title: 'Tokens per second per method', measured: [throughput], paper: null, notes: [] },
      {
        id: 'ratios',
        title: 'SpecLab against llama-server, paired per prompt and repeat',
        measured: [ratios],
        paper: null,
        notes: ['Each engine at other thread settings (and at its best): `speclab peer-bench`.']
      },
      {
        id: 'greedy',
        title: "Greedy outputs against SpecLab's ar",
        measured: [greedy],
        paper: null,
        notes: greedyRows.length === 0 ? ['Not greedy (temperature > 0): outputs are samples and differ by design.'] : []
      }
    ],
    notes: []
  }
}
