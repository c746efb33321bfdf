/**
 * Decoder behaviour on toy models: the event stream's shape, stopping rules (max-tokens, EOS, cancellation),
 * draft-length clipping, the policy seam, step-record counters and session hygiene.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { speculativeDecoder } from '../../electron/engine/decoders/speculative'
import type {
  DecodeEvent,
  Decoder,
  DecoderModels,
  Provenance,
  StepRecord
} from '../../electron/engine/decoders/types'
import type { LanguageModel, ModelSession } from '../../electron/engine/model/types'
import type { ToyModel } from '../../electron/engine/model/toy-model'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import type { DraftLengthPolicy, DraftedToken, VerificationOutcome } from '../../electron/engine/policies/types'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { decode, GREEDY, makeRequest, PLAIN, splitEvents, type DecodeResult } from '../helpers/decode'
import { EOS_TOKEN, eosDraft, eosTarget, TOY_BOS, TOY_VOCABULARY, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const sd = (gamma: number): Decoder => speculativeDecoder(fixedLengthPolicy(gamma))

function toyPair(): { target: ToyModel; draft: ToyModel } {
  return { target: toyTarget(), draft: toyDraftClose() }
}

/**
 * Checks the invariants every speculative event stream obeys and returns the token events grouped by step.
 * Per round: token events (draft* then one resampled|bonus, possibly cut by a stopping rule), then its step event.
 */
function checkSpeculativeStream(result: DecodeResult): Provenance[][] {
  const { events } = result
  expect(events.at(-1)?.type).toBe('done')
  expect(events.filter((e) => e.type === 'done')).toHaveLength(1)
  const groups: Provenance[][] = []
  let current: { token: number; provenance: Provenance; step: number }[] = []
  for (const event of events) {
    if (event.type === 'token') current.push(event)
    else if (event.type === 'step') {
      const record = event.record
      const index = groups.length
      expect(record.index).toBe(index)
      for (const token of current) expect(token.step).toBe(index)
      const provenances = current.map((t) => t.provenance)
      checkRound(record, provenances)
      groups.push(provenances)
      current = []
    }
  }
  // No token after the last step event.
  expect(current).toHaveLength(0)
  return groups
}

function checkRound(record: StepRecord, provenances: Provenance[]): void {
  expect(record.emitted).toBe(provenances.length)
  expect(record.emitted).toBeGreaterThanOrEqual(1)
  expect(record.targetCalls).toBe(1)
  if (record.stage === 'target-only') {
    expect(provenances).toEqual(['target'])
    expect(record.proposed).toBe(0)
    return
  }
  expect(record.stage).toBe('sd')
  expect(record.proposed).toBeGreaterThanOrEqual(1)
  expect(record.accepted).toBeLessThanOrEqual(record.proposed)
  expect(record.resampled).toBe(!record.bonus)
  expect(record.bonus).toBe(record.accepted === record.proposed)
  // draft…draft then one closing token, all in this order.
  const drafts = provenances.filter((p) => p === 'draft').length
  expect(provenances.slice(0, drafts).every((p) => p === 'draft')).toBe(true)
  const closing = provenances.slice(drafts)
  expect(closing.length).toBeLessThanOrEqual(1)
  if (closing.length === 1) {
    expect(drafts).toBe(record.accepted)
    expect(closing[0]).toBe(record.resampled ? 'resampled' : 'bonus')
  } else expect(drafts).toBeLessThanOrEqual(record.accepted)
  expect(record.acceptedDraftTokens).toBe(drafts)
  expect(record.acceptedDraftTokens).toBeLessThanOrEqual(record.emitted)
  expect(record.emitted).toBeLessThanOrEqual(record.proposed + 1)
  // Fixed policy: one draft call per drafted token.
  expect(record.draftTokens).toBe(record.proposed)
  expect(record.draftCalls).toBe(record.draftTokens)
  expect(record.draftEntropies).toHaveLength(record.draftTokens)
  for (const h of record.draftEntropies) {
    expect(h).toBeGreaterThanOrEqual(0)
    expect(h).toBeLessThanOrEqual(Math.log(TOY_VOCABULARY.length) + 1e-12)
  }
}

describe('event stream shape', () => {
  it('sd: draft*/resampled|bonus token events, one step event per round, one final done', async () => {
    const { target, draft } = toyPair()
    const seen = new Set<Provenance>()
    for (let seed = 0; seed < 30; seed++) {
      const result = await decode(sd(3), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 12, rng: createPrng(seed) }))
      const groups = checkSpeculativeStream(result)
      expect(result.stopReason).toBe('max-tokens')
      expect(result.tokens).toHaveLength(12)
      expect(groups.flat()).toEqual(result.provenances)
      for (const p of result.provenances) seen.add(p)
    }
    // Every speculative provenance occurred (and never 'target' or 'mid' with a fixed γ ≥ 1 and budget left).
    expect([...seen].sort()).toEqual(['bonus', 'draft', 'resampled'])
  })

  it('greedy sd: corrections are the target argmax, tokens carry the same provenances', async () => {
    const { target, draft } = toyPair()
    const result = await decode(sd(4), { target, draft }, makeRequest({ promptTokens: [TOY_BOS, 2], maxTokens: 30, warp: GREEDY }))
    checkSpeculativeStream(result)
    const context = [TOY_BOS, 2]
    result.tokens.forEach((token, i) => {
      const p = target.distribution([...context, ...result.tokens.slice(0, i)], GREEDY)
      expect(token).toBe(p.ids[0])
    })
    expect(result.provenances).toContain('resampled')
    expect(result.provenances).toContain('draft')
  })

  it('ar: one target token per step, stage ar', async () => {
    const { target } = toyPair()
    const result = await decode(autoregressive, { target }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 7 }))
    expect(result.events.map((e) => e.type)).toEqual([...Array(7).fill(['token', 'step']).flat(), 'done'])
    expect(result.provenances).toEqual(Array(7).fill('target'))
    result.steps.forEach((record, i) => {
      expect(record).toMatchObject({ index: i, stage: 'ar', proposed: 0, accepted: 0, emitted: 1, targetCalls: 1, draftCalls: 0, draftTokens: 0 })
    })
    expect(result.stopReason).toBe('max-tokens')
  })

  it('is reproducible from the seed', async () => {
    const { target, draft } = toyPair()
    const run = (seed: number) =>
      decode(sd(3), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 40, rng: createPrng(seed, 2) }))
    const a = await run(5)
    expect((await run(5)).tokens).toEqual(a.tokens)
    expect((await run(6)).tokens).not.toEqual(a.tokens)
  })

  it('sd without a draft model is an error', async () => {
    const { target } = toyPair()
    await expect(decode(sd(2), { target }, makeRequest({ promptTokens: [TOY_BOS] }))).rejects.toThrow(/draft model/)
  })
})

describe('max-tokens', () => {
  it('never emits more than maxTokens; acceptedDraftTokens never exceeds emitted; γ is clipped to the budget', async () => {
    const { target, draft } = toyPair()
    for (const gamma of [1, 4, 8]) {
      for (let maxTokens = 1; maxTokens <= 9; maxTokens++) {
        for (let seed = 0; seed < 6; seed++) {
          const result = await decode(sd(gamma), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens, rng: createPrng(seed, maxTokens) }))
          checkSpeculativeStream(result)
          // No EOS in this vocabulary: exactly the budget.
          expect(result.tokens).toHaveLength(maxTokens)
          expect(result.stopReason).toBe('max-tokens')
          let produced = 0
          for (const record of result.steps) {
            expect(record.proposed).toBeLessThanOrEqual(Math.min(gamma, maxTokens - produced))
            // Fixed policy, no EOS: drafting stops only at γ or at the budget.
            expect(record.proposed).toBe(Math.min(gamma, maxTokens - produced))
            produced += record.emitted
          }
          expect(produced).toBe(maxTokens)
        }
      }
    }
  })

  it('γ larger than the whole budget: one round drafts exactly maxTokens tokens', async () => {
    const { target, draft } = toyPair()
    const result = await decode(sd(10), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 3, warp: GREEDY }))
    expect(result.steps[0].proposed).toBe(3)
    expect(result.steps[0].draftCalls).toBe(3)
    expect(result.tokens).toHaveLength(3)
  })

  it('ar stops at maxTokens too', async () => {
    const { target } = toyPair()
    for (const maxTokens of [1, 2, 5]) {
      const result = await decode(autoregressive, { target }, makeRequest({ promptTokens: [TOY_BOS], maxTokens }))
      expect(result.tokens).toHaveLength(maxTokens)
      expect(result.steps).toHaveLength(maxTokens)
    }
  })
})

describe('end of generation', () => {
  const decoders: [string, Decoder][] = [
    ['ar', autoregressive],
    ['sd γ=1', sd(1)],
    ['sd γ=4', sd(4)]
  ]

  it.each(decoders)('%s stops at EOS with stopReason eos and nothing after it', async (_name, decoder) => {
    const target = eosTarget()
    const draft = eosDraft()
    let draftedEos = 0
    for (let seed = 0; seed < 60; seed++) {
      const result = await decode(decoder, { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 200, rng: createPrng(seed, 7) }))
      expect(result.stopReason).toBe('eos')
      expect(result.tokens.at(-1)).toBe(EOS_TOKEN)
      expect(result.tokens.indexOf(EOS_TOKEN)).toBe(result.tokens.length - 1)
      expect(result.tokens.length).toBeLessThan(200)
      expect(result.steps.reduce((n, s) => n + s.emitted, 0)).toBe(result.tokens.length)
      if (decoder !== autoregressive) {
        checkSpeculativeStream(result)
        if (result.provenances.at(-1) === 'draft') draftedEos += 1
      }
    }
    // The draft's own EOS got accepted sometimes (drafting stops there: nothing after it can be kept).
    if (decoder !== autoregressive) expect(draftedEos).toBeGreaterThan(0)
  })

  it('EOS on the last budgeted token reports eos, not max-tokens', async () => {
    // eos logit 5 makes EOS the argmax from the second position on: output [x, EOS].
    const target = eosTarget(5)
    const draft = eosDraft()
    for (const decoder of [autoregressive, sd(1), sd(3)]) {
      const result = await decode(decoder, { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 2, warp: GREEDY }))
      expect(result.tokens).toHaveLength(2)
      expect(result.tokens[1]).toBe(EOS_TOKEN)
      expect(result.stopReason).toBe('eos')
    }
  })
})

/** Counts open sessions, to prove decoders dispose what they create whatever way they end. */
function tracked(model: ToyModel): { model: LanguageModel; open: () => number } {
  let open = 0
  // Everything but createSession is inherited from the toy model itself.
  const wrapper: LanguageModel = Object.create(model)
  wrapper.createSession = async (warp: WarpConfig): Promise<ModelSession> => {
    const session = await model.createSession(warp)
    open += 1
    return {
      get tokens() {
        return session.tokens
      },
      append: (tokens, from) => session.append(tokens, from),
      truncate: (length) => session.truncate(length),
      dispose: async () => {
        open -= 1
        await session.dispose()
      }
    }
  }
  return { model: wrapper, open: () => open }
}

describe('cancellation', () => {
  const decoders: [string, Decoder][] = [
    ['ar', autoregressive],
    ['sd', sd(3)]
  ]

  it.each(decoders)('%s: aborting after the first step ends with cancelled and no further tokens', async (_name, decoder) => {
    const target = tracked(toyTarget())
    const draft = tracked(toyDraft())
    const controller = new AbortController()
    const events: DecodeEvent[] = []
    for await (const event of decoder(
      { target: target.model, draft: draft.model },
      makeRequest({ promptTokens: [TOY_BOS], maxTokens: 50, signal: controller.signal })
    )) {
      events.push(event)
      if (event.type === 'step') controller.abort()
    }
    const result = splitEvents(events)
    expect(result.steps).toHaveLength(1)
    const firstStep = events.findIndex((e) => e.type === 'step')
    expect(events.slice(firstStep + 1)).toEqual([{ type: 'done', stopReason: 'cancelled' }])
    expect(result.tokens.length).toBe(result.steps[0].emitted)
    expect(target.open() + draft.open()).toBe(0)
  })

  it.each(decoders)('%s: an already-aborted signal produces no tokens', async (_name, decoder) => {
    const controller = new AbortController()
    controller.abort()
    const result = await decode(
      decoder,
      { target: toyTarget(), draft: toyDraft() },
      makeRequest({ promptTokens: [TOY_BOS], signal: controller.signal })
    )
    expect(result.events).toEqual([{ type: 'done', stopReason: 'cancelled' }])
  })

  it.each(decoders)('%s: sessions are disposed after completion and when the consumer stops early', async (_name, decoder) => {
    const target = tracked(toyTarget())
    const draft = tracked(toyDraft())
    const models: DecoderModels = { target: target.model, draft: draft.model }
    await decode(decoder, models, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 10 }))
    expect(target.open() + draft.open()).toBe(0)
    for await (const event of decoder(models, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 10 }))) {
      if (event.type === 'token') break
    }
    expect(target.open() + draft.open()).toBe(0)
  })
})

describe('step-record counters', () => {
  it('sd: one target call per round, draftCalls = drafted tokens, matching the models’ real forward calls', async () => {
    const { target, draft } = toyPair()
    for (const gamma of [1, 3, 6]) {
      for (const warp of [PLAIN, GREEDY]) {
        target.calls = 0
        draft.calls = 0
        const result = await decode(sd(gamma), { target, draft }, makeRequest({ promptTokens: [TOY_BOS, 3, 1], maxTokens: 25, warp }))
        const steps = result.steps
        expect(steps.every((s) => s.targetCalls === 1)).toBe(true)
        expect(target.calls).toBe(steps.length)
        expect(draft.calls).toBe(steps.reduce((n, s) => n + s.draftCalls, 0))
        expect(draft.calls).toBe(steps.reduce((n, s) => n + s.draftTokens, 0))
        for (const s of steps) {
          expect(s.draftMs).toBeGreaterThanOrEqual(0)
          expect(s.verifyMs).toBeGreaterThanOrEqual(0)
          expect(s.totalMs).toBeGreaterThanOrEqual(s.draftMs + s.verifyMs - 1e-6)
        }
      }
    }
  })

  it('ar: one target call per token', async () => {
    const { target } = toyPair()
    target.calls = 0
    const result = await decode(autoregressive, { target }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 9 }))
    expect(target.calls).toBe(9)
    expect(result.steps.reduce((n, s) => n + s.targetCalls, 0)).toBe(9)
  })
})

describe('draft-length policy seam', () => {
  /** Records what the decoder tells it; drafts `length()` tokens, stops after `stopAt` tokens. */
  function recordingPolicy(length: () => number, stopAt = Infinity) {
    const drafted: DraftedToken[] = []
    const outcomes: VerificationOutcome[] = []
    const prompts: number[][] = []
    const policy: DraftLengthPolicy = {
      id: 'recording',
      startPrompt: (tokens) => void prompts.push([...tokens]),
      draftLength: length,
      shouldStop: (token) => {
        drafted.push(token)
        return token.position >= stopAt
      },
      update: (outcome) => outcomes.push(outcome),
      explain: () => ({ threshold: 0.5, decision: { rule: 'test' } })
    }
    return { policy, drafted, outcomes, prompts }
  }

  it('shouldStop ends a draft early; update receives each verdict; explain lands in the step record', async () => {
    const { target, draft } = toyPair()
    const { policy, drafted, outcomes } = recordingPolicy(() => 5, 2)
    const result = await decode(speculativeDecoder(policy), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 20 }))
    checkSpeculativeStream(result)
    const rounds = result.steps
    expect(rounds.every((s) => s.proposed <= 2)).toBe(true)
    expect(outcomes).toHaveLength(rounds.length)
    outcomes.forEach((outcome, i) => {
      expect(outcome.proposed).toBe(rounds[i].proposed)
      expect(outcome.accepted).toBe(rounds[i].accepted)
      expect(outcome.draftEntropies).toEqual(rounds[i].draftEntropies)
    })
    expect(drafted.map((d) => d.position)).toEqual(rounds.flatMap((s) => Array.from({ length: s.proposed }, (_, i) => i + 1)))
    for (const d of drafted) expect(d.distribution.ids).toContain(d.token)
    expect(rounds[0].threshold).toBe(0.5)
    expect(rounds[0].decision).toEqual({ rule: 'test' })
  })

  it('draftLength 0 makes a target-only round', async () => {
    const { target, draft } = toyPair()
    let round = 0
    // Alternate γ = 0 and γ = 2.
    const { policy, outcomes, prompts } = recordingPolicy(() => (round++ % 2 === 0 ? 0 : 2))
    draft.calls = 0
    const result = await decode(speculativeDecoder(policy), { target, draft }, makeRequest({ promptTokens: [TOY_BOS, 4], maxTokens: 12 }))
    const groups = checkSpeculativeStream(result)
    expect(result.steps[0].stage).toBe('target-only')
    expect(groups[0]).toEqual(['target'])
    expect(result.steps[1].stage).toBe('sd')
    expect(result.steps.filter((s) => s.stage === 'target-only').length).toBeGreaterThanOrEqual(3)
    expect(draft.calls).toBe(result.steps.reduce((n, s) => n + s.draftCalls, 0))
    // The policy hears every round, target-only ones included (proposed 0), and its explanation is recorded.
    expect(prompts).toEqual([[TOY_BOS, 4]])
    expect(outcomes.map((o) => o.proposed)).toEqual(result.steps.map((s) => s.proposed))
    expect(outcomes.flatMap((o) => o.emittedTokens)).toEqual(result.tokens)
    expect(result.steps[0].threshold).toBe(0.5)
  })
})
