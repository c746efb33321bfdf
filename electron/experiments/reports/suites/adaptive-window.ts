/**
 * The adaptive-window report (004, on-the-fly adaptation): Figure 3 (throughput and acceptance of fixed γ and the
 * four adaptive policies across γ / γ_max), Table 12 (history length of the analytic policy × γ_max) and Table 2
 * (adaptive draft-model selection vs each fixed draft) from the cells
 *   fig3/<dataset>/g=<γ>                     ar, sd, adaptive-analytic, adaptive-fsm, adaptive-cache-fsm, adaptive-rl
 *   table12/<dataset>/history=<h>/g=<γmax>   adaptive-analytic with analytic.history = h
 *   select/<dataset>/{q1,q2,auto}            ar, sd with M_q1, with M_q2, with per-prompt selection (004 §5)
 */
import path from 'node:path'
import { draftLengths, methodOf, stepsOf, type SuiteData } from '../data'
import { chart, col, label, speedupCell, table, throughputCell } from '../common'
import type { ReportChart, ReportSection, ReportTable, TableValue } from '../model'
import { OTF_FIGURE3, OTF_TABLE12, OTF_TABLE2 } from '../papers'

const POLICIES = ['sd', 'adaptive-analytic', 'adaptive-fsm', 'adaptive-cache-fsm', 'adaptive-rl']

export function adaptiveWindowReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const plan = data.suiteRun.plan
  const datasetsOf = (prefix: string) => [...new Map(plan.filter((c) => c.key.startsWith(prefix)).map((c) => [c.dataset.id, c.dataset.label])).entries()]

  // Figure 3.
  const fig3: (ReportChart | ReportTable)[] = []
  const fig3Rows: TableValue[][] = []
  for (const [id, name] of datasetsOf('fig3/')) {
    const gammas = plan.filter((c) => c.key.startsWith(`fig3/${id}/`)).map((c) => c.gamma)
    const at = (gamma: number) => data.cells.get(`fig3/${id}/g=${gamma}`)
    const series = (pick: (method: string, gamma: number) => number | null) =>
      POLICIES.map((method) => ({
        name: label(method),
        style: 'line+points' as const,
        points: gammas.flatMap((g) => {
          const v = pick(method, g)
          return v === null ? [] : [{ x: g, y: v }]
        })
      }))
    const tps = (method: string, g: number) => methodOf(at(g), method)?.tokensPerSecond ?? null
    fig3.push(
      chart({
        id: `fig3-${id}-throughput`,
        title: `Throughput, ${name}`,
        x: { label: 'γ (sd) / γ_max (adaptive)', type: 'linear', integer: true },
        y: { label: 'tokens/s', type: 'linear' },
        series: [...series(tps), { name: 'ar (target alone)', style: 'dashed', points: gammas.flatMap((g) => (tps('ar', g) === null ? [] : [{ x: g, y: tps('ar', g)! }])) }]
      }),
      chart({
        id: `fig3-${id}-acceptance`,
        title: `Acceptance rate, ${name}`,
        x: { label: 'γ (sd) / γ_max (adaptive)', type: 'linear', integer: true },
        y: { label: 'accepted / drafted', type: 'linear' },
        series: series((method, g) => methodOf(at(g), method)?.acceptanceRate ?? null)
      })
    )
    for (const g of gammas)
      for (const method of POLICIES) {
        const m = methodOf(at(g), method)
        fig3Rows.push([name, g, label(method), throughputCell(m), speedupCell(m), m?.acceptanceRate ?? null, draftLengths(stepsOf(at(g), method)).draftLength])
      }
  }
  fig3.push(
    table(
      'fig3-table',
      'Every policy at every γ / γ_max',
      [col.text('dataset'), col.int('γ'), col.text('method'), col.num('tok/s', 1), col.x('speedup'), col.ratio('acceptance'), col.num('mean γ')],
      fig3Rows,
      'mean γ: tokens proposed per verification round (γ = 0 rounds of the FSM are the target decoding alone and are not counted). tok/s and speedup: medians over prompts × repeats with 95 % intervals (speedup paired with ar).'
    )
  )

  // Table 12.
  const table12: ReportTable[] = []
  for (const [id, name] of datasetsOf('table12/')) {
    const cells = plan.filter((c) => c.key.startsWith(`table12/${id}/`))
    const histories = [...new Set(cells.map((c) => Number(c.labels.history)))]
    const gammas = [...new Set(cells.map((c) => c.gamma))]
    table12.push(
      table(
        `table12-${id}`,
        `Throughput (tok/s) of the analytic policy, ${name}`,
        [col.int('history'), ...gammas.map((g) => col.num(`γmax ${g}`, 1))],
        histories.map((h) => [h, ...gammas.map((g) => throughputCell(methodOf(data.cells.get(`table12/${id}/history=${h}/g=${g}`), 'adaptive-analytic')))]),
        'history = analytic.history: the rounds Acc (Eq 2) is estimated over. Medians over prompts × repeats with 95 % intervals.'
      )
    )
  }

  // Table 2: draft selection.
  const selection: ReportTable[] = []
  for (const [id, name] of datasetsOf('select/')) {
    const fixed1 = data.cells.get(`select/${id}/q1`)
    const fixed2 = data.cells.get(`select/${id}/q2`)
    const auto = data.cells.get(`select/${id}/auto`)
    const s1 = methodOf(fixed1, 'sd')?.speedup ?? null
    const s2 = methodOf(fixed2, 'sd')?.speedup ?? null
    const gain = (s: number | null, over: number | null) => (s !== null && over !== null && over > 0 ? s / over - 1 : null)
    const choices = (auto?.draftChoices ?? []).filter((c) => c.phase === 'choice')
    const counts = [...new Set(choices.map((c) => c.draftPath))].map((file) => `${path.basename(file)}: ${choices.filter((c) => c.draftPath === file).length}`)
    const row = (nameOf: string, cell: typeof fixed1, note: string) => {
      const m = methodOf(cell, 'sd')
      return [nameOf, throughputCell(m), speedupCell(m), gain(m?.speedup ?? null, s1), gain(m?.speedup ?? null, s2), note]
    }
    selection.push(
      table(
        `selection-${id}`,
        `sd with a fixed draft vs adaptive draft-model selection, ${name}`,
        [col.text('draft'), col.num('tok/s', 1), col.x('speedup'), col.pct('vs fixed M_q1 (%)', 1), col.pct('vs fixed M_q2 (%)', 1), col.text('prompts per draft')],
        [
          row('M_q1 stories260K (fixed)', fixed1, 'all'),
          row('M_q2 mid1M (fixed)', fixed2, 'all'),
          row('adaptive selection (004 §5)', auto, counts.join(', ') || '–')
        ],
        'Each row is its own run with its own ar; "vs fixed" compares speedups (a ratio of ratios of the aggregate speedups, robust to drift between runs). tok/s and speedup: medians over prompts × repeats with 95 % intervals (speedup paired with ar). Selection profiles both drafts on the first 3 prompts, then picks per prompt.'
      )
    )
  }

  return {
    sections: [
      { id: 'fig3', title: 'Figure 3: throughput and acceptance of the adaptive methods', measured: fig3, paper: OTF_FIGURE3, notes: [] },
      { id: 'table12', title: 'Table 12: history length sensitivity', measured: table12, paper: OTF_TABLE12, notes: [] },
      { id: 'selection', title: 'Table 2: adaptive draft-model selection vs each fixed draft', measured: selection, paper: OTF_TABLE2, notes: [] }
    ],
    notes: ['Greedy decoding (temperature 0), as the paper (line 560). RL: 25 uniformly random warm-up decisions per run (line 574).']
  }
}
