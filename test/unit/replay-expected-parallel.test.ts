/**
 * The expected rounds of parallel drafting (replay/expected-parallel.ts) against the real decoder
 * (decoders/parallel-drafting.ts). With models whose distributions do not depend on the context, every position has
 * the same acceptance rate α = Σ min(p, q) and the expected-value model is exact, so the real decoder's mean rounds
 * and draft calls over many sampled decodes must match it within sampling error — for `pearl` (pre-verify and
 * post-verify rounds) and for `sd.parallel` (post-verify alone). Hand-worked cases pin the state machine itself.
 */
import { describe, expect, it } from 'vitest'
import { decodeOnce } from '../../electron/engine/methods/decode-once'
import { prepare } from '../../electron/engine/methods/prepare'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { overlap } from '../../electron/engine/replay/expected'
import { parallelExpectedRun } from '../../electron/engine/replay/expected-parallel'
import { roundCost } from '../../electron/engine/replay/cost-curve'
import { warp } from '../../electron/engine/sampling/warp'
import { PLAIN } from '../helpers/decode'

const VOCABULARY = ['<s>', 'a', 'b', 'c', 'd'] as const
const TARGET_LOGITS = [-1e9, 1.2, 0.4, -0.3, 0.1]
const DRAFT_LOGITS = [-1e9, 0.9, 0.8, -0.6, 0.3]
const constant = (name: string, logits: number[]) => new ToyModel({ name, vocabulary: VOCABULARY, logits: () => logits })

/** Σ min(p, q) of the two constant models under PLAIN. */
const IDS = VOCABULARY.map((_, id) => id)
const ALPHA = overlap(warp(IDS, TARGET_LOGITS, PLAIN), warp(IDS, DRAFT_LOGITS, PLAIN))

const LENGTH = 120
const DECODES = 60

async function realRounds(method: string, params: Record<string, boolean>, gamma: number) {
  const run = prepare(method, { gamma, params }).newRun()
  let rounds = 0
  let draftCalls = 0
  let proposed = 0
  for (let seed = 0; seed < DECODES; seed++) {
    await decodeOnce({
      decoder: run(),
      models: { target: constant('target', TARGET_LOGITS), draft: constant('draft', DRAFT_LOGITS) },
      promptTokens: [0],
      maxTokens: LENGTH,
      warp: PLAIN,
      seed,
      stream: 0,
      onEvent: (event) => {
        if (event.type !== 'step') return
        rounds++
        draftCalls += event.record.draftCalls
        proposed += event.record.proposed
      }
    })
  }
  return { rounds: rounds / DECODES, draftCalls: draftCalls / DECODES, proposed: proposed / DECODES }
}

describe('expected rounds of parallel drafting', () => {
  it('the constant models accept at a rate strictly between 0 and 1', () => {
    expect(ALPHA).toBeGreaterThan(0.5)
    expect(ALPHA).toBeLessThan(0.95)
  })

  it.each([
    ['pearl', {}, 4],
    ['pearl', {}, 2],
    ['sd', { 'sd.parallel': true }, 3]
  ] as const)('%s %j γ=%i: rounds, proposals and draft calls = the real decoder’s means', async (method, params, gamma) => {
    const real = await realRounds(method, params, gamma)
    const expected = parallelExpectedRun(LENGTH, () => ALPHA, { gamma, preVerify: method === 'pearl', maxTokens: LENGTH })
    const calls = expected.kinds.reduce((n, k) => n + k.count * k.draftCalls, 0)
    // 60 decodes of 120 tokens: a few thousand rounds; 3 % is several standard errors of their mean.
    expect(Math.abs(expected.rounds - real.rounds) / real.rounds, `rounds ${expected.rounds} vs ${real.rounds}`).toBeLessThan(0.03)
    expect(Math.abs(expected.proposed - real.proposed) / real.proposed, `proposed ${expected.proposed} vs ${real.proposed}`).toBeLessThan(0.03)
    expect(Math.abs(calls - real.draftCalls) / real.draftCalls, `draft calls ${calls} vs ${real.draftCalls}`).toBeLessThan(0.03)
  })

  it('PEARL with every draft accepted: one pre-verify, then post-verify rounds that carry γ − 1 tokens', () => {
    const run = parallelExpectedRun(9, () => 1, { gamma: 4, preVerify: true, maxTokens: 9 })
    // (0,0) pre-verify: draft 4 ‖ target scores 1 → commit 1, 3 wait; (1,3): 3 + y_1 tested, 4 drafted ahead → (5,3);
    // (5,3): budget 4 leaves 1 look-ahead token → 3 + y_1 tested → (9, done).
    expect(run.rounds).toBe(3)
    expect(run.proposed).toBe(9)
    expect(run.accepted).toBe(9)
    expect(run.firstProposed).toBe(0)
    const shapes = run.kinds.map(({ count, ...shape }) => ({ shape, count }))
    expect(shapes).toEqual([
      { shape: { proposed: 1, draftCalls: 4, overlap: { draftCalls: 4, positions: 1 } }, count: 1 },
      { shape: { proposed: 4, draftCalls: 4, overlap: { draftCalls: 4, positions: 4 } }, count: 1 },
      { shape: { proposed: 4, draftCalls: 1, overlap: { draftCalls: 1, positions: 4 } }, count: 1 }
    ])
  })

  it('PEARL with every draft rejected: one pre-verify round per token; sd.parallel drafts its window alone first', () => {
    const pearl = parallelExpectedRun(5, () => 0, { gamma: 3, preVerify: true, maxTokens: 5 })
    expect([pearl.rounds, pearl.accepted]).toEqual([5, 0])
    const parallel = parallelExpectedRun(5, () => 0, { gamma: 3, preVerify: false, maxTokens: 5 })
    expect(parallel.rounds).toBe(5)
    expect(parallel.firstProposed).toBe(3)
    // From t = 0: 3 drafted alone, then 2 ahead (the budget) beside the verification of 3 + 1 positions.
    expect(parallel.kinds[0]).toEqual({ proposed: 4, draftCalls: 5, overlap: { draftCalls: 2, positions: 4 }, count: 1 })
  })

  it('a parallel round costs its alone part plus s‖ · max(overlapped draft calls, verification)', () => {
    const cost = roundCost({ targetMs: [10, 12, 14, 16, 18], draftMs: 2, overlapScale: 1.1 })
    // 4 overlapped draft calls (8 ms) beside c_T(4) = 16 ms; 2 alone: 4 ms.
    expect(cost({ proposed: 4, draftCalls: 6, overlap: { draftCalls: 4, positions: 4 } })).toBeCloseTo(4 + 1.1 * 16)
    // The draft the longer: 6 calls (12 ms) beside c_T(1) = 10 ms.
    expect(cost({ proposed: 1, draftCalls: 6, overlap: { draftCalls: 6, positions: 1 } })).toBeCloseTo(1.1 * 12)
    // Without an overlap, sd's sum.
    expect(cost({ proposed: 3, draftCalls: 3 })).toBe(6 + 16)
  })
})
