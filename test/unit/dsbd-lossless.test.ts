/**
 * DSBD's correctness (../shared/papers/dsbd-dynamic-width-speculative-beam.txt Theorem 3.1, Appendix A) and the
 * beam baselines on toy models whose conditionals are known in closed form:
 *   - one layer, fixed width, against a hand computation (and the printed, inverted ratio as a negative control);
 *   - end to end with W_L fixed: each final output beam of `dsbd` is distributed as beam sampling's (exact law by
 *     enumeration of Eq 1's process), and `dsbd` / `beam` emit the lowest-perplexity beam with the same law;
 *   - `beam` with W = 1 is multinomial sampling from the target's warped distribution;
 *   - `dsbd-1beam` keeps exactly one KV sequence per model between iterations (instrumented toy models);
 *   - the session pool's KV management (copies, fallbacks, few sequences) never changes what is sampled.
 */
import { describe, expect, it } from 'vitest'
import { beamDecoder, type Beam } from '../../electron/engine/decoders/beam'
import { dsbdDecoder, verifyLayer, type DsbdOptions } from '../../electron/engine/decoders/dsbd'
import { prepare, prepareRun } from '../../electron/engine/methods/prepare'
import { UserInputError } from '../../electron/engine/errors'
import type { Decoder, DecoderModels, Provenance } from '../../electron/engine/decoders/types'
import { ToyModel } from '../../electron/engine/model/toy-model'
import type { LanguageModel, ModelSession } from '../../electron/engine/model/types'
import { fromWeights, probabilityOf, sample } from '../../electron/engine/sampling/distribution'
import { createPrng, type Prng } from '../../electron/engine/sampling/prng'
import { residual } from '../../electron/engine/sampling/verify'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally, type ChiSquareResult } from '../helpers/chi-square'
import { decode, PLAIN } from '../helpers/decode'
import { exactSequenceDistribution, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

/** DSBD's options as the catalog resolves them (validation and defaults included). */
function dsbdOptions(gamma: number, params: Record<string, number>, oneBeam: boolean): DsbdOptions {
  const resolved = prepare(oneBeam ? 'dsbd-1beam' : 'dsbd', { gamma, params }).params as Record<string, number>
  return { gamma, ws: resolved['dsbd.ws'], t: resolved['dsbd.t'], wMin: resolved['dsbd.wmin'], fixedWidth: resolved['dsbd.fixedWidth'], oneBeam }
}

const SAMPLES = 10_000
const SEED = 20250105
const P_MIN = 0.001

function report(label: string, result: ChiSquareResult): void {
  console.log(
    `${label}: χ² = ${result.statistic.toFixed(2)}, df = ${result.df}, p = ${result.pValue.toExponential(3)} ` +
      `(${result.samples} samples, ${result.bins} bins)`
  )
}

// ---------------------------------------------------------------------------------------------------------------
// One layer by hand

/*
 * Outcomes {a = 0, b = 1}; p_beam = (0.6, 0.4), q_beam = (0.3, 0.7); W_S = 2 drafts, W_L = 1.
 *   d1 = a (0.3): p/q = 2 → accepted                                             → a, first draft     0.3
 *   d1 = b (0.7): accepted w.p. 0.4/0.7                                           → b, first draft     0.4
 *                 rejected (0.3): p' = norm(max(p − q, 0)) = (1, 0)
 *       d2 = a (0.3): p'/q = 1/0.3 → accepted                                     → a, second draft    0.09
 *       d2 = b (0.7): p'(b) = 0 → rejected; p' stays (1, 0); sample from p'       → a, resampled       0.21
 * Output a: 0.3 + 0.09 + 0.21 = 0.6 = p_beam(a); the layer passes w.p. 0.79 = 1 − (1 − α1)(1 − α2).
 */
const P_HAND = fromWeights([0, 1], [0.6, 0.4])
const Q_HAND = fromWeights([0, 1], [0.3, 0.7])
const HAND_LAW = new Map([
  ['a|draft1', 0.3],
  ['b|draft1', 0.4],
  ['a|draft2', 0.09],
  ['a|resampled', 0.21]
])
const name = (key: number) => (key === 0 ? 'a' : 'b')

type LayerVerifier = typeof verifyLayer

/** Algorithm 1 line 16 as printed: accept with min(1, q_beam/p') — the direction that is not lossless. */
const printedVerifyLayer: LayerVerifier = (pBeam, qBeam, drafts, width, rng) => {
  let pPrime = pBeam
  const accepted: number[] = []
  let afterRejection = false
  for (let i = 0; i < drafts.length && accepted.length < width; i++) {
    const ratio = probabilityOf(qBeam, drafts[i]) / Math.max(probabilityOf(pPrime, drafts[i]), 1e-300)
    if (rng.next() <= ratio) {
      accepted.push(i)
      pPrime = pBeam
      afterRejection = false
    } else {
      pPrime = residual(pPrime, qBeam)
      afterRejection = true
    }
  }
  if (accepted.length >= width) return { accepted, passed: true, completion: [], examined: drafts.length }
  const completion: { key: number; provenance: Provenance }[] = [
    { key: sample(pPrime, rng), provenance: afterRejection ? 'resampled' : 'target' }
  ]
  while (accepted.length + completion.length < width) completion.push({ key: sample(pBeam, rng), provenance: 'target' })
  return { accepted, passed: false, completion, examined: drafts.length }
}

function sampleHandLayer(verify: LayerVerifier, width: number, rng: Prng) {
  const drafts = [sample(Q_HAND, rng), sample(Q_HAND, rng)]
  const verdict = verify(P_HAND, Q_HAND, drafts, width, rng)
  const outputs = [
    ...verdict.accepted.map((i) => ({ key: drafts[i], how: `draft${i + 1}` })),
    ...verdict.completion.map((c) => ({ key: c.key, how: c.provenance }))
  ]
  return { verdict, outputs }
}

describe('Theorem 3.1, one layer with a fixed width (hand computation)', () => {
  it('W_L = 1, W_S = 2: the law of (output, how it was obtained) is the hand computation', () => {
    const rng = createPrng(SEED, 1)
    const observed = new Map<string, number>()
    let passed = 0
    for (let i = 0; i < 20_000; i++) {
      const { verdict, outputs } = sampleHandLayer(verifyLayer, 1, rng)
      expect(outputs).toHaveLength(1)
      tally(observed, `${name(outputs[0].key)}|${outputs[0].how}`)
      if (verdict.passed) passed += 1
    }
    const result = chiSquareGoodnessOfFit(observed, HAND_LAW)
    report('hand layer W_L = 1', result)
    expect(result.pValue).toBeGreaterThan(P_MIN)
    expect(passed / 20_000).toBeCloseTo(0.79, 1)
  })

  it('W_L = 2: the two output beams are i.i.d. p_beam (joint law p ⊗ p)', () => {
    const rng = createPrng(SEED, 2)
    const observed = new Map<string, number>()
    for (let i = 0; i < 20_000; i++) {
      const { outputs } = sampleHandLayer(verifyLayer, 2, rng)
      tally(observed, outputs.map((o) => name(o.key)).join(''))
    }
    const expected = new Map([
      ['aa', 0.36],
      ['ab', 0.24],
      ['ba', 0.24],
      ['bb', 0.16]
    ])
    const result = chiSquareGoodnessOfFit(observed, expected)
    report('hand layer W_L = 2 (joint)', result)
    expect(result.pValue).toBeGreaterThan(P_MIN)
  })

  it('negative control: the ratio as printed in Algorithm 1 (q_beam / p′) is not lossless', () => {
    const rng = createPrng(SEED, 3)
    const observed = new Map<string, number>()
    for (let i = 0; i < 20_000; i++) tally(observed, name(sampleHandLayer(printedVerifyLayer, 1, rng).outputs[0].key))
    const result = chiSquareGoodnessOfFit(observed, new Map([['a', 0.6], ['b', 0.4]]))
    report('printed ratio (negative control)', result)
    expect(result.pValue).toBeLessThan(1e-6)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// End to end: the exact law of beam sampling (Eq 1), by enumeration

const RAW: WarpConfig = { temperature: 1, topK: 0, topP: 1 }

/** T∘p_beam written independently of the engine: joint log-likelihoods / T, global top-k, softmax. */
function referenceBeamStep(
  model: ToyModel,
  beams: readonly { tokens: number[]; logP: number }[],
  warp: WarpConfig
): { row: number; token: number; p: number; logP: number }[] {
  const candidates: { row: number; token: number; score: number; logP: number }[] = []
  beams.forEach((beam, row) => {
    const d = model.distribution(beam.tokens, RAW)
    d.ids.forEach((token, i) => {
      if (d.probs[i] > 0) {
        const logP = beam.logP + Math.log(d.probs[i])
        candidates.push({ row, token, score: logP / warp.temperature, logP })
      }
    })
  })
  candidates.sort((a, b) => b.score - a.score || a.row - b.row || a.token - b.token)
  const kept = warp.topK > 0 ? candidates.slice(0, warp.topK) : candidates
  const max = kept[0].score
  const total = kept.reduce((s, c) => s + Math.exp(c.score - max), 0)
  return kept.map((c) => ({ row: c.row, token: c.token, p: Math.exp(c.score - max) / total, logP: c.logP }))
}

interface BeamTuple {
  beams: { tokens: number[]; logP: number }[]
  p: number
}

/** Law of the ordered W-tuple of beams after `depth` steps of beam sampling (draws with replacement). */
function exactBeamTuples(model: ToyModel, width: number, depth: number, warp: WarpConfig): BeamTuple[] {
  let states: BeamTuple[] = [{ beams: Array.from({ length: 1 }, () => ({ tokens: [TOY_BOS], logP: 0 })), p: 1 }]
  for (let step = 0; step < depth; step++) {
    const next = new Map<string, BeamTuple>()
    for (const state of states) {
      const law = referenceBeamStep(model, state.beams, warp)
      const tuples = (prefix: typeof law, mass: number): void => {
        if (prefix.length === width) {
          const beams = prefix.map((c) => ({ tokens: [...state.beams[c.row].tokens, c.token], logP: c.logP }))
          const key = beams.map((b) => b.tokens.join('')).join('|')
          const entry = next.get(key)
          if (entry) entry.p += mass
          else next.set(key, { beams, p: mass })
          return
        }
        for (const c of law) tuples([...prefix, c], mass * c.p)
      }
      tuples([], state.p)
    }
    states = [...next.values()]
  }
  return states
}

const generated = (tokens: readonly number[]) => tokens.slice(1)
const keyOf = (tokens: readonly number[]) => tokens.join('')

/** Lowest perplexity = highest mean log-likelihood; equal lengths here, first on ties (as bestBeam). */
function bestOf(beams: readonly { tokens: number[]; logP: number }[]): number[] {
  let best = beams[0]
  for (const b of beams) if (b.logP > best.logP) best = b
  return best.tokens
}

function lawOf(tuples: readonly BeamTuple[], key: (t: BeamTuple) => string): Map<string, number> {
  const out = new Map<string, number>()
  for (const t of tuples) out.set(key(t), (out.get(key(t)) ?? 0) + t.p)
  return out
}

interface Collected {
  finalBeams: Map<string, number>[]
  pairPrefix: Map<string, number>
  emitted: Map<string, number>
}

async function collect(
  decoder: () => Decoder,
  models: DecoderModels,
  warp: WarpConfig,
  depth: number,
  stream: number
): Promise<Map<string, number>> {
  const emitted = new Map<string, number>()
  for (let i = 0; i < SAMPLES; i++) {
    const result = await decode(decoder(), models, {
      promptTokens: [TOY_BOS],
      maxTokens: depth,
      warp,
      rng: createPrng(SEED + stream, i),
    })
    expect(result.tokens).toHaveLength(depth)
    tally(emitted, keyOf(result.tokens))
  }
  return emitted
}

describe('Theorem 3.1 end to end: dsbd with a fixed width samples beam sampling’s law', () => {
  const target = toyTarget()
  const draft = toyDraft()
  const WIDTH = 2
  const DEPTH = 3
  const WARPS: [string, WarpConfig][] = [
    ['plain', PLAIN],
    ['T = 0.8, joint top-4', { temperature: 0.8, topK: 4, topP: 1 }]
  ]

  for (const [label, warp] of WARPS) {
    it(`${label}: each final beam, the pair, and the emitted (lowest-perplexity) beam`, async () => {
      const tuples = exactBeamTuples(target, WIDTH, DEPTH, warp)
      expect(tuples.reduce((s, t) => s + t.p, 0)).toBeCloseTo(1, 9)
      const collected: Collected = { finalBeams: [new Map(), new Map()], pairPrefix: new Map(), emitted: new Map() }
      let last: readonly Beam[] = []
      const options = dsbdOptions(2, { 'dsbd.ws': 3, 'dsbd.fixedWidth': WIDTH }, false)
      const decoder = () => dsbdDecoder(options, { onOutputBeams: (beams) => (last = beams) })
      for (let i = 0; i < SAMPLES; i++) {
        const result = await decode(decoder(), { target, draft }, {
          promptTokens: [TOY_BOS],
          maxTokens: DEPTH,
          warp,
          rng: createPrng(SEED + 10, i),
        })
        expect(result.tokens).toHaveLength(DEPTH)
        expect(last).toHaveLength(WIDTH)
        last.forEach((beam, b) => tally(collected.finalBeams[b], keyOf(generated(beam.tokens))))
        tally(collected.pairPrefix, last.map((beam) => keyOf(generated(beam.tokens).slice(0, 2))).join('|'))
        tally(collected.emitted, keyOf(result.tokens))
      }
      for (let b = 0; b < WIDTH; b++) {
        const expected = lawOf(tuples, (t) => keyOf(generated(t.beams[b].tokens)))
        const result = chiSquareGoodnessOfFit(collected.finalBeams[b], expected)
        report(`dsbd ${label}: final beam ${b + 1}`, result)
        expect(result.pValue).toBeGreaterThan(P_MIN)
      }
      const pairLaw = lawOf(tuples, (t) => t.beams.map((beam) => keyOf(generated(beam.tokens).slice(0, 2))).join('|'))
      const pair = chiSquareGoodnessOfFit(collected.pairPrefix, pairLaw)
      report(`dsbd ${label}: the pair (first two tokens of each)`, pair)
      expect(pair.pValue).toBeGreaterThan(P_MIN)

      const emittedLaw = lawOf(tuples, (t) => keyOf(generated(bestOf(t.beams))))
      const emitted = chiSquareGoodnessOfFit(collected.emitted, emittedLaw)
      report(`dsbd ${label}: emitted beam`, emitted)
      expect(emitted.pValue).toBeGreaterThan(P_MIN)

      // Power: the same tally is far from multinomial sampling's law (what W = 1 would give).
      const multinomial = new Map([...exactSequenceDistribution(target, [TOY_BOS], DEPTH, warp)].map(([k, p]) => [k.split(',').join(''), p]))
      const control = chiSquareGoodnessOfFit(collected.emitted, multinomial)
      report(`dsbd ${label}: emitted beam vs multinomial (control)`, control)
      expect(control.pValue).toBeLessThan(1e-6)

      const beamEmitted = await collect(() => beamDecoder({ width: WIDTH, deterministic: false }), { target }, warp, DEPTH, 20)
      const beamResult = chiSquareGoodnessOfFit(beamEmitted, emittedLaw)
      report(`beam ${label}: emitted beam`, beamResult)
      expect(beamResult.pValue).toBeGreaterThan(P_MIN)
    })
  }

  it('dynamic width (t = 0.5, W_S = 3): the two beams Eq 6 picks for the first layer are i.i.d. T∘p(· | prompt)', async () => {
    // W_L^{(1)} is a function of the prompt alone (Eq 4–7), so Theorem 3.1 applies to layer 1 as to a fixed width.
    const warp = PLAIN
    const draft = toyDraftClose() // close to the target, so Eq 6 often takes two or three beams
    const options = dsbdOptions(2, { 'dsbd.ws': 3, 'dsbd.t': 0.5 }, false)
    const firstLayer = new Map<string, number>()
    const widths = new Map<string, number>()
    for (let i = 0; i < SAMPLES; i++) {
      let layerOne: readonly Beam[] = []
      const observer = { onLayer: (beams: readonly Beam[], layer: number, iteration: number) => (iteration === 0 && layer === 1 ? (layerOne = beams) : undefined) }
      await decode(dsbdDecoder(options, observer), { target, draft }, {
        promptTokens: [TOY_BOS],
        maxTokens: 3,
        warp,
        rng: createPrng(SEED + 30, i),
      })
      tally(firstLayer, layerOne.map((beam) => String(beam.tokens[1])).join('|'))
      tally(widths, String(layerOne.length))
    }
    expect(widths.size).toBe(1) // one prompt → one W_L^{(1)}
    expect(Number([...widths.keys()][0])).toBe(2)
    const single = exactSequenceDistribution(target, [TOY_BOS], 1, warp)
    const pairs = new Map<string, number>()
    for (const [a, pa] of single) for (const [b, pb] of single) pairs.set(`${a}|${b}`, pa * pb)
    const result = chiSquareGoodnessOfFit(firstLayer, pairs)
    report(`dsbd dynamic width: first-layer beam pairs (W_L = 2)`, result)
    expect(result.pValue).toBeGreaterThan(P_MIN)
  })
})

describe('beam with W = 1 is multinomial sampling', () => {
  it("the first three tokens follow the target's warped law (T = 0.8, top-3, top-p 0.9)", async () => {
    const target = toyTarget()
    const warp: WarpConfig = { temperature: 0.8, topK: 3, topP: 0.9 }
    const emitted = await collect(() => beamDecoder({ width: 1, deterministic: false }), { target }, warp, 3, 40)
    const result = chiSquareGoodnessOfFit(emitted, new Map([...exactSequenceDistribution(target, [TOY_BOS], 3, warp)].map(([k, p]) => [k.split(',').join(''), p])))
    report('beam W = 1 vs multinomial', result)
    expect(result.pValue).toBeGreaterThan(P_MIN)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// KV sequences

/**
 * Wraps a toy model to count its sessions — open (created − disposed) and live (holding KV: non-empty) — and
 * optionally hide copyFrom or limit the sessions.
 */
function instrumented(model: ToyModel, options: { copy?: boolean; maxSessions?: number } = {}) {
  const open = new Set<ModelSession>()
  const counter = {
    peakOpen: 0,
    peakLive: 0,
    get open() {
      return open.size
    },
    get live() {
      return [...open].filter((s) => s.tokens.length > 0).length
    }
  }
  const inner = new WeakMap<ModelSession, ModelSession>()
  const wrapped: LanguageModel = {
    info: model.info,
    tokenize: (text) => model.tokenize(text),
    detokenize: (tokens) => model.detokenize(tokens),
    tokenText: (token) => model.tokenText(token),
    isEndOfGeneration: (token) => model.isEndOfGeneration(token),
    logProbabilities: (tokens) => model.logProbabilities(tokens),
    dispose: async () => {},
    sessionsLeft: options.maxSessions === undefined ? undefined : () => options.maxSessions! - open.size,
    async createSession(warp) {
      const session = await model.createSession(warp)
      const outer: ModelSession = {
        get tokens() {
          return session.tokens
        },
        append: async (tokens, from) => {
          const out = await session.append(tokens, from)
          counter.peakLive = Math.max(counter.peakLive, counter.live)
          return out
        },
        truncate: (length) => session.truncate(length),
        copyFrom: options.copy === false ? undefined : (source, length) => session.copyFrom!(inner.get(source) ?? source, length),
        dispose: async () => {
          open.delete(outer)
          await session.dispose()
        }
      }
      inner.set(outer, session)
      open.add(outer)
      counter.peakOpen = Math.max(counter.peakOpen, open.size)
      return outer
    }
  }
  return { model: wrapped, counter }
}

describe('KV sequences', () => {
  it('dsbd-1beam keeps exactly one KV sequence per model between iterations; dsbd one per distinct input beam', async () => {
    for (const oneBeam of [true, false]) {
      const t = instrumented(toyTarget())
      const d = instrumented(toyDraft())
      const options = dsbdOptions(3, { 'dsbd.ws': 4, 'dsbd.t': 0.3 }, oneBeam)
      let iterations = 0
      let maxInputs = 0
      for (let i = 0; i < 20; i++) {
        const seen: { target: number; draft: number; liveSequences: unknown; outputBeams: number }[] = []
        for await (const event of dsbdDecoder(options)({ target: t.model, draft: d.model }, {
          promptTokens: [TOY_BOS],
          maxTokens: 24,
          warp: PLAIN,
          rng: createPrng(SEED + 50, i),
        })) {
          if (event.type !== 'step') continue
          const decision = event.record.decision!
          seen.push({ target: t.counter.live, draft: d.counter.live, liveSequences: decision.liveSequences, outputBeams: Number(decision.outputBeams) })
        }
        // Between iterations (every step but the last, after which decoding ends).
        for (const s of seen.slice(0, -1)) {
          iterations += 1
          if (oneBeam) {
            expect(s.target).toBe(1)
            expect(s.draft).toBe(1)
            expect(s.liveSequences).toBe(1)
          } else {
            expect(s.target).toBeLessThanOrEqual(s.outputBeams)
            expect(s.liveSequences).toBe(s.target)
            maxInputs = Math.max(maxInputs, s.target)
          }
        }
        // Everything is released at the end of the prompt.
        expect(t.counter.open).toBe(0)
        expect(d.counter.open).toBe(0)
      }
      expect(iterations).toBeGreaterThan(50)
      // The forest itself needs many sequences at once (one per path) — the memory mode bounds what is KEPT.
      expect(t.counter.peakLive).toBeGreaterThan(2)
      if (!oneBeam) expect(maxInputs).toBeGreaterThan(1)
    }
  })

  it('KV management never changes the output: with copies, without copies, and with only two sequences', async () => {
    const options = dsbdOptions(3, { 'dsbd.ws': 3, 'dsbd.t': 0.4 }, false)
    const run = async (models: DecoderModels, decoder: Decoder, seed: number) =>
      (await decode(decoder, models, { promptTokens: [TOY_BOS], maxTokens: 20, warp: PLAIN, rng: createPrng(seed, 0) })).tokens
    for (let seed = 0; seed < 15; seed++) {
      const reference = await run({ target: toyTarget(), draft: toyDraft() }, dsbdDecoder(options), seed)
      const noCopy = instrumented(toyTarget(), { copy: false })
      const few = instrumented(toyTarget(), { maxSessions: 2 })
      expect(await run({ target: noCopy.model, draft: instrumented(toyDraft(), { copy: false }).model }, dsbdDecoder(options), seed)).toEqual(reference)
      expect(await run({ target: few.model, draft: instrumented(toyDraft(), { maxSessions: 2 }).model }, dsbdDecoder(options), seed)).toEqual(reference)
      expect(few.counter.peakOpen).toBeLessThanOrEqual(2)
      const beamReference = await run({ target: toyTarget() }, beamDecoder({ width: 3, deterministic: false }), seed)
      expect(await run({ target: instrumented(toyTarget(), { copy: false }).model }, beamDecoder({ width: 3, deterministic: false }), seed)).toEqual(beamReference)
    }
  })
})

describe('catalog: beam / dsbd / dsbd-1beam parameters', () => {
  const prepared = (id: string, gamma: number, params: Record<string, number | string | boolean>) => () => prepare(id, { gamma, params }).newRun()

  it('validates --set values with a UserInputError naming the key', () => {
    expect(prepared('beam', 5, { 'beam.width': 2, 'beam.deterministic': true })).not.toThrow()
    expect(prepared('beam', 5, { 'beam.width': 0 })).toThrow(UserInputError)
    expect(prepared('beam', 5, { 'beam.widht': 2 })).toThrow(/beam\.widht/)
    expect(prepared('beam', 5, { 'beam.deterministic': 'yes' })).toThrow(UserInputError)
    expect(prepared('dsbd', 3, { 'dsbd.ws': 4, 'dsbd.t': 0.7, 'dsbd.wmin': 2, 'dsbd.fixedWidth': 0 })).not.toThrow()
    expect(prepared('dsbd', 3, { 'dsbd.t': 1.5 })).toThrow(/dsbd\.t/)
    expect(prepared('dsbd', 3, { 'dsbd.ws': 2, 'dsbd.fixedWidth': 3 })).toThrow(/dsbd\.fixedWidth/)
    expect(prepared('dsbd-1beam', 3, { 'dsbd.wmin': 9 })).toThrow(/dsbd\.wmin/)
    expect(prepared('dsbd', 3, { 'dsbd.layers': 2 })).toThrow(/dsbd\.layers/)
    // A key of another method is refused, naming its owner (a run's --set list may hold only its methods' keys).
    expect(prepared('dsbd', 3, { 'svip.h': 0.3 })).toThrow(/svip\.h is not a parameter of .*: it belongs to svip, which is not in this run/)
    expect(() => prepareRun(['dsbd', 'svip'], { gamma: 3, params: { 'svip.h': 0.3, 'dsbd.ws': 2 } })).not.toThrow()
  })

  it('declares the KV sequences it needs; a run opens max(4, …) up to 16', () => {
    expect(prepare('beam', { gamma: 5, params: { 'beam.width': 6 } }).sessions).toBe(6)
    // dsbd: W_S input beams + γ·W_S tree paths; dsbd-1beam: 1 + γ·W_S.
    expect(prepare('dsbd', { gamma: 2, params: { 'dsbd.ws': 3 } }).sessions).toBe(9)
    expect(prepare('dsbd-1beam', { gamma: 2, params: { 'dsbd.ws': 3 } }).sessions).toBe(7)
    expect(prepareRun(['ar', 'sd'], { gamma: 5, params: {} }).sessions).toBe(4)
    expect(prepareRun(['ar', 'dsbd'], { gamma: 2, params: { 'dsbd.ws': 3 } }).sessions).toBe(9)
    expect(prepareRun(['dsbd'], { gamma: 8, params: { 'dsbd.ws': 6 } }).sessions).toBe(16)
  })
})
