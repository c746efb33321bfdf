/**
 * The advisor's recommendation rule (engine/replay/recommend.ts) on constructed measurements: the fastest
 * configuration whose 95 % speedup interval lies above 1.0, otherwise no speculation with the numbers that say why;
 * and the verification's fit to a time budget.
 */
import { describe, expect, it } from 'vitest'
import { acceptancePerPosition } from '../../electron/engine/replay/profile'
import { planVerification, recommend, type MeasuredConfiguration } from '../../electron/engine/replay/recommend'
import type { WorkloadProfile } from '../../electron/engine/replay/profile'

const at = (median: number, low: number, high: number) => ({ median, low, high })
const arm = (label: string, speedup: [number, number, number] | null, method = label.split(' ')[0]): MeasuredConfiguration => ({
  label,
  method,
  tokensPerSecond: speedup ? at(100 * speedup[0], 100 * speedup[1], 100 * speedup[2]) : null,
  speedup: speedup ? at(...speedup) : null
})
const AR = arm('ar', [1, 1, 1])
const PROFILE: WorkloadProfile = {
  targetMs: [10, 12, 14, 16],
  verifyCost: [1, 1.2, 1.4, 1.6],
  drafts: { d260k: { acceptance: [0.4, 0.3, null], msPerToken: 6, relativeCost: 0.6 } }
}

describe('recommend', () => {
  it('picks the fastest configuration whose interval lies above 1.0, not the fastest median', () => {
    const measured = [AR, arm('sd γ=4', [1.6, 0.9, 2.1]), arm('sd γ=2', [1.3, 1.1, 1.5]), arm('sd-pmin', [1.2, 1.05, 1.3])]
    const verdict = recommend(measured, PROFILE)
    expect(verdict.pick?.label).toBe('sd γ=2')
    expect(verdict.reason).toContain('1.30× [1.10×, 1.50×]')
  })

  it('an interval touching 1.0 is not above it', () => {
    expect(recommend([AR, arm('sd γ=3', [1.2, 1.0, 1.4])], PROFILE).pick).toBeNull()
  })

  it('ar itself is never the pick, even with an interval above 1', () => {
    expect(recommend([arm('ar', [1.1, 1.05, 1.2])], PROFILE).pick).toBeNull()
  })

  it('otherwise says plainly that speculation does not pay, with acceptance, verification and draft cost', () => {
    const verdict = recommend([AR, arm('sd γ=3', [0.8, 0.7, 0.9]), arm('pld γ=3', [0.95, 0.9, 1.02]), arm('svip', null)], PROFILE)
    expect(verdict.pick).toBeNull()
    expect(verdict.reason).toMatch(/^speculation does not pay for this trio and workload/)
    expect(verdict.reason).toContain('pld γ=3, made 0.95× [0.90×, 1.02×]')
    expect(verdict.reason).toContain('verification cost c_T(k)/c_T(1): k=2 1.20, k=3 1.40, k=4 1.60')
    expect(verdict.reason).toContain('draft d260k: acceptance per position 0.40 0.30 –, draft cost c_D/c_T(1) 0.60')
    // 1 + a_1 tokens for c_D/c_T(1) + c_T(2)/c_T(1) target-token times.
    expect(verdict.reason).toContain('a one-token round yields 1.40 tokens for 1.80 target-token times')
  })

  it('without any measured configuration it says so', () => {
    expect(recommend([AR], PROFILE).reason).toContain('no configuration was measured against ar')
  })
})

describe('planVerification', () => {
  it('everything when there is no budget', () => {
    expect(planVerification(100, [50, 60, 70], 3, null)).toEqual({ candidates: 3, repeats: 3, estimatedMs: 3 * 280 })
  })

  it('fewer repeats first (down to 2), then fewer candidates, then one repeat', () => {
    expect(planVerification(100, [50, 60, 70], 3, 600)).toEqual({ candidates: 3, repeats: 2, estimatedMs: 560 })
    expect(planVerification(100, [50, 60, 70], 3, 450)).toEqual({ candidates: 2, repeats: 2, estimatedMs: 420 })
    expect(planVerification(100, [50, 60, 70], 3, 200)).toEqual({ candidates: 1, repeats: 1, estimatedMs: 150 })
  })

  it('null when not even ar and one candidate once fit', () => {
    expect(planVerification(100, [50], 3, 149)).toBeNull()
  })
})

describe('acceptancePerPosition', () => {
  it('greedy 0/1 acceptances: position j given the ones before it were accepted', () => {
    // α = 1 1 0 1, a round from every start: position 1 is accepted at 3 of the 4 starts.
    const rates = acceptancePerPosition([[1, 1, 0, 1]], 2)
    expect(rates[0]).toBeCloseTo(3 / 4, 12)
    // Starts with a position 2: 0, 1, 2. Reached (position 1 accepted): 1 + 1 + 0 = 2; accepted both: 1 + 0 = 1.
    expect(rates[1]).toBeCloseTo(1 / 2, 12)
  })

  it('null where no round reaches the position', () => {
    expect(acceptancePerPosition([[0, 0]], 3)).toEqual([0, null, null])
  })
})
