/**
 * What if (engine/replay/what-if.ts) on constructed runs whose acceptance and costs are known: the per-position
 * estimator recovers the rates it was drawn with, the generalized Leviathan sum matches Eq. 1 at one α, a run's own
 * configuration is priced back to its measured tokens/s, and predictions outside the recorded rounds say so. The
 * negative control: with acceptance that falls along the draft, one pooled α (Leviathan's i.i.d. model) mispredicts
 * what the per-position estimate gets right.
 */
import { describe, expect, it } from 'vitest'
import { stepRecord } from '../../electron/engine/decoders/step-record'
import type { StepRecord } from '../../electron/engine/decoders/types'
import type { PromptOutcome } from '../../electron/engine/metrics/fold'
import { createPrng } from '../../electron/engine/sampling/prng'
import { expectedTokens } from '../../electron/engine/theory/leviathan'
import {
  conditionalAcceptance,
  cutLaw,
  fixedLengthLaw,
  renewal,
  whatIfForRun,
  type WhatIfMethod
} from '../../electron/engine/replay/what-if'
import { formatWhatIf } from '../../electron/cli/what-if-format'
import { targetCostAt } from '../../electron/engine/replay/cost-points'

import { DRAFT_MS, MAX_TOKENS, PREFILL_MS, PROMPT_MS, ROUND_MS, verifyMs as targetMs } from '../helpers/what-if-costs'

interface Drafting {
  /** Draft tokens the round proposes given the tokens left; its per-position acceptance; its entropies. */
  propose(left: number): number
  rates: readonly number[]
  entropy?: (position: number) => number
  lookup?: boolean
}

/** One prompt decoded by a chain method with known acceptance and costs (rounds cut at the budget as the decoder cuts them). */
function decodePrompt(d: Drafting, rng: ReturnType<typeof createPrng>, index: number): PromptOutcome {
  const steps: StepRecord[] = []
  let t = 0
  while (t < MAX_TOKENS) {
    const proposed = d.propose(MAX_TOKENS - t)
    let accepted = 0
    while (accepted < proposed && rng.next() < d.rates[accepted]) accepted++
    const emitted = Math.min(accepted + 1, MAX_TOKENS - t)
    const draftTokens = d.lookup ? 0 : proposed
    const draftMs = draftTokens * DRAFT_MS + (d.lookup ? 0.3 : 0)
    const verifyMs = targetMs(proposed + 1) + (steps.length === 0 ? PREFILL_MS : 0)
    steps.push(
      stepRecord({
        index: steps.length,
        stage: d.lookup ? 'ngram' : 'sd',
        proposed,
        accepted,
        emitted,
        draftTokens,
        draftCalls: draftTokens,
        draftMs,
        verifyMs,
        targetCalls: 1,
        draftEntropies: d.entropy ? Array.from({ length: proposed }, (_, j) => d.entropy!(j + 1)) : [],
        totalMs: draftMs + verifyMs + ROUND_MS
      })
    )
    t += emitted
  }
  const wallMs = steps.reduce((n, s) => n + s.totalMs, 0) + PROMPT_MS
  return { promptIndex: index, outputText: '', outputTokens: t, wallMs, steps }
}

function method(name: string, d: Drafting, prompts: number, seed: number): WhatIfMethod {
  const rng = createPrng(seed)
  const outcomes = Array.from({ length: prompts }, (_, i) => decodePrompt(d, rng, i))
  const tokens = outcomes.reduce((n, p) => n + p.outputTokens, 0)
  const wall = outcomes.reduce((n, p) => n + p.wallMs, 0)
  return { method: name, prompts: outcomes, tokensPerSecond: (tokens * 1000) / wall }
}

const ar = (prompts: number) => method('ar', { propose: () => 0, rates: [] }, prompts, 1)
const sd = (gamma: number, rates: readonly number[], prompts = 300, entropy?: Drafting['entropy']) =>
  method('sd', { propose: (left) => Math.min(gamma, left), rates, entropy }, prompts, 2)

const meanTokens = (law: ReturnType<typeof fixedLengthLaw>) => law.reduce((n, o) => n + o.weight * (o.accepted + 1), 0)

describe('the per-position estimator', () => {
  it('recovers the acceptance each position was drawn with, from the rounds that proposed it', () => {
    const rates = [0.9, 0.6, 0.3, 0.7]
    const run = sd(4, rates, 2000)
    const estimated = conditionalAcceptance(run.prompts.flatMap((p) => p.steps))
    estimated.forEach((alpha, i) => expect(alpha!).toBeCloseTo(rates[i], 1))
    expect(Math.abs(estimated[2]! - 0.3)).toBeLessThan(0.03)
  })

  it('the generalized sum is Leviathan Eq. 1 when every position has the same α', () => {
    for (const alpha of [0.2, 0.55, 0.9])
      for (const gamma of [1, 4, 8]) expect(meanTokens(fixedLengthLaw(new Array(gamma).fill(alpha)))).toBeCloseTo(expectedTokens(alpha, gamma), 10)
  })

  it('negative control: with acceptance falling along the draft, one pooled α mispredicts and the per-position rates do not', () => {
    const rates = [0.95, 0.5, 0.2, 0.1]
    const steps = sd(4, rates, 2000).prompts.flatMap((p) => p.steps).filter((s) => s.proposed === 4)
    const observed = steps.reduce((n, s) => n + s.accepted + 1, 0) / steps.length
    const perPosition = meanTokens(fixedLengthLaw(conditionalAcceptance(steps).map((a) => a!)))
    const pooled = steps.reduce((n, s) => n + s.accepted, 0) / steps.reduce((n, s) => n + Math.min(s.proposed, s.accepted + 1), 0)
    expect(Math.abs(perPosition - observed) / observed).toBeLessThan(0.01)
    expect(Math.abs(expectedTokens(pooled, 4) - observed) / observed).toBeGreaterThan(0.05)
  })
})

describe('the renewal over a prompt', () => {
  it('counts every token once: a round accepting everything advances γ + 1, one rejecting at once advances 1', () => {
    expect(renewal(10, 10, [{ proposed: 4, accepted: 4, weight: 1 }], () => 1).rounds).toBe(2) // 5 + 5
    expect(renewal(10, 10, [{ proposed: 4, accepted: 0, weight: 1 }], () => 1).rounds).toBe(10)
    // The budget cuts the last proposal: at t = 8 only 2 tokens are left, so it proposes 2.
    expect(renewal(10, 10, [{ proposed: 7, accepted: 7, weight: 1 }], () => 1).proposed).toBe(7 + 2)
  })

  it('cuts recorded rounds where another rule would have: accepted tokens past the cut are not counted', () => {
    const step = stepRecord({ index: 1, stage: 'sd', proposed: 5, accepted: 4, emitted: 5, verifyMs: 1, totalMs: 1 })
    expect(cutLaw([step], () => 2)).toEqual([{ proposed: 2, accepted: 2, weight: 1 }])
    expect(cutLaw([step], () => 9)).toEqual([{ proposed: 5, accepted: 4, weight: 1 }])
  })

  it('prices c_T(k) between measured k linearly and marks it extrapolated beyond them', () => {
    const points = [
      { k: 1, ms: 10, rounds: 5 },
      { k: 5, ms: 14, rounds: 5 }
    ]
    expect(targetCostAt(points, 3)).toEqual({ ms: 12, extrapolated: false })
    expect(targetCostAt(points, 7)).toEqual({ ms: 16, extrapolated: true })
  })
})

describe('whatIfForRun', () => {
  const rates = [0.9, 0.8, 0.6, 0.5]
  const report = whatIfForRun({ methods: [ar(300), sd(4, rates)], maxTokens: MAX_TOKENS, gamma: 4, params: {} })!
  const source = report.sources.find((s) => s.method === 'sd')!
  const at = (gamma: number) => source.predictions.find((p) => p.kind === 'fixed' && p.gamma === gamma)!

  it('prices the run’s own configuration back to its measured tokens/s and tokens per round', () => {
    const own = source.predictions.filter((p) => p.own)
    expect(own.map((p) => p.label)).toEqual(['sd γ = 4'])
    expect(Math.abs(own[0].tokensPerSecond / source.measured.tokensPerSecond - 1)).toBeLessThan(0.02)
    expect(Math.abs(own[0].tokensPerRound / source.measured.tokensPerRound - 1)).toBeLessThan(0.02)
    expect(own[0].speedup! / source.measured.speedup!).toBeCloseTo(own[0].tokensPerSecond / source.measured.tokensPerSecond, 10)
  })

  it('recovers the costs the rounds were timed with', () => {
    expect(source.draftMsPerToken).toBeCloseTo(DRAFT_MS, 6)
    expect(source.roundOverheadMs).toBeCloseTo(ROUND_MS, 6)
    // λ: the wall time also holds each prompt's 5 ms outside its rounds and the 20 ms prefill.
    expect(source.timeScale).toBeGreaterThan(1)
    expect(source.timeScale).toBeLessThan(1.1)
    for (const point of report.targetCost) expect(point.ms).toBeCloseTo(targetMs(point.k), 6)
  })

  it('prices a shorter γ from the same rounds as a run at that γ measures it', () => {
    const truth = whatIfForRun({ methods: [ar(300), method('sd', { propose: (left) => Math.min(2, left), rates }, 300, 9)], maxTokens: MAX_TOKENS, gamma: 2, params: {} })!
    const measured = truth.sources[0].measured.tokensPerSecond
    expect(Math.abs(at(2).tokensPerSecond / measured - 1)).toBeLessThan(0.03)
    expect(at(2).supported).toBe(true)
  })

  it('says when a γ needs positions no round proposed, or a verification never timed', () => {
    for (const gamma of [1, 2, 3, 4]) expect(at(gamma)).toMatchObject({ supported: true, reason: null })
    expect(at(5).supported).toBe(false)
    expect(at(5).reason).toMatch(/positions 5–5 were never proposed/)
    expect(at(8).reason).toMatch(/positions 5–8/)
  })

  it('without ar: tokens/s are still predicted, speedups are null and the report says why', () => {
    const alone = whatIfForRun({ methods: [sd(4, rates, 50)], maxTokens: MAX_TOKENS, gamma: 4, params: {} })!
    expect(alone.arTokensPerSecond).toBeNull()
    expect(alone.notes.join(' ')).toMatch(/no ar/)
    expect(alone.sources[0].predictions.every((p) => p.speedup === null && p.tokensPerSecond > 0)).toBe(true)
  })

  it('prices SVIP thresholds on the recorded entropies: a threshold no entropy crosses is the run itself', () => {
    const run = whatIfForRun({ methods: [ar(100), sd(4, rates, 300, (j) => 0.2 * j)], maxTokens: MAX_TOKENS, gamma: 4, params: {} })!
    const svip = run.sources[0].predictions.filter((p) => p.kind === 'svip')
    expect(svip.map((p) => p.value)).toEqual([0.2, 0.3, 0.4, 0.5])
    // √(0.15·H) > h: H_j = 0.2 j ≤ 0.8 gives √(0.12) ≈ 0.35 at most — h = 0.4, 0.5 never stop, h = 0.2 stops after token 2.
    const own = run.sources[0].predictions.find((p) => p.own)!
    // (The fixed-γ row reads the per-position rates, the SVIP row the rounds themselves: two estimates of one law.)
    expect(Math.abs(svip[3].tokensPerSecond / own.tokensPerSecond - 1)).toBeLessThan(0.01)
    expect(svip[0].proposedPerRound).toBeLessThanOrEqual(2)
    expect(svip.every((p) => p.supported)).toBe(true)
  })

  it('lookup caps past the longest recorded proposal are unsupported; the run’s own cap is marked', () => {
    const pld = method('pld', { propose: (left) => Math.min(3, left), rates: [0.7, 0.5, 0.4], lookup: true }, 100, 4)
    const run = whatIfForRun({ methods: [ar(100), pld], maxTokens: MAX_TOKENS, gamma: 3, params: { 'pld.k': 3, 'pld.ngram': 2 } })!
    const rows = run.sources[0].predictions
    expect(run.sources[0].drafter).toBe('lookup')
    expect(rows.filter((p) => p.own).map((p) => p.label)).toEqual(['pld cap 3'])
    expect(rows.filter((p) => !p.supported).map((p) => p.value)).toEqual([4, 5, 6, 7, 8])
    const own = rows.find((p) => p.own)!
    expect(Math.abs(own.tokensPerSecond / run.sources[0].measured.tokensPerSecond - 1)).toBeLessThan(0.03)
  })

  it('a first round faster than the mean round (a loaded machine) does not make predictions negative', () => {
    const noisy = sd(4, rates, 3)
    // Rounds past the first are slow (the machine is busy), the first ones quick: their "prefill" would be negative.
    for (const prompt of noisy.prompts) for (const step of prompt.steps) if (step.index > 0) (step.verifyMs += 500), (step.totalMs += 500)
    for (const prompt of noisy.prompts) prompt.wallMs = prompt.steps.reduce((n, s) => n + s.totalMs, 0)
    const run = whatIfForRun({ methods: [ar(3), noisy], maxTokens: MAX_TOKENS, gamma: 4, params: {} })!
    for (const p of run.sources[0].predictions) expect(p.tokensPerSecond, p.label).toBeGreaterThan(0)
  })

  it('is null for a run with no drafting method', () => {
    expect(whatIfForRun({ methods: [ar(5)], maxTokens: MAX_TOKENS, gamma: 4, params: {} })).toBeNull()
    expect(formatWhatIf(null)).toMatch(/^no what-if: /)
  })

  it('show --what-if prints one table per source: the own row marked, unsupported rows with their reason', () => {
    const text = formatWhatIf(report)
    expect(text).toMatch(/^target verification cost from the run's rounds: c_T\(1\) 10\.00 ms, .*c_T\(5\) 16\.00 ms$/m)
    expect(text).toMatch(/^sd γ = 4 \(this run\)\s+[\d.]+\s+[\d.]+\s+[\d.]+×\s+ok$/m)
    expect(text).toMatch(/^sd γ = 6\s.*outside the run: positions 5–6 were never proposed/m)
  })
})
