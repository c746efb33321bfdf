/**
 * The model-free report: model-free drafting per task category, from the cells
 *   defaults/<dataset>    MODEL_FREE_METHODS (ar, sd, pld, ngram-simple, ngram-map-k, ngram-map-k4v, ngram-mod,
 *                         nlc-lookup, sd+ngram and MODEL_FREE_ADDED_METHODS) at their defaults, γ = 5
 *   short-keys/<dataset>  ar and the n-gram methods with MODEL_FREE_SHORT_KEYS (n = 3, m = 8; ngram-mod n = 4)
 * Per dataset: speedup over ar per category (svip's Table 1 layout, Spec-Bench's MT-Bench categories as one column),
 * the detail table (acceptance, mean accepted length, drafting rounds, tok/s, speedup per method and category), a
 * bar chart of the defaults' speedups, and which method wins where. Every speedup is against the ar of the same run
 * over the same prompts (per category: the category's prompts).
 */
import type { MethodSummary } from '../../../api/runs'
import { findMethod } from '../../../engine/methods/prepare'
import { chart, col, speedupCell, table, throughputCell } from '../common'
import { methodOf, summaryWhere, type CellData, type ResultRecord, type SuiteData } from '../data'
import type { IntervalValue, ReportChart, ReportSection, ReportTable, TableValue } from '../model'
import { columnOf } from './svip'

const ALL = 'all prompts'

interface Row {
  cell: CellData
  method: string
  /** 'defaults' or 'short keys' (the cell's settings label) and the method's resolved parameters. */
  settings: string
}

/** The method's own resolved parameters (its catalog namespace) and γ where it has one: "γ 5; n 3, m 8". */
function settingsOf(cell: CellData, method: string): string {
  const definition = findMethod(method)
  const parts: string[] = []
  if (definition?.gamma) parts.push(`γ ${cell.report.config.gamma}`)
  const namespace = definition?.namespace
  if (namespace) {
    // (An empty path parameter — ngram-cache without a static file — says nothing.)
    const own = Object.entries(cell.report.config.params).filter(([key, value]) => key.startsWith(`${namespace}.`) && value !== '')
    if (own.length > 0) parts.push(own.map(([key, value]) => `${key.slice(namespace.length + 1)} ${value}`).join(', '))
  }
  const label = String(cell.cell.labels.settings ?? cell.cell.key.split('/')[0])
  return parts.length > 0 ? `${label}: ${parts.join('; ')}` : label
}

/** Speedup as one number to rank by: the median of the paired speedups where there is an interval. */
const speedupValue = (m: MethodSummary | null): number | null => {
  const v = speedupCell(m)
  return v === null ? null : typeof v === 'number' ? v : v.median
}

/** Faster / tie / slower than ar: the 95 % interval of the paired speedups against 1; one timed decode has no interval. */
function verdict(m: MethodSummary | null): string {
  const v = speedupCell(m)
  if (v === null) return '–'
  if (typeof v === 'number') return 'no interval (one timing)'
  const { low, high } = v as IntervalValue
  return low > 1 ? 'faster' : high < 1 ? 'slower' : 'tie (interval spans 1)'
}

/** Share of the method's decode steps that proposed something (a lookup without a match decodes one token alone). */
function draftingShare(m: MethodSummary | null): number | null {
  if (!m || m.method === 'ar' || m.steps === 0) return null
  return m.gammaTrajectory.reduce((n, rounds) => n + rounds.length, 0) / m.steps
}

export function modelFreeReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const plan = data.suiteRun.plan
  const datasets = [...new Map(plan.map((c) => [c.dataset.id, c.dataset.label])).entries()]
  const speedupTables: ReportTable[] = []
  const detailTables: ReportTable[] = []
  const winnerTables: ReportTable[] = []
  const charts: ReportChart[] = []

  for (const [id, name] of datasets) {
    const planned = plan.filter((c) => c.dataset.id === id)
    const cells = planned.flatMap((c) => data.cells.get(c.key) ?? [])
    if (cells.length === 0) continue
    const specBench = planned[0].dataset.shared === 'spec_bench.jsonl'
    const rows: Row[] = cells.flatMap((cell) => cell.cell.methods.filter((m) => m !== 'ar').map((method) => ({ cell, method, settings: settingsOf(cell, method) })))
    const categories = [...new Set(cells.flatMap((c) => c.results.map((r) => columnOf(r.category, specBench)).filter((c): c is string => c !== null)))]
    const columns = [...categories, ALL]
    const summary = (cell: CellData, method: string, column: string): MethodSummary | null =>
      column === ALL ? methodOf(cell, method) : summaryWhere(cell, method, (r: ResultRecord) => columnOf(r.category, specBench) === column)

    speedupTables.push(
      table(
        `speedup-${id}`,
        `Speedup over ar per category, ${name} (temperature 0)`,
        [col.text('method'), col.text('settings'), ...columns.map((c) => col.x(c))],
        rows.map((r) => [r.method, r.settings, ...columns.map((c) => speedupCell(summary(r.cell, r.method, c)))]),
        'Each cell against ar on the same prompts in the same run (per category: the category\'s prompts). Medians over prompts × repeats, each paired with ar on the same prompt and repeat, with 95 % intervals.' +
          (specBench ? " Spec-Bench's eight MT-Bench categories form one MT-Bench column." : '')
      )
    )

    const arCell = cells[0]
    const detailRows: TableValue[][] = []
    for (const column of columns) {
      const ar = summary(arCell, 'ar', column)
      if (ar) detailRows.push([column, 'ar', 'baseline', null, null, null, throughputCell(ar), 1])
      for (const r of rows) {
        const m = summary(r.cell, r.method, column)
        if (m) detailRows.push([column, r.method, r.settings, m.acceptanceRate, m.meanAcceptedLength, draftingShare(m), throughputCell(m), speedupCell(m)])
      }
    }
    detailTables.push(
      table(
        `categories-${id}`,
        `Per method and category, ${name}`,
        [col.text('category'), col.text('method'), col.text('settings'), col.ratio('acceptance'), col.num('mean accepted'), col.pct('drafting rounds (%)', 1), col.num('tok/s', 1), col.x('speedup')],
        detailRows,
        'acceptance = accepted / proposed draft tokens; mean accepted = accepted tokens per round that drafted; drafting rounds = share of decode steps that proposed anything (a lookup without a match decodes one token with the target alone; the draft-model methods always draft). tok/s and speedup: medians over prompts × repeats with 95 % intervals; ar (baseline) is the defaults cell\'s ar.'
      )
    )

    const defaults = rows.filter((r) => r.cell === cells[0])
    charts.push(
      chart({
        id: `speedup-chart-${id}`,
        title: `Speedup over ar per category, ${name}, ${String(cells[0].cell.labels.settings ?? 'defaults')}`,
        x: { label: 'category', type: 'band', categories: columns },
        y: { label: 'speedup (×)', type: 'linear' },
        reference: { y: 1, label: 'ar = 1' },
        series: defaults.map((r) => ({
          name: r.method,
          style: 'bar' as const,
          points: columns.flatMap((c) => {
            const v = speedupValue(summary(r.cell, r.method, c))
            return v === null ? [] : [{ x: c, y: v }]
          })
        }))
      })
    )

    const needsDraft = (method: string) => findMethod(method)?.needs.draft ?? false
    const best = (candidates: Row[], column: string) => {
      let top: { row: Row; m: MethodSummary; v: number } | null = null
      for (const row of candidates) {
        const m = summary(row.cell, row.method, column)
        const v = speedupValue(m)
        if (m && v !== null && (top === null || v > top.v)) top = { row, m, v }
      }
      return top
    }
    const rowName = (r: Row) => `${r.method} (${String(r.cell.cell.labels.settings ?? r.cell.cell.key.split('/')[0])})`
    winnerTables.push(
      table(
        `winners-${id}`,
        `Which method wins where, ${name}`,
        [col.text('category'), col.text('fastest'), col.x('speedup'), col.text('fastest without a draft model'), col.x('its speedup'), col.text('vs ar'), col.text('highest acceptance without a draft model'), col.ratio('acceptance')],
        columns.map((column) => {
          const fastest = best(rows, column)
          const free = best(rows.filter((r) => !needsDraft(r.method)), column)
          let accepting: { row: Row; rate: number } | null = null
          for (const row of rows.filter((r) => !needsDraft(r.method))) {
            const rate = summary(row.cell, row.method, column)?.acceptanceRate ?? null
            if (rate !== null && (accepting === null || rate > accepting.rate)) accepting = { row, rate }
          }
          return [
            column,
            fastest ? rowName(fastest.row) : '–',
            fastest ? speedupCell(fastest.m) : null,
            free ? rowName(free.row) : '–',
            free ? speedupCell(free.m) : null,
            free ? verdict(free.m) : '–',
            accepting ? rowName(accepting.row) : '–',
            accepting?.rate ?? null
          ]
        }),
        'Fastest: the highest median speedup over ar among every method and setting of the dataset (sd, sd+ngram, sd-tree and sd-tree+ngram use the stories260K draft model). "vs ar": the 95 % interval of the fastest model-free method\'s paired speedups against 1 (one timed decode has none). Acceptance alone does not make a method fast: a lookup that drafts in few rounds can accept most of what it drafts and still be no faster.'
      )
    )
  }

  return {
    sections: [
      { id: 'speedup', title: 'Speedup over ar per category', measured: speedupTables, paper: null, notes: [] },
      { id: 'speedup-chart', title: 'Speedup over ar per category, every method at its defaults', measured: charts, paper: null, notes: [] },
      {
        id: 'categories',
        title: 'Acceptance, accepted length, tokens/s and speedup per method and category',
        measured: detailTables,
        paper: null,
        notes: []
      },
      { id: 'winners', title: 'Which method wins where', measured: winnerTables, paper: null, notes: [] }
    ],
    notes: [
      "Greedy (temperature 0), so every method's text equals ar's (nlc-lookup's too: it equals ar only when greedy); the methods differ in speed alone.",
      "Defaults are the peers' own: llama.cpp's ngram-simple / ngram-map-k / ngram-map-k4v / sd+ngram n = 12, m = 48 and ngram-mod n = 24, nMin = 48, nMax = 64 (they draft only after a long verbatim repeat); Hugging Face's pld n ≤ 2, k = γ; node-llama-cpp's InputLookupTokenPredictor. The short-keys cell runs the n-gram methods with n = 3, m = 8 (ngram-mod n = 4, nMin = 2, nMax = 8).",
      "ngram-mod's pool is shared across the prompts of a run (as llama-server shares it across slots), so its per-category rows also depend on the prompts before them; nlc-lookup verifies inside node-llama-cpp, which counts no target calls."
    ]
  }
}
