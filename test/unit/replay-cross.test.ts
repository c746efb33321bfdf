/**
 * The advisor's candidates for a draft of ANOTHER vocabulary (replay/replay.ts with a live draft, replay/record.ts,
 * replay/round-acceptance.ts, replay/foreign-text.ts) on the toy tokenisations of test/helpers/toy-tokenizers.ts
 * (a SentencePiece-style and a byte-level vocabulary of one alphabet): the trace marks such a draft foreign and
 * records no teacher-forced points for it; sd-tli and sd-uad replayed with the live draft beside the recorded target
 * make EXACTLY the real run's rounds (toy models evaluate every context exactly), in both directions; the profile's
 * acceptance per position is read from those rounds; the draft's contexts for its costs spell the target's text.
 * Negative controls: another draft's rounds are not the replay's; an id-comparing method or a missing live draft is
 * refused rather than replayed; the acceptance count on rounds that reject at once reads 0, not 1.
 */
import { describe, expect, it } from 'vitest'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { decodeOnce } from '../../electron/engine/methods/decode-once'
import { prepare } from '../../electron/engine/methods/prepare'
import { bytesOfTokens, vocabularyBytes } from '../../electron/engine/model/vocabulary-bytes'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { replayCandidate, roundAcceptanceByDraft } from '../../electron/engine/replay/advise'
import { candidateGrid, rolloutLengthFor } from '../../electron/engine/replay/candidates'
import { draftSequenceOf } from '../../electron/engine/replay/foreign-text'
import { workloadProfile } from '../../electron/engine/replay/profile'
import { recordTrace } from '../../electron/engine/replay/record'
import { replayGreedy, type Candidate } from '../../electron/engine/replay/replay'
import { acceptanceOfRounds } from '../../electron/engine/replay/round-acceptance'
import type { Trace } from '../../electron/engine/replay/trace'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { NEVER, TOY_BOS } from '../helpers/toy-models'
import { byteLevelVocabulary, crossVocabularyPair, sentencePieceVocabulary } from '../helpers/toy-tokenizers'

const GREEDY: WarpConfig = { temperature: 0, topK: 0, topP: 1 }
const SEED = 11
const MAX_TOKENS = 24
const TEXTS = ['a b', 'ab c', 'c', 'b a ca']

const CROSS: Candidate[] = [
  { method: 'sd-tli', gamma: 1, params: {}, draft: 'd' },
  { method: 'sd-tli', gamma: 4, params: {}, draft: 'd' },
  { method: 'sd-uad', gamma: 2, params: {}, draft: 'd' },
  { method: 'sd-uad', gamma: 4, params: { 'uad.heal': false }, draft: 'd' }
]

const promptsOf = (target: ToyModel) => TEXTS.map((text) => [TOY_BOS, ...target.tokenize(text)])

async function crossTrace(target: ToyModel, draft: ToyModel, warp = GREEDY): Promise<Trace> {
  return recordTrace(target, { d: draft }, promptsOf(target), { warp, seed: SEED, maxTokens: MAX_TOKENS, batch: 4, rolloutLength: rolloutLengthFor(CROSS), fullEntropy: false })
}

/** The candidate decoded for real on the live models, round by round. */
async function realRounds(target: ToyModel, draft: ToyModel, trace: Trace, candidate: Candidate): Promise<StepRecord[][]> {
  const run = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).newRun()
  const out: StepRecord[][] = []
  for (const [index, prompt] of trace.prompts.entries()) {
    const steps: StepRecord[] = []
    await decodeOnce({
      decoder: run(),
      models: { target, draft },
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

/** What a round decided: the comparison key (as test/unit/replay-greedy.test.ts compares rounds). */
const roundKey = (step: StepRecord) => ({ stage: step.stage, proposed: step.proposed, accepted: step.accepted, emitted: step.emitted, draftCalls: step.draftCalls })

const sameRounds = (a: StepRecord[][], b: StepRecord[][]) => JSON.stringify(a.map((p) => p.map(roundKey))) === JSON.stringify(b.map((p) => p.map(roundKey)))

describe.each(['byte-level', 'sentencepiece'] as const)('a %s draft for the other tokenisation', (draftSide) => {
  it('is traced as foreign, without teacher-forced points', async () => {
    const { target, draft } = crossVocabularyPair(draftSide)
    const trace = await crossTrace(target, draft)
    expect(trace.drafts.d.foreign).toBe(true)
    expect(trace.prompts.every((p) => p.drafts.d === undefined && p.tokens.length > 0)).toBe(true)
  })

  it.each(CROSS.map((c) => [`${c.method} γ=${c.gamma} ${JSON.stringify(c.params)}`, c] as const))('%s replays the real rounds exactly', async (_, candidate) => {
    const { target, draft } = crossVocabularyPair(draftSide)
    const trace = await crossTrace(target, draft)
    const real = await realRounds(target, draft, trace, candidate)
    const replayed = await replayGreedy(trace, candidate, { target, drafts: { d: draft } })
    replayed.forEach((p, i) => expect(p.tokens).toEqual(trace.prompts[i].tokens))
    expect(replayed.map((p) => p.steps.map(roundKey))).toEqual(real.map((p) => p.map(roundKey)))
    // The comparison means something: proposals are made, some accepted and some not.
    const steps = replayed.flatMap((p) => p.steps)
    const proposed = steps.reduce((n, s) => n + s.proposed, 0)
    const accepted = steps.reduce((n, s) => n + s.accepted, 0)
    expect(proposed).toBeGreaterThan(0)
    expect(accepted).toBeGreaterThan(0)
    expect(accepted).toBeLessThan(proposed)
  })

  it('negative control: another draft (other perturbation) makes other rounds than the replay', async () => {
    const { target, draft } = crossVocabularyPair(draftSide)
    // Same tokenizer, other scores: it prefers the next id in turn.
    const vocabulary = draftSide === 'byte-level' ? byteLevelVocabulary() : sentencePieceVocabulary()
    const shifted = new ToyModel({
      name: 'toy-other-draft',
      vocabulary: vocabulary.texts,
      logits: (context) => vocabulary.texts.map((_, id) => (vocabulary.kinds[id] === 'control' ? NEVER : id === 1 + (context.length % (vocabulary.texts.length - 1)) ? 2 : 0)),
      tokenizerModel: vocabulary.tokenizerModel,
      tokenKinds: vocabulary.kinds,
      tokenize: vocabulary.tokenize
    })
    const trace = await crossTrace(target, draft)
    const real = await realRounds(target, draft, trace, CROSS[1])
    const wrong = await replayGreedy(trace, CROSS[1], { target, drafts: { d: shifted } })
    expect(sameRounds(wrong.map((p) => p.steps), real)).toBe(false)
  })
})

describe('what the advisor reads for a foreign draft', () => {
  it('the grid gives a foreign draft only sd-tli and sd-uad, and they read no rollout', () => {
    const grid = candidateGrid(['same', 'other'], new Set(['other']))
    expect(new Set(grid.filter((c) => c.draft === 'other').map((c) => c.method))).toEqual(new Set(['sd-tli', 'sd-uad']))
    expect(grid.filter((c) => c.draft === 'same').some((c) => c.method === 'sd-tli' || c.method === 'sd-uad')).toBe(false)
    expect(rolloutLengthFor(grid.filter((c) => c.draft !== 'same'))).toBe(0)
  })

  it('an id-comparing method, a missing live draft and a sampled trace are refused, not replayed', async () => {
    const { target, draft } = crossVocabularyPair('byte-level')
    const trace = await crossTrace(target, draft)
    const live = { target, drafts: { d: draft } }
    await expect(replayGreedy(trace, { method: 'sd', gamma: 3, params: {}, draft: 'd' }, live)).rejects.toThrow(/compares token ids/)
    await expect(replayGreedy(trace, CROSS[0])).rejects.toThrow(/live draft/)
    const sampled = await crossTrace(target, draft, { temperature: 0.8, topK: 0, topP: 1 })
    const verdict = await replayCandidate(sampled, CROSS[0], live)
    expect(verdict.summary).toBeNull()
    expect(verdict.error).toMatch(/greedy decoding only/)
  })

  it("the profile's acceptance per position comes from the sd-tli rounds", async () => {
    const { target, draft } = crossVocabularyPair('byte-level')
    const trace = await crossTrace(target, draft)
    const live = { target, drafts: { d: draft } }
    const replayed = await Promise.all(CROSS.map((c) => replayCandidate(trace, c, live)))
    const steps = (await replayGreedy(trace, CROSS[1], live)).flatMap((p) => p.steps)
    const byDraft = roundAcceptanceByDraft(replayed)
    expect(byDraft.d).toEqual(acceptanceOfRounds(steps, 8)) // sd-tli with the longest draft
    const profile = workloadProfile(trace, { targetMs: [1, 1.2], drafts: { d: { ms: 0.1 } } }, 8, byDraft)
    expect(profile.drafts.d.acceptanceFrom).toBe('rounds')
    expect(profile.drafts.d.acceptance).toEqual(byDraft.d)
    expect(profile.drafts.d.acceptance[0]).toBeGreaterThan(0)
  })

  it('acceptance per position on constructed rounds', () => {
    // Rounds (proposed, accepted): position 1 is proposed by all four and accepted by three; position 2 is reached by
    // the rounds that proposed ≥ 2 AND accepted position 1 (three), accepted by one; position 3 by that one alone.
    const rounds = [
      { proposed: 3, accepted: 3 },
      { proposed: 3, accepted: 1 },
      { proposed: 2, accepted: 1 },
      { proposed: 3, accepted: 0 }
    ]
    expect(acceptanceOfRounds(rounds, 4)).toEqual([3 / 4, 1 / 3, 1, null])
    // Negative control: rounds that reject at once never reach position 2, and position 1 reads 0 (not 1).
    expect(acceptanceOfRounds([{ proposed: 4, accepted: 0 }, { proposed: 1, accepted: 0 }], 2)).toEqual([0, null])
    expect(acceptanceOfRounds([], 2)).toEqual([null, null])
  })

  it("the draft's contexts for its costs spell the target's text in its own tokens", () => {
    const { target, draft } = crossVocabularyPair('byte-level')
    const prompt = [TOY_BOS, ...target.tokenize('ab c')]
    const output = target.tokenize('a b ca').slice(1) // the SentencePiece space prefix is the prompt's
    const { sequence, promptLength } = draftSequenceOf(target, draft, prompt, output)
    const targetText = bytesOfTokens(vocabularyBytes(target), [...prompt, ...output])
    expect(bytesOfTokens(vocabularyBytes(draft), sequence)).toBe(targetText)
    expect(bytesOfTokens(vocabularyBytes(draft), sequence.slice(0, promptLength))).toBe(bytesOfTokens(vocabularyBytes(target), prompt))
    expect(sequence.every((id) => id >= 0 && id < draft.info.vocabularySize)).toBe(true)
    expect(sequence).not.toEqual([...prompt, ...output]) // other ids than the target's
  })
})
