/**
 * The advisor's workflow (experiments/advise.ts) end to end on toy models with a fake clock: a target call of k
 * tokens takes 10 + 0.5·k ms and a draft call 1 ms, so a greedy run's time — prompt processing included — is exactly
 * its rounds priced with the measured costs, and the predicted tokens per second of every verified candidate must
 * EQUAL the measured ones.
 */
import { describe, expect, it } from 'vitest'
import { adviseWorkload } from '../../electron/experiments/advise'
import type { Candidate } from '../../electron/engine/replay/replay'
import { threadedModel, timedModel, type FakeClock } from '../helpers/timed-model'
import type { LanguageModel } from '../../electron/engine/model/types'
import type { PhaseThreads } from '../../electron/engine/model/thread-calibration'
import { toyDraftClose, toyTarget } from '../helpers/toy-models'

const GREEDY = { temperature: 0, topK: 0, topP: 1 }
const PROMPTS = [
  [0, 1, 2, 3],
  [0, 4, 4, 2, 5]
]

describe('adviseWorkload', () => {
  it('greedy: the verified candidates run exactly as fast as predicted (fake clock)', async () => {
    const clock: FakeClock = { ms: 0 }
    const target = timedModel(toyTarget(), clock, 10, 0.5)
    const draft = timedModel(toyDraftClose(), clock, 1, 0)
    const candidates: Candidate[] = [
      { method: 'sd', gamma: 2, params: {}, draft: 'close' },
      { method: 'sd', gamma: 4, params: {}, draft: 'close' },
      { method: 'svip', gamma: 5, params: { 'svip.h': 0.45, 'svip.maxDraft': 6 }, draft: 'close' },
      { method: 'pld', gamma: 3, params: {}, draft: null }
    ]
    const advice = await adviseWorkload({
      target,
      drafts: { close: draft },
      prompts: PROMPTS,
      warp: GREEDY,
      seed: 1,
      maxTokens: 30,
      candidates,
      verifyTop: 4,
      curve: { maxPositions: 8 },
      clock: () => clock.ms
    })
    expect(advice.costs.targetMs).toEqual(Array.from({ length: 8 }, (_, k) => 10 + 0.5 * (k + 1)))
    expect(advice.costs.prefillMs).toEqual({ target: 20 + 0.5 * 9, drafts: { close: 2 } })
    // A decode's rounds pay exactly their calls on the fake clock (decode-calibration.ts): scale 1, the curve timed apart.
    expect(advice.costs.drafts.close).toEqual({ ms: 1, fullEntropyMs: 1, targetMs: advice.costs.targetMs, roundScale: 1 })
    expect(advice.verdicts).toHaveLength(5)
    expect(advice.verdicts.every((v) => v.error === null)).toBe(true)
    expect(advice.measured.map((m) => m.candidate.method)).toEqual(['ar', ...advice.verdicts.filter((v) => v.candidate.method !== 'ar').map((v) => v.candidate.method)])
    for (const measured of advice.measured) {
      const verdict = advice.verdicts.find((v) => v.candidate === measured.candidate || (measured.candidate.method === 'ar' && v.candidate.method === 'ar'))!
      expect(measured.tokens).toBe(verdict.prediction!.tokens)
      expect(measured.tokensPerSecond).toBeCloseTo(verdict.prediction!.tokensPerSecond, 9)
    }
    // The rollouts cover svip's cap of 6; the default grid is not used when candidates are given.
    expect(advice.trace.rolloutLength).toBe(5)
  })

  it('a decode that pays time outside its calls (opening its target session): measured once, predicted for every candidate', async () => {
    const verify = async (openMs: number) => {
      const clock: FakeClock = { ms: 0 }
      const target = timedModel(toyTarget(), clock, 10, 0.5, openMs)
      const draft = timedModel(toyDraftClose(), clock, 1, 0)
      const candidates: Candidate[] = [
        { method: 'sd', gamma: 3, params: {}, draft: 'close' },
        { method: 'pld', gamma: 3, params: {}, draft: null }
      ]
      const advice = await adviseWorkload({ target, drafts: { close: draft }, prompts: PROMPTS, warp: GREEDY, seed: 1, maxTokens: 30, candidates, verifyTop: 2, curve: { maxPositions: 8 }, clock: () => clock.ms })
      const gaps = advice.measured.map((m) => m.tokensPerSecond / advice.verdicts.find((v) => v.candidate.method === m.candidate.method)!.prediction!.tokensPerSecond - 1)
      return { outside: advice.costs.decodeOutsideMs, gaps }
    }
    expect(await verify(0)).toEqual({ outside: 0, gaps: [0, 0, 0].map(() => expect.closeTo(0, 9)) })
    const opening = await verify(25)
    expect(opening.outside).toBeCloseTo(25, 9)
    for (const gap of opening.gaps) expect(gap).toBeCloseTo(0, 9)
  })

  it('the default grid covers every traced draft and the lookups', async () => {
    const advice = await adviseWorkload({ target: toyTarget(), drafts: { close: toyDraftClose() }, prompts: PROMPTS, warp: GREEDY, seed: 1, maxTokens: 20, curve: { maxPositions: 4, repeats: 1, points: 1 } })
    const methods = new Set(advice.verdicts.map((v) => v.candidate.method))
    expect([...methods].sort()).toEqual(['ar', 'ngram-simple', 'pearl', 'pld', 'sd', 'sd+ngram', 'sd-pmin', 'svip'])
    expect(advice.verdicts.filter((v) => v.error !== null)).toEqual([])
    expect(advice.trace.rolloutLength).toBe(39)
  })

  it('thread plans: each candidate runs with its fastest plan, exactly as fast as predicted', async () => {
    const clock: FakeClock = { ms: 0 }
    // Target: one thread is faster for one token, two for batches; the draft is fastest on one.
    const target = threadedModel(toyTarget(), clock, (k, t) => (t === 1 ? 10 + 2 * k : 13 + 0.5 * k))
    const draft = threadedModel(toyDraftClose(), clock, (k, t) => (t === 1 ? 1 : 5))
    type Threaded = LanguageModel & { phaseThreads: PhaseThreads }
    const advice = await adviseWorkload({
      target,
      drafts: { close: draft },
      prompts: PROMPTS,
      warp: GREEDY,
      seed: 1,
      maxTokens: 30,
      candidates: [{ method: 'sd', gamma: 4, params: {}, draft: 'close' }, { method: 'pld', gamma: 3, params: {}, draft: null }],
      verifyTop: 2,
      curve: { maxPositions: 8 },
      clock: () => clock.ms,
      threads: {
        counts: [1, 2],
        apply: (model, phase) => Object.assign((model as Threaded).phaseThreads, phase),
        current: (model) => ({ ...(model as Threaded).phaseThreads })
      }
    })
    expect(Object.keys(advice.plans!)).toHaveLength(8)
    const sd = advice.verdicts.find((v) => v.candidate.method === 'sd')!
    expect(sd.plan).toBe('target 1/2, draft 1')
    expect(advice.verdicts.find((v) => v.candidate.method === 'ar')!.plan).toMatch(/^target 1\/2/) // its prompt is a batch
    for (const measured of advice.measured) {
      const verdict = advice.verdicts.find((v) => v.candidate.method === measured.candidate.method)!
      expect(measured.plan).toBe(verdict.plan)
      expect(measured.tokensPerSecond).toBeCloseTo(verdict.prediction!.tokensPerSecond, 9)
    }
    // The models are back on what they had.
    expect(target.phaseThreads).toEqual({ threads: 1, batchThreads: 1 })
  })
})
