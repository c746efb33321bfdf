/** The smoke suite's report: every method of its one cell on the same prompts, and the papers' headlines. */
import { categoriesOf, perplexityOf, stepsOf, summaryWhere, type SuiteData } from '../data'
import { chart, col, label, speedupCell, table, throughputCell } from '../common'
import type { ReportSection } from '../model'
import { HEADLINES } from '../papers'

export function smokeReport(data: SuiteData): { sections: ReportSection[]; notes: string[] } {
  const cell = [...data.cells.values()].find((c) => c.cell.key.startsWith('smoke/'))
  const methods = cell?.report.methods ?? []
  const summary = table(
    'summary',
    'Every method on the same prompts (speedup vs ar of the same run)',
    [col.text('method'), col.int('prompts'), col.int('tokens'), col.num('tok/s', 1), col.x('speedup'), col.ratio('acceptance'), col.num('mean accepted'), col.ratio('σ'), col.ratio('η'), col.int('target calls'), col.num('PPL', 3)],
    methods.map((m) => [m.method, m.prompts, m.outputTokens, throughputCell(m), speedupCell(m), m.acceptanceRate, m.meanAcceptedLength, m.sigma, m.eta, m.targetCalls, perplexityOf(cell, m.method)]),
    'PPL: exp(mean NLL) of the outputs under the raw target (temperature 1), for ar and dsbd (beam quality vs multinomial sampling; the lossless methods sample ar\'s law). σ = 1 − accepted/drafted, η = target calls / output tokens (HSDDW §4.4). tok/s and speedup: medians over prompts × repeats with 95 % intervals (speedup paired with ar on the same prompt and repeat).'
  )
  const others = methods.filter((m) => m.method !== 'ar')
  const speedup = chart({
    id: 'speedup',
    title: 'Speedup over ar (same run, same prompts)',
    x: { label: 'method', type: 'band', categories: others.map((m) => m.method) },
    y: { label: 'speedup (×)', type: 'linear' },
    series: [{ name: 'speedup', style: 'bar', points: others.flatMap((m) => (m.speedup === null ? [] : [{ x: m.method, y: m.speedup }])) }],
    reference: { y: 1, label: 'ar = 1' }
  })
  const firstPrompt = (r: { promptIndex: number }) => r.promptIndex === 0
  const gamma = chart({
    id: 'gamma',
    title: 'Tokens proposed to the target per round, first prompt',
    x: { label: 'round', type: 'linear', integer: true },
    y: { label: 'γ (proposed)', type: 'linear', integer: true },
    series: others.map((m) => ({
      name: label(m.method),
      style: 'line+points' as const,
      points: stepsOf(cell, m.method, firstPrompt)
        .filter((s) => s.proposed > 0)
        .map((s, i) => ({ x: i + 1, y: s.proposed }))
    }))
  })
  const categories = categoriesOf(cell)
  const perCategory = table(
    'categories',
    'Speedup per prompt category (vs ar on the same prompts)',
    [col.text('method'), ...categories.map((c) => col.x(c))],
    others.map((m) => [m.method, ...categories.map((c) => speedupCell(summaryWhere(cell, m.method, (r) => r.category === c)))])
  )
  const headlineMethods = ['sd', 'svip', 'hsddw', 'dsbd']
  const headlines = table(
    'headlines-measured',
    'The same methods here',
    [col.text('method'), col.x('speedup'), col.ratio('acceptance'), col.num('PPL', 3)],
    headlineMethods.map((id) => {
      const m = methods.find((s) => s.method === id)
      return [id, speedupCell(m), m?.acceptanceRate ?? null, perplexityOf(cell, id)]
    })
  )
  return {
    sections: [
      { id: 'summary', title: 'Every method on the same prompts', measured: [summary], paper: null, notes: [] },
      { id: 'speedup', title: 'Speedup over ar', measured: [speedup], paper: null, notes: [] },
      { id: 'gamma', title: 'Draft length per round (first prompt)', measured: [gamma], paper: null, notes: ['dsbd: proposed = draft beams that reached a test in the iteration.'] },
      { id: 'categories', title: 'Speedup per prompt category', measured: [perCategory], paper: null, notes: [] },
      {
        id: 'headlines',
        title: "The papers' headline numbers",
        measured: [headlines],
        paper: HEADLINES,
        notes: ['The smoke grid is tiny: its numbers show that every method runs and is stored, not how fast it is. The other suites reproduce each paper.']
      }
    ],
    notes: []
  }
}
