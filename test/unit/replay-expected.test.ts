/**
 * Sampling replay (replay/expected.ts): expected rounds against closed forms and against the real decoder.
 * - The accepted-length law and Leviathan et al.'s Eq. 1 (constant α: E[tokens per round] = (1 − α^{γ+1})/(1 − α)).
 * - Context-free toy models (the teacher-forced rates are then exact): the recorded rates equal Σ min(p, q) computed
 *   from the models, and the renewal sums' E[rounds] matches the mean rounds of the real `sd` decoder over many seeds.
 * - Known rates (--synthetic-acceptance): the real decoder accepting position i with probability r_i against the renewal sums
 *   fed the same r_i.
 * - Negative control: a replay that prices acceptance as Σ p·q instead of Σ min(p, q) must miss the real mean.
 */
import { describe, expect, it } from 'vitest'
import { decodeOnce } from '../../electron/engine/methods/decode-once'
import { prepare } from '../../electron/engine/methods/prepare'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import { pMinPolicy } from '../../electron/engine/policies/p-min'
import { acceptedLengthLaw, expectedRun, hierarchyProposer, lookupProposer, modelProposer, overlap, type Proposer, type RoundShape } from '../../electron/engine/replay/expected'
import { replayExpected } from '../../electron/engine/replay/expected-replay'
import { recordTrace } from '../../electron/engine/replay/record'
import type { Trace } from '../../electron/engine/replay/trace'
import { probabilityOf } from '../../electron/engine/sampling/distribution'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { expectedTokens } from '../../electron/engine/theory/leviathan'
import { NEVER, TOY_VOCABULARY } from '../helpers/toy-models'

const SAMPLING: WarpConfig = { temperature: 1, topK: 0, topP: 1 }
const MAX_TOKENS = 24
const RUNS = 2000
const unitCost = () => 0

/** Logits that ignore the context: every position has the same p (or q). */
const contextFree = (name: string, logits: number[]) => new ToyModel({ name, vocabulary: TOY_VOCABULARY, logits: () => [NEVER, ...logits] })
const target = () => contextFree('cf-target', [1.2, 0.4, 0.0, -0.3, 0.6])
const draft = () => contextFree('cf-draft', [0.9, 0.8, -0.2, 0.1, 0.2])

async function sampledTrace(): Promise<Trace> {
  return recordTrace(target(), { d: draft() }, [[0, 1, 2]], { warp: SAMPLING, seed: 3, maxTokens: MAX_TOKENS, batch: 8, rolloutLength: 0, fullEntropy: true })
}

/** A mid model between the two (hier-chen's M_q2): closer to the target than the draft is. */
const mid = () => contextFree('cf-mid', [1.1, 0.5, 0.0, -0.2, 0.5])

/** Mean and standard error of the real decoder's rounds per prompt over RUNS seeds. */
async function realRounds(method: string, gamma: number, syntheticAcceptance?: number[], params: Record<string, number | boolean> = {}): Promise<{ mean: number; se: number }> {
  const run = prepare(method, { gamma, params, syntheticAcceptance }).newRun()
  const models = { target: target(), draft: draft(), mid: mid() }
  const counts: number[] = []
  for (let seed = 0; seed < RUNS; seed++) {
    let rounds = 0
    await decodeOnce({ decoder: run(), models, promptTokens: [0, 1, 2], maxTokens: MAX_TOKENS, warp: SAMPLING, seed, stream: 0, syntheticAcceptance, onEvent: (e) => e.type === 'step' && rounds++ })
    counts.push(rounds)
  }
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length
  const variance = counts.reduce((a, c) => a + (c - mean) ** 2, 0) / (counts.length - 1)
  return { mean, se: Math.sqrt(variance / counts.length) }
}

describe('expected rounds under sampling', () => {
  it('the accepted-length law sums to 1 and gives Leviathan Eq. 1 at a constant α', () => {
    for (const alpha of [0, 0.3, 0.8, 1])
      for (const gamma of [1, 3, 6]) {
        const law = acceptedLengthLaw(new Array(gamma).fill(alpha))
        expect(law.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12)
        expect(law.reduce((sum, p, a) => sum + p * (a + 1), 0)).toBeCloseTo(expectedTokens(alpha, gamma), 12)
      }
  })

  it('records Σ min(p, q) of the models at every position (context-free models: exact)', async () => {
    const trace = await sampledTrace()
    const prompt = trace.prompts[0]
    const p = target().distribution([0], SAMPLING)
    const q = draft().distribution([0], SAMPLING)
    let alpha = 0
    for (let y = 1; y < TOY_VOCABULARY.length; y++) alpha += Math.min(probabilityOf(p, y), probabilityOf(q, y))
    const proposer = modelProposer(prompt, prompt.drafts.d, fixedLengthPolicy(3), MAX_TOKENS)
    expect(proposer(0).rates).toHaveLength(3)
    for (const rate of proposer(5).rates) expect(rate).toBeCloseTo(alpha, 12)
    // One round away from the end: E[tokens] = (1 − α^{γ+1})/(1 − α).
    const oneRound = expectedRun(4, (t) => (t === 0 ? proposer(0) : { rates: [], draftCalls: 0 }), unitCost)
    expect(4 - (oneRound.rounds - 1)).toBeGreaterThan(0)
    const law = acceptedLengthLaw(proposer(0).rates)
    expect(law.reduce((s, pr, a) => s + pr * (a + 1), 0)).toBeCloseTo(expectedTokens(alpha, 3), 12)
  })

  it('E[rounds] of sd (γ = 3) matches the real decoder over many seeds', async () => {
    const trace = await sampledTrace()
    const [expected] = replayExpected(trace, { method: 'sd', gamma: 3, params: {}, draft: 'd' }, unitCost)
    const real = await realRounds('sd', 3)
    expect(Math.abs(expected.rounds - real.mean)).toBeLessThan(4 * real.se)

    // Negative control: Σ p·q is not the acceptance rate; a replay using it misses by many standard errors.
    const prompt = trace.prompts[0]
    const pq = (i: number) => {
      const p = prompt.target[i]
      const q = prompt.drafts.d.points[i].distribution
      return p.ids.reduce((sum, id, k) => sum + p.probs[k] * probabilityOf(q, id), 0)
    }
    const wrong: Proposer = (t) => {
      const k = Math.min(3, MAX_TOKENS - t)
      return { rates: Array.from({ length: k }, (_, j) => pq(t + j)), draftCalls: k }
    }
    expect(Math.abs(expectedRun(MAX_TOKENS, wrong, unitCost).rounds - real.mean)).toBeGreaterThan(4 * real.se)
  })

  it("hier-chen: each guess at its own drafter's Σ min(p, ·), calls counted per model, E[rounds] = the real decoder's", async () => {
    const trace = await recordTrace(target(), { d: draft(), m: mid() }, [[0, 1, 2]], { warp: SAMPLING, seed: 3, maxTokens: MAX_TOKENS, batch: 8, rolloutLength: 0, fullEntropy: false })
    const prompt = trace.prompts[0]
    const p = target().distribution([0], SAMPLING)
    const small = overlap(p, draft().distribution([0], SAMPLING))
    const middle = overlap(p, mid().distribution([0], SAMPLING))
    expect(middle - small).toBeGreaterThan(0.05) // the two drafters are told apart
    const proposer = hierarchyProposer(prompt, prompt.drafts.d, prompt.drafts.m, { m: 2, n: 2 }, MAX_TOKENS)
    const round = proposer(0)
    expect(round.rates.map((r) => r.toFixed(12))).toEqual([small, small, middle, small, small, middle].map((r) => r.toFixed(12)))
    expect([round.draftCalls, round.midCalls]).toEqual([4, 2])
    const cut = proposer(MAX_TOKENS - 4) // the budget leaves 4 guesses: two small, the mid's, one small
    expect([cut.rates.length, cut.draftCalls, cut.midCalls]).toEqual([4, 3, 1])
    const params = { 'chen.m': 2, 'chen.n': 2, 'chen.residual': true }
    const [expected] = replayExpected(trace, { method: 'hier-chen', gamma: 1, params, draft: 'd', mid: 'm' }, unitCost)
    const real = await realRounds('hier-chen', 1, undefined, params)
    expect(Math.abs(expected.rounds - real.mean)).toBeLessThan(4 * real.se)
  })

  it('rounds by kind price to the same expected time as the cost given to expectedRun', async () => {
    const trace = await sampledTrace()
    const prompt = trace.prompts[0]
    const proposer = modelProposer(prompt, prompt.drafts.d, pMinPolicy({ p: 0.6, min: 0, max: 5 }), MAX_TOKENS)
    const cost = ({ proposed, draftCalls }: RoundShape) => 7 + 2 * proposed + 0.5 * draftCalls
    const run = expectedRun(MAX_TOKENS, proposer, cost)
    expect(run.kinds.reduce((n, kind) => n + kind.count, 0)).toBeCloseTo(run.rounds, 12)
    expect(run.kinds.reduce((ms, kind) => ms + kind.count * cost(kind), 0)).toBeCloseTo(run.ms, 9)
    expect(run.kinds.reduce((n, kind) => n + kind.count * kind.proposed, 0)).toBeCloseTo(run.proposed, 9)
  })

  it('known rates (--synthetic-acceptance) give the real decoder’s mean rounds', async () => {
    const rates = [0.9, 0.6, 0.3, 0.3]
    const real = await realRounds('sd', 4, rates)
    const known: Proposer = (t) => {
      const k = Math.min(4, MAX_TOKENS - t)
      return { rates: rates.slice(0, k), draftCalls: k }
    }
    expect(Math.abs(expectedRun(MAX_TOKENS, known, unitCost).rounds - real.mean)).toBeLessThan(4 * real.se)
    const shifted: Proposer = (t) => ({ rates: rates.slice(1, 1 + Math.min(4, MAX_TOKENS - t)), draftCalls: 4 })
    expect(Math.abs(expectedRun(MAX_TOKENS, shifted, unitCost).rounds - real.mean)).toBeGreaterThan(4 * real.se)
  })

  it('a policy stops the proposal where the real policy stops (p-min reads q at the trace position)', async () => {
    const trace = await sampledTrace()
    const prompt = trace.prompts[0]
    const confidence = prompt.drafts.d.points[0].confidence
    const stopsAtOnce = modelProposer(prompt, prompt.drafts.d, pMinPolicy({ p: confidence + 0.01, min: 0, max: 8 }), MAX_TOKENS)
    const neverStops = modelProposer(prompt, prompt.drafts.d, pMinPolicy({ p: confidence - 0.01, min: 0, max: 8 }), MAX_TOKENS)
    expect(stopsAtOnce(0).rates).toHaveLength(1)
    expect(neverStops(0).rates).toHaveLength(8)
    expect(neverStops(MAX_TOKENS - 2).rates).toHaveLength(2) // the budget cuts it
  })

  it('a looked-up token is accepted with p(x), and the proposal is cut at the cap', async () => {
    const trace = await sampledTrace()
    const prompt = trace.prompts[0]
    const proposal = [2, 3, 4, 5, 1]
    const lookup = { propose: () => ({ tokens: proposal, facts: {} }) }
    const proposer = lookupProposer(prompt, lookup, 3, MAX_TOKENS, () => false)
    expect(proposer(4).rates).toEqual(proposal.slice(0, 3).map((x, j) => probabilityOf(prompt.target[4 + j], x)))
    expect(overlap(prompt.target[0], prompt.target[0])).toBeCloseTo(1, 12)
  })
})
