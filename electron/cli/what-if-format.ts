/** `speclab show RUN --what-if`: the run's what-if (engine/replay/what-if.ts) as one table per drafting method. */
import type { WhatIfReport } from '../engine/replay/what-if'
import { formatFixed, formatTable } from './format'

const ratio = (value: number | null) => (value === null ? '–' : `${formatFixed(value, 2)}×`)
const costs = (name: string, points: readonly { k: number; ms: number }[]) => points.map((p) => `${name}(${p.k}) ${formatFixed(p.ms, 2)} ms`).join(', ')

export function formatWhatIf(report: WhatIfReport | null): string {
  if (!report)
    return 'no what-if: no method of this run is one the replay prices — sd, the draft-length policies, the lookups and pearl, not trees, hierarchies, beams, peers or sd+ngram — or it used synthetic acceptance'
  const curve = costs('c_T', report.targetCost)
  const parts = [`target verification cost from the run's rounds: ${curve || 'none (no target call of this run ran alone)'}`, ...report.notes]
  for (const source of report.sources) {
    const alphas = source.acceptance.length > 0 ? source.acceptance.map((a) => formatFixed(a, 2)).join(' ') : `pooled ${formatFixed(source.alpha, 2)}`
    const where = source.drafter === 'parallel' ? 'chain position' : 'position'
    parts.push(
      '',
      `${source.method} (${source.drafter}, ${source.rounds} rounds, α per ${where}: ${alphas}; measured ${formatFixed(source.measured.tokensPerSecond, 1)} tok/s, ${ratio(source.measured.speedup)})`,
      ...(source.verifyBeside ? [`verification beside the draft: ${costs('c‖_T', source.verifyBeside)}; ${formatFixed(source.draftMsPerToken, 2)} ms per drafted token`] : []),
      formatTable(
        ['configuration', 'tok/round', 'tok/s', 'speedup', 'support'],
        source.predictions.map((p) => [
          `${p.label}${p.own ? ' (this run)' : ''}`,
          formatFixed(p.tokensPerRound, 2),
          formatFixed(p.tokensPerSecond, 1),
          ratio(p.speedup),
          p.supported ? 'ok' : `outside the run: ${p.reason}`
        ])
      ),
      ...source.notes.map((note) => `note: ${note}`)
    )
  }
  return parts.join('\n')
}
