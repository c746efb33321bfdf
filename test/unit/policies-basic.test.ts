/**
 * The four draft-length policies (heuristic, p-min, SVIP, self-verify) on scripted drafts and verdicts: the exact γ sequences and stop
 * positions their rules imply, what explain() records, per-prompt vs per-run state, and parameter validation.
 * The last block drives them through the real speculative loop on toy models and re-derives each recorded
 * decision from the step records.
 */
import { describe, expect, it } from 'vitest'
import { findMethod, prepare } from '../../electron/engine/methods/prepare'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { UserInputError } from '../../electron/engine/errors'
import { methodInfos } from '../../electron/engine/methods/docs'
import { heuristicPolicy } from '../../electron/engine/policies/heuristic'
import { pMinPolicy } from '../../electron/engine/policies/p-min'
import { selfVerifyPolicy } from '../../electron/engine/policies/self-verify'
import { svipPolicy } from '../../electron/engine/policies/svip'
import type { DraftLengthPolicy, DraftStop, PolicyExplanation } from '../../electron/engine/policies/types'
import type { LanguageModel, ModelSession, SessionOptions } from '../../electron/engine/model/types'
import { entropy, fromWeights } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

/** What the drafter sees for one scripted token: its draft entropy and the draft's top-1 probability. */
interface Scripted {
  entropy?: number
  top1?: number
}

interface Round {
  /** draftLength() at the start of the round. */
  cap: number
  proposed: number
  explanation: PolicyExplanation
}

/**
 * One round of the speculative loop (decoders/speculative.ts) with scripted drafts: draftLength(), then
 * shouldStop after each token until it says stop, the cap, the remaining budget `limit` or an end-of-generation
 * token at position `eosAt` ends the draft; then update() with `accepted` and explain().
 */
function round(
  policy: DraftLengthPolicy,
  tokens: readonly Scripted[],
  accepted: number | ((proposed: number) => number),
  options: { limit?: number; eosAt?: number } = {}
): Round {
  const cap = policy.draftLength()
  const limit = Math.min(cap, options.limit ?? Infinity)
  const entropies: number[] = []
  let stoppedBy: DraftStop = null
  for (let position = 1; ; position++) {
    const script = tokens[Math.min(position, tokens.length) - 1] ?? {}
    const top1 = script.top1 ?? 0.9
    const entropy = script.entropy ?? 0.1
    entropies.push(entropy)
    const distribution = fromWeights([7, 8], [top1, 1 - top1])
    const stop = policy.shouldStop({ position, token: 7, distribution, entropy })
    // Why drafting stopped, in the speculative decoder's order (decoders/speculative.ts).
    stoppedBy = stop ? 'policy' : position >= cap ? 'cap' : position >= limit || position === options.eosAt ? 'engine' : null
    if (stoppedBy !== null) break
  }
  const proposed = entropies.length
  const a = typeof accepted === 'function' ? accepted(proposed) : accepted
  policy.update({
    stoppedBy,
    proposed,
    accepted: a,
    draftEntropies: entropies,
    draftTokens: entropies.map(() => 7),
    emittedTokens: entropies.slice(0, a + 1).map(() => 7),
    draftMs: 1,
    verifyMs: 1
  })
  return { cap, proposed, explanation: policy.explain() }
}

const all = (proposed: number) => proposed
const none = () => 0
const flat = (n: number, script: Scripted): Scripted[] => Array.from({ length: n }, () => script)

describe('sd-heuristic (HF update_candidate_strategy)', () => {
  it('accept-all, reject, reject from γ = 5: rounds of 5, 7, 6, then 5', () => {
    const policy = heuristicPolicy({ initialGamma: 5, transient: false })
    policy.startPrompt?.([1])
    const r1 = round(policy, [], all)
    const r2 = round(policy, [], 3)
    const r3 = round(policy, [], 0)
    expect([r1, r2, r3].map((r) => r.cap)).toEqual([5, 7, 6])
    expect([r1, r2, r3].map((r) => r.proposed)).toEqual([5, 7, 6])
    expect(policy.gamma).toBe(5)
    expect(policy.draftLength()).toBe(5)
    expect(r1.explanation).toEqual({
      threshold: null,
      decision: { gamma: 5, proposed: 5, accepted: 5, rule: '+2', next: 7, reason: 'cap', transient: false }
    })
    expect(r2.explanation.decision).toMatchObject({ gamma: 7, accepted: 3, rule: '-1', next: 6 })
    expect(r3.explanation.decision).toMatchObject({ gamma: 6, accepted: 0, rule: '-1', next: 5 })
  })

  it('never goes below 1, and "all accepted" means all PROPOSED (a draft cut by EOS or the budget counts)', () => {
    const policy = heuristicPolicy({ initialGamma: 2, transient: false })
    expect([round(policy, [], none), round(policy, [], none), round(policy, [], none)].map((r) => r.cap)).toEqual([2, 1, 1])
    expect(policy.gamma).toBe(1)
    const long = heuristicPolicy({ initialGamma: 5, transient: false })
    const cut = round(long, [], all, { eosAt: 3 })
    expect(cut.proposed).toBe(3)
    expect(cut.explanation.decision).toMatchObject({ gamma: 5, proposed: 3, rule: '+2', next: 7, reason: 'eos' })
    const budget = round(long, [], 1, { limit: 2 })
    expect(budget.explanation.decision).toMatchObject({ gamma: 7, proposed: 2, rule: '-1', next: 6, reason: 'eos' })
  })

  it('persistent (HF "heuristic") carries γ into the next prompt; transient resets it at startPrompt', () => {
    for (const transient of [false, true]) {
      const policy = heuristicPolicy({ initialGamma: 4, transient })
      policy.startPrompt?.([1, 2])
      round(policy, [], all) // 4 → 6
      round(policy, [], all) // 6 → 8
      expect(policy.gamma).toBe(8)
      policy.startPrompt?.([1, 3])
      expect(policy.draftLength()).toBe(transient ? 4 : 8)
    }
  })

  it('through the registry: one forRun, two prompts (toy models, greedy)', async () => {
    const target = toyTarget()
    const draft = toyDraftClose()
    const firstCaps = async (params: Record<string, boolean>): Promise<[StepRecord[], StepRecord[]]> => {
      const factory = prepare('sd-heuristic', { gamma: 3, params }).newRun()
      const a = await decode(factory(), { target, draft }, makeRequest({ promptTokens: [TOY_BOS, 1], maxTokens: 20, warp: GREEDY }))
      const b = await decode(factory(), { target, draft }, makeRequest({ promptTokens: [TOY_BOS, 2], maxTokens: 20, warp: GREEDY }))
      return [a.steps, b.steps]
    }
    for (const transient of [false, true]) {
      const [a, b] = await firstCaps(transient ? { 'heuristic.transient': true } : {})
      // Within a prompt each round's cap is the previous round's `next`.
      for (const steps of [a, b]) {
        expect(steps[0].decision?.transient).toBe(transient)
        for (let i = 1; i < steps.length; i++) expect(steps[i].decision?.gamma).toBe(steps[i - 1].decision?.next)
        for (const s of steps) {
          expect(s.proposed).toBeLessThanOrEqual(s.decision?.gamma as number)
          expect(s.decision?.rule).toBe(s.accepted === s.proposed ? '+2' : '-1')
        }
      }
      expect(a[0].decision?.gamma).toBe(3)
      const carried = a.at(-1)!.decision?.next
      expect(b[0].decision?.gamma).toBe(transient ? 3 : carried)
      if (!transient) expect(carried).not.toBe(3) // the carry-over is observable
    }
  })
})

describe('sd-pmin (llama.cpp p_min / n_min / n_max)', () => {
  it('stops after the first token whose draft top-1 probability is below p_min', () => {
    const policy = pMinPolicy({ p: 0.75, min: 0, max: 16 })
    const r = round(policy, [{ top1: 0.9 }, { top1: 0.8 }, { top1: 0.7 }, { top1: 0.95 }], 1)
    expect(r.cap).toBe(16)
    expect(r.proposed).toBe(3)
    expect(r.explanation.threshold).toBe(0.75)
    expect(r.explanation.decision).toMatchObject({ gamma: 16, stop: 3, reason: 'threshold', min: 0 })
    expect(r.explanation.decision?.confidence).toBeCloseTo(0.7, 12)
    // Exactly p_min is not below it.
    expect(round(policy, [{ top1: 0.75 }, { top1: 0.5 }], 0).proposed).toBe(2)
  })

  it('never stops before n_min tokens, and caps at n_max', () => {
    const low = flat(20, { top1: 0.3 })
    expect(round(pMinPolicy({ p: 0.75, min: 0, max: 16 }), low, 0).proposed).toBe(1)
    expect(round(pMinPolicy({ p: 0.75, min: 1, max: 16 }), low, 0).proposed).toBe(1)
    expect(round(pMinPolicy({ p: 0.75, min: 3, max: 16 }), low, 0).proposed).toBe(3)
    // With n_min = 2 a confident start, then a low one at 4.
    const r = round(pMinPolicy({ p: 0.75, min: 2, max: 16 }), [{ top1: 0.9 }, { top1: 0.9 }, { top1: 0.9 }, { top1: 0.6 }], 2)
    expect(r.proposed).toBe(4)
    const capped = round(pMinPolicy({ p: 0.75, min: 0, max: 4 }), flat(20, { top1: 0.99 }), all)
    expect(capped.proposed).toBe(4)
    expect(capped.explanation.decision).toMatchObject({ gamma: 4, stop: 4, reason: 'cap', confidence: 0.99 })
    const eos = round(pMinPolicy({ p: 0.75, min: 0, max: 4 }), flat(20, { top1: 0.99 }), all, { eosAt: 2 })
    expect(eos.explanation.decision).toMatchObject({ stop: 2, reason: 'eos' })
  })
})

describe('sd-heuristic with a cap (heuristic.maxDraft; SVIP §3.1 caps its heuristics baseline at 40)', () => {
  it('+2 saturates at the cap, −1 still applies below it, and a starting γ above the cap starts at the cap', () => {
    const policy = heuristicPolicy({ initialGamma: 37, transient: false, maxDraft: 40 })
    const caps = [round(policy, [], all), round(policy, [], all), round(policy, [], all), round(policy, [], 3), round(policy, [], all)]
    expect(caps.map((r) => r.cap)).toEqual([37, 39, 40, 40, 39])
    expect(caps.map((r) => r.proposed)).toEqual([37, 39, 40, 40, 39])
    expect(policy.gamma).toBe(40)
    expect(heuristicPolicy({ initialGamma: 50, transient: true, maxDraft: 40 }).draftLength()).toBe(40)
    const transient = heuristicPolicy({ initialGamma: 50, transient: true, maxDraft: 40 })
    round(transient, [], 0)
    transient.startPrompt?.([1])
    expect(transient.draftLength()).toBe(40)
    // 0 = no cap (HF).
    const free = heuristicPolicy({ initialGamma: 39, transient: false, maxDraft: 0 })
    expect([round(free, [], all), round(free, [], all)].map((r) => r.cap)).toEqual([39, 41])
  })

  it('through the registry: heuristic.maxDraft bounds every round of a real decode (toy models)', async () => {
    const target = toyTarget()
    const draft = toyDraftClose()
    const caps = async (params: Record<string, number>) => {
      const run = prepare('sd-heuristic', { gamma: 2, params }).newRun()
      const steps: StepRecord[] = []
      for (const [i, promptTokens] of [[TOY_BOS, 1], [TOY_BOS, 2], [TOY_BOS, 3, 4]].entries())
        steps.push(...(await decode(run(), { target, draft }, makeRequest({ promptTokens, maxTokens: 40, warp: GREEDY, rng: createPrng(3, i) }))).steps)
      return steps.map((s) => s.decision?.gamma as number)
    }
    const uncapped = await caps({})
    const capped = await caps({ 'heuristic.maxDraft': 3 })
    expect(Math.max(...uncapped)).toBeGreaterThan(3)
    expect(Math.max(...capped)).toBe(3)
  })
})

describe('svip (SVIP Algorithm 1)', () => {
  it('with c = 1 (Algorithm 1 as printed): stops exactly when √H first exceeds h', () => {
    const policy = svipPolicy({ h: 0.5, c: 1, maxDraft: 40 })
    // √H = 0.1, 0.4, 0.5 (not above h: strict), 0.5001 → stop at 4.
    const r = round(policy, [{ entropy: 0.01 }, { entropy: 0.16 }, { entropy: 0.25 }, { entropy: 0.2501 }, { entropy: 0.01 }], 2)
    expect(r.proposed).toBe(4)
    expect(r.explanation.threshold).toBe(0.5)
    expect(r.explanation.decision).toMatchObject({ gamma: 40, stop: 4, reason: 'threshold', c: 1 })
    expect(r.explanation.decision?.sqrtEntropy).toBeCloseTo(Math.sqrt(0.2501), 12)
    expect(r.explanation.decision?.statistic).toBeCloseTo(Math.sqrt(0.2501), 12)
    // A high-entropy first token stops at once.
    expect(round(policy, [{ entropy: 1 }], 0).proposed).toBe(1)
  })

  it('defaults h = 0.3, c = 0.15, T_max = 40: √(0.15·H) > 0.3 ⇔ H > 0.6 nats; the cap ends low-entropy drafts', () => {
    expect(prepare('svip', { gamma: 5, params: {} }).params).toEqual({ 'svip.parallel': false, 'svip.h': 0.3, 'svip.c': 0.15, 'svip.maxDraft': 40, 'svip.warpedEntropy': false })
    const policy = svipPolicy({ h: 0.3, c: 0.15, maxDraft: 40 })
    expect(round(policy, [{ entropy: 0.59 }, { entropy: 0.599 }, { entropy: 0.601 }], 2).proposed).toBe(3)
    const capped = round(policy, flat(50, { entropy: 0.5 }), all)
    expect(capped.proposed).toBe(40)
    expect(capped.explanation.decision).toMatchObject({ gamma: 40, stop: 40, reason: 'cap' })
    expect(capped.explanation.decision?.sqrtEntropy).toBeCloseTo(Math.sqrt(0.5), 12)
    expect(capped.explanation.decision?.statistic).toBeCloseTo(Math.sqrt(0.075), 12)
    const small = round(svipPolicy({ h: 0.3, c: 0.15, maxDraft: 3 }), flat(10, { entropy: 0.1 }), all)
    expect(small.proposed).toBe(3)
  })
})

describe('self-verify (HSDDW Appendix C Algorithm 1)', () => {
  it('τ = 0 before any rejection: one-token drafts (H > 0), but a zero-entropy token does not stop', () => {
    const policy = selfVerifyPolicy({ maxDraft: 10 })
    policy.startPrompt?.([1])
    const r1 = round(policy, flat(10, { entropy: 0.4 }), all)
    expect(r1.proposed).toBe(1)
    expect(r1.explanation.threshold).toBe(0)
    expect(r1.explanation.decision).toMatchObject({ gamma: 10, stop: 1, reason: 'threshold', rejected: null, rejections: 0, next: 0 })
    // Accepted: still no rejection, τ stays 0.
    expect(round(policy, flat(10, { entropy: 0.4 }), all).proposed).toBe(1)
    expect(round(policy, [{ entropy: 0 }, { entropy: 0 }, { entropy: 0.2 }], all).proposed).toBe(3)
    expect(policy.tau).toBe(0)
  })

  it('τ is the mean entropy of the REJECTED tokens (draftEntropies[accepted]), not of the last accepted one', () => {
    const policy = selfVerifyPolicy({ maxDraft: 10 })
    policy.startPrompt?.([1])
    // Round 1: τ = 0, one token (H 0.8), rejected → S_reject = {0.8}.
    const r1 = round(policy, [{ entropy: 0.8 }], 0)
    expect(r1.explanation.decision).toMatchObject({ stop: 1, rejected: 0.8, rejections: 1, next: 0.8 })
    expect(policy.tau).toBeCloseTo(0.8, 12)
    // Round 2: τ = 0.8; H = 0.3, 0.5, 0.9 → stops at 3; the verifier accepts 1: token 2 (H 0.5) is the rejected one.
    const r2 = round(policy, [{ entropy: 0.3 }, { entropy: 0.5 }, { entropy: 0.9 }], 1)
    expect(r2.proposed).toBe(3)
    expect(r2.explanation.threshold).toBeCloseTo(0.8, 12) // τ in force while drafting
    expect(r2.explanation.decision).toMatchObject({ stop: 3, entropy: 0.9, reason: 'threshold', rejected: 0.5, rejections: 2 })
    expect(policy.tau).toBeCloseTo((0.8 + 0.5) / 2, 12) // line 25 as printed (H(q_n), n = 1) would give (0.8 + 0.3) / 2
    // Round 3: τ = 0.65; all accepted → unchanged; the cap K ends a confident draft.
    const r3 = round(policy, flat(20, { entropy: 0.6 }), all)
    expect(r3.proposed).toBe(10)
    expect(r3.explanation.threshold).toBeCloseTo(0.65, 12)
    expect(r3.explanation.decision).toMatchObject({ gamma: 10, stop: 10, reason: 'cap', rejected: null, rejections: 2 })
    // Round 4: first token rejected (H 1.1) → τ = (0.8 + 0.5 + 1.1) / 3.
    round(policy, [{ entropy: 1.1 }], 0)
    expect(policy.tau).toBeCloseTo(0.8, 12)
    // H exactly τ does not stop (strict >).
    const r5 = round(policy, [{ entropy: 0.8 }, { entropy: 0.8 }, { entropy: 0.81 }], all)
    expect(r5.proposed).toBe(3)
  })

  it('τ is per prompt ("in the current sentence"): startPrompt resets it to 0', () => {
    const policy = selfVerifyPolicy({ maxDraft: 10 })
    policy.startPrompt?.([1])
    round(policy, [{ entropy: 1.2 }], 0)
    expect(policy.tau).toBeCloseTo(1.2, 12)
    policy.startPrompt?.([1, 2])
    expect(policy.tau).toBe(0)
    expect(round(policy, flat(10, { entropy: 0.5 }), all).explanation.threshold).toBe(0)
  })
})

describe('parameters: defaults and validation (UserInputError naming the --set key)', () => {
  const fails = (fn: () => unknown, key: string) => {
    let error: unknown
    try {
      fn()
    } catch (e) {
      error = e
    }
    expect(error, key).toBeInstanceOf(UserInputError)
    expect((error as Error).message).toContain(key)
  }

  const resolved = (id: string, params: Record<string, number | string | boolean>) => prepare(id, { gamma: 5, params }).params

  it('defaults (resolved by the catalog)', () => {
    expect(resolved('sd-heuristic', {})).toEqual({ 'heuristic.parallel': false, 'heuristic.transient': false, 'heuristic.maxDraft': 0 })
    expect(resolved('sd-heuristic', { 'heuristic.transient': true, 'heuristic.maxDraft': 40 })).toEqual({
      'heuristic.parallel': false,
      'heuristic.transient': true,
      'heuristic.maxDraft': 40
    })
    expect(resolved('sd-pmin', {})).toEqual({ 'pmin.parallel': false, 'pmin.p': 0.75, 'pmin.min': 0, 'pmin.max': 16 })
    expect(resolved('self-verify', {})).toEqual({ 'selfverify.parallel': false, 'selfverify.maxDraft': 10, 'selfverify.warpedEntropy': false })
    expect(resolved('svip', { 'svip.h': 0.4, 'svip.maxDraft': 12 })).toEqual({
      'svip.parallel': false,
      'svip.h': 0.4,
      'svip.c': 0.15,
      'svip.maxDraft': 12,
      'svip.warpedEntropy': false
    })
    // A key of another method is refused: it would otherwise be recorded as a setting that never applied.
    fails(() => resolved('sd-pmin', { 'svip.h': 0.3 }), 'svip.h')
    fails(() => resolved('sd-pmin', { gamma: 5 }), 'gamma')
  })

  it.each([
    ['sd-heuristic', { 'heuristic.transient': 'yes' }, 'heuristic.transient'],
    ['sd-heuristic', { 'heuristic.transient': 1 }, 'heuristic.transient'],
    ['sd-heuristic', { 'heuristic.persistent': true }, 'heuristic.persistent'],
    ['sd-heuristic', { 'heuristic.maxDraft': -1 }, 'heuristic.maxDraft'],
    ['sd-heuristic', { 'heuristic.maxDraft': 2.5 }, 'heuristic.maxDraft'],
    ['sd-pmin', { 'pmin.p': 1.5 }, 'pmin.p'],
    ['sd-pmin', { 'pmin.p': 'high' }, 'pmin.p'],
    ['sd-pmin', { 'pmin.min': 1.5 }, 'pmin.min'],
    ['sd-pmin', { 'pmin.max': 0 }, 'pmin.max'],
    ['sd-pmin', { 'pmin.min': 5, 'pmin.max': 3 }, 'pmin.min'],
    ['svip', { 'svip.h': -0.1 }, 'svip.h'],
    ['svip', { 'svip.h': true }, 'svip.h'],
    ['svip', { 'svip.c': 0 }, 'svip.c'],
    ['svip', { 'svip.maxDraft': 2.5 }, 'svip.maxDraft'],
    ['svip', { 'svip.hh': 0.3 }, 'svip.hh'],
    ['svip', { 'svip.warpedEntropy': 1 }, 'svip.warpedEntropy'],
    ['self-verify', { 'selfverify.warpedEntropy': 'yes' }, 'selfverify.warpedEntropy'],
    ['self-verify', { 'selfverify.maxDraft': 0 }, 'selfverify.maxDraft'],
    ['self-verify', { 'selfverify.tau': 0.5 }, 'selfverify.tau']
  ] as const)('%s with %o throws naming %s', (id, params, key) => {
    fails(() => prepare(id, { gamma: 5, params }).newRun(), key)
  })

  it('all four are in the catalog, need a draft model and document their parameters with defaults', () => {
    const expectations: [string, string[]][] = [
      ['sd-heuristic', ['heuristic.parallel=false', 'heuristic.transient=false', 'heuristic.maxDraft=0']],
      ['sd-pmin', ['pmin.parallel=false', 'pmin.p=0.75', 'pmin.min=0', 'pmin.max=16']],
      ['svip', ['svip.parallel=false', 'svip.h=0.3', 'svip.c=0.15', 'svip.maxDraft=40', 'svip.warpedEntropy=false']],
      ['self-verify', ['selfverify.parallel=false', 'selfverify.maxDraft=10', 'selfverify.warpedEntropy=false']]
    ]
    for (const [id, documented] of expectations) {
      const info = methodInfos().find((m) => m.id === id)
      expect(info, id).toBeDefined()
      expect(info!.needs).toEqual({ draft: true, mid: false })
      expect(info!.params.map((p) => `${p.key}=${String(p.defaultValue)}`)).toEqual(documented)
    }
    expect(findMethod('svip')!.description).toContain('public code scales')
  })
})

describe('through the speculative loop (toy models): the step records re-derive each decision', () => {
  const target = toyTarget()
  const draft = toyDraft()
  const warps: [string, WarpConfig][] = [
    ['T=1', PLAIN],
    ['greedy', GREEDY]
  ]
  const prompts = [[TOY_BOS], [TOY_BOS, 3, 1], [TOY_BOS, 2, 5, 4]]

  async function run(id: string, params: Record<string, number>, warp: WarpConfig): Promise<StepRecord[][]> {
    const factory = prepare(id, { gamma: 5, params }).newRun()
    const out: StepRecord[][] = []
    for (const [i, promptTokens] of prompts.entries())
      out.push((await decode(factory(), { target, draft }, makeRequest({ promptTokens, maxTokens: 40, warp, rng: createPrng(7, i) }))).steps)
    return out
  }

  it.each(warps)('self-verify, %s: threshold = mean of the earlier rejected tokens’ entropies in the prompt', async (_, warp) => {
    let rejections = 0
    for (const steps of await run('self-verify', { 'selfverify.maxDraft': 6 }, warp)) {
      const rejected: number[] = []
      for (const step of steps) {
        const tau = rejected.length ? rejected.reduce((a, b) => a + b, 0) / rejected.length : 0
        expect(step.threshold).toBeCloseTo(tau, 12)
        const h = step.draftEntropies
        // Every token before the stop had H ≤ τ; the stop token is above τ unless the cap or the end ended it.
        for (const e of h.slice(0, -1)) expect(e).toBeLessThanOrEqual(tau)
        const reason = step.decision?.reason
        expect(reason).toBe(h.at(-1)! > tau ? 'threshold' : h.length === 6 ? 'cap' : 'eos')
        expect(step.decision?.entropy).toBe(h.at(-1))
        if (step.accepted < step.proposed) {
          rejected.push(h[step.accepted])
          rejections += 1
          expect(step.decision?.rejected).toBe(h[step.accepted])
        } else expect(step.decision?.rejected).toBeNull()
      }
    }
    expect(rejections).toBeGreaterThan(5)
  })

  it.each(warps)('svip, %s: every token before the stop has √(cH) ≤ h, the stop token > h (or the cap)', async (_, warp) => {
    const params = { 'svip.h': 1.19, 'svip.c': 1, 'svip.maxDraft': 6 }
    const reasons = new Map<string, number>()
    for (const steps of await run('svip', params, warp))
      for (const step of steps) {
        const h = step.draftEntropies
        expect(step.threshold).toBe(1.19)
        for (const e of h.slice(0, -1)) expect(Math.sqrt(e)).toBeLessThanOrEqual(1.19)
        const reason = String(step.decision?.reason)
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
        expect(reason).toBe(Math.sqrt(h.at(-1)!) > 1.19 ? 'threshold' : h.length === 6 ? 'cap' : 'eos')
        expect(step.decision?.sqrtEntropy).toBeCloseTo(Math.sqrt(h.at(-1)!), 12)
      }
    expect(reasons.get('threshold')).toBeGreaterThan(3)
    expect([...reasons.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(reasons.get('threshold')!)
  })

  it.each(warps)('sd-pmin, %s: stop reasons and lengths are consistent with p_min, n_min, n_max', async (_, warp) => {
    const params = { 'pmin.p': 0.4, 'pmin.min': 2, 'pmin.max': 5 }
    const lengths = new Set<number>()
    for (const steps of await run('sd-pmin', params, warp))
      for (const step of steps) {
        lengths.add(step.proposed)
        expect(step.threshold).toBe(0.4)
        const d = step.decision!
        if (d.reason === 'threshold') {
          expect(d.confidence as number).toBeLessThan(0.4)
          expect(step.proposed).toBeGreaterThanOrEqual(2)
        } else if (d.reason === 'cap') expect(step.proposed).toBe(5)
        else expect(step.proposed).toBeLessThan(5)
      }
    expect(lengths.size).toBeGreaterThan(2)
  })
})

describe('which entropy svip and self-verify threshold: the draft’s whole-vocabulary softmax at T = 1', () => {
  // Temperature 0.7 and top-2 of 5 real tokens: the warped H is at most ln 2, the full one is not truncated.
  const WARP: WarpConfig = { temperature: 0.7, topK: 2, topP: 1 }
  const prompts = [[TOY_BOS], [TOY_BOS, 3, 1], [TOY_BOS, 2, 5, 4]]

  /** The toy draft, recording each session's options and, per returned distribution, both entropies and its context. */
  function recordingDraft() {
    const model = toyDraft()
    const options: SessionOptions[] = []
    const drafted: { full: number | undefined; warped: number; context: number[] }[] = []
    const wrapper: LanguageModel = Object.create(model)
    wrapper.createSession = async (warp: WarpConfig, sessionOptions?: SessionOptions): Promise<ModelSession> => {
      options.push({ ...sessionOptions })
      const session = await model.createSession(warp, sessionOptions)
      return {
        get tokens() {
          return session.tokens
        },
        append: async (tokens, from) => {
          const out = await session.append(tokens, from)
          // The speculative loop asks for one distribution per draft call: the one after the whole cache.
          for (const d of out) drafted.push({ full: d.fullEntropy, warped: entropy(d), context: [...session.tokens] })
          return out
        },
        truncate: (length) => session.truncate(length),
        dispose: () => session.dispose()
      }
    }
    return { model, wrapper, options, drafted }
  }

  async function run(id: string, params: Record<string, number | boolean>) {
    const draft = recordingDraft()
    const factory = prepare(id, { gamma: 5, params }).newRun()
    const steps: StepRecord[] = []
    for (const [i, promptTokens] of prompts.entries())
      steps.push(
        ...(await decode(factory(), { target: toyTarget(), draft: draft.wrapper }, makeRequest({ promptTokens, maxTokens: 30, warp: WARP, rng: createPrng(11, i) })))
          .steps
      )
    return { ...draft, steps }
  }

  it.each([
    ['svip', 'svip.warpedEntropy'],
    ['self-verify', 'selfverify.warpedEntropy']
  ])('%s: by default the policy sees (and the steps record) H of the raw softmax; %s=true the warped H', async (id, flag) => {
    const full = await run(id, {})
    expect(full.options.length).toBeGreaterThan(0)
    expect(full.options.every((o) => o.fullEntropy === true)).toBe(true)
    // Independently: H of the toy draft's whole-vocabulary T = 1 distribution after the same context.
    for (const d of full.drafted) expect(d.full).toBeCloseTo(entropy(full.model.distribution(d.context, PLAIN)), 12)
    expect(full.steps.flatMap((s) => s.draftEntropies)).toEqual(full.drafted.map((d) => d.full))
    expect(full.steps.every((s) => s.decision?.entropySource === 'full')).toBe(true)
    // The two entropies really differ here, so the comparison above tells them apart.
    expect(full.drafted.filter((d) => d.full! - d.warped > 0.3).length).toBeGreaterThan(full.drafted.length / 2)

    const warped = await run(id, { [flag]: true })
    expect(warped.options.every((o) => !o.fullEntropy)).toBe(true)
    expect(warped.drafted.every((d) => d.full === undefined)).toBe(true)
    expect(warped.steps.flatMap((s) => s.draftEntropies)).toEqual(warped.drafted.map((d) => d.warped))
    expect(warped.steps.every((s) => s.decision?.entropySource === 'warped')).toBe(true)
  })

  it('svip at the same h drafts longer with the (truncated, lower) warped entropy than with the full one', async () => {
    // c = 1, h = 0.9: stop after H > 0.81 nats — never for the top-2 warped H (≤ ln 2), nearly always for the full H.
    const params = { 'svip.c': 1, 'svip.h': 0.9, 'svip.maxDraft': 6 }
    const mean = (steps: StepRecord[]) => steps.reduce((n, s) => n + s.proposed, 0) / steps.length
    const full = (await run('svip', params)).steps
    const warped = (await run('svip', { ...params, 'svip.warpedEntropy': true })).steps
    console.log(`svip c = 1, h = 0.9 on the toy pair, T = 0.7 top-2: mean draft ${mean(full).toFixed(2)} (full H) vs ${mean(warped).toFixed(2)} (warped H)`)
    expect(warped.every((s) => s.decision?.reason !== 'threshold')).toBe(true)
    expect(full.filter((s) => s.decision?.reason === 'threshold').length).toBeGreaterThan(full.length / 2)
    expect(mean(warped)).toBeGreaterThan(mean(full) + 1)
  })

  it('other policies keep the cheap transfer: sd and sd-pmin never ask for the full-vocabulary entropy', async () => {
    for (const id of ['sd', 'sd-pmin']) {
      const { options, steps } = await run(id, {})
      expect(steps.length).toBeGreaterThan(0)
      expect(options.every((o) => !o.fullEntropy), id).toBe(true)
    }
  })

  it('a draft model that does not deliver fullEntropy is an error, not a silent fallback to the warped H', async () => {
    const model = toyDraft()
    const careless: LanguageModel = Object.create(model)
    careless.createSession = (warp: WarpConfig) => model.createSession(warp)
    const decoder = prepare('svip', { gamma: 5, params: {} }).newRun()()
    await expect(decode(decoder, { target: toyTarget(), draft: careless }, makeRequest({ promptTokens: [TOY_BOS], warp: WARP }))).rejects.toThrow(
      /no full-vocabulary entropy/
    )
  })
})
