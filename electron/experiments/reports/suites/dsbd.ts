/**
 * The dsbd report: DSBD Figures 4–6 (quality vs speed, Pareto fronts of DSBD and of beam sampling) and Table 1 (one KV
 * sequence per model) from the cells
 *   dsbd/g=<γ>/ws=<W_S>/t=<t>   dsbd with dsbd.ws, dsbd.t, W_min = 1
 *   beam/W=<W>                  beam sampling of width W (W = 1: multinomial sampling)
 *   table1                      ar, sd, dsbd-1beam
 * Quality is perplexity under the target (the paper's Figure 6 measure): exp(Σ NLL / Σ tokens) of the stored scores.
 */
import { beamWidthTotals } from '../../../engine/metrics/fold'
import { dsbdExpectedSteps } from '../../../engine/theory/dsbd'
import { methodOf, perplexityOf, stepsOf, type CellData, type SuiteData } from '../data'
import { chart, col, speedupCell, table, throughputCell } from '../common'
import type { ReportSection } from '../model'
import { DSBD_FIGURES, DSBD_TABLE1 } from '../papers'

interface Point {
  name: string
  x: number
  y: number
  label: string
}

/** Points not dominated by a faster point with lower perplexity, by increasing tokens/s. */
export function paretoFront<T extends { x: number; y: number }>(points: readonly T[]): T[] {
  const sorted = [...points].sort((a, b) => b.x - a.x || a.y - b.y)
  const front: T[] = []
  let best = Infinity
  for (const p of sorted)
    if (p.y < best) {
      front.push(p)
      best = p.y
    }
  return front.reverse()
}

export function dsbdReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const cells = [...data.cells.values()]
  const point = (cell: CellData, method: string, name: string, labelText: string): Point | null => {
    const m = methodOf(cell, method)
    const ppl = perplexityOf(cell, method)
    return m && ppl !== null ? { name, x: m.tokensPerSecond, y: ppl, label: labelText } : null
  }
  const dsbdCells = cells.filter((c) => c.cell.key.startsWith('dsbd/'))
  const beamCells = cells.filter((c) => c.cell.key.startsWith('beam/')).sort((a, b) => Number(a.cell.labels.W) - Number(b.cell.labels.W))
  const t1 = data.cells.get('table1')
  const dsbdPoints = dsbdCells.flatMap((c) => {
    const p = point(c, 'dsbd', 'DSBD', `γ=${c.cell.labels.gamma} W_S=${c.cell.labels.ws} t=${c.cell.labels.t}`)
    return p ? [p] : []
  })
  const beamPoints = beamCells.flatMap((c) => {
    const p = point(c, 'beam', 'beam', `W=${c.cell.labels.W}`)
    return p ? [p] : []
  })
  const single = (method: string, name: string) => (t1 ? point(t1, method, name, name) : null)
  const sdPoint = single('sd', 'sd')
  const arPoint = single('ar', 'ar')
  const onePoint = single('dsbd-1beam', 'dsbd-1beam')
  const strip = (points: (Point | null)[]) => points.filter((p): p is Point => p !== null).map(({ x, y, label }) => ({ x, y, label }))
  const figure = chart({
    id: 'fig4-6',
    title: 'Perplexity vs tokens/s (lower right is better)',
    x: { label: 'tokens/s', type: 'linear' },
    y: { label: 'perplexity under the target', type: 'linear', zero: false },
    series: [
      { name: 'DSBD configurations', style: 'points', points: strip(dsbdPoints), color: 0 },
      { name: 'DSBD Pareto front', style: 'line', points: strip(paretoFront(dsbdPoints)), color: 0 },
      { name: 'beam sampling W = 1…', style: 'line+points', points: strip(beamPoints), color: 1 },
      { name: 'beam Pareto front', style: 'dashed', points: strip(paretoFront(beamPoints)), color: 1 },
      { name: 'sd', style: 'points', points: strip([sdPoint]), color: 2 },
      { name: 'ar (multinomial)', style: 'points', points: strip([arPoint]), color: 3 },
      { name: 'dsbd-1beam', style: 'points', points: strip([onePoint]), color: 4 }
    ],
    caption: 'Each point is one cell (its own run); perplexity of the outputs under the raw target.'
  })

  const rows = [...dsbdCells, ...beamCells].map((c) => {
    const method = c.cell.key.startsWith('dsbd/') ? 'dsbd' : 'beam'
    const m = methodOf(c, method)
    const beams = beamWidthTotals(stepsOf(c, method))
    const gamma = Number(c.cell.labels.gamma)
    const t = Number(c.cell.labels.t)
    return [
      method,
      method === 'dsbd' ? Number(c.cell.labels.gamma) : null,
      method === 'dsbd' ? Number(c.cell.labels.ws) : null,
      method === 'dsbd' ? Number(c.cell.labels.t) : null,
      method === 'beam' ? Number(c.cell.labels.W) : null,
      throughputCell(m),
      perplexityOf(c, method),
      beams.meanWidth,
      m?.acceptanceRate ?? null,
      method === 'dsbd' ? beams.layersPerStep : null,
      method === 'dsbd' && beams.meanBeta !== null ? dsbdExpectedSteps(t, beams.meanBeta, gamma) : null
    ]
  })
  const pointsTable = table(
    'points',
    'Every configuration',
    [col.text('method'), col.int('γ'), col.int('W_S'), col.num('t', 1), col.int('W'), col.num('tok/s', 1), col.num('PPL', 3), col.num('W̄'), col.ratio('acceptance'), col.num('layers / iteration'), col.num('Thm 3.2')],
    rows,
    'W̄: average accepted width (DSBD App. C.1) = Σ widths / Σ layers over the iterations; acceptance = accepted / tested draft beams; Thm 3.2: expected layers per iteration (1 − min(t, β̄)^{γ+1}) / (1 − min(t, β̄)) with β̄ the measured mean β_{W_min}. tok/s: median over prompts × repeats with its 95 % interval.'
  )

  const table1 = table(
    'table1',
    'One KV sequence per model',
    [col.text('method'), col.text('EM/EA'), col.num('PPL', 3), col.num('tokens/s', 1), col.text('J/token'), col.x('speedup')],
    (
      [
        ['Multinomial (ar)', 'ar'],
        ['SpecDecode (sd)', 'sd'],
        ['DSBD (dsbd-1beam)', 'dsbd-1beam']
      ] as const
    ).map(([name, method]) => {
      const m = methodOf(t1, method)
      return [name, 'n/a', perplexityOf(t1, method), throughputCell(m), 'n/a', speedupCell(m)]
    }),
    'EM/EA: the stories models answer no SQuAD or Spider question, so there is no downstream score; J/token: no energy meter on a CPU. SpecInfer is not implemented. tokens/s and speedup: medians over prompts × repeats with 95 % intervals (speedup paired with ar).'
  )
  return {
    sections: [
      { id: 'fig4-6', title: 'Figures 4–6: perplexity vs tokens/s, Pareto fronts', measured: [figure, pointsTable], paper: DSBD_FIGURES, notes: [] },
      { id: 'table1', title: 'Table 1: one KV sequence per model', measured: [table1], paper: DSBD_TABLE1, notes: [] }
    ],
    notes: ['Sampling as the paper (§4.1): temperature 1, top-k 10, top-p 0.8. Built-in story prompts replace SQuAD / Spider, which the stories models cannot answer.']
  }
}
