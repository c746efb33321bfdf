/**
 * Model-free drafting (pld, ngram-simple, ngram-map-k, ngram-map-k4v, ngram-cache) is lossless: a looked-up token is a point
 * mass q = δ(x), verified by the speculative decoder's own Verify/Correct — accept with p(x), correct from
 * norm(max(0, p − δ)) (decoders/drafter.ts). Checked as test/unit/speculative-distribution.test.ts checks `sd`:
 * Pearson's chi-square of the joint law of output tokens against the toy target's exact warped law, on a prompt
 * that repeats itself so the lookups really propose (and get both accepted and rejected); a mutant that accepts
 * every looked-up token in the target's support must fail the same test. Greedy: the text equals `ar`'s.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { lookupDrafter, type Drafter } from '../../electron/engine/decoders/drafter'
import { speculativeDecoder } from '../../electron/engine/decoders/speculative'
import type { Decoder, DecoderModels } from '../../electron/engine/decoders/types'
import { prepare, prepareRun } from '../../electron/engine/methods/prepare'
import { promptLookupState } from '../../electron/engine/lookup/prompt-lookup'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report } from '../helpers/sampling'
import { eosTarget, EOS_TOKEN, exactSequenceDistribution, marginal, TOY_BOS, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20251123
const P_MIN = 0.001
const MAX_TOKENS = 4
const GROUPS = [
  [0, 1],
  [2, 3]
]

/** A prompt that repeats itself: every lookup finds its suffix earlier on. */
const PROMPT = [TOY_BOS, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2]

type Params = Record<string, number>
/** Short keys so the toy prompt is long enough (llama.cpp's defaults n = 12, m = 48 need > 61 tokens). */
const METHODS: { id: string; params: Params }[] = [
  { id: 'pld', params: { 'pld.ngram': 2, 'pld.k': 3 } },
  { id: 'ngram-simple', params: { 'ngramsimple.n': 1, 'ngramsimple.m': 3 } },
  { id: 'ngram-map-k', params: { 'ngrammapk.n': 1, 'ngrammapk.m': 3 } },
  { id: 'ngram-map-k4v', params: { 'ngrammapk4v.n': 1, 'ngrammapk4v.m': 2 } },
  { id: 'ngram-cache', params: { 'ngramcache.nDraft': 3 } }
]

const decoderOf = (id: string, params: Params, gamma = 3): (() => Decoder) => prepare(id, { gamma, params }).newRun()

interface Sampled {
  counts: Map<string, number>[]
  rounds: number
  proposed: number
  accepted: number
  rejections: number
  lookupTokens: number
}

async function sampleLaw(decoder: () => Decoder, models: DecoderModels, warp: WarpConfig): Promise<Sampled> {
  const sampled: Sampled = { counts: GROUPS.map(() => new Map()), rounds: 0, proposed: 0, accepted: 0, rejections: 0, lookupTokens: 0 }
  for (let i = 0; i < SAMPLES; i++) {
    const result = await decode(decoder(), models, { promptTokens: [...PROMPT], maxTokens: MAX_TOKENS, warp, rng: createPrng(SEED, i) })
    expect(result.tokens).toHaveLength(MAX_TOKENS)
    GROUPS.forEach((positions, g) => tally(sampled.counts[g], positions.map((p) => result.tokens[p]).join(',')))
    for (const step of result.steps) {
      if (step.proposed === 0) continue
      sampled.rounds += 1
      sampled.proposed += step.proposed
      sampled.accepted += step.accepted
      if (step.resampled) sampled.rejections += 1
    }
    sampled.lookupTokens += result.provenances.filter((p) => p === 'ngram').length
  }
  return sampled
}

function fits(label: string, sampled: Sampled, warp: WarpConfig): number[] {
  const law = exactSequenceDistribution(toyTarget(), PROMPT, MAX_TOKENS, warp)
  return GROUPS.map((positions, g) => {
    const fit = chiSquareGoodnessOfFit(sampled.counts[g], marginal(law, positions))
    report(`${label} tokens ${positions.join('+')}`, fit)
    expect(fit.df).toBeGreaterThanOrEqual(8)
    return fit.pValue
  })
}

describe('model-free drafting is lossless at temperature > 0 (chi-square, 20k decodes each)', () => {
  const warps: { label: string; warp: WarpConfig }[] = [
    { label: 'T=1', warp: PLAIN },
    { label: 'T=0.7 top-k 4', warp: { temperature: 0.7, topK: 4, topP: 1 } }
  ]
  const cases = METHODS.flatMap((m) => warps.map((w) => ({ ...m, ...w })))

  it.each(cases)('$id, $label', async ({ id, params, label, warp }) => {
    const sampled = await sampleLaw(decoderOf(id, params), { target: toyTarget() }, warp)
    console.log(
      `${id} ${label}: ${sampled.rounds} lookup rounds, ${sampled.proposed} proposed, acceptance ` +
        `${(sampled.accepted / sampled.proposed).toFixed(3)}, rejection rounds ${(sampled.rejections / sampled.rounds).toFixed(3)}, ` +
        `${sampled.lookupTokens} output tokens from lookups`
    )
    // Both verdicts must really occur, often, or the test would prove nothing about Verify / Correct.
    expect(sampled.rounds).toBeGreaterThan(SAMPLES / 2)
    expect(sampled.rejections / sampled.rounds).toBeGreaterThan(0.2)
    expect(sampled.lookupTokens).toBeGreaterThan(SAMPLES / 10)
    for (const p of fits(`${id} ${label}`, sampled, warp)) expect(p).toBeGreaterThan(P_MIN)
  })

  it('negative control: accepting every looked-up token in the target’s support (no p(x) test) fails the same test', async () => {
    // The mutation: q(x) = 0 instead of 1, so acceptSampling's r·q(x) < p(x) holds whenever p(x) > 0.
    const acceptAlways = (inner: Drafter): Drafter => ({
      stage: inner.stage,
      async open(models, request, policy) {
        const session = await inner.open(models, request, policy)
        return {
          ...session,
          async propose(round) {
            const proposal = await session.propose(round)
            return { ...proposal, distributions: proposal.tokens.map((t) => ({ ids: Int32Array.of(t), probs: Float64Array.of(0) })) }
          }
        }
      }
    })
    const mutant = () =>
      speculativeDecoder(fixedLengthPolicy(3), acceptAlways(lookupDrafter('pld', (_, target) => promptLookupState({ maxNgram: 2, k: 3 }, (t) => target.isEndOfGeneration(t)))))
    const sampled = await sampleLaw(mutant, { target: toyTarget() }, PLAIN)
    expect(sampled.rejections).toBe(0)
    const pValues = fits('negative control: pld accepting unconditionally', sampled, PLAIN)
    expect(Math.min(...pValues)).toBeLessThan(1e-6)
  })
})

describe('model-free drafting: greedy reproduces ar, step records, the catalog', () => {
  const prompts = [PROMPT, [TOY_BOS], [TOY_BOS, 3, 4, 3, 4, 3], [TOY_BOS, 5, 5, 2, 5, 5, 2, 5], [TOY_BOS, 2, 1, 4, 3, 2, 1]]

  it.each(METHODS)('greedy $id = greedy ar (5 prompts, top-k 0 and 3), with accepted and rejected lookups', async ({ id, params }) => {
    let accepted = 0
    let rejected = 0
    for (const warp of [GREEDY, { temperature: 0, topK: 3, topP: 1 }])
      for (const promptTokens of prompts) {
        const target = toyTarget()
        const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 32, warp }))
        const other = await decode(decoderOf(id, params)(), { target }, makeRequest({ promptTokens, maxTokens: 32, warp }))
        expect(other.tokens, `${id} prompt ${promptTokens}`).toEqual(ar.tokens)
        for (const step of other.steps) {
          accepted += step.accepted
          if (step.resampled) rejected += 1
        }
      }
    expect(accepted).toBeGreaterThan(10)
    expect(rejected).toBeGreaterThan(0)
  })

  it('records every round under the method’s stage: lookups verified in one target call, no draft-model call, facts in the decision', async () => {
    const result = await decode(decoderOf('pld', { 'pld.k': 3 })(), { target: toyTarget() }, makeRequest({ promptTokens: [...PROMPT], maxTokens: 12, warp: GREEDY }))
    expect(result.steps.every((s) => s.stage === 'pld' && s.targetCalls === 1 && s.draftCalls === 0)).toBe(true)
    const drafting = result.steps.filter((s) => s.proposed > 0)
    expect(drafting.length).toBeGreaterThan(0)
    for (const s of drafting) {
      expect(s.draftTokens).toBe(s.proposed)
      expect(s.draftEntropies).toEqual(new Array(s.proposed).fill(0))
      expect(s.decision).toMatchObject({ gamma: 3, ngram: expect.any(Number), matchAt: expect.any(Number) })
    }
    // Accepted lookup tokens carry provenance `ngram` (never `draft`: no draft model); the first round of
    // ngram-simple (llama.cpp drafts only after the first sampled token) is the target's alone.
    expect(result.provenances).toContain('ngram')
    expect(result.provenances).not.toContain('draft')
    const simple = await decode(decoderOf('ngram-simple', { 'ngramsimple.n': 1, 'ngramsimple.m': 3 })(), { target: toyTarget() }, makeRequest({ promptTokens: [...PROMPT], maxTokens: 8, warp: GREEDY }))
    expect(simple.steps[0]).toMatchObject({ stage: 'ngram-simple', proposed: 0, emitted: 1, decision: { matchPos: null } })
    expect(simple.provenances[0]).toBe('target')
  })

  it('a lookup draft stops after an end-of-generation token, at the cap and at the budget; greedy = ar with an EOS', async () => {
    const target = eosTarget(0.85)
    const drafter = lookupDrafter('test', () => ({ propose: () => ({ tokens: [3, EOS_TOKEN, 4], facts: { found: true } }) }))
    const session = await drafter.open({ target }, makeRequest({ promptTokens: [TOY_BOS, 2] }), fixedLengthPolicy(8))
    const round = { sequence: [TOY_BOS, 2], cap: 8, limit: 8, greedy: true, rng: createPrng(1, 0) }
    const proposal = await session.propose(round)
    expect(proposal).toMatchObject({ tokens: [3, EOS_TOKEN], entropies: [0, 0], calls: 0, stoppedBy: 'engine', facts: { found: true } })
    expect(proposal.distributions.map((q) => [...q.ids, ...q.probs])).toEqual([
      [3, 1],
      [EOS_TOKEN, 1]
    ])
    expect(await session.propose({ ...round, cap: 1, limit: 1 })).toMatchObject({ tokens: [3], stoppedBy: 'cap' })
    expect(await session.propose({ ...round, limit: 1 })).toMatchObject({ tokens: [3], stoppedBy: 'engine' })
    const short = lookupDrafter('test', () => ({ propose: () => ({ tokens: [3, 4], facts: {} }) }))
    expect(await (await short.open({ target }, makeRequest({ promptTokens: [TOY_BOS, 2] }), fixedLengthPolicy(8))).propose(round)).toMatchObject({ stoppedBy: 'drafter' })

    const eos = [TOY_BOS, 2, 3, EOS_TOKEN, 2, 3, 4, 3]
    for (const { id, params } of [
      { id: 'ngram-simple', params: { 'ngramsimple.n': 1, 'ngramsimple.m': 4 } },
      { id: 'pld', params: { 'pld.k': 4 } }
    ]) {
      const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens: eos, maxTokens: 24, warp: GREEDY }))
      const other = await decode(decoderOf(id, params)(), { target }, makeRequest({ promptTokens: eos, maxTokens: 24, warp: GREEDY }))
      expect(ar.stopReason).toBe('eos')
      expect(other.tokens, id).toEqual(ar.tokens)
      expect(other.stopReason).toBe('eos')
    }
  })

  it('needs no draft model; pld.k defaults to γ; llama.cpp defaults for the n-gram maps; γ is no cap of theirs', () => {
    const run = prepareRun(['ar', 'pld', 'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'nlc-lookup'], { gamma: 7, params: {} }, { draft: false, mid: false })
    expect(run.params).toMatchObject({
      'pld.ngram': 2,
      'pld.k': 7,
      'ngramsimple.n': 12,
      'ngramsimple.m': 48,
      'ngrammapk.minHits': 1,
      'ngrammapk4v.m': 48,
      'nlclookup.predictionMax': 3
    })
    expect(run.methods.map((m) => m.definition.gamma)).toEqual([null, expect.stringContaining('pld.k'), null, null, null, null])
    expect(() => prepare('nlc-lookup', { gamma: 5, params: { 'nlclookup.predictionMin': 4 } })).toThrow(/nlclookup\.predictionMin must be at most/)
  })
})
