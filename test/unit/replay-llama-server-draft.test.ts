/**
 * llama-server's draft-model rounds under sampling (replay/llama-server-draft.ts): llama.cpp drafts the draft's top
 * token and keeps it while the target's sample equals it, so α_j = p(x̂_j) — not SpecLab's Σ min(p, q).
 * - Context-free toy models (the teacher-forced rates are then exact): the rates are p(argmax q) at every position.
 * - A simulation of llama.cpp's rule (common/speculative.cpp draft loop, common_sampler_sample_and_accept_n) over
 *   many seeds gives the renewal sums' E[rounds]; negative control: the same rounds priced with Σ min(p, q) miss it.
 * - p_min stops BEFORE the token whose top-10 share is below it, n_min drops a short draft, and the draft calls are
 *   counted as llama.cpp makes them.
 */
import { describe, expect, it } from 'vitest'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { expectedRun, overlap } from '../../electron/engine/replay/expected'
import { replayExpected } from '../../electron/engine/replay/expected-replay'
import { llamaServerDraftProposer, topTenShare } from '../../electron/engine/replay/llama-server-draft'
import { recordTrace } from '../../electron/engine/replay/record'
import { argmax, probabilityOf, sample } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { NEVER, TOY_VOCABULARY } from '../helpers/toy-models'

const SAMPLING: WarpConfig = { temperature: 1, topK: 0, topP: 1 }
const MAX_TOKENS = 24
const unitCost = () => 0

const contextFree = (name: string, logits: number[]) => new ToyModel({ name, vocabulary: TOY_VOCABULARY, logits: () => [NEVER, ...logits] })
const target = () => contextFree('cf-target', [1.2, 0.4, 0.0, -0.3, 0.6])
const draft = () => contextFree('cf-draft', [0.9, 0.8, -0.2, 0.1, 0.2])
const P = target().distribution([0], SAMPLING)
const Q = draft().distribution([0], SAMPLING)

async function sampledPrompt() {
  const trace = await recordTrace(target(), { d: draft() }, [[0, 1, 2]], { warp: SAMPLING, seed: 3, maxTokens: MAX_TOKENS, batch: 8, rolloutLength: 0, fullEntropy: false })
  return { trace, prompt: trace.prompts[0] }
}

/** Rounds per prompt of llama.cpp's rule on the context-free models: draft argmax q, accept while the target's sample equals it. */
function simulatedRounds(nMax: number, runs: number): { mean: number; se: number } {
  const proposal = argmax(Q)
  const counts: number[] = []
  for (let seed = 0; seed < runs; seed++) {
    const rng = createPrng(seed)
    let produced = 0
    let rounds = 0
    while (produced < MAX_TOKENS) {
      rounds++
      const drafted = Math.min(nMax, MAX_TOKENS - produced)
      let kept = 0
      // The target's sample keeps the draft token when equal; a different sample replaces it and ends the round.
      while (kept < drafted && sample(P, rng) === proposal) kept++
      produced += kept + 1 // the replacing sample, or the bonus token after a fully kept draft
    }
    counts.push(rounds)
  }
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length
  const variance = counts.reduce((a, c) => a + (c - mean) ** 2, 0) / (counts.length - 1)
  return { mean, se: Math.sqrt(variance / counts.length) }
}

describe("llama-server's draft rounds under sampling", () => {
  it('accepts draft token j with p(argmax q), less than rejection sampling would', async () => {
    const { prompt } = await sampledPrompt()
    const rounds = llamaServerDraftProposer(prompt, prompt.drafts.d, { nMax: 3, nMin: 0, pMin: 0 }, MAX_TOKENS)
    const matched = probabilityOf(P, argmax(Q))
    for (const t of [0, 5, 11]) {
      expect(rounds(t).rates).toHaveLength(3)
      for (const rate of rounds(t).rates) expect(rate).toBeCloseTo(matched, 12)
    }
    expect(overlap(P, Q)).toBeGreaterThan(matched + 0.1)
  })

  it("E[rounds] matches a simulation of llama.cpp's rule; Σ min(p, q) does not", async () => {
    const { trace } = await sampledPrompt()
    const simulated = simulatedRounds(3, 4000)
    const [expected] = replayExpected(trace, { method: 'llama-server:draft', gamma: 3, params: {}, draft: 'd' }, unitCost)
    expect(Math.abs(expected.rounds - simulated.mean)).toBeLessThan(4 * simulated.se)
    const [rejection] = replayExpected(trace, { method: 'sd', gamma: 3, params: {}, draft: 'd' }, unitCost)
    expect(Math.abs(rejection.rounds - simulated.mean)).toBeGreaterThan(4 * simulated.se)
  })

  it('p_min stops before a token below it; n_min drops a short draft; the draft calls are counted as llama.cpp makes them', async () => {
    const { prompt } = await sampledPrompt()
    const share = topTenShare(Q).p
    const propose = (nMax: number, nMin: number, pMin: number) => llamaServerDraftProposer(prompt, prompt.drafts.d, { nMax, nMin, pMin }, MAX_TOKENS)(0)
    expect(propose(4, 0, share + 0.01)).toEqual({ rates: [], draftCalls: 1 })
    expect(propose(4, 0, share - 0.01).rates).toHaveLength(4)
    // llama.cpp stops below p_min (`cur_p->data[0].p < params.p_min`): a token exactly at it is drafted.
    expect(propose(4, 0, share).rates).toHaveLength(4)
    expect(propose(4, 0, share - 0.01).draftCalls).toBe(4)
    expect(propose(4, 5, 0)).toEqual({ rates: [], draftCalls: 4 })
    // The budget cuts the draft like n_max does.
    expect(llamaServerDraftProposer(prompt, prompt.drafts.d, { nMax: 6, nMin: 0, pMin: 0 }, MAX_TOKENS)(MAX_TOKENS - 2).draftCalls).toBe(2)
  })

  it("the top-10 share renormalises q over its ten most likely tokens (llama.cpp's draft sampler: top-k 10)", () => {
    const probs = [0.3, 0.2, 0.1, 0.08, 0.07, 0.06, 0.05, 0.04, 0.04, 0.03, 0.02, 0.01]
    const q = { ids: Int32Array.from(probs.map((_, i) => 100 + i)), probs: Float64Array.from(probs) }
    const { token, p } = topTenShare(q)
    expect(token).toBe(100)
    expect(p).toBeCloseTo(0.3 / 0.97, 12)
  })
})
