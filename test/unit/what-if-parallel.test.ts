/**
 * What if for parallel drafting (engine/replay/what-if-parallel.ts) on constructed PEARL and sd.parallel runs whose
 * chain acceptance and costs are known, decoded round by round as decoders/parallel-drafting.ts decodes: the chain
 * estimator recovers the rates, a run's own window is priced back to what it measured, another window is priced as a
 * run at that window measures it, and rows outside the recorded rounds say so. The negative control: acceptance read
 * per position within a round (what-if.ts's estimator, right for sequential chains) is wrong for PEARL's rounds.
 */
import { describe, expect, it } from 'vitest'
import { formatWhatIf } from '../../electron/cli/what-if-format'
import { stepRecord } from '../../electron/engine/decoders/step-record'
import type { StepRecord } from '../../electron/engine/decoders/types'
import type { PromptOutcome } from '../../electron/engine/metrics/fold'
import { createPrng } from '../../electron/engine/sampling/prng'
import { conditionalAcceptance, whatIfForRun, type WhatIfMethod } from '../../electron/engine/replay/what-if'
import { chainAcceptance, parallelRenewal } from '../../electron/engine/replay/what-if-parallel'

import { DRAFT_MS, MAX_TOKENS, PREFILL_MS, PROMPT_MS, ROUND_MS, verifyMs } from '../helpers/what-if-costs'

/** Acceptance at chain position c (1-based): falling along the chain, the last value beyond. */
const FALLING = [0.95, 0.9, 0.8, 0.7, 0.6]
const rateAt = (rates: readonly number[], c: number) => rates[Math.min(c, rates.length) - 1]!

/** One prompt decoded with parallel drafting at window γ, as parallel-drafting.ts decodes (budget cuts included). */
function decodePrompt(gamma: number, preVerify: boolean, rates: readonly number[], rng: ReturnType<typeof createPrng>, index: number): PromptOutcome {
  const steps: StepRecord[] = []
  let t = 0
  let waiting = 0
  let chain = 1
  const record = (r: { proposed: number; accepted: number; emitted: number; alone: number; beside: number; positions: number; carried: number; kind: string }) => {
    const verify = verifyMs(r.positions) + (steps.length === 0 ? PREFILL_MS : 0)
    const draftCalls = r.alone + r.beside
    steps.push(
      stepRecord({
        index: steps.length,
        stage: preVerify ? 'pearl' : 'sd',
        proposed: r.proposed,
        accepted: r.accepted,
        emitted: r.emitted,
        draftTokens: draftCalls,
        draftCalls,
        draftMs: draftCalls * DRAFT_MS,
        verifyMs: verify,
        targetCalls: 1,
        draftEntropies: [],
        decision: { verify: r.kind, carried: r.carried, overlapCalls: r.beside, positions: r.positions },
        totalMs: r.alone * DRAFT_MS + Math.max(r.beside * DRAFT_MS, verify) + ROUND_MS
      })
    )
  }
  while (t < MAX_TOKENS) {
    const budget = MAX_TOKENS - t
    if (waiting === 0 && preVerify) {
      const drafted = Math.min(gamma, budget)
      const pass = rng.next() < rateAt(rates, 1)
      const carried = pass ? drafted - 1 : 0
      record({ proposed: 1, accepted: pass ? 1 : 0, emitted: 1, alone: 0, beside: drafted, positions: 1, carried, kind: 'pre-verify' })
      t += 1
      waiting = carried
      chain = 2
      continue
    }
    const alone = waiting === 0 ? Math.min(gamma, budget) : 0
    const start = waiting === 0 ? 1 : chain
    const held = waiting === 0 ? alone : waiting
    const ahead = Math.max(0, Math.min(gamma, budget - held))
    const tested = held + (ahead > 0 ? 1 : 0)
    let accepted = 0
    while (accepted < tested && rng.next() < rateAt(rates, start + accepted)) accepted++
    const all = accepted === tested
    const emitted = Math.min(budget, all ? (ahead > 0 ? tested : tested + 1) : accepted + 1)
    const carried = all && ahead > 0 ? ahead - 1 : 0
    record({ proposed: tested, accepted, emitted, alone, beside: ahead, positions: held + 1, carried, kind: 'post-verify' })
    t += emitted
    waiting = carried
    chain = start + tested
  }
  const wallMs = steps.reduce((n, s) => n + s.totalMs, 0) + PROMPT_MS
  return { promptIndex: index, outputText: '', outputTokens: t, wallMs, steps }
}

function parallelMethod(name: string, gamma: number, preVerify: boolean, rates: readonly number[], prompts: number, seed: number): WhatIfMethod {
  const rng = createPrng(seed)
  const outcomes = Array.from({ length: prompts }, (_, i) => decodePrompt(gamma, preVerify, rates, rng, i))
  const tokens = outcomes.reduce((n, p) => n + p.outputTokens, 0)
  const wall = outcomes.reduce((n, p) => n + p.wallMs, 0)
  return { method: name, prompts: outcomes, tokensPerSecond: (tokens * 1000) / wall }
}

/** ar at c_T(1) = 9 ms alone (a verification beside the draft costs more: 10 ms). */
function arMethod(prompts: number): WhatIfMethod {
  const outcomes = Array.from({ length: prompts }, (_, i): PromptOutcome => {
    const steps = Array.from({ length: MAX_TOKENS }, (_, index) =>
      stepRecord({ index, stage: 'target', proposed: 0, accepted: 0, emitted: 1, draftTokens: 0, draftCalls: 0, draftMs: 0, verifyMs: 9, targetCalls: 1, draftEntropies: [], totalMs: 9.2 })
    )
    return { promptIndex: i, outputText: '', outputTokens: MAX_TOKENS, wallMs: steps.reduce((n, s) => n + s.totalMs, 0) + PROMPT_MS, steps }
  })
  return { method: 'ar', prompts: outcomes, tokensPerSecond: (prompts * MAX_TOKENS * 1000) / outcomes.reduce((n, p) => n + p.wallMs, 0) }
}

const pearl = (gamma: number, prompts = 300, seed = 3) => parallelMethod('pearl', gamma, true, FALLING, prompts, seed)
const reportOf = (methods: WhatIfMethod[], gamma: number, params: Record<string, boolean> = {}) => whatIfForRun({ methods, maxTokens: MAX_TOKENS, gamma, params })!

describe('acceptance along draft chains', () => {
  it('recovers the rate each chain position was drawn with, across pre- and post-verify rounds', () => {
    const run = pearl(4, 600)
    const { reached, accepted } = chainAcceptance(run.prompts.map((p) => p.steps))
    for (let c = 1; c <= 5; c++) expect(accepted[c - 1]! / reached[c - 1]!).toBeCloseTo(rateAt(FALLING, c), 1)
  })

  it('negative control: read per position within a round, the rates are not the chain’s', () => {
    const run = pearl(4, 600)
    const steps = run.prompts.flatMap((p) => p.steps)
    // A post-verify round's first tested token is usually a chain's second or later, so its rate is not α_1.
    expect(Math.abs(conditionalAcceptance(steps)[0]! - rateAt(FALLING, 1))).toBeGreaterThan(0.03)
  })

  it('the renewal counts every output token once', () => {
    // α = 1 everywhere: PEARL at γ commits 1 token (pre-verify), then γ per post-verify round after it.
    const sure = parallelRenewal(64, { gamma: 4, preVerify: true, maxTokens: 64 }, () => 1, () => 1)
    expect(sure.rounds).toBe(1 + Math.ceil(63 / 4))
    // α = 0: every round is a pre-verify that commits the correction.
    expect(parallelRenewal(64, { gamma: 4, preVerify: true, maxTokens: 64 }, () => 0, () => 1).rounds).toBe(64)
    // sd.parallel at α = 0: a window drafted alone, rejected at once.
    expect(parallelRenewal(64, { gamma: 4, preVerify: false, maxTokens: 64 }, () => 0, () => 1).rounds).toBe(64)
  })

  it('one state for the chain’s tail changes nothing where the tail’s positions share one α', () => {
    const alpha = (c: number) => (c <= 3 ? rateAt(FALLING, c) : 0.75)
    const cost = (shape: { alone: number; beside: number; positions: number }) => shape.alone * 2 + Math.max(shape.beside * 2, verifyMs(shape.positions))
    const window = { gamma: 5, preVerify: true, maxTokens: 64 }
    const open = parallelRenewal(64, window, alpha, cost)
    const merged = parallelRenewal(64, window, alpha, cost, { tailFrom: 4 })
    expect(merged.rounds).toBeCloseTo(open.rounds, 9)
    expect(merged.ms).toBeCloseTo(open.ms, 9)
    expect(merged.tested).toBeCloseTo(open.tested, 9)
  })
})

describe('whatIfForRun on a PEARL run', () => {
  const report = reportOf([arMethod(50), pearl(4)], 4)
  const source = report.sources.find((s) => s.method === 'pearl')!
  const at = (gamma: number) => source.predictions.find((p) => p.gamma === gamma)!

  it('is a parallel source priced from its own rounds; c_T(k) comes from ar alone', () => {
    expect(source.drafter).toBe('parallel')
    expect(report.targetCost.map((p) => [p.k, p.ms])).toEqual([[1, 9]])
    expect(source.predictions.map((p) => p.label)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((g) => `pearl γ = ${g}`))
    expect(source.predictions.every((p) => p.method === 'pearl' && p.kind === 'fixed')).toBe(true)
  })

  it('recovers the costs the rounds were timed with', () => {
    expect(source.draftMsPerToken).toBeCloseTo(DRAFT_MS, 6)
    expect(source.roundOverheadMs).toBeCloseTo(ROUND_MS, 6)
    for (const point of source.verifyBeside!) expect(point.ms).toBeCloseTo(verifyMs(point.k), 6)
  })

  it('prices the run’s own window back to its measured tokens/s and tokens per round', () => {
    const own = source.predictions.filter((p) => p.own)
    expect(own.map((p) => p.label)).toEqual(['pearl γ = 4'])
    expect(Math.abs(own[0]!.tokensPerSecond / source.measured.tokensPerSecond - 1)).toBeLessThan(0.02)
    expect(Math.abs(own[0]!.tokensPerRound / source.measured.tokensPerRound - 1)).toBeLessThan(0.02)
    expect(own[0]!.speedup! / source.measured.speedup!).toBeCloseTo(own[0]!.tokensPerSecond / source.measured.tokensPerSecond, 10)
  })

  it('prices other windows as runs at those windows measure them', () => {
    for (const gamma of [2, 3]) {
      const truth = reportOf([arMethod(50), pearl(gamma, 300, 11 + gamma)], gamma).sources[0]!.measured
      expect(Math.abs(at(gamma).tokensPerSecond / truth.tokensPerSecond - 1), `γ ${gamma}`).toBeLessThan(0.03)
      expect(Math.abs(at(gamma).tokensPerRound / truth.tokensPerRound - 1), `γ ${gamma}`).toBeLessThan(0.03)
      expect(at(gamma).supported).toBe(true)
    }
  })

  it('says when a window verifies more positions than any recorded verification', () => {
    const narrow = reportOf([arMethod(50), pearl(2)], 2).sources[0]!
    const row = (gamma: number) => narrow.predictions.find((p) => p.gamma === gamma)!
    expect(row(2)).toMatchObject({ own: true, supported: true, reason: null })
    expect(row(4).supported).toBe(false)
    // PEARL's verification scores the waiting drafts (at most γ − 1) and the committed token: γ positions at most.
    expect(row(4).reason).toMatch(/verifies more than 2 positions at once/)
  })

  it('a run of PEARL without ar still gets its rows (tokens/s, no speedups)', () => {
    const alone = reportOf([pearl(4, 100)], 4)
    expect(alone.targetCost).toEqual([])
    expect(alone.sources[0]!.predictions.every((p) => p.speedup === null && p.tokensPerSecond > 0)).toBe(true)
  })

  it('show --what-if prints the parallel source with its verification beside the draft', () => {
    const text = formatWhatIf(report)
    expect(text).toMatch(/pearl \(parallel, \d+ rounds/)
    expect(text).toMatch(/verification beside the draft: c‖_T\(1\) 10\.00 ms/)
    expect(text).toMatch(/pearl γ = 4 \(this run\)/)
  })
})

describe('whatIfForRun on sd with the parallel option', () => {
  const run = parallelMethod('sd', 3, false, FALLING, 300, 5)
  const source = reportOf([arMethod(50), run], 3, { 'sd.parallel': true }).sources[0]!

  it('prices sd.parallel windows, its own back to what it measured', () => {
    expect(source.drafter).toBe('parallel')
    const own = source.predictions.find((p) => p.own)!
    expect(own).toMatchObject({ label: 'sd parallel γ = 3', method: 'sd', gamma: 3, params: { 'sd.parallel': true } })
    expect(Math.abs(own.tokensPerSecond / source.measured.tokensPerSecond - 1)).toBeLessThan(0.02)
  })

  it('and another window as a run at it measures it', () => {
    const truth = reportOf([arMethod(50), parallelMethod('sd', 2, false, FALLING, 300, 21)], 2, { 'sd.parallel': true }).sources[0]!.measured
    const row = source.predictions.find((p) => p.gamma === 2)!
    expect(Math.abs(row.tokensPerSecond / truth.tokensPerSecond - 1)).toBeLessThan(0.03)
  })
})
