/** `speclab show RUN --what-if`: the run's what-if (engine/replay/what-if.ts) as one table per drafting method. */
import type { WhatIfReport } from '../engine/replay/what-if'
import { formatFixed, formatTable } from './format'

const ratio = (value: number | null) => (value === null ? '–' : `${formatFixed(value, 2)}×`)

export function formatWhatIf(report: WhatIfReport | null): string {
  if (!report) return 'no what-if: no method of this run drafts single chains of tokens (or it used synthetic acceptance)'
  const curve = report.targetCost.map((p) => `c_T(${p.k}) ${formatFixed(p.ms, 2)} ms`).join(', ')
  const parts = [`target verification cost from the run's rounds: ${curve}`, ...report.notes]
  for (const source of report.sources) {
    const alphas = source.acceptance.map((a) => formatFixed(a, 2)).join(' ')
    parts.push(
      '',
      `${source.method} (${source.drafter}, ${source.rounds} rounds, α per position: ${alphas}; measured ${formatFixed(source.measured.tokensPerSecond, 1)} tok/s, ${ratio(source.measured.speedup)})`,
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
