/**
 * The hsddw-ablation report: HSDDW Tables 2–4 and Figures 6–8 from the suite's cells
 *   table2/<dataset>/trio  ar, sd (M_q1 → M_p), self-verify, pre-verify, pre-self-verify, hsddw at K = 10
 *   table2/<dataset>/mid   ar, sd with M_q2 as the draft ("70b-7b")
 *   fig7/K=<k>/{trio,mid}  the same at other window sizes (K = 10 is table2's cell of the first dataset)
 * through the shared ablation analysis (hsddw-analysis.ts, also `speclab ablation`).
 */
import { analyseAblation, collectAblationRows, type AblationResult } from '../hsddw-analysis'
import { entropySplit } from '../../../engine/metrics/fold'
import { mean, methodOf, stepsOf, summaryWhere, type CellData, type SuiteData } from '../data'
import { chart, col, histogram, speedupCell, table } from '../common'
import type { ReportChart, ReportSection, ReportTable } from '../model'
import { HSDDW_FIGURE6, HSDDW_FIGURE7, HSDDW_FIGURE8, HSDDW_TABLE2, HSDDW_TABLE3, HSDDW_TABLE4 } from '../papers'

const ablationRun = (cell: CellData) => ({ report: cell.report, steps: (method: string) => stepsOf(cell, method) })

function analyse(trio: CellData | undefined, mid: CellData | undefined): AblationResult | null {
  if (!trio) return null
  const rows = collectAblationRows(ablationRun(trio), mid ? ablationRun(mid) : null)
  return analyseAblation(rows, trio.report, trio.cell.gamma)
}

export function hsddwAblationReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const plan = data.suiteRun.plan
  const datasets = [...new Map(plan.filter((c) => c.key.startsWith('table2/')).map((c) => [c.dataset.id, c.dataset.label])).entries()]
  const cell = (key: string) => data.cells.get(key)
  const perDataset = datasets.map(([id, name]) => ({ id, name, trio: cell(`table2/${id}/trio`), mid: cell(`table2/${id}/mid`) }))
  const analyses = perDataset.map((d) => analyse(d.trio, d.mid))
  const first = perDataset[0]
  const firstAnalysis = analyses[0]

  // Table 2: rows of the ablation × one speedup column per dataset.
  const template = analyses.find((a) => a !== null)?.table2 ?? []
  const table2 = table(
    'table2',
    'Speedup over ar (each run\'s own ar), K = 10',
    [col.text('row'), col.text('Pre-verify'), col.text('Self-verify'), col.text('HSDDW'), col.text('method'), ...perDataset.map((d) => col.x(d.name))],
    template.map((row, i) => [row.row, row.preVerify, row.selfVerify, row.hsddw, row.method ?? '(skipped)', ...analyses.map((a) => a?.table2[i]?.speedupCell ?? null)]),
    'SD row: sd with M_q2 (mid1M) as the draft, like the paper\'s 70b-7b; the other rows run on the trio with M_q1 = stories260K drafting. Speedups: medians over prompts × repeats (paired with ar on the same prompt and repeat) with 95 % intervals.'
  )

  const table4 = table(
    'table4',
    `Redundancy σ and target utilisation η in percent (${first?.name ?? '–'})`,
    [col.text('model'), col.text('method'), col.pct('σ (%)'), col.pct('η (%)'), col.x('speedup')],
    (firstAnalysis?.table4 ?? []).map((r) => [r.model, r.method, r.sigma, r.eta, r.speedupCell])
  )

  // Table 3: math prompts vs the rest, on the first dataset.
  const isMath = (c: string | null) => c !== null && /math/i.test(c)
  const hasMath = first?.trio?.results.some((r) => isMath(r.category)) ?? false
  const split = (c: CellData | undefined, method: string) => [
    speedupCell(methodOf(c, method)),
    hasMath ? speedupCell(summaryWhere(c, method, (r) => isMath(r.category))) : null,
    hasMath ? speedupCell(summaryWhere(c, method, (r) => !isMath(r.category))) : null
  ]
  const table3 = table(
    'table3',
    `Math prompts vs the rest (${first?.name ?? '–'})`,
    [col.text('method'), col.x('All'), col.x('only Math'), col.x('rm Math')],
    [['AT (ar)', 1, hasMath ? 1 : null, hasMath ? 1 : null], ['SD (M_q2 → M_p)', ...split(first?.mid, 'sd')], ['HSDDW', ...split(first?.trio, 'hsddw')]],
    hasMath ? 'Speedups over the math (resp. other) prompts against ar on exactly those prompts of the same run; medians over prompts × repeats with 95 % intervals.' : 'The dataset has no math category: only the "All" column is measured.'
  )

  const levels: ReportTable[] = firstAnalysis
    ? [
        table(
          'levels',
          `Per level: α = E[Σ min(p, q2)], β = E[Σ min(p, q1)] at the positions M_p examined (${first.name})`,
          [col.text('method'), col.num('tok/s', 1), col.ratio('acc →p'), col.ratio('α'), col.ratio('β'), col.ratio('acc q1→q2'), col.ratio('tok/target call'), col.ratio('q1 calls/tok'), col.ratio('q2 calls/tok')],
          firstAnalysis.levels.map((l) => [l.method, l.tokensPerSecondCell, l.acceptance, l.alpha ?? null, l.beta ?? null, l.acceptanceQ1ByQ2 ?? null, l.tokensPerTargetCall ?? null, l.q1CallsPerToken ?? null, l.q2CallsPerToken ?? null])
        ),
        table(
          'theory',
          'Theory (i.i.d. acceptances) vs measured',
          [col.text('method'), col.text('quantity'), col.ratio('measured'), col.ratio('theory'), col.text('inputs')],
          firstAnalysis.theory.map((t) => [t.method, t.quantity, t.measuredCell ?? t.measured, t.predicted, t.inputs])
        )
      ]
    : []

  // Figure 6: draft entropies of accepted vs rejected tokens, sd with each draft (first dataset).
  const fig6: ReportChart[] = []
  const entropyRows: (string | number | null)[][] = []
  for (const [id, name, source] of [
    ['fig6-q2', '70b-7b analogue: sd M_q2 → M_p', first?.mid],
    ['fig6-q1', '70b-68m analogue: sd M_q1 → M_p', first?.trio]
  ] as const) {
    const { accepted, rejected } = entropySplit(stepsOf(source, 'sd'))
    const max = Math.max(0, ...accepted, ...rejected)
    fig6.push(
      chart({
        id,
        title: `Draft entropy H(q) of accepted vs rejected drafts — ${name}`,
        x: { label: 'H(q) of the draft token (nats)', type: 'linear', zero: true },
        y: { label: 'share of tokens', type: 'linear' },
        series: [
          { name: `accepted (${accepted.length})`, style: 'step', points: histogram(accepted, max) },
          { name: `rejected (${rejected.length})`, style: 'step', points: histogram(rejected, max) }
        ]
      })
    )
    entropyRows.push([name, accepted.length, mean(accepted), rejected.length, mean(rejected)])
  }
  const entropyTable = table(
    'fig6-means',
    'Mean draft entropy of accepted and rejected draft tokens',
    [col.text('pair'), col.int('accepted'), col.num('mean H accepted', 3), col.int('rejected'), col.num('mean H rejected', 3)],
    entropyRows
  )

  // Figure 7: tokens/s across K.
  const ks = [...new Set(plan.filter((c) => c.key.startsWith('fig7/')).map((c) => Number(c.labels.K)))]
  if (first) ks.push(10)
  ks.sort((a, b) => a - b)
  const kCell = (K: number, part: 'trio' | 'mid') => (K === 10 && first ? cell(`table2/${first.id}/${part}`) : cell(`fig7/K=${K}/${part}`))
  const speedAt = (part: 'trio' | 'mid', method: string) =>
    ks.flatMap((K) => {
      const m = methodOf(kCell(K, part), method)
      return m ? [{ x: K, y: m.tokensPerSecond }] : []
    })
  const arPoints = ks.flatMap((K) => {
    const m = methodOf(kCell(K, 'trio'), 'ar')
    return m ? [{ x: K, y: m.tokensPerSecond }] : []
  })
  const fig7 = chart({
    id: 'fig7',
    title: 'Decoding speed across window sizes K',
    x: { label: 'window size K', type: 'linear', integer: true },
    y: { label: 'tokens/s', type: 'linear' },
    series: [
      { name: 'sd M_q2→M_p (70b-7b)', style: 'line+points', points: speedAt('mid', 'sd') },
      { name: 'sd M_q1→M_p (70b-68m)', style: 'line+points', points: speedAt('trio', 'sd') },
      { name: 'pre + self-verify', style: 'line+points', points: speedAt('trio', 'pre-self-verify') },
      { name: 'HSDDW', style: 'line+points', points: speedAt('trio', 'hsddw') },
      { name: 'ar (target alone)', style: 'dashed', points: arPoints }
    ],
    caption: `${first?.name ?? ''} prompts; each K is its own pair of runs with its own ar.`
  })
  const fig7Table = table(
    'fig7-speedups',
    'Speedup over ar across K',
    [col.int('K'), col.x('sd M_q2→M_p'), col.x('sd M_q1→M_p'), col.x('pre + self-verify'), col.x('HSDDW')],
    ks.map((K) => [K, speedupCell(methodOf(kCell(K, 'mid'), 'sd')), speedupCell(methodOf(kCell(K, 'trio'), 'sd')), speedupCell(methodOf(kCell(K, 'trio'), 'pre-self-verify')), speedupCell(methodOf(kCell(K, 'trio'), 'hsddw'))]),
    'Each K is its own pair of runs with its own ar; medians over prompts × repeats with 95 % intervals (paired with ar).'
  )

  // Figure 8: window size over time for one prompt (the paper's 28th MT-Bench question when there are 28).
  const promptCount = first?.trio?.cell.promptCount ?? 0
  const promptIndex = Math.min(27, Math.max(0, promptCount - 1))
  const onePrompt = (r: { promptIndex: number }) => r.promptIndex === promptIndex
  const windows = (source: CellData | undefined, method: string) =>
    stepsOf(source, method, onePrompt)
      .filter((s) => s.proposed > 0)
      .map((s, i) => ({ x: i + 1, y: s.proposed }))
  const promptText = first?.trio?.results.find(onePrompt)?.promptText ?? ''
  const fig8 = chart({
    id: 'fig8',
    title: `Window size per round, prompt ${promptIndex + 1} of ${first?.name ?? '–'}`,
    x: { label: 'verification round', type: 'linear', integer: true },
    y: { label: 'tokens verified by M_p', type: 'linear', integer: true },
    series: [
      { name: 'sd M_q2→M_p (70b-7b)', style: 'line+points', points: windows(first?.mid, 'sd') },
      { name: 'sd M_q1→M_p (70b-68m)', style: 'line+points', points: windows(first?.trio, 'sd') },
      { name: 'HSDDW (70b-7b-68m)', style: 'line+points', points: windows(first?.trio, 'hsddw') }
    ],
    caption: `Prompt: "${promptText.length > 120 ? `${promptText.slice(0, 120)}…` : promptText}". sd's window is K in every full round (fewer at the end of the budget); HSDDW's is the n_tot tokens M_p verifies.`
  })
  const fig8Table = table(
    'fig8-acceptance',
    'Acceptance on that prompt',
    [col.text('configuration'), col.int('rounds'), col.ratio('acceptance'), col.num('mean window')],
    (
      [
        ['sd M_q2→M_p (70b-7b)', first?.mid, 'sd'],
        ['sd M_q1→M_p (70b-68m)', first?.trio, 'sd'],
        ['HSDDW (70b-7b-68m)', first?.trio, 'hsddw']
      ] as const
    ).map(([name, source, method]) => {
      const m = summaryWhere(source, method, onePrompt)
      const gammas = m ? m.gammaTrajectory.flat() : []
      return [name, m ? gammas.length : null, m?.acceptanceRate ?? null, mean(gammas)]
    })
  )

  return {
    sections: [
      { id: 'table2', title: 'Table 2: ablation — speedup over ar', measured: [table2], paper: HSDDW_TABLE2, notes: [] },
      { id: 'table3', title: 'Table 3: math prompts vs the rest', measured: [table3], paper: HSDDW_TABLE3, notes: [] },
      { id: 'table4', title: 'Table 4: redundancy σ and target utilisation η', measured: [table4], paper: HSDDW_TABLE4, notes: [] },
      {
        id: 'levels',
        title: 'Per-level acceptance and theory',
        measured: levels,
        paper: null,
        notes: ['α and β are the expected acceptances of Chen Definition 3.1 (greedy: argmax agreement), folded from the steps\' per-level counters.']
      },
      { id: 'fig6', title: 'Figure 6: draft entropy of accepted vs rejected tokens', measured: [...fig6, entropyTable], paper: HSDDW_FIGURE6, notes: [] },
      { id: 'fig7', title: 'Figure 7: speed across window sizes K', measured: [fig7, fig7Table], paper: HSDDW_FIGURE7, notes: [] },
      { id: 'fig8', title: 'Figure 8: window size over time for one prompt', measured: [fig8, fig8Table], paper: HSDDW_FIGURE8, notes: [] }
    ],
    notes: [
      'Paper ↔ here: 70b = target M_p (the inflated stories-target5M for speed, target5M-f32 under --quick), 7b = mid M_q2 (stories-mid1M), 68m = small draft M_q1 (stories260K).'
    ]
  }
}
