/**
 * Per-level metrics of the three-model hierarchies: a fold over the `levels` counters of their step records
 * (decoders/types.ts LevelCounters), next to fold.ts's σ and η, which already count both draft models.
 *
 *   α  = mean over the positions M_p examined of Σ_y min(p, q2)   (M_q2 vs M_p; greedy: argmax agreement)
 *   β  = the same for M_q1 vs M_p, at the positions where M_q1 drafted
 *   acceptance q1→q2 = M_q1 tokens M_q2 accepted / examined (the pre-verify stage's empirical rate)
 *   acceptance →p    = tokens M_p accepted / examined
 * α and β are the expected acceptance rates of Leviathan's Def. 3.1 / Chen's Def. 3.1, so they can be put into the
 * closed forms of engine/theory (e.g. Chen's Theorem 3.2 for hier-chen).
 */
import type { LevelCounters, StepRecord } from '../decoders/types'

export interface LevelTotals {
  /** Target rounds that carried level counters. */
  rounds: number
  q1: { drafted: number; examinedByQ2: number; acceptedByQ2: number; acceptedByP: number; calls: number; ms: number }
  q2: { drafted: number; accepted: number; calls: number; ms: number }
  p: { calls: number; examined: number; accepted: number }
  alpha: { sum: number; positions: number }
  beta: { sum: number; positions: number }
  /** Output tokens of those rounds. */
  emitted: number
}

/** Sums the counters of the steps that have them; null when none does (a two-model method). */
export function foldLevels(steps: readonly StepRecord[]): LevelTotals | null {
  let totals: LevelTotals | null = null
  for (const step of steps) {
    if (!step.levels) continue
    totals ??= {
      rounds: 0,
      q1: { drafted: 0, examinedByQ2: 0, acceptedByQ2: 0, acceptedByP: 0, calls: 0, ms: 0 },
      q2: { drafted: 0, accepted: 0, calls: 0, ms: 0 },
      p: { calls: 0, examined: 0, accepted: 0 },
      alpha: { sum: 0, positions: 0 },
      beta: { sum: 0, positions: 0 },
      emitted: 0
    }
    addLevels(totals, step.levels)
    totals.rounds += 1
    totals.emitted += step.emitted
  }
  return totals
}

function addLevels(into: LevelTotals, c: LevelCounters): void {
  into.q1.drafted += c.q1.drafted
  into.q1.examinedByQ2 += c.q1.examinedByQ2 ?? 0
  into.q1.acceptedByQ2 += c.q1.acceptedByQ2 ?? 0
  into.q1.acceptedByP += c.q1.acceptedByP
  into.q1.calls += c.q1.calls
  into.q1.ms += c.q1.ms
  into.q2.drafted += c.q2.drafted
  into.q2.accepted += c.q2.accepted
  into.q2.calls += c.q2.calls
  into.q2.ms += c.q2.ms
  into.p.calls += c.p.calls
  into.p.examined += c.p.examined
  into.p.accepted += c.p.accepted
  into.alpha.sum += c.alpha.sum
  into.alpha.positions += c.alpha.positions
  into.beta.sum += c.beta.sum
  into.beta.positions += c.beta.positions
}

export interface LevelRates {
  alpha: number | null
  beta: number | null
  acceptanceQ1ByQ2: number | null
  acceptanceByP: number | null
  /** Output tokens per target call (1/η). */
  tokensPerTargetCall: number | null
  /** Forward calls per output token, per model. */
  q1CallsPerToken: number | null
  q2CallsPerToken: number | null
}

const ratio = (a: number, b: number): number | null => (b > 0 ? a / b : null)

export function levelRates(t: LevelTotals): LevelRates {
  return {
    alpha: ratio(t.alpha.sum, t.alpha.positions),
    beta: ratio(t.beta.sum, t.beta.positions),
    acceptanceQ1ByQ2: ratio(t.q1.acceptedByQ2, t.q1.examinedByQ2),
    acceptanceByP: ratio(t.p.accepted, t.p.examined),
    tokensPerTargetCall: ratio(t.emitted, t.p.calls),
    q1CallsPerToken: ratio(t.q1.calls, t.emitted),
    q2CallsPerToken: ratio(t.q2.calls, t.emitted)
  }
}
