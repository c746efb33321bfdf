/**
 * Greedy replay on toy models (replay/replay.ts): toy models evaluate every context exactly, whatever the batch, so a
 * replayed run must make EXACTLY the real run's decisions — round by round the same stage, draft length proposed,
 * tokens accepted, tokens emitted, draft calls and decision. Negative controls: a trace whose draft is shifted by one
 * position, and one recorded with a too-short rollout, must not pass.
 */
import { describe, expect, it } from 'vitest'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { decodeOnce } from '../../electron/engine/methods/decode-once'
import { prepare } from '../../electron/engine/methods/prepare'
import { recordTrace } from '../../electron/engine/replay/record'
import { replayGreedy, type Candidate } from '../../electron/engine/replay/replay'
import { TraceGapError } from '../../electron/engine/replay/trace-models'
import type { Trace } from '../../electron/engine/replay/trace'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { NEVER, TOY_VOCABULARY, toyDraftClose, toyTarget } from '../helpers/toy-models'

const GREEDY: WarpConfig = { temperature: 0, topK: 0, topP: 1 }
const SEED = 7
const MAX_TOKENS = 40

export const CANDIDATES: Candidate[] = [
  { method: 'sd', gamma: 3, params: {}, draft: 'd' },
  { method: 'sd', gamma: 5, params: {}, draft: 'd' },
  { method: 'sd-pmin', gamma: 5, params: { 'pmin.p': 0.5, 'pmin.max': 8 }, draft: 'd' },
  { method: 'svip', gamma: 5, params: { 'svip.h': 0.45, 'svip.maxDraft': 8 }, draft: 'd' },
  { method: 'svip', gamma: 5, params: { 'svip.h': 0.4, 'svip.maxDraft': 8, 'svip.warpedEntropy': true }, draft: 'd' },
  { method: 'pld', gamma: 4, params: {}, draft: null },
  { method: 'ngram-simple', gamma: 4, params: { 'ngramsimple.n': 2, 'ngramsimple.m': 5 }, draft: null },
  { method: 'ngram-simple', gamma: 4, params: {}, draft: null },
  { method: 'sd+ngram', gamma: 4, params: { 'sdngram.n': 3 }, draft: 'd' },
  { method: 'sd-heuristic', gamma: 2, params: { 'heuristic.maxDraft': 8 }, draft: 'd' }
]

/** What a round decided: the comparison key. */
export function roundKey(step: StepRecord) {
  return { stage: step.stage, proposed: step.proposed, accepted: step.accepted, emitted: step.emitted, draftCalls: step.draftCalls, source: step.decision?.source ?? null }
}

async function realRounds(target: ToyModel, draft: ToyModel, trace: Trace, candidate: Candidate): Promise<StepRecord[][]> {
  const run = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).newRun()
  const out: StepRecord[][] = []
  for (const [index, prompt] of trace.prompts.entries()) {
    const steps: StepRecord[] = []
    await decodeOnce({
      decoder: run(),
      models: candidate.draft ? { target, draft } : { target },
      promptTokens: prompt.promptTokens,
      maxTokens: trace.maxTokens,
      warp: trace.warp,
      seed: SEED,
      stream: index,
      onEvent: (e) => e.type === 'step' && steps.push(e.record)
    })
    out.push(steps)
  }
  return out
}

const PROMPTS = [
  [0, 1, 2, 3],
  [0, 4, 4, 2, 5, 1],
  [0, 3]
]

async function toyTrace(target: ToyModel, draft: ToyModel, rolloutLength = 7, prompts = PROMPTS): Promise<Trace> {
  return recordTrace(target, { d: draft }, prompts, { warp: GREEDY, seed: SEED, maxTokens: MAX_TOKENS, batch: 5, rolloutLength, fullEntropy: true })
}

describe('greedy replay on toy models = the real run, round by round', () => {
  it.each(CANDIDATES.map((c) => [`${c.method} γ=${c.gamma} ${JSON.stringify(c.params)}`, c] as const))('%s', async (_, candidate) => {
    const target = toyTarget()
    const draft = toyDraftClose()
    const trace = await toyTrace(target, draft)
    const real = await realRounds(target, draft, trace, candidate)
    const replayed = await replayGreedy(trace, candidate)
    for (const [i, prompt] of replayed.entries()) {
      expect(prompt.tokens).toEqual(trace.prompts[i].tokens)
      expect(prompt.steps.map(roundKey)).toEqual(real[i].map(roundKey))
    }
    // The comparison means something: drafts are proposed, and some (not all) are accepted.
    const steps = replayed.flatMap((p) => p.steps)
    const proposed = steps.reduce((n, s) => n + s.proposed, 0)
    const accepted = steps.reduce((n, s) => n + s.accepted, 0)
    if (candidate.method !== 'ngram-simple' || candidate.params['ngramsimple.n']) expect(proposed).toBeGreaterThan(0)
    expect(accepted).toBeLessThanOrEqual(proposed)
  })

  it('an end-of-generation token ends trace, drafts and replay alike', async () => {
    // EOS becomes the target's greedy choice after 12 tokens of context, the draft's after 10 (its drafts stop there).
    const eosAfter = (length: number, base: ToyModel) => (context: readonly number[]) => {
      const logits = [...base.distribution(context, { temperature: 1, topK: 0, topP: 1 }).ids].map(() => 0)
      const d = base.distribution(context, { temperature: 1, topK: 0, topP: 1 })
      d.ids.forEach((id, k) => (logits[id] = Math.log(d.probs[k])))
      return [NEVER, context.length >= length ? 5 : NEVER, ...logits.slice(2)]
    }
    const target = new ToyModel({ name: 'eos-t', vocabulary: TOY_VOCABULARY, eos: 1, logits: eosAfter(12, toyTarget()) })
    const draft = new ToyModel({ name: 'eos-d', vocabulary: TOY_VOCABULARY, eos: 1, logits: eosAfter(10, toyDraftClose()) })
    const prompts = [[0, 2], [0, 3, 4], [0, 4]]
    const trace = await toyTrace(target, draft, 7, prompts)
    expect(trace.prompts.some((p) => p.stopReason === 'eos')).toBe(true)
    for (const candidate of [CANDIDATES[1], CANDIDATES[2], CANDIDATES[3]]) {
      const real = await realRounds(target, draft, trace, candidate)
      const replayed = await replayGreedy(trace, candidate)
      replayed.forEach((p, i) => expect(p.steps.map(roundKey)).toEqual(real[i].map(roundKey)))
      expect(replayed.every((p, i) => p.tokens.length === trace.prompts[i].tokens.length)).toBe(true)
    }
  })

  it('negative control: a draft trace shifted by one position replays other rounds', async () => {
    const target = toyTarget()
    const draft = toyDraftClose()
    const trace = await toyTrace(target, draft)
    const candidate = CANDIDATES[1]
    const real = await realRounds(target, draft, trace, candidate)
    for (const prompt of trace.prompts) {
      const d = prompt.drafts.d
      d.points = [...d.points.slice(1), d.points[d.points.length - 1]]
      d.rollouts = [...d.rollouts.slice(1), []]
    }
    let same = true
    try {
      const replayed = await replayGreedy(trace, candidate)
      same = replayed.every((p, i) => JSON.stringify(p.steps.map(roundKey)) === JSON.stringify(real[i].map(roundKey)))
    } catch (error) {
      expect(error).toBeInstanceOf(TraceGapError)
      same = false
    }
    expect(same).toBe(false)
  })

  it('a rollout shorter than a policy drafts is a TraceGapError, not a guess', async () => {
    const trace = await toyTrace(toyTarget(), toyDraftClose(), 1)
    await expect(replayGreedy(trace, { method: 'sd', gamma: 5, params: {}, draft: 'd' })).rejects.toBeInstanceOf(TraceGapError)
  })
})
