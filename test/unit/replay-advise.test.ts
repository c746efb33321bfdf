/**
 * The advisor's ranking (replay/advise.ts) and the trace file (replay/trace-file.ts) on toy models: `ar` is the
 * baseline at speedup 1, predictions are the replay's rounds priced with the cost table (svip's draft at its
 * full-vocabulary cost), unreplayable candidates carry their reason, sampled traces give expected values, and a trace
 * read back from JSON replays identically.
 */
import { describe, expect, it } from 'vitest'
import { rankCandidates, rankPlans, replayAll, type CostTable } from '../../electron/engine/replay/advise'
import { roundCost } from '../../electron/engine/replay/cost-curve'
import { predictFromSteps } from '../../electron/engine/replay/predict'
import { recordTrace } from '../../electron/engine/replay/record'
import { replayGreedy, type Candidate } from '../../electron/engine/replay/replay'
import { traceFromJson, traceToJson } from '../../electron/engine/replay/trace-file'
import { toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const GREEDY = { temperature: 0, topK: 0, topP: 1 }
const SAMPLING = { temperature: 1, topK: 0, topP: 1 }
const PROMPTS = [
  [0, 1, 2, 3],
  [0, 4, 4, 2]
]
const COSTS: CostTable = { targetMs: [10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5, 14], drafts: { d: { ms: 1, fullEntropyMs: 3 } } }
const SD: Candidate = { method: 'sd', gamma: 3, params: {}, draft: 'd' }
const SVIP: Candidate = { method: 'svip', gamma: 3, params: { 'svip.h': 0.45, 'svip.maxDraft': 6 }, draft: 'd' }

const trace = (warp = GREEDY, rolloutLength = 6) =>
  recordTrace(toyTarget(), { d: toyDraftClose() }, PROMPTS, { warp, seed: 5, maxTokens: 30, batch: 4, rolloutLength, fullEntropy: true })

describe('rankCandidates', () => {
  it('greedy: ar at speedup 1, candidates priced from their replayed rounds, fastest first', async () => {
    const t = await trace()
    const verdicts = await rankCandidates(t, [SD, SVIP, { method: 'pld', gamma: 3, params: {}, draft: null }], COSTS)
    expect(verdicts.map((v) => v.error)).toEqual([null, null, null, null])
    expect(verdicts.find((v) => v.candidate.method === 'ar')!.prediction!.speedup).toBeCloseTo(1, 12)
    const speeds = verdicts.map((v) => v.prediction!.tokensPerSecond)
    expect([...speeds].sort((a, b) => b - a)).toEqual(speeds)
    const sd = verdicts.find((v) => v.candidate === SD)!
    const steps = (await replayGreedy(t, SD)).flatMap((p) => p.steps)
    expect(sd.prediction).toEqual(predictFromSteps(steps, { targetMs: COSTS.targetMs, draftMs: 1 }))
    // svip reads the whole-vocabulary entropy: its draft calls cost fullEntropyMs.
    const svip = verdicts.find((v) => v.candidate === SVIP)!
    const svipSteps = (await replayGreedy(t, SVIP)).flatMap((p) => p.steps)
    expect(svip.prediction!.ms).toBeCloseTo(predictFromSteps(svipSteps, { targetMs: COSTS.targetMs, draftMs: 3 }).ms, 9)
  })

  it("hier-chen with a mid model: its small model's calls at c_D, its mid model's at c_M(n + 1), or its pair's own scale", async () => {
    const t = await recordTrace(toyTarget(), { d: toyDraftClose(), m: toyDraft() }, PROMPTS, { warp: GREEDY, seed: 5, maxTokens: 30, batch: 4, rolloutLength: 6, fullEntropy: false })
    const hierarchy: Candidate = { method: 'hier-chen', gamma: 1, params: { 'chen.m': 2, 'chen.n': 1, 'chen.residual': true }, draft: 'd', mid: 'm' }
    const steps = (await replayGreedy(t, hierarchy)).flatMap((p) => p.steps)
    expect(steps.every((s) => s.levels !== undefined && s.levels !== null)).toBe(true)
    const costs: CostTable = { targetMs: COSTS.targetMs, drafts: { d: { ms: 2, roundScale: 2 }, m: { ms: 5, batchMs: [3, 4, 5] } } }
    const verdict = (await rankCandidates(t, [hierarchy], costs)).find((x) => x.candidate === hierarchy)!
    expect(verdict.error).toBeNull()
    expect(verdict.prediction!.ms).toBeCloseTo(predictFromSteps(steps, { targetMs: COSTS.targetMs, draftMs: 2, midMs: 4 }).ms, 9) // c_M(2)
    // The pair's own calibration: apart costs (c_D 2 / 2 = 1) scaled by 1.5, c_T(1) kept.
    costs.drafts.m.hierarchyScale = { d: 1.5 }
    const scaled = (await rankCandidates(t, [hierarchy], costs)).find((x) => x.candidate === hierarchy)!
    const [single, ...rest] = COSTS.targetMs
    expect(scaled.prediction!.ms).toBeCloseTo(predictFromSteps(steps, { targetMs: [single, ...rest.map((ms) => ms * 1.5)], draftMs: 1.5, midMs: 6 }).ms, 9)
    // Without the mid model's batch costs it is not priced, and says why.
    delete costs.drafts.m.batchMs
    expect((await rankCandidates(t, [hierarchy], costs)).find((x) => x.candidate === hierarchy)!.error).toMatch(/no batch cost measured for the mid model 'm'/)
  })

  it('lists a candidate the trace cannot replay with its reason, last', async () => {
    const verdicts = await rankCandidates(await trace(GREEDY, 1), [{ ...SD, gamma: 5 }, { method: 'sd-tree', gamma: 3, params: {}, draft: 'd' }, SD], COSTS)
    expect(verdicts.slice(0, 1).map((v) => v.error)).toEqual([null])
    expect(verdicts.filter((v) => v.error !== null)).toHaveLength(verdicts.length - verdicts.filter((v) => v.prediction).length)
    expect(verdicts.find((v) => v.candidate.gamma === 5)!.error).toMatch(/rollout/)
    expect(verdicts[verdicts.length - 1].prediction).toBeNull()
  })

  it('rankPlans keeps each candidate\'s fastest cost table', async () => {
    const t = await trace()
    const replayed = await replayAll(t, [SD])
    // "batch2" makes batches cheap and single tokens dear: good for sd, bad for ar.
    const batch2: CostTable = { targetMs: [14, 8, 8.2, 8.4, 8.6, 8.8, 9, 9.2, 9.4], drafts: COSTS.drafts }
    const verdicts = rankPlans(replayed, t, [
      { plan: 'batch1', costs: COSTS },
      { plan: 'batch2', costs: batch2 }
    ])
    expect(verdicts.find((v) => v.candidate.method === 'ar')!.plan).toBe('batch1')
    expect(verdicts.find((v) => v.candidate === SD)!.plan).toBe('batch2')
  })

  it('sampling: expected values, ar still the baseline', async () => {
    const verdicts = await rankCandidates(await trace(SAMPLING, 0), [SD, { method: 'sd-heuristic', gamma: 3, params: {}, draft: 'd' }], COSTS)
    expect(verdicts.every((v) => v.mode === 'expected')).toBe(true)
    expect(verdicts.find((v) => v.candidate.method === 'ar')!.prediction!.speedup).toBeCloseTo(1, 12)
    expect(verdicts.find((v) => v.candidate === SD)!.prediction!.tokensPerRound).toBeGreaterThan(1)
    expect(verdicts.find((v) => v.candidate.method === 'sd-heuristic')!.error).toMatch(/no expected-value replay/)
  })
})

describe('trace file', () => {
  it('a trace read back from JSON replays to the same rounds and prices', async () => {
    const t = await trace()
    const back = traceFromJson(traceToJson(t))
    expect(back).toEqual(t)
    // Rounds without their wall-clock fields (the replay's own time, not a prediction).
    const rounds = async (x: typeof t, c: Candidate) =>
      (await replayGreedy(x, c)).map((p) => p.steps.map(({ draftMs: _d, verifyMs: _v, totalMs: _t, ...round }) => round))
    for (const candidate of [SD, SVIP]) expect(await rounds(back, candidate)).toEqual(await rounds(t, candidate))
    expect(roundCost({ targetMs: COSTS.targetMs, draftMs: 1 })({ proposed: 3, draftCalls: 3 })).toBe(14.5)
  })

  it('refuses another version', () => {
    expect(() => traceFromJson(JSON.stringify({ version: 99 }))).toThrow(/version 99/)
  })
})
