/**
 * The advice's llama-server arms priced with llama-server's own costs (experiments/advise-server-pricing.ts): with a
 * constructed llama-server cost table a `llama-server:*` arm is predicted from its basis's replayed rounds at
 * llama-server's costs (speedup against SpecLab's ar arm) — under sampling from its own rounds (llama.cpp's match
 * verification, replay/llama-server-draft.ts) —, SpecLab's arms keep SpecLab's prices, a failing
 * measurement leaves every arm on SpecLab's curve with one line; and the table itself is read from a server's
 * timings as engine/peers/llama-server-cost-table.ts says (a fake server with known costs).
 */
import { describe, expect, it } from 'vitest'
import { fastestFirst, price, replayAll, type CostTable } from '../../electron/engine/replay/advise'
import { recordTrace } from '../../electron/engine/replay/record'
import type { Candidate } from '../../electron/engine/replay/replay'
import { serverPrefillMs, serverStepMs, serverTargetCurve } from '../../electron/engine/peers/llama-server-cost-table'
import type { Completion, CompletionRequest, PeerServer } from '../../electron/engine/peers/llama-server-process'
import { chooseArms, type ArmChoice } from '../../electron/experiments/advise-verify'
import { priceServerArms, type MeasureServerCosts } from '../../electron/experiments/advise-server-pricing'
import { sampledReplay } from '../../electron/engine/replay/advise'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { toyDraftClose, toyTarget } from '../helpers/toy-models'

const GREEDY = { temperature: 0, topK: 0, topP: 1 }
const PROMPTS = [
  [0, 1, 2, 3],
  [0, 4, 4, 2]
]
const SPECLAB: CostTable = { targetMs: [10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5, 14], drafts: { d: { ms: 1 } }, prefillMs: { target: 30, drafts: { d: 4 } } }
/** llama-server: every cost different from SpecLab's, so a prediction shows which table priced it. */
const SERVER: CostTable = { targetMs: [6, 6.2, 6.4, 6.6, 6.8, 7, 7.2, 7.4, 7.6], drafts: { d: { ms: 0.4 } }, prefillMs: { target: 20, drafts: { d: 2 } } }
const SD4: Candidate = { method: 'sd', gamma: 4, params: {}, draft: 'd' }
const SD3: Candidate = { method: 'sd', gamma: 3, params: {}, draft: 'd' }

const choice: ArmChoice = { top: 2, deploy: 'any', serverAvailable: true, severalDrafts: false, threadsOf: () => ({ threads: 1, batchThreads: 2, draftThreads: 1 }) }

async function advised(warp: WarpConfig = GREEDY) {
  const trace = await recordTrace(toyTarget(), { d: toyDraftClose() }, PROMPTS, { warp, seed: 5, maxTokens: 30, batch: 4, rolloutLength: 6, fullEntropy: false })
  const replayed = await replayAll(trace, [SD4, SD3])
  const verdicts = fastestFirst(replayed.map((r) => price(r, trace, SPECLAB)))
  return { trace, replayed, costs: SPECLAB, arms: chooseArms(verdicts, choice) }
}

const serving = (costs: CostTable): MeasureServerCosts & { calls: { threads: unknown; drafts: string[] }[] } => {
  const calls: { threads: unknown; drafts: string[] }[] = []
  const measure = async (threads: unknown, drafts: string[]) => {
    calls.push({ threads, drafts })
    return { costs, source: 'measured' as const }
  }
  return Object.assign(measure, { calls })
}

describe('llama-server arms priced with llama-server costs', () => {
  it("a llama-server arm is predicted from its basis's rounds at llama-server's costs; SpecLab's arms are not", async () => {
    const advice = await advised()
    const methods = advice.arms.map((a) => a.candidate.method)
    expect(methods).toContain('llama-server:draft')
    const measure = serving(SERVER)
    const { arms, server } = await priceServerArms(advice.arms, advice, measure)
    expect(measure.calls).toEqual([{ threads: { threads: 1, batchThreads: 2, draftThreads: 1 }, drafts: ['d'] }])
    const arMs = advice.arms.find((a) => a.candidate.method === 'ar')!.predicted!.ms
    for (const [i, arm] of arms.entries()) {
      if (!arm.candidate.method.startsWith('llama-server:')) {
        expect(arm).toEqual(advice.arms[i])
        expect(arm.predicted!.pricedWith).toBe('speclab')
        continue
      }
      const basis = advice.replayed.find((r) => r.candidate === arm.basis)!
      const onServer = price(basis, advice.trace, SERVER).prediction!
      expect(arm.predicted).toEqual({ tokensPerSecond: onServer.tokensPerSecond, speedup: arMs / onServer.ms, ms: onServer.ms, pricedWith: 'llama-server' })
      // Faster costs, faster prediction: not SpecLab's speed of the same rounds.
      expect(arm.predicted!.ms).toBeLessThan(price(basis, advice.trace, SPECLAB).prediction!.ms)
    }
    expect(server).toEqual({ costs: [{ threads: { threads: 1, batchThreads: 2, draftThreads: 1 }, targetMs: SERVER.targetMs, draftMs: { d: 0.4 }, source: 'measured' }], note: null })
  })

  it("greedy: one real request of a draft arm scales its draft's costs by the server's generation time over the same rounds' price", async () => {
    const advice = await advised()
    const requests: { label: string; prompt: number }[] = []
    const longest = advice.trace.prompts.map((p) => p.tokens.length).indexOf(Math.max(...advice.trace.prompts.map((p) => p.tokens.length)))
    // The server takes 1.2 times the price of the longest prompt's rounds on its own table, prompt processing left out.
    const one = { ...advice.trace, prompts: [advice.trace.prompts[longest]] }
    const firstDraftArm = advice.arms.find((a) => a.candidate.method === 'llama-server:draft')!
    const [replayedOne] = await replayAll(one, [firstDraftArm.basis!]).then((all) => all.filter((r) => r.candidate === firstDraftArm.basis))
    const roundsMs = price(replayedOne, one, { ...SERVER, prefillMs: undefined }).prediction!.ms
    const run = async (arm: { label: string }, prompt: number) => {
      requests.push({ label: arm.label, prompt })
      return 1.2 * roundsMs
    }
    const { arms, server } = await priceServerArms(advice.arms, advice, serving(SERVER), undefined, run)
    expect(requests).toEqual([{ label: firstDraftArm.label, prompt: longest }])
    const scaled: CostTable = { ...SERVER, drafts: { d: { ms: 0.4 * 1.2, targetMs: [6, ...SERVER.targetMs.slice(1).map((ms) => ms * 1.2)], roundScale: 1.2 } } }
    for (const arm of arms.filter((a) => a.candidate.method === 'llama-server:draft')) {
      const basis = advice.replayed.find((r) => r.candidate === arm.basis)!
      expect(arm.predicted!.ms).toBeCloseTo(price(basis, advice.trace, scaled).prediction!.ms, 9)
      expect(arm.predicted!.ms).toBeGreaterThan(price(basis, advice.trace, SERVER).prediction!.ms)
    }
    expect(server!.costs[0].draftMs.d).toBeCloseTo(0.4 * 1.2, 12)
    expect(server!.costs[0].roundScale!.d).toBeCloseTo(1.2, 12)
    // Under sampling one request's rounds are one draw: no request is made.
    const sampled = await advised({ temperature: 1, topK: 0, topP: 1 })
    requests.length = 0
    await priceServerArms(sampled.arms, sampled, serving(SERVER), undefined, run)
    expect(requests).toEqual([])
  })

  it("under sampling a llama-server draft arm runs llama.cpp's rounds (the draft's top token, kept while the target's sample equals it), not its basis's", async () => {
    const advice = await advised({ temperature: 1, topK: 0, topP: 1 })
    const { arms } = await priceServerArms(advice.arms, advice, serving(SERVER))
    const arMs = advice.arms.find((a) => a.candidate.method === 'ar')!.predicted!.ms
    const served = arms.filter((a) => a.candidate.method === 'llama-server:draft')
    expect(served.length).toBeGreaterThan(0)
    for (const arm of served) {
      const own = price(sampledReplay(advice.trace, arm.candidate), advice.trace, SERVER).prediction!
      expect(arm.predicted).toEqual({ tokensPerSecond: own.tokensPerSecond, speedup: arMs / own.ms, ms: own.ms, pricedWith: 'llama-server' })
      // The match rule accepts less than the basis's rejection sampling: more rounds, a slower prediction.
      const basis = advice.replayed.find((r) => r.candidate === arm.basis)!
      expect(own.ms).toBeGreaterThan(price(basis, advice.trace, SERVER).prediction!.ms)
    }
    // Where llama-server's costs cannot be measured, its rounds are still its own, at SpecLab's prices.
    const failing: MeasureServerCosts = async () => Promise.reject(new Error('no server'))
    const fallback = (await priceServerArms(advice.arms, advice, failing)).arms.filter((a) => a.candidate.method === 'llama-server:draft')
    for (const arm of fallback) expect(arm.predicted!.ms).toBeCloseTo(price(sampledReplay(advice.trace, arm.candidate), advice.trace, SPECLAB).prediction!.ms, 9)
  })

  it("a failing measurement keeps SpecLab's pricing and says so in one line", async () => {
    const advice = await advised()
    const failing: MeasureServerCosts = async () => {
      throw new Error('llama-server exited (code 1):\nerror loading model')
    }
    const { arms, server } = await priceServerArms(advice.arms, advice, failing)
    expect(arms).toEqual(advice.arms)
    expect(server!.costs).toEqual([])
    expect(server!.note).toBe("llama-server's own costs could not be measured (llama-server exited (code 1): error loading model): its arms are priced with SpecLab's cost curve")
  })

  it('no llama-server arm: nothing measured, nothing recorded', async () => {
    const advice = await advised()
    const speclabOnly = chooseArms(fastestFirst(advice.replayed.map((r) => price(r, advice.trace, SPECLAB))), { ...choice, deploy: 'speclab' })
    const measure = serving(SERVER)
    const { arms, server } = await priceServerArms(speclabOnly, advice, measure)
    expect(measure.calls).toEqual([])
    expect(server).toBeUndefined()
    expect(arms).toEqual(speclabOnly)
  })
})

/**
 * A server with a one-slot prompt cache as llama.cpp's (common prefix reused, at least one token evaluated): a
 * request costs OVERHEAD ms, PER_PROMPT_TOKEN per prompt token evaluated, and STEP ms per decode step after the first.
 */
const OVERHEAD = 5
const PER_PROMPT_TOKEN = 2
const STEP = 3
function fakeServer(caching = true): PeerServer {
  let cached: readonly number[] = []
  return {
    url: 'http://fake',
    async complete(request: CompletionRequest): Promise<Completion> {
      let common = 0
      if (caching && request.cachePrompt) while (common < cached.length && common < request.prompt.length && cached[common] === request.prompt[common]) common++
      if (common === request.prompt.length) common--
      const promptN = request.prompt.length - Math.max(0, common)
      cached = [...request.prompt]
      const timings = { promptN, promptMs: OVERHEAD + PER_PROMPT_TOKEN * promptN, predictedN: request.nPredict, predictedMs: STEP * (request.nPredict - 1), predictedPerSecond: 0, draftN: null, draftAccepted: null }
      return { tokens: [], stopType: 'limit', timings }
    }
  }
}

const MEASUREMENT = { sequence: Array.from({ length: 60 }, (_, i) => i % 7), promptLength: 8, warp: GREEDY, maxPositions: 6, points: 2, repeats: 2 }

describe("llama-server's cost table from its timings", () => {
  it('c_T(1) is a decode step; c_T(k) adds the prompt time of k − 1 more tokens, without the per-request overhead', async () => {
    expect(await serverStepMs(fakeServer(), MEASUREMENT)).toBe(STEP)
    expect(await serverTargetCurve(fakeServer(), MEASUREMENT)).toEqual([1, 2, 3, 4, 5, 6].map((k) => STEP + PER_PROMPT_TOKEN * (k - 1)))
  })

  it('refuses a server whose cache did not hold the prefix', async () => {
    await expect(serverTargetCurve(fakeServer(false), MEASUREMENT)).rejects.toThrow(/prompt cache did not hold the prefix/)
  })

  it("prompt processing: the server's prompt_ms, or the wall clock around each request", async () => {
    let now = 0
    const clock = () => (now += 7)
    expect(await serverPrefillMs(fakeServer(), { warp: GREEDY }, PROMPTS, false)).toBe(2 * (OVERHEAD + PER_PROMPT_TOKEN * 4))
    expect(await serverPrefillMs(fakeServer(), { warp: GREEDY, clock }, PROMPTS, true)).toBe(2 * 7)
  })
})
