/**
 * The three-model hierarchies on toy models whose warped conditionals are known in closed form:
 * - pre-verify, pre-self-verify and hsddw are lossless: Pearson's chi-square of their output tokens against the
 *   target's exact warped law (20k decodes per case, p > 0.001), with three different models M_q1 ≠ M_q2 ≠ M_p and
 *   checks that every branch (M_q2 rejections, M_p corrections, bonus tokens at both levels, entropy stops, several
 *   pre-verify rounds per target call) really ran;
 * - a hand-written negative control shows the test catches the natural mistake of verifying M_q2's corrections
 *   against the residual they were drawn from instead of q2;
 * - hier-chen (Chen's Algorithm 2 as printed) is NOT lossless: its total variation distance to the target law is
 *   measured and printed, its first token follows the biased law min(s, p) + (1 − Σ min(s, p))·p exactly, and the
 *   chen.residual variant passes the chi-square test;
 * - greedy decoding of all four methods reproduces `ar` token for token.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { prepare } from '../../electron/engine/methods/prepare'
import type { DecoderModels, StepRecord } from '../../electron/engine/decoders/types'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { foldLevels } from '../../electron/engine/metrics/levels'
import { probabilityOf, sample, type Distribution } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import { acceptSampling, residual } from '../../electron/engine/sampling/verify'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import {
  exactSequenceDistribution,
  marginal,
  NEVER,
  TOY_BOS,
  TOY_VOCABULARY,
  toyDraft,
  toyDraftClose,
  toyTarget
} from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20250107
const P_MIN = 0.001

/** Total variation distance ½ Σ |a − b| between an empirical count table and a law. */
function totalVariation(counts: ReadonlyMap<string, number>, law: ReadonlyMap<string, number>): number {
  let n = 0
  for (const c of counts.values()) n += c
  const keys = new Set([...counts.keys(), ...law.keys()])
  let tv = 0
  for (const key of keys) tv += Math.abs((counts.get(key) ?? 0) / n - (law.get(key) ?? 0))
  return tv / 2
}

/** The trio: three different toy models. M_q1 disagrees with both others on purpose, M_q2 is close to M_p. */
function trio(): DecoderModels {
  return { target: toyTarget(), mid: toyDraftClose(), draft: toyDraft() }
}

/** A copy of `base` with context-dependent noise on its logits (for greedy tests: close, but not equal). */
function perturbed(base: ToyModel, name: string, amplitude: number, salt: number): ToyModel {
  return new ToyModel({
    name,
    vocabulary: TOY_VOCABULARY,
    logits: (context) => {
      const d = base.distribution(context, PLAIN)
      const logits = new Array<number>(TOY_VOCABULARY.length).fill(NEVER)
      const last = context[context.length - 1]
      d.ids.forEach((id, i) => {
        logits[id] = Math.log(d.probs[i]) + amplitude * Math.sin(salt + 1.7 * context.length + 2.3 * id + 0.9 * last)
      })
      return logits
    }
  })
}

interface Sampled {
  byPositions: Map<string, number>[]
  steps: StepRecord[]
  provenance: Map<string, number>
}

/** `SAMPLES` decodes from one run of `method` (state carries over), keeping every step and provenance. */
async function sampleMethod(
  method: string,
  gamma: number,
  params: MethodParams,
  models: DecoderModels,
  warp: WarpConfig,
  maxTokens: number,
  groups: number[][]
): Promise<Sampled> {
  const steps: StepRecord[] = []
  const provenance = new Map<string, number>()
  const decoder = prepare(method, { gamma, params }).newRun()
  const byPositions = await sampleTokenGroups({ decoder, models, warp, maxTokens, groups, samples: SAMPLES, seed: SEED }, (result) => {
    for (const p of result.provenances) tally(provenance, p)
    steps.push(...result.steps)
  })
  return { byPositions, steps, provenance }
}

describe('pre-verify, pre-self-verify and hsddw are lossless (chi-square, 20k decodes each, M_q1 ≠ M_q2 ≠ M_p)', () => {
  const cases: { method: string; gamma: number; params: MethodParams; label: string; warp: WarpConfig }[] = [
    { method: 'pre-verify', gamma: 2, params: { 'pre.window': 3 }, label: 'T=1', warp: PLAIN },
    { method: 'pre-verify', gamma: 1, params: { 'pre.window': 2 }, label: 'T=0.7 top-k 4', warp: { temperature: 0.7, topK: 4, topP: 1 } },
    { method: 'pre-self-verify', gamma: 3, params: { 'pre.window': 4 }, label: 'T=1', warp: PLAIN },
    { method: 'hsddw', gamma: 3, params: {}, label: 'T=1', warp: PLAIN },
    { method: 'hsddw', gamma: 2, params: {}, label: 'T=1.3 top-p 0.8', warp: { temperature: 1.3, topK: 0, topP: 0.8 } }
  ]
  const MAX_TOKENS = 5
  const GROUPS = [
    [0, 1],
    [3, 4]
  ]

  it.each(cases)('$method γ=$gamma $params $label', async ({ method, gamma, params, label, warp }) => {
    const models = trio()
    const sampled = await sampleMethod(method, gamma, params, models, warp, MAX_TOKENS, GROUPS)
    const law = exactSequenceDistribution(models.target as ToyModel, [TOY_BOS], MAX_TOKENS, warp)

    // Every branch must really run, or the test proves nothing about it.
    const levels = foldLevels(sampled.steps)!
    const rounds = sampled.steps.length
    const targetRejections = sampled.steps.filter((s) => s.resampled).length
    const q2Rejections = levels.q1.examinedByQ2 - levels.q1.acceptedByQ2
    const multiRound = sampled.steps.filter((s) => Number(s.decision?.innerRounds) > 1).length
    const entropyStops = sampled.steps.filter((s) => s.decision?.handover === 'entropy').length
    const prov = Object.fromEntries(sampled.provenance)
    console.log(
      `${method} γ=${gamma} ${label}: ${rounds} target rounds, M_p rejects in ${(targetRejections / rounds).toFixed(3)}, ` +
        `M_q2 rejects ${(q2Rejections / levels.q1.examinedByQ2).toFixed(3)} of M_q1's tokens, ` +
        `${multiRound} rounds with > 1 pre-verify round, ${entropyStops} entropy hand-overs, provenance ${JSON.stringify(prov)}`
    )
    expect(targetRejections / rounds).toBeGreaterThan(0.15)
    expect(rounds - targetRejections).toBeGreaterThan(SAMPLES / 20)
    expect(q2Rejections / levels.q1.examinedByQ2).toBeGreaterThan(0.2)
    for (const provenance of ['draft', 'mid', 'resampled', 'bonus']) expect(prov[provenance]).toBeGreaterThan(SAMPLES / 50)
    expect(multiRound).toBeGreaterThan(SAMPLES / 50)
    if (method !== 'pre-verify') expect(entropyStops).toBeGreaterThan(SAMPLES / 20)

    GROUPS.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(sampled.byPositions[g], marginal(law, positions))
      report(`${method} γ=${gamma} ${label} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })

  it('negative control: verifying M_q2 corrections against their residual instead of q2 is caught', () => {
    // One output token, written out by hand: x ~ q1; M_q2 keeps it with min(1, q2/q1) or corrects from
    // r = norm(max(0, q2 − q1)); M_p then verifies the token against `qFor` and corrects from norm(max(0, p − qFor)).
    const { target, mid, draft } = trio() as { target: ToyModel; mid: ToyModel; draft: ToyModel }
    const context = [TOY_BOS]
    const [p, q2, q1] = [target, mid, draft].map((m) => m.distribution(context, PLAIN))
    const run = (wrong: boolean) => {
      const counts = new Map<string, number>()
      for (let i = 0; i < SAMPLES; i++) {
        const rng = createPrng(SEED, i)
        const x = sample(q1, rng)
        let token = x
        let qFor: Distribution = q2
        if (!acceptSampling(q2, q1, x, rng)) {
          const r = residual(q2, q1)
          token = sample(r, rng)
          if (wrong) qFor = r
        }
        const out = acceptSampling(p, qFor, token, rng) ? token : sample(residual(p, qFor), rng)
        tally(counts, String(out))
      }
      return chiSquareGoodnessOfFit(counts, exactSequenceDistribution(target, context, 1, PLAIN))
    }
    const right = run(false)
    const wrong = run(true)
    report('control: M_p verifies a correction against q2 (what the decoders do)', right)
    report('negative control: M_p verifies a correction against its residual', wrong)
    expect(right.pValue).toBeGreaterThan(P_MIN)
    expect(wrong.pValue).toBeLessThan(1e-6)
  })
})

describe("hier-chen: Chen's Algorithm 2 is measured, not assumed lossless", () => {
  const MAX_TOKENS = 2
  const GROUPS = [[0], [0, 1]]

  it('as printed (correction from p_{k+1}): total variation distance to the target law, printed; first token matches the biased law', async () => {
    const models = trio()
    const target = models.target as ToyModel
    const sampled = await sampleMethod('hier-chen', 1, { 'chen.m': 2, 'chen.n': 1 }, models, PLAIN, MAX_TOKENS, GROUPS)
    const law = exactSequenceDistribution(target, [TOY_BOS], MAX_TOKENS, PLAIN)

    // First token: the round's first guess comes from M_s (n ≥ 1): kept with min(1, p/s), else t ~ p.
    // P(y) = min(s(y), p(y)) + (1 − Σ min(s, p))·p(y).
    const p = target.distribution([TOY_BOS], PLAIN)
    const s = (models.draft as ToyModel).distribution([TOY_BOS], PLAIN)
    let overlap = 0
    for (let i = 0; i < p.ids.length; i++) overlap += Math.min(p.probs[i], probabilityOf(s, p.ids[i]))
    const biased = new Map<string, number>()
    const exactFirst = marginal(law, [0])
    for (const [key, pk] of exactFirst) {
      const sk = probabilityOf(s, Number(key))
      biased.set(key, Math.min(sk, pk) + (1 - overlap) * pk)
    }
    let exactTv = 0
    for (const [key, pk] of exactFirst) exactTv += Math.abs(biased.get(key)! - pk) / 2

    const tvFirst = totalVariation(sampled.byPositions[0], exactFirst)
    const tvJoint = totalVariation(sampled.byPositions[1], law)
    console.log(
      `hier-chen (as printed, m=2 n=1) vs the target law: TV(first token) = ${tvFirst.toFixed(4)} ` +
        `(closed form ${exactTv.toFixed(4)}), TV(first two tokens) = ${tvJoint.toFixed(4)}`
    )
    const vsBiased = chiSquareGoodnessOfFit(sampled.byPositions[0], biased)
    const vsTarget = chiSquareGoodnessOfFit(sampled.byPositions[1], law)
    report('hier-chen first token vs the biased closed form', vsBiased)
    report('hier-chen first two tokens vs the target law', vsTarget)
    expect(vsBiased.pValue).toBeGreaterThan(P_MIN)
    expect(vsTarget.pValue).toBeLessThan(1e-6)
    expect(Math.abs(tvFirst - exactTv)).toBeLessThan(0.02)
    expect(tvJoint).toBeGreaterThan(0.03)
  })

  it('chen.residual=true (correct from norm(max(0, p − d))) is lossless, and its TV is only sampling noise', async () => {
    const models = trio()
    const params = { 'chen.m': 2, 'chen.n': 1, 'chen.residual': true }
    const sampled = await sampleMethod('hier-chen', 1, params, models, PLAIN, 4, [[0, 1], [2, 3]])
    const law = exactSequenceDistribution(models.target as ToyModel, [TOY_BOS], 4, PLAIN)
    const tv = totalVariation(sampled.byPositions[0], marginal(law, [0, 1]))
    console.log(`hier-chen chen.residual=true: TV(first two tokens) = ${tv.toFixed(4)} (sampling noise only)`)
    ;[[0, 1], [2, 3]].forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(sampled.byPositions[g], marginal(law, positions))
      report(`hier-chen residual tokens ${positions.join('+')}`, fit)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
    expect(tv).toBeLessThan(0.03)
  })
})

describe('greedy hierarchies reproduce ar exactly (toy models)', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 1], [TOY_BOS, 3, 4], [TOY_BOS, 5, 5, 2], [TOY_BOS, 2, 1, 4, 3]]
  const methods: { method: string; params: MethodParams }[] = [
    { method: 'pre-verify', params: {} },
    { method: 'pre-verify', params: { 'pre.window': 7 } },
    { method: 'pre-self-verify', params: { 'pre.window': 6 } },
    { method: 'hsddw', params: {} },
    { method: 'hier-chen', params: { 'chen.m': 2, 'chen.n': 2 } },
    { method: 'hier-chen', params: { 'chen.m': 3, 'chen.n': 0 } }
  ]
  const warps: WarpConfig[] = [GREEDY, { temperature: 0, topK: 3, topP: 1 }]

  it.each(warps)('temperature 0, top-k $topK: tokens = ar tokens, 5 prompts × γ ∈ {1, 2, 3, 5}', async (warp) => {
    const target = toyTarget()
    const mid = toyDraftClose()
    const draft = perturbed(mid, 'toy-q1-close', 0.8, 0.4)
    for (const { method, params } of methods) {
      let q2Rejections = 0
      let q2Accepts = 0
      let pRejections = 0
      let pAccepts = 0
      for (const promptTokens of prompts) {
        const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 24, warp }))
        for (const gamma of [1, 2, 3, 5]) {
          const request = makeRequest({ promptTokens, maxTokens: 24, warp, rng: createPrng(gamma, 7) })
          const result = await decode(prepare(method, { gamma, params }).newRun()(), { target, mid, draft }, request)
          expect(result.tokens, `${method} ${JSON.stringify(params)} prompt ${promptTokens} γ=${gamma}`).toEqual(ar.tokens)
          const levels = foldLevels(result.steps)!
          q2Rejections += levels.q1.examinedByQ2 - levels.q1.acceptedByQ2
          q2Accepts += levels.q1.acceptedByQ2
          pRejections += levels.p.examined - levels.p.accepted
          pAccepts += levels.p.accepted
        }
      }
      // Both verdicts occurred at both levels (hier-chen: M_q2 does not verify M_q1).
      if (method !== 'hier-chen') {
        expect(q2Rejections, method).toBeGreaterThan(10)
        expect(q2Accepts, method).toBeGreaterThan(10)
      }
      expect(pRejections, method).toBeGreaterThan(10)
      expect(pAccepts, method).toBeGreaterThan(10)
    }
  })
})
