/**
 * The cost curve and the prediction (replay/cost-curve.ts, replay/predict.ts) on a fake model and a fake clock: a
 * forward call of k tokens takes a + b·k ms, so the measured curve must be exactly that, and a replayed run's
 * predicted time the sum of its rounds' costs.
 */
import { describe, expect, it } from 'vitest'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { stepRecord } from '../../electron/engine/decoders/step-record'
import { emptyLevels } from '../../electron/engine/decoders/hierarchy'
import { measureCostCurve, roundCost, targetCost, type CostCurve } from '../../electron/engine/replay/cost-curve'
import { calibrated, calibrateOverlap, calibrateRounds, calibrateSingle, calibrationOf, outsideOf, overlapCalibrationOf, singleCalibrationOf } from '../../electron/engine/replay/decode-calibration'
import { expectedRun } from '../../electron/engine/replay/expected'
import { predictFromExpected, predictFromSteps } from '../../electron/engine/replay/predict'
import { nonDecreasing } from '../../electron/engine/replay/isotonic'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { TOY_VOCABULARY } from '../helpers/toy-models'
import { timedModel, type FakeClock } from '../helpers/timed-model'

const WARP = { temperature: 0, topK: 0, topP: 1 }

/** A toy model whose every append advances `clock` by fixed + perToken·(tokens appended). */
const timed = (clock: FakeClock, fixed: number, perToken: number) =>
  timedModel(new ToyModel({ name: 'timed', vocabulary: TOY_VOCABULARY, logits: () => [0, 1, 2, 3, 4, 5] }), clock, fixed, perToken)

describe('cost curve', () => {
  it('measures c_T(k) = a + b·k and c_D exactly on a fake clock', async () => {
    const clock = { ms: 0 }
    const sequence = Array.from({ length: 60 }, (_, i) => 1 + (i % 5))
    const curve = await measureCostCurve(timed(clock, 4, 0.5), timed(clock, 1, 0.25), {
      sequence,
      promptLength: 10,
      warp: WARP,
      maxPositions: 8,
      clock: () => clock.ms
    })
    expect(curve.targetMs).toEqual(Array.from({ length: 8 }, (_, i) => 4 + 0.5 * (i + 1)))
    expect(curve.draftMs).toBe(1.25)
  })

  it('pools a dip of the measured curve with its neighbours (least-squares non-decreasing fit)', () => {
    const fitted = nonDecreasing([5.61, 5.87, 3.43, 8.83])
    fitted.slice(0, 3).forEach((v) => expect(v).toBeCloseTo((5.61 + 5.87 + 3.43) / 3, 12))
    expect(fitted[3]).toBe(8.83)
    expect(nonDecreasing([1, 2, 2, 3])).toEqual([1, 2, 2, 3])
    expect(nonDecreasing([3, 1, 2])).toEqual([2, 2, 2])
  })

  it('extends the curve along its last slope and prices a round', () => {
    const curve: CostCurve = { targetMs: [10, 11, 13], draftMs: 2 }
    expect(targetCost(curve, 5)).toBe(17)
    expect(roundCost(curve)({ proposed: 2, draftCalls: 2 })).toBe(4 + 13)
    expect(roundCost(curve)({ proposed: 0, draftCalls: 0 })).toBe(10)
  })
})

describe('prediction', () => {
  const curve: CostCurve = { targetMs: [10, 11, 12, 13, 14, 15], draftMs: 1 }
  const round = (proposed: number, accepted: number, emitted: number, draftCalls: number): StepRecord =>
    stepRecord({ index: 0, stage: 'sd', proposed, accepted, emitted, draftCalls, verifyMs: 0, totalMs: 0 })

  it('greedy: the rounds priced one by one, against ar = L · c_T(1)', () => {
    const steps = [round(3, 3, 4, 3), round(3, 1, 2, 3), round(0, 0, 1, 0)]
    const p = predictFromSteps(steps, curve)
    expect(p.tokens).toBe(7)
    expect(p.rounds).toBe(3)
    expect(p.ms).toBe(3 + 13 + 3 + 13 + 10)
    expect(p.speedup).toBeCloseTo(70 / 42, 12)
    expect(p.tokensPerSecond).toBeCloseTo(7000 / 42, 12)
    expect(p.arTokensPerSecond).toBeCloseTo(100, 12)
  })

  it("a hierarchy's round: its small model's calls at c_D and its mid model's at c_M, from the per-level counters", () => {
    const levels = emptyLevels(false)
    levels.q1.calls = 4
    levels.q2.calls = 2
    const hierarchical = stepRecord({ index: 0, stage: 'hier-chen', proposed: 6, accepted: 6, emitted: 7, draftCalls: 6, verifyMs: 0, totalMs: 0, levels })
    const p = predictFromSteps([hierarchical, round(0, 0, 1, 0)], { ...curve, midMs: 2.5 })
    expect(p.ms).toBe(4 * 1 + 2 * 2.5 + 16 + 10) // c_T(7) = 16 along the last slope
    expect(predictFromSteps([hierarchical], curve).ms).toBe(4 + 16) // no mid cost measured: its calls are free
    expect(roundCost({ ...curve, midMs: 2.5 })({ proposed: 2, draftCalls: 1, midCalls: 1 })).toBe(1 + 2.5 + 12)
  })

  it('ar replayed is speedup 1', () => {
    const steps = Array.from({ length: 5 }, () => round(0, 0, 1, 0))
    expect(predictFromSteps(steps, curve).speedup).toBe(1)
  })

  it('sampling: the renewal sums’ expected time, at certain acceptance equal to the greedy sum', () => {
    const sure = expectedRun(8, (t) => ({ rates: new Array(Math.min(3, 8 - t)).fill(1), draftCalls: Math.min(3, 8 - t) }), roundCost(curve))
    const p = predictFromExpected([sure], curve)
    // Rounds at 0 and 4: 3 drafts accepted + a bonus each.
    expect(p.rounds).toBe(2)
    expect(p.ms).toBe(2 * (3 + 13))
    expect(p.accepted).toBe(6)
  })
})

describe('round costs as a decode pays them (decode-calibration.ts)', () => {
  /**
   * Two models on one fake clock whose call costs `switching` ms more when the other model made the call before it —
   * the hand-over a round makes between draft and target, which calls timed apart never pay.
   */
  function handingOver(switching: number) {
    const clock = { ms: 0 }
    let last: string | null = null
    const model = (name: string, fixed: number, perToken: number) => {
      const base = timed(clock, fixed, perToken)
      return Object.assign(Object.create(base), {
        async createSession(warp: typeof WARP) {
          const session = await base.createSession(warp)
          return {
            get tokens() {
              return session.tokens
            },
            async append(tokens: readonly number[], from: number) {
              if (last !== null && last !== name) clock.ms += switching
              last = name
              return session.append(tokens, from)
            },
            truncate: (length: number) => session.truncate(length),
            dispose: () => session.dispose()
          }
        }
      })
    }
    return { clock, target: model('target', 4, 0.5), draft: model('draft', 1, 0.25) }
  }
  const costs: CostCurve = { targetMs: [10, 14, 16, 18], draftMs: 2 }
  const round = (index: number, proposed: number, draftCalls: number): StepRecord =>
    stepRecord({ index, stage: 'sd', proposed, accepted: proposed, bonus: true, emitted: proposed + 1, draftCalls, draftMs: 0, verifyMs: 0, draftEntropies: [], threshold: null, decision: null, totalMs: 0 })

  it('s = measured round time over its price, leaving out each decode\'s first round and target-only rounds', () => {
    const calibration = calibrationOf(
      [
        { record: round(0, 3, 3), ms: 500 }, // evaluates the prompt: prefill prices it
        { record: round(1, 3, 3), ms: 22 }, // priced 3·2 + c_T(4) = 24
        { record: round(2, 1, 1), ms: 18.4 }, // priced 2 + c_T(2) = 16
        { record: round(3, 0, 0), ms: 99 } // drafted nothing: c_T(1) is the target's own
      ],
      costs
    )
    expect(calibration!.rounds).toBe(2)
    expect(calibration!.scale).toBeCloseTo((22 + 18.4) / (24 + 16), 12)
    expect(calibrationOf([{ record: round(0, 3, 3), ms: 500 }], costs)).toBeNull()
  })

  it("s‖ of parallel rounds: their measured time, less what was drafted alone, over max(overlapped draft calls · c_D, c_T(positions))", () => {
    const parallel = (index: number, proposed: number, draftCalls: number, overlapCalls: number, positions: number): StepRecord => ({
      ...round(index, proposed, draftCalls),
      decision: { verify: 'post-verify', carried: 0, overlapCalls, positions }
    })
    const calibration = overlapCalibrationOf(
      [
        { record: parallel(0, 1, 4, 4, 1), ms: 500 }, // the prompt's round: left out
        { record: parallel(1, 1, 4, 4, 1), ms: 12 }, // max(4·2, c_T(1) = 10) = 10
        { record: parallel(2, 4, 6, 2, 4), ms: 8 + 27 }, // 4 calls alone (8 ms), then max(2·2, c_T(4) = 18) = 18
        { record: round(3, 3, 3), ms: 99 } // an sd round: no overlap
      ],
      costs
    )
    expect(calibration!.rounds).toBe(2)
    expect(calibration!.scale).toBeCloseTo((12 + 27) / (10 + 18), 12)
    expect(overlapCalibrationOf([{ record: round(1, 3, 3), ms: 20 }], costs)).toBeNull()
  })

  it('s‖ is above 1 on a machine that runs one call at a time: PEARL\'s overlap buys nothing there, and the price says so', async () => {
    const sequence = Array.from({ length: 60 }, (_, i) => 1 + (i % 5))
    const clock = { ms: 0 }
    const target = timed(clock, 4, 0.5)
    const draft = timed(clock, 1, 0)
    const m = { sequence, promptLength: 10, warp: WARP, maxPositions: 6, clock: () => clock.ms }
    const measured = await measureCostCurve(target, draft, m)
    const overlap = await calibrateOverlap(target, draft, m, measured)
    // Each round pays the draft's calls and the target's call one after the other: sum over max.
    expect(overlap!.scale).toBeGreaterThan(1.2)
    expect(overlap!.rounds).toBeGreaterThan(3)
  })

  it('scales c_D and c_T(k ≥ 2), keeps c_T(1), and keeps the curve non-decreasing', () => {
    expect(calibrated(costs, { scale: 1.5, rounds: 9 })).toEqual({ targetMs: [10, 21, 24, 27], draftMs: 3 })
    const faster = calibrated(costs, { scale: 0.5, rounds: 9 }).targetMs
    expect(faster[0]).toBeLessThanOrEqual(faster[1])
    expect(faster.slice(2)).toEqual([8, 9].map((ms) => Math.max(ms, faster[1])))
  })

  it('is 1 when a decode pays exactly its calls, and above 1 when its drafter appends more than one token per call', async () => {
    const sequence = Array.from({ length: 60 }, (_, i) => 1 + (i % 5))
    const scaleWith = async (draftPerToken: number) => {
      const clock = { ms: 0 }
      const target = timed(clock, 4, 0.5)
      const draft = timed(clock, 1, draftPerToken)
      const m = { sequence, promptLength: 10, warp: WARP, maxPositions: 6, clock: () => clock.ms }
      const measured = await measureCostCurve(target, draft, m)
      return (await calibrateRounds(target, draft, m, measured))!.scale
    }
    expect(await scaleWith(0)).toBeCloseTo(1, 12)
    // After a fully accepted chain the drafter catches up two tokens in its first call (its last draft and the
    // bonus), which calls of one token each never pay.
    expect(await scaleWith(0.5)).toBeGreaterThan(1)
  })

  it("c_T(1) as an ar decode pays it: s₁ = its tokens' mean ms over c_T(1), the prompt's token left out", async () => {
    const rounds = [round(0, 0, 0), round(1, 0, 0), round(2, 0, 0)].map((record, i) => ({ record, ms: [300, 12, 14][i] }))
    expect(singleCalibrationOf(rounds, costs)!.scale).toBeCloseTo(13 / costs.targetMs[0], 12)
    expect(singleCalibrationOf(rounds.slice(0, 1), costs)).toBeNull()
    const sequence = Array.from({ length: 60 }, (_, i) => 1 + (i % 5))
    const scaleWith = async (slower: number) => {
      const clock = { ms: 0 }
      const target = timed(clock, 4, 0.5)
      const m = { sequence, promptLength: 10, warp: WARP, maxPositions: 6, clock: () => clock.ms }
      const measured = await measureCostCurve(target, null, m)
      // The machine is slower (or quicker) while the curve is timed than while the decode runs.
      return (await calibrateSingle(target, m, { ...measured, targetMs: measured.targetMs.map((ms) => ms * slower) }))!.scale
    }
    expect(await scaleWith(1)).toBeCloseTo(1, 12)
    expect(await scaleWith(1.5)).toBeCloseTo(1 / 1.5, 12)
  })

  it('what a decode pays outside its rounds and its prompt: its wall less both, from the same ar decode', async () => {
    const rounds = [round(0, 0, 0), round(1, 0, 0), round(2, 0, 0)].map((record, i) => ({ record, ms: [30, 12, 14][i] }))
    expect(outsideOf(rounds, 70, 25)).toBe(70 - 26 - 25)
    expect(outsideOf(rounds, 40, 25)).toBe(0) // never below 0
    const sequence = Array.from({ length: 60 }, (_, i) => 1 + (i % 5))
    const outsideWith = async (openMs: number) => {
      const clock = { ms: 0 }
      const target = timedModel(new ToyModel({ name: 'timed', vocabulary: TOY_VOCABULARY, logits: () => [0, 1, 2, 3, 4, 5] }), clock, 4, 0.5, openMs)
      const m = { sequence, promptLength: 10, warp: WARP, maxPositions: 6, clock: () => clock.ms }
      return (await calibrateSingle(target, m, await measureCostCurve(target, null, m)))!.outsideMs
    }
    expect(await outsideWith(0)).toBeCloseTo(0, 12)
    expect(await outsideWith(7)).toBeCloseTo(7, 12)
  })


  it("a hierarchy's decode: its mid model's calls priced at c_M, so s is 1 when every call costs what it was timed at", async () => {
    const sequence = Array.from({ length: 60 }, (_, i) => 1 + (i % 5))
    const scaleWith = async (midMs: number) => {
      const clock = { ms: 0 }
      const target = timed(clock, 4, 0.5)
      const draft = timed(clock, 1, 0)
      const mid = timed(clock, 2, 0) // a call costs 2 ms whatever its batch
      const m = { sequence, promptLength: 10, warp: WARP, maxPositions: 8, clock: () => clock.ms }
      const measured = await measureCostCurve(target, draft, m)
      return (await calibrateRounds(target, draft, m, { ...measured, midMs }, { mid, shape: { m: 2, n: 1 } }))!.scale
    }
    expect(await scaleWith(2)).toBeCloseTo(1, 12)
    expect(await scaleWith(0)).toBeGreaterThan(1.1) // the mid model's calls left out of the price
    expect(calibrated({ targetMs: [10, 14], draftMs: 2, midMs: 3 }, { scale: 2, rounds: 1 })).toEqual({ targetMs: [10, 28], draftMs: 4, midMs: 6 })
  })

  it('takes in what each model pays for following the other, which calls timed apart never pay', async () => {
    const scaleWith = async (switching: number) => {
      const { clock, target, draft } = handingOver(switching)
      const m = { sequence: Array.from({ length: 60 }, (_, i) => 1 + (i % 5)), promptLength: 10, warp: WARP, maxPositions: 6, clock: () => clock.ms }
      const apart = await measureCostCurve(target, draft, m)
      expect(apart.targetMs[5]).toBe(4 + 0.5 * 6) // timed apart: no hand-over in any cost
      expect(apart.draftMs).toBe(1.25)
      return (await calibrateRounds(target, draft, m, apart))!.scale
    }
    const without = await scaleWith(0)
    const withHandOver = await scaleWith(3)
    // Without hand-overs only the drafter's two-token catch-ups cost more than priced (1.02 here); a hand-over of 3 ms
    // on rounds of about 11 ms priced lifts s to about 1.5.
    expect(without).toBeGreaterThan(1)
    expect(without).toBeLessThan(1.05)
    expect(withHandOver).toBeGreaterThan(1.4)
  })
})
