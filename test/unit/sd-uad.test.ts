/**
 * sd-uad (string-level drafting with another tokenizer: Hugging Face's Universal Assisted Generation, Timor et al.'s
 * SLEM, verified by llama-server's sample-then-match) on toy models with two tokenisations of one alphabet
 * (test/helpers/toy-tokenizers.ts: a SentencePiece-style one with a space prefix and byte tokens, a byte-level BPE
 * one): exact re-tokenisation with look-behind and junction splitting, the draft's view of the text, losslessness by
 * chi-square against the target's exact warped law in both directions with a negative control (a verifier that
 * keeps a proposal whenever p(x) > 0 must fail), greedy equality with `ar`, and the catalog entry.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import {
  continueText,
  DraftText,
  restrictToPrefix,
  sampleThenMatch,
  sdUadDecoder,
  spellGreedily,
  textTokenizer,
  tokenizeExact,
  type MatchVerifier
} from '../../electron/engine/decoders/sd-uad'
import type { DecoderModels } from '../../electron/engine/decoders/types'
import { crossVocabularyMethods, findMethod, prepare, prepareRun } from '../../electron/engine/methods/prepare'
import { textKept } from '../../electron/engine/metrics/fold'
import { ToyModel } from '../../electron/engine/model/toy-model'
import { binaryOf, bytesOfTokens } from '../../electron/engine/model/vocabulary-bytes'
import { argmax, probabilityOf, sample } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS } from '../helpers/toy-models'
import { crossVocabularyPair, SPM_TEXTS } from '../helpers/toy-tokenizers'

const SAMPLES = 20_000
const SEED = 20250206
const P_MIN = 0.001

describe('re-tokenising text exactly (tokenizeExact, continueText)', () => {
  const { target: spm, draft: bpe } = crossVocabularyPair('byte-level')
  const spmTk = textTokenizer(spm)
  const bpeTk = textTokenizer(bpe)
  const spell = (tk: typeof spmTk, ids: readonly number[]) => bytesOfTokens(tk.vocabulary, ids)

  it("undoes a SentencePiece tokenizer's space prefix and spells any text of the alphabet", () => {
    expect(spmTk.addsSpace).toBe(true)
    expect(bpeTk.addsSpace).toBe(false)
    for (const text of ['ab', ' ab', 'c a', ' ', '  b', 'cab ca', 'b c ']) {
      for (const tk of [spmTk, bpeTk]) {
        const ids = tokenizeExact(tk, text)
        expect(ids, `${tk.model.info.name} ${JSON.stringify(text)}`).not.toBeNull()
        expect(spell(tk, ids!)).toBe(text)
        expect(spell(tk, spellGreedily(tk, text)!)).toBe(text)
      }
    }
    expect(tokenizeExact(spmTk, ' ab')).toEqual(spm.tokenize('ab')) // the tokenizer's own space, not an extra one
  })

  it('proposes only what follows the committed tokens, splitting a token that spans the junction', () => {
    const id = (text: string) => (SPM_TEXTS as readonly string[]).indexOf(text)
    // Committed " ca" as ▁ c a; the drafted "b" makes the tokenizer write "ab" across the junction: "b" alone follows.
    const committed = [TOY_BOS, id('▁'), id('c'), id('a')]
    const spanning = continueText(spmTk, committed, 'b', 10)
    expect(spanning.junction).toBe(true)
    expect(spanning.tokens).toEqual([id('b')])
    // No junction: the look-behind window's split after the committed text.
    const plain = continueText(spmTk, [TOY_BOS, id('▁a'), id('b')], ' c ab', 10)
    expect(plain.junction).toBe(false)
    expect(spell(spmTk, plain.tokens)).toBe(' c ab')
    expect(plain.window).toBe(2)
    // Nothing committed yet: the text alone.
    expect(spell(spmTk, continueText(spmTk, [TOY_BOS], 'ab c', 10).tokens)).toBe('ab c')
    expect(continueText(spmTk, committed, '', 10).tokens).toEqual([])
  })

  it("keeps the draft's view spelling the committed text, kept draft tokens included (DraftText)", () => {
    for (const [tk, rewrite] of [
      [bpeTk, true],
      [bpeTk, false],
      [spmTk, true]
    ] as const) {
      const view = new DraftText(tk, 3, ' ab', rewrite)
      const rng = createPrng(5, 0)
      const alphabet = ['a', 'b', 'c', ' ']
      for (let round = 0; round < 200; round++) {
        const added = Array.from({ length: 1 + Math.floor(rng.next() * 4) }, () => alphabet[Math.floor(rng.next() * 4)]).join('')
        // Draft tokens that spell the start of the added text (or something else), as a draft round would leave them.
        const drafted = rng.next() < 0.5 ? tokenizeExact(tk, added.slice(0, 2))! : tokenizeExact(tk, 'cc')!
        view.commit(added, drafted)
        expect(spell(tk, view.tokens)).toBe(view.text)
        expect(view.covered).toBe(view.text.length)
      }
      expect(view.retokenised).toBeGreaterThan(0)
    }
  })

  it('never hands a tokenizer without byte tokens a character it cannot spell (llama.cpp would abort)', () => {
    const asked: string[] = []
    const noBytes = new ToyModel({
      name: 'toy-no-bytes',
      vocabulary: ['<s>', 'a', 'b', ' ', 'ab'],
      logits: () => [0, 0, 0, 0, 0],
      tokenizerModel: 'llama',
      tokenize: (text) => {
        asked.push(text)
        return [...text].map((ch) => ['<s>', 'a', 'b', ' '].indexOf(ch))
      }
    })
    const tk = textTokenizer(noBytes)
    expect(tk.everyByte).toBe(false)
    expect(textTokenizer(spm).everyByte).toBe(false) // the toy has two byte tokens, not 256
    asked.length = 0
    expect(tokenizeExact(tk, 'a~b')).toBeNull()
    expect(tokenizeExact(tk, binaryOf('é'))).toBeNull()
    expect(asked).toEqual([])
    const skipped = continueText(tk, [TOY_BOS, 1], binaryOf('b ~éab'), 4)
    expect(skipped.exact).toBe(false)
    expect(spell(tk, skipped.tokens)).toBe('b ab')
    expect(asked).toEqual([])
    expect(tokenizeExact(tk, 'ab a')).not.toBeNull()
  })

  it('token healing restricts q to the tokens that begin with the healed text', () => {
    const q = bpe.distribution([TOY_BOS, 1], PLAIN) // after "a"
    const restricted = restrictToPrefix(q, 'b', bpeTk)!
    expect([...restricted.ids].sort()).toEqual([2, 6]) // "b", "bc"
    expect([...restricted.probs].reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12)
    expect(restricted.probs[0] / restricted.probs[1]).toBeCloseTo(
      probabilityOf(q, restricted.ids[0]) / probabilityOf(q, restricted.ids[1]),
      12
    )
    expect(restrictToPrefix(q, 'cb', bpeTk)).toBeNull()
  })
})

/** The mutation the chi-square test must catch: keep a proposal whenever the target gives it any mass. */
const acceptOnSupport: MatchVerifier = (proposal, p, greedy, rng) => {
  for (let i = 0; i < proposal.length; i++) {
    if (!(probabilityOf(p[i], proposal[i]) > 0)) return { accepted: i, next: greedy ? argmax(p[i]) : sample(p[i], rng), rejected: true }
  }
  const last = p[proposal.length]
  return { accepted: proposal.length, next: greedy ? argmax(last) : sample(last, rng), rejected: false }
}

describe('sd-uad is lossless: its output law is the target warped law (chi-square, 20k decodes each)', () => {
  const cases: { label: string; draftSide: 'byte-level' | 'sentencepiece'; warp: WarpConfig; gamma: number }[] = [
    { label: 'byte-level draft → SentencePiece target, T=1', draftSide: 'byte-level', warp: PLAIN, gamma: 3 },
    { label: 'SentencePiece draft → byte-level target, T=0.8 top-k 5', draftSide: 'sentencepiece', warp: { temperature: 0.8, topK: 5, topP: 1 }, gamma: 2 },
    { label: 'byte-level draft → SentencePiece target, T=1.2 top-k 2', draftSide: 'byte-level', warp: { temperature: 1.2, topK: 2, topP: 1 }, gamma: 4 }
  ]
  const maxTokens = 4
  const groupsOf = (warp: WarpConfig) =>
    warp.topK === 2
      ? [[0, 1, 2, 3]]
      : [
          [0, 1],
          [2, 3]
        ]

  it.each(cases)('$label, γ = $gamma', async ({ label, draftSide, warp, gamma }) => {
    const { target, draft } = crossVocabularyPair(draftSide)
    const models: DecoderModels = { target, draft }
    const groups = groupsOf(warp)
    const stats = { rounds: 0, proposed: 0, accepted: 0, rejections: 0, bonuses: 0, targetOnly: 0, junctions: 0, drafted: 0, kept: 0 }
    const counts = await sampleTokenGroups(
      { decoder: () => sdUadDecoder({ gamma }), models, warp, maxTokens, groups, samples: SAMPLES, seed: SEED },
      (result) => {
        for (const step of result.steps) {
          stats.rounds += 1
          stats.proposed += step.proposed
          stats.accepted += step.accepted
          if (step.resampled) stats.rejections += 1
          if (step.bonus) stats.bonuses += 1
          if (step.proposed === 0) stats.targetOnly += 1
          if (step.decision?.junction) stats.junctions += 1
          stats.drafted += Number(step.decision?.draftChars)
          stats.kept += Number(step.decision?.keptChars)
          expect(step.acceptedDraftTokens).toBeLessThanOrEqual(step.draftTokens)
        }
      }
    )
    console.log(
      `sd-uad ${label} γ=${gamma}: ${stats.rounds} rounds, acceptance ${(stats.accepted / stats.proposed).toFixed(3)}, ` +
        `rejection rounds ${(stats.rejections / stats.rounds).toFixed(3)}, bonus rounds ${(stats.bonuses / stats.rounds).toFixed(3)}, ` +
        `target-only rounds ${stats.targetOnly}, junction splits ${stats.junctions}, draft text kept ${(stats.kept / stats.drafted).toFixed(3)}`
    )
    // Every branch ran: matches, mismatches, bonuses (T = 1 toys rarely agree on a sampled token: acceptance is low).
    expect(stats.accepted).toBeGreaterThan(SAMPLES / 5)
    expect(stats.rejections / stats.rounds).toBeGreaterThan(0.1)
    expect(stats.bonuses).toBeGreaterThan(SAMPLES / 50)
    const law = exactSequenceDistribution(target, [TOY_BOS], maxTokens, warp)
    groups.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(counts[g], marginal(law, positions))
      report(`sd-uad ${label} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })

  it('negative control: keeping a proposal whenever p(x) > 0 (instead of matching the sampled token) fails', async () => {
    const { target, draft } = crossVocabularyPair('byte-level')
    const warp = PLAIN
    const groups = groupsOf(warp)
    const counts = await sampleTokenGroups({
      decoder: () => sdUadDecoder({ gamma: 3, verify: acceptOnSupport }),
      models: { target, draft },
      warp,
      maxTokens,
      groups,
      samples: SAMPLES / 4,
      seed: SEED
    })
    const law = exactSequenceDistribution(target, [TOY_BOS], maxTokens, warp)
    const fit = chiSquareGoodnessOfFit(counts[0], marginal(law, groups[0]))
    report('negative control: sd-uad accepting on p(x) > 0', fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })
})

describe('greedy sd-uad reproduces ar exactly (toy models, both tokenisations as draft)', () => {
  it.each(['byte-level', 'sentencepiece'] as const)('%s draft: 4 prompts × γ ∈ {1, 2, 4}, with and without healing', async (side) => {
    const { target, draft } = crossVocabularyPair(side)
    let accepted = 0
    let rejected = 0
    for (const text of ['', 'a', 'ab c', 'c ca b']) {
      const promptTokens = [TOY_BOS, ...target.tokenize(text)]
      const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 20, warp: GREEDY }))
      for (const gamma of [1, 2, 4])
        for (const heal of [true, false]) {
          const request = makeRequest({ promptTokens, maxTokens: 20, warp: GREEDY, rng: createPrng(gamma, 7) })
          const uad = await decode(sdUadDecoder({ gamma, heal }), { target, draft }, request)
          expect(uad.tokens, `${side} "${text}" γ=${gamma} heal=${heal}`).toEqual(ar.tokens)
          for (const step of uad.steps) {
            accepted += step.accepted
            if (step.resampled) rejected += 1
          }
        }
    }
    expect(accepted).toBeGreaterThan(10)
    expect(rejected).toBeGreaterThan(10)
  })
})

describe('sample-then-match and the catalog entry', () => {
  it('keeps proposals while they equal the target’s own draw, one uniform per examined position', () => {
    const { target } = crossVocabularyPair('byte-level')
    const p = [target.distribution([TOY_BOS], GREEDY), target.distribution([TOY_BOS, 3], GREEDY), target.distribution([TOY_BOS, 3, 4], GREEDY)]
    const top = p.map(argmax)
    expect(sampleThenMatch([top[0], top[1]], p, true, createPrng(1))).toEqual({ accepted: 2, next: top[2], rejected: false })
    const wrong = [...Array(target.info.vocabularySize).keys()].find((id) => id !== top[0] && id !== TOY_BOS)!
    expect(sampleThenMatch([wrong, top[1]], p, true, createPrng(1))).toEqual({ accepted: 0, next: top[0], rejected: true })
  })

  it('sd-uad is a cross-vocabulary method with a look-behind parameter; its runs report the text kept', async () => {
    const definition = findMethod('sd-uad')!
    expect(definition.vocabulary).toBe('any')
    expect(definition.lossless).toBe(true)
    expect(definition.needs).toEqual({ draft: true, mid: false })
    expect(crossVocabularyMethods()).toContain('sd-uad')
    expect(prepareRun(['ar', 'sd-uad'], { gamma: 3, params: {} }).sharedVocabulary).toBe(false)
    const prepared = prepare('sd-uad', { gamma: 3, params: { 'uad.lookbehind': 4, 'uad.heal': false } })
    expect(prepared.params).toEqual({ 'uad.lookbehind': 4, 'uad.heal': false, 'uad.maxProposed': 0 })
    expect(() => prepare('sd-uad', { gamma: 3, params: { 'uad.lookbehind': 0 } })).toThrow(/uad.lookbehind/)

    const { target, draft } = crossVocabularyPair('sentencepiece')
    const result = await decode(prepared.newRun()(), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 16, warp: GREEDY }))
    expect(result.steps.every((s) => s.stage === 'sd-uad' && s.targetCalls === 1)).toBe(true)
    const kept = textKept(result.steps).textKept!
    expect(kept).toBeGreaterThan(0)
    expect(kept).toBeLessThanOrEqual(1)
    expect(textKept([]).textKept).toBeUndefined()
    const capped = prepare('sd-uad', { gamma: 4, params: { 'uad.maxProposed': 1 } })
    const short = await decode(capped.newRun()(), { target, draft }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 16, warp: GREEDY }))
    expect(short.tokens).toEqual(result.tokens)
    expect(Math.max(...short.steps.map((s) => s.proposed))).toBe(1)
  })
})
