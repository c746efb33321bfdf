/**
 * The svip report: SVIP Table 1 (speedup per category, temperature 0), Figure 5 (draft length, accepted length and
 * acceptance per category) and Table 2 (speedup across generation lengths, temperature 1) from the cells
 *   table1/<dataset>/base   ar, sd (γ = 5), sd-heuristic (heuristic.maxDraft = 40, §3.1)
 *   table1/<dataset>/h=<h>  ar, svip with svip.h = h (svip.maxDraft = 40)
 *   table2/L=<L>            ar, sd, sd-heuristic, svip at --max-tokens L (both capped at 40)
 * Every speedup is against the ar of the same run over the same prompts (per category: the category's prompts).
 */
import { SVIP_H_MAIN } from '../../suites'
import { categoriesOf, draftLengths, methodOf, stepsOf, summaryWhere, type CellData, type SuiteData } from '../data'
import { chart, col, speedupCell, table } from '../common'
import type { ReportChart, ReportSection } from '../model'
import { SVIP_FIGURE5, SVIP_TABLE1, SVIP_TABLE2 } from '../papers'

/** MT-Bench's eight categories, which Spec-Bench (and SVIP Table 1) report as one "MT-Bench" column. */
const MT_BENCH_CATEGORIES = new Set(['writing', 'roleplay', 'reasoning', 'math', 'coding', 'extraction', 'stem', 'humanities'])

/** The column a prompt counts in: Spec-Bench groups MT-Bench's categories; any other dataset keeps its own. */
export function columnOf(category: string | null, specBench: boolean): string | null {
  if (category === null) return null
  return specBench && MT_BENCH_CATEGORIES.has(category) ? 'MT-Bench' : category
}

interface Row {
  name: string
  cell: CellData | undefined
  method: string
  h: number | null
}

export function svipReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const plan = data.suiteRun.plan
  const datasets = [...new Map(plan.filter((c) => c.key.startsWith('table1/')).map((c) => [c.dataset.id, c.dataset.label])).entries()]
  const table1Tables = []
  const fig5Charts: ReportChart[] = []
  for (const [id, name] of datasets) {
    const base = data.cells.get(`table1/${id}/base`)
    const hs = plan.filter((c) => c.key.startsWith(`table1/${id}/h=`)).map((c) => Number(c.labels.h))
    const rows: Row[] = [
      { name: 'Const. (γ = 5)', cell: base, method: 'sd', h: null },
      { name: 'Heuristics (HF)', cell: base, method: 'sd-heuristic', h: null },
      ...hs.map((h) => ({ name: `SVIP h = ${h}`, cell: data.cells.get(`table1/${id}/h=${h}`), method: 'svip', h }))
    ]
    const specBench = plan.find((c) => c.key.startsWith(`table1/${id}/`))?.dataset.shared === 'spec_bench.jsonl'
    const inColumn = (c: string) => (x: { category: string | null }) => columnOf(x.category, specBench) === c
    const categories = [...new Set(categoriesOf(base ?? rows.find((r) => r.cell)?.cell).map((c) => columnOf(c, specBench)!))]
    table1Tables.push(
      table(
        `table1-${id}`,
        `Speedup over ar per category, ${name} (temperature 0)`,
        [col.text('method'), ...categories.map((c) => col.x(c)), col.x('all prompts')],
        rows.map((r) => [r.name, ...categories.map((c) => speedupCell(summaryWhere(r.cell, r.method, inColumn(c)))), speedupCell(methodOf(r.cell, r.method))]),
        'Per category: speedup over the category\'s prompts against ar on the same prompts in the same run; "all prompts": over every prompt (the paper\'s "Avg." averages the categories instead). Medians over prompts × repeats, each paired with ar on the same prompt and repeat, with 95 % intervals.' +
          (specBench ? ' Spec-Bench\'s eight MT-Bench categories form one MT-Bench column, as in the paper.' : '')
      )
    )
    // Figure 5: SVIP at the paper's h (or the first h of the grid).
    const svipRow = rows.find((r) => r.h === SVIP_H_MAIN) ?? rows.find((r) => r.h !== null)
    const figureRows = [rows[0], rows[1], ...(svipRow ? [svipRow] : [])]
    const lengths = (r: Row, c: string) => draftLengths(stepsOf(r.cell, r.method, inColumn(c)))
    for (const [key, title, axis, pick] of [
      ['draft', 'Average draft length per round', 'draft tokens per round', (v: ReturnType<typeof draftLengths>) => v.draftLength],
      ['accepted', 'Average accepted draft length per round', 'accepted tokens per round', (v: ReturnType<typeof draftLengths>) => v.acceptedLength],
      ['acceptance', 'Acceptance rate', 'accepted / drafted', (v: ReturnType<typeof draftLengths>) => v.acceptance]
    ] as const)
      fig5Charts.push(
        chart({
          id: `fig5-${id}-${key}`,
          title: `${title}, ${name}`,
          x: { label: 'category', type: 'band', categories },
          y: { label: axis, type: 'linear' },
          series: figureRows.map((r) => ({
            name: r.name,
            style: 'bar' as const,
            points: categories.flatMap((c) => {
              const v = pick(lengths(r, c))
              return v === null ? [] : [{ x: c, y: v }]
            })
          }))
        })
      )
  }

  const lengthsPlanned = plan.filter((c) => c.key.startsWith('table2/')).map((c) => Number(c.labels.L))
  const lengthCell = (L: number) => data.cells.get(`table2/L=${L}`)
  const table2Methods: [string, string][] = [
    ['Const. (γ = 5)', 'sd'],
    ['Heuristics (HF)', 'sd-heuristic'],
    [`SVIP h = ${SVIP_H_MAIN}`, 'svip']
  ]
  const table2 = table(
    'table2',
    `Speedup over ar by generation length (temperature 1, ${plan.find((c) => c.key.startsWith('table2/'))?.dataset.label ?? '–'})`,
    [col.text('method'), ...lengthsPlanned.map((L) => col.x(String(L)))],
    table2Methods.map(([name, method]) => [name, ...lengthsPlanned.map((L) => speedupCell(methodOf(lengthCell(L), method)))]),
    'Columns: --max-tokens of the cell; the same prompts at every length (those that fit the context with the longest). Medians over prompts × repeats (paired with ar) with 95 % intervals.'
  )
  const table2Chart = chart({
    id: 'table2-chart',
    title: 'Speedup across generation lengths',
    x: { label: 'generated tokens', type: 'linear' },
    y: { label: 'speedup (×)', type: 'linear' },
    reference: { y: 1, label: 'ar = 1' },
    series: table2Methods.map(([name, method]) => ({
      name,
      style: 'line+points' as const,
      points: lengthsPlanned.flatMap((L) => {
        const s = methodOf(lengthCell(L), method)?.speedup
        return s === null || s === undefined ? [] : [{ x: L, y: s }]
      })
    }))
  })

  return {
    sections: [
      { id: 'table1', title: 'Table 1: speedup per category (temperature 0)', measured: table1Tables, paper: SVIP_TABLE1, notes: [] },
      {
        id: 'fig5',
        title: 'Figure 5: draft length, accepted length and acceptance per category',
        measured: fig5Charts,
        paper: SVIP_FIGURE5,
        notes: ['Per verification round: draft length = tokens proposed, accepted length = tokens accepted; acceptance = accepted / proposed.']
      },
      { id: 'table2', title: 'Table 2: speedup across generation lengths (temperature 1)', measured: [table2, table2Chart], paper: SVIP_TABLE2, notes: [] }
    ],
    notes: [
      'SVIP uses the authors\' entropy scale svip.c = 0.15 (the h values of §3.1 are for it) and the draft cap 40 of §3.1; the HF heuristic starts at γ = 5.'
    ]
  }
}
