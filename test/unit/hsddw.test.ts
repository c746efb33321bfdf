/**
 * HSDDW (Appendix D Algorithm 2) on scripted models, where every verdict and every entropy test is known in
 * advance: the τ_q1 / τ_q2 sequences, n_tot accounting (every token the M_q2 level appends, corrections and bonus
 * tokens included), the difference from pre-self-verify, the per-level counters, σ and η on hand-made traces, and the
 * persistence of the counters in the run store (migration 3).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import { EntropyThreshold } from '../../electron/engine/decoders/entropy-threshold'
import { acceptanceProbability, emptyLevels } from '../../electron/engine/decoders/hierarchy'
import { findMethod, prepare } from '../../electron/engine/methods/prepare'
import type { DecoderModels, LevelCounters, StepRecord } from '../../electron/engine/decoders/types'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { UserInputError } from '../../electron/engine/errors'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { eta, foldSteps, sigma } from '../../electron/engine/metrics/fold'
import { foldLevels, levelRates } from '../../electron/engine/metrics/levels'
import { entropy, fromWeights, probabilityOf } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import { MIGRATIONS } from '../../electron/store/migrations'
import { RunStore } from '../../electron/store/run-store'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { EOS_TOKEN, eosDraft, eosTarget, NEVER, toyDraft, toyDraftClose, toyTarget, TOY_BOS } from '../helpers/toy-models'

/**
 * Scripted models over the vocabulary <s> a b c: at output position i (context length i + 1, prompt = BOS) a model
 * puts its top logit on a chosen token with one of three shapes — Sharp, Medium, Flat — so greedy verdicts follow
 * the argmaxes and the entropies are H_S < H_M < H_F.
 */
const VOCABULARY = ['<s>', 'a', 'b', 'c'] as const
const [A, B, C] = [1, 2, 3]
type Shape = 'S' | 'M' | 'F'
const TOP: Record<Shape, number> = { S: 4, M: 2, F: 0.3 }
const H: Record<Shape, number> = {
  S: entropy(fromWeights([1, 2, 3], [Math.exp(TOP.S), 1, 1])),
  M: entropy(fromWeights([1, 2, 3], [Math.exp(TOP.M), 1, 1])),
  F: entropy(fromWeights([1, 2, 3], [Math.exp(TOP.F), 1, 1]))
}

function scripted(name: string, plan: Record<number, [number, Shape]>): ToyModel {
  return new ToyModel({
    name,
    vocabulary: VOCABULARY,
    logits: (context) => {
      const [top, shape] = plan[context.length - 1] ?? [A, 'S']
      const logits = [NEVER, 0, 0, 0]
      logits[top] = TOP[shape]
      return logits
    }
  })
}

async function run(method: string, models: DecoderModels, maxTokens: number, gamma: number, params: MethodParams = {}) {
  const decoder = prepare(method, { gamma, params }).newRun()()
  return decode(decoder, models, makeRequest({ promptTokens: [TOY_BOS], maxTokens, warp: GREEDY }))
}

const codes = (provenances: string[]) => provenances.map((p) => p[0]).join('')

describe('EntropyThreshold (τ of one level; the self-verify rule)', () => {
  it('τ = 0 until a rejection, then the running mean of the rejected tokens’ entropies; fixed within a round', () => {
    const tau = new EntropyThreshold()
    const q = fromWeights([1], [1])
    expect(tau.tau).toBe(0)
    tau.startRound()
    expect(tau.exceeds(1e-9, q)).toBe(true) // H > 0 = τ: one-token drafts until the first rejection
    expect(tau.exceeds(0, q)).toBe(false)
    tau.verified(3, 1, [0.2, 0.5, 0.9]) // the REJECTED token is the second: its entropy 0.5 joins
    expect(tau.tau).toBeCloseTo(0.5, 12)
    // Still τ = 0 for the round in progress; the new τ applies from the next round on.
    expect(tau.exceeds(0.1, q)).toBe(true)
    tau.startRound()
    expect(tau.exceeds(0.5, q)).toBe(false)
    expect(tau.exceeds(0.51, q)).toBe(true)
    tau.verified(2, 2, [3, 3]) // all accepted: no change
    expect(tau.tau).toBeCloseTo(0.5, 12)
    tau.verified(1, 0, [0.9]) // first token rejected (n = 0: the listing's H(q_n) would not exist)
    expect(tau.tau).toBeCloseTo(0.7, 12)
    expect(tau.rejectedEntropies).toEqual([0.5, 0.9])
  })
})

describe('hsddw on scripted rejections (greedy, K = --gamma = 3, 12 tokens)', () => {
  // i:      0    1    2    3    4    5    6    7 …
  // M_p:    a/S  a/S  a/S  a/S  a/S  a/S  a/S  a/S      (greedy: M_p always wants 'a')
  // M_q2:   b/M  a/S  a/S  a/F  a/S  a/S  a/S  a/S
  // M_q1:   c/F  a/S  a/S  c/M  a/S  a/S  c/S  a/S
  const models = (): DecoderModels => ({
    target: scripted('p', {}),
    mid: scripted('q2', { 0: [B, 'M'], 3: [A, 'F'] }),
    draft: scripted('q1', { 0: [C, 'F'], 3: [C, 'M'], 6: [C, 'S'] })
  })

  it('τ_q1 / τ_q2 sequences, n_tot, provenance and per-level counters follow Algorithm 2 step by step', async () => {
    const result = await run('hsddw', models(), 12, 3)
    expect(result.steps).toHaveLength(3)
    const [s0, s1, s2] = result.steps
    // Step 0. τ_q1 = τ_q2 = 0: M_q1 drafts one token (c, H_F > 0), M_q2 rejects it (wants b) → τ_q1 = H_F, corrects
    // with b (H(q2) = H_M > τ_q2 = 0 → "verify"); M_p rejects b → τ_q2 = H_M, corrects with a.
    expect(s0).toMatchObject({ proposed: 1, accepted: 0, resampled: true, emitted: 1, draftTokens: 2, acceptedDraftTokens: 0 })
    expect(s0.threshold).toBe(0)
    expect(s0.decision).toMatchObject({ nTot: 1, innerRounds: 1, handover: 'entropy' })
    expect(s0.decision!.tauQ1).toBeCloseTo(H.F, 12)
    expect(s0.decision!.tauQ2).toBeCloseTo(H.M, 12)
    expect(s0.levels).toMatchObject({
      q1: { drafted: 1, examinedByQ2: 1, acceptedByQ2: 0, acceptedByP: 0, calls: 1 },
      q2: { drafted: 1, accepted: 0, calls: 1 },
      p: { calls: 1, examined: 1, accepted: 0 }
    })
    // Step 1. τ_q1 = H_F: M_q1 drafts a, a, c (H_S, H_S, H_M ≤ H_F; window K = 3); M_q2 accepts a, a and corrects c
    // → a (τ_q1 = mean(H_F, H_M)); q2's entropies H_S, H_S, H_F: H_F > τ_q2 = H_M → "verify" with n_tot = 3;
    // M_p accepts all three and adds a bonus token.
    expect(s1).toMatchObject({ proposed: 3, accepted: 3, bonus: true, emitted: 4, draftTokens: 4, acceptedDraftTokens: 3 })
    expect(s1.threshold).toBeCloseTo(H.M, 12)
    expect(s1.decision).toMatchObject({ nTot: 3, innerRounds: 1, handover: 'entropy' })
    expect(s1.decision!.tauQ1).toBeCloseTo((H.F + H.M) / 2, 12)
    expect(s1.decision!.tauQ2).toBeCloseTo(H.M, 12)
    expect(s1.levels).toMatchObject({
      q1: { drafted: 3, examinedByQ2: 3, acceptedByQ2: 2, acceptedByP: 2, calls: 3 },
      q2: { drafted: 1, accepted: 1, calls: 1 }
    })
    // Step 2 (7 tokens left). Pre-verify round 1: a, c, a drafted; c rejected at i = 6 (τ_q1 = mean(H_F, H_M, H_S)),
    // corrected → n_tot = 1 + 1 = 2, all H(q2) = H_S ≤ τ_q2 → back to "Draft". Round 2: three drafts accepted + M_q2's
    // bonus → n_tot = 6. Round 3: one draft fills the budget → n_tot = 7 (the listing's n_tot += n would give 5 and
    // leave the correction and the bonus unverified). M_p accepts all 7.
    expect(s2).toMatchObject({ proposed: 7, accepted: 7, emitted: 7, draftTokens: 9, acceptedDraftTokens: 7 })
    expect(s2.decision).toMatchObject({ nTot: 7, innerRounds: 3, handover: 'budget' })
    expect(s2.decision!.tauQ1).toBeCloseTo((H.F + H.M + H.S) / 3, 12)
    expect(s2.decision!.tauQ2).toBeCloseTo(H.M, 12)
    expect(s2.levels).toMatchObject({
      q1: { drafted: 7, examinedByQ2: 6, acceptedByQ2: 5, acceptedByP: 5, calls: 7 },
      q2: { drafted: 2, accepted: 2, calls: 3 },
      p: { calls: 1, examined: 7, accepted: 7 }
    })
    expect(codes(result.provenances)).toBe('r' + 'ddmb' + 'dmdddmd')
    expect(result.tokens).toEqual(new Array(12).fill(A))

    // σ and η of this trace: σ = 1 − (0 + 3 + 7)/(2 + 4 + 9) = 1/3, η = 3 target calls / 12 tokens.
    const totals = foldSteps(result.steps)
    expect(sigma(totals)).toBeCloseTo(1 / 3, 12)
    expect(eta(totals)).toBeCloseTo(3 / 12, 12)
    // Greedy α/β: argmax agreement at the positions M_p examined (q2 disagrees only at i = 0; q1 at i = 0, 3, 6).
    const rates = levelRates(foldLevels(result.steps)!)
    expect(rates.alpha).toBeCloseTo(10 / 11, 12)
    expect(rates.acceptanceQ1ByQ2).toBeCloseTo(7 / 10, 12)
  })

  it('pre-self-verify stops at the first unconfident M_q2 token; hsddw hands over the whole pre-verify round', async () => {
    // M_q2 is unsure (F) at i = 2 only; M_q1 agrees with M_q2 from i = 1 on.
    const trio = (): DecoderModels => ({
      target: scripted('p', {}),
      mid: scripted('q2', { 0: [B, 'M'], 2: [A, 'F'] }),
      draft: scripted('q1', { 0: [C, 'F'] })
    })
    const pre = await run('pre-self-verify', trio(), 8, 3, { 'pre.window': 12 })
    const hsddw = await run('hsddw', trio(), 8, 3)
    // Step 0 as above (τ_q1 = H_F, τ_q2 = H_M). Step 1: M_q1 drafts a, a, a; M_q2 accepts all and draws a bonus.
    // pre-self-verify: i = 1 (H_S) passes, i = 2 (H_F > H_M) stops: 2 tokens go to M_p, the rest are dropped.
    expect(pre.steps[1]).toMatchObject({ proposed: 2, accepted: 2, emitted: 3, draftTokens: 4, acceptedDraftTokens: 2 })
    expect(pre.steps[1].levels).toMatchObject({ q1: { drafted: 3, acceptedByQ2: 3, acceptedByP: 2 }, q2: { drafted: 1, accepted: 0 } })
    // hsddw: some token of the round is unconfident → all 4 (n_tot) go to M_p.
    expect(hsddw.steps[1]).toMatchObject({ proposed: 4, accepted: 4, emitted: 5, draftTokens: 4, acceptedDraftTokens: 4 })
    expect(hsddw.steps[1].decision).toMatchObject({ nTot: 4, handover: 'entropy' })
    expect(codes(pre.provenances).slice(0, 4)).toBe('rddb')
    expect(codes(hsddw.provenances).slice(0, 6)).toBe('rdddmb')
  })

  it('n_tot = every token the M_q2 level appended: proposed = accepted M_q1 tokens + M_q2 tokens (random toy decodes)', async () => {
    let rounds = 0
    let multi = 0
    for (let seed = 0; seed < 100; seed++) {
      const decoder = prepare('hsddw', { gamma: 4, params: {} }).newRun()()
      const result = await decode(
        decoder,
        { target: toyTarget(), mid: toyDraftClose(), draft: toyDraft() },
        makeRequest({ promptTokens: [TOY_BOS], maxTokens: 40, warp: PLAIN, rng: createPrng(seed, 3) })
      )
      expect(result.tokens).toHaveLength(40)
      for (const step of result.steps) {
        const c = step.levels!
        expect(step.proposed).toBe(c.q1.acceptedByQ2! + c.q2.drafted)
        expect(step.decision!.nTot).toBe(step.proposed)
        expect(step.draftTokens).toBe(c.q1.drafted + c.q2.drafted)
        expect(step.acceptedDraftTokens).toBe(c.q1.acceptedByP + c.q2.accepted)
        expect(step.targetCalls).toBe(1)
        expect(step.draftCalls).toBe(c.q1.calls + c.q2.calls)
        expect(c.q2.calls).toBe(step.decision!.innerRounds)
        rounds += 1
        if (Number(step.decision!.innerRounds) > 1) multi += 1
      }
    }
    expect(multi).toBeGreaterThan(rounds / 50)
  })
})

describe('stopping rules shared with every decoder (all four hierarchies)', () => {
  const HIERARCHIES = ['pre-verify', 'pre-self-verify', 'hsddw', 'hier-chen']

  it('end-of-generation ends the output, --max-tokens is never exceeded, step records add up', async () => {
    for (const method of HIERARCHIES) {
      let eos = 0
      for (let seed = 0; seed < 150; seed++) {
        const decoder = prepare(method, { gamma: 3, params: {} }).newRun()()
        const result = await decode(
          decoder,
          { target: eosTarget(), mid: eosTarget(0.6), draft: eosDraft() },
          makeRequest({ promptTokens: [TOY_BOS], maxTokens: 12, warp: PLAIN, rng: createPrng(seed, 5) })
        )
        expect(result.tokens.length).toBeLessThanOrEqual(12)
        const at = result.tokens.indexOf(EOS_TOKEN)
        if (at >= 0) {
          eos += 1
          expect(at, method).toBe(result.tokens.length - 1)
          expect(result.stopReason).toBe('eos')
        } else expect(result.stopReason).toBe('max-tokens')
        expect(result.steps.reduce((n, s) => n + s.emitted, 0)).toBe(result.tokens.length)
        result.steps.forEach((s, i) => {
          expect(s.index).toBe(i)
          expect(s.acceptedDraftTokens).toBeLessThanOrEqual(Math.min(s.accepted, s.emitted))
          expect(s.acceptedDraftTokens).toBe(s.levels!.q1.acceptedByP + s.levels!.q2.accepted)
        })
      }
      expect(eos, method).toBeGreaterThan(30)
    }
  })

  it('an aborted signal cancels before the next target round', async () => {
    for (const method of HIERARCHIES) {
      const controller = new AbortController()
      const decoder = prepare(method, { gamma: 3, params: {} }).newRun()()
      const events = []
      for await (const event of decoder(
        { target: toyTarget(), mid: toyDraftClose(), draft: toyDraft() },
        { ...makeRequest({ promptTokens: [TOY_BOS], maxTokens: 50 }), signal: controller.signal }
      )) {
        events.push(event)
        if (event.type === 'step') controller.abort()
      }
      expect(events.filter((e) => e.type === 'step')).toHaveLength(1)
      expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'cancelled' })
    }
  })
})

describe('σ and η on a hand-made three-model trace', () => {
  function step(index: number, levels: LevelCounters, emitted: number, rejected: boolean): StepRecord {
    return {
      index,
      stage: 'hsddw',
      proposed: levels.p.examined,
      accepted: levels.p.accepted,
      resampled: rejected,
      bonus: !rejected,
      emitted,
      draftTokens: levels.q1.drafted + levels.q2.drafted,
      acceptedDraftTokens: levels.q1.acceptedByP + levels.q2.accepted,
      draftEntropies: [],
      threshold: null,
      decision: null,
      targetCalls: levels.p.calls,
      draftCalls: levels.q1.calls + levels.q2.calls,
      draftMs: 0,
      verifyMs: 0,
      totalMs: 0,
      levels
    }
  }

  it('σ = 1 − accepted draft tokens / tokens of BOTH draft models, η = target calls / output length', () => {
    // Round 1: M_q1 drafts 4 (M_q2 keeps 2, corrects once), M_p keeps both M_q1 tokens, rejects the mid one.
    const r1 = emptyLevels()
    Object.assign(r1.q1, { drafted: 4, examinedByQ2: 3, acceptedByQ2: 2, acceptedByP: 2, calls: 4 })
    Object.assign(r1.q2, { drafted: 1, accepted: 0, calls: 1 })
    Object.assign(r1.p, { calls: 1, examined: 3, accepted: 2 })
    Object.assign(r1.alpha, { sum: 2.4, positions: 3 })
    Object.assign(r1.beta, { sum: 1.2, positions: 3 })
    // Round 2: two pre-verify rounds, 6 M_q1 tokens (5 kept by M_q2) + 2 M_q2 tokens; M_p accepts all 7 + bonus.
    const r2 = emptyLevels()
    Object.assign(r2.q1, { drafted: 6, examinedByQ2: 6, acceptedByQ2: 5, acceptedByP: 5, calls: 6 })
    Object.assign(r2.q2, { drafted: 2, accepted: 2, calls: 2 })
    Object.assign(r2.p, { calls: 1, examined: 7, accepted: 7 })
    Object.assign(r2.alpha, { sum: 6.6, positions: 7 })
    Object.assign(r2.beta, { sum: 3.8, positions: 6 })
    const steps = [step(0, r1, 3, true), step(1, r2, 8, false)]
    const totals = foldSteps(steps)
    expect(totals.draftTokens).toBe(13)
    expect(totals.acceptedDraftTokens).toBe(9)
    expect(sigma(totals)).toBeCloseTo(1 - 9 / 13, 12)
    expect(eta(totals)).toBeCloseTo(2 / 11, 12)
    const rates = levelRates(foldLevels(steps)!)
    expect(rates.alpha).toBeCloseTo(9 / 10, 12)
    expect(rates.beta).toBeCloseTo(5 / 9, 12)
    expect(rates.acceptanceQ1ByQ2).toBeCloseTo(7 / 9, 12)
    expect(rates.acceptanceByP).toBeCloseTo(9 / 10, 12)
    expect(rates.tokensPerTargetCall).toBeCloseTo(11 / 2, 12)
    expect(rates.q1CallsPerToken).toBeCloseTo(10 / 11, 12)
    // Two-model records have no levels.
    expect(foldLevels([{ ...steps[0], levels: undefined }])).toBeNull()
  })
})

describe('acceptanceProbability (the α / β summand)', () => {
  it('Σ_y min(p, q) = 1 − TV(p, q) for small and vocabulary-sized distributions; greedy: argmax agreement', () => {
    const rng = createPrng(9, 9)
    for (const size of [5, 600]) {
      const ids = Array.from({ length: size }, (_, i) => i)
      const p = fromWeights(ids, ids.map(() => rng.next() + 0.01))
      const q = fromWeights(ids.slice(0, size - 1), ids.slice(0, size - 1).map(() => rng.next() ** 3 + 0.001))
      let tv = 0
      for (const id of ids) tv += Math.abs(probabilityOf(p, id) - probabilityOf(q, id)) / 2
      expect(acceptanceProbability(p, q, false)).toBeCloseTo(1 - tv, 12)
      expect(acceptanceProbability(p, p, false)).toBeCloseTo(1, 12)
      expect(acceptanceProbability(p, q, true)).toBe(p.ids[0] === q.ids[0] ? 1 : 0)
    }
  })
})

describe('method parameters', () => {
  it('bad parameter values are UserInputErrors naming the key', () => {
    const bad: [string, MethodParams, RegExp][] = [
      ['pre-verify', { 'pre.window': 0 }, /pre\.window \(pre-verify\) must be an integer in \[1, 1024\], got 0/],
      ['pre-self-verify', { 'pre.window': 2.5 }, /pre\.window \(pre-self-verify\) must be an integer .*got 2\.5/],
      ['pre-verify', { 'pre.windw': 3 }, /pre\.windw is not a parameter of pre-verify/],
      ['hsddw', { 'hsddw.k': 3 }, /hsddw\.k is not a parameter of hsddw/],
      ['hier-chen', { 'chen.m': 0 }, /chen\.m \(hier-chen\) must be .*got 0/],
      ['hier-chen', { 'chen.n': -1 }, /chen\.n \(hier-chen\) must be .*got -1/],
      ['hier-chen', { 'chen.n': 'two' }, /chen\.n \(hier-chen\) must be .*got "two"/],
      ['hier-chen', { 'chen.residual': 1 }, /chen\.residual \(hier-chen\) must be true or false, got 1/]
    ]
    for (const [method, params, message] of bad) {
      const build = () => prepare(method, { gamma: 3, params }).newRun()
      expect(build, `${method} ${JSON.stringify(params)}`).toThrow(UserInputError)
      expect(build).toThrow(message)
    }
    for (const id of ['pre-verify', 'pre-self-verify', 'hsddw', 'hier-chen']) {
      expect(findMethod(id)!.needs).toEqual({ draft: true, mid: true })
      // A key of a method that is not in the run would be recorded without applying: refused.
      expect(() => prepare(id, { gamma: 3, params: { 'selfverify.maxDraft': 4 } })).toThrow(/selfverify\.maxDraft is not a parameter of .*: it belongs to self-verify/)
    }
  })
})

describe('per-level counters persist (migration 3)', () => {
  let dir: string | undefined
  afterEach(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
    dir = undefined
  })

  it('levels round-trip through the steps table; two-model steps come back without the key', async () => {
    expect(MIGRATIONS.find((m) => m.version === 3)?.sql).toMatch(/ALTER TABLE steps ADD COLUMN levels/)
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-levels-'))
    const store = RunStore.open(path.join(dir, 'runs.sqlite'))
    try {
      const config = RunConfig.parse({
        suite: null,
        methods: ['sd', 'hsddw'],
        models: { target: '/m/p.gguf', mid: '/m/q2.gguf', draft: '/m/q1.gguf' },
        prompts: { dataset: 'stories' },
        maxTokens: 12,
        sampling: { temperature: 0, topK: 64, topP: 1, fullVocabulary: false },
        seed: 1,
        gamma: 3,
        params: {},
        threads: 1,
        contextSize: 512
      })
      const runId = store.createRun(config)
      const resultId = store.startPromptResult({ runId, method: 'hsddw', promptIndex: 0, promptId: null, category: null, promptText: 'x', seedStream: 0 })
      const hierarchical = await run('hsddw', {
        target: scripted('p', {}),
        mid: scripted('q2', { 0: [B, 'M'] }),
        draft: scripted('q1', { 0: [C, 'F'] })
      }, 6, 3)
      const twoModel: StepRecord = { ...hierarchical.steps[0], stage: 'sd', levels: undefined }
      delete twoModel.levels
      for (const s of hierarchical.steps) store.addStep(resultId, s)
      store.addStep(resultId, { ...twoModel, index: hierarchical.steps.length })
      const back = store.getSteps(resultId)
      expect(back.slice(0, -1)).toEqual(hierarchical.steps)
      expect(back.at(-1)).toEqual({ ...twoModel, index: hierarchical.steps.length })
      expect('levels' in back.at(-1)!).toBe(false)
      store.finishRun(runId, 'done')
    } finally {
      store.close()
    }
  })
})
