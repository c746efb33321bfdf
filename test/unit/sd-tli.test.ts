/**
 * sd-tli (Token-Level Intersection, Timor et al. 2025 Algorithm 4) on toy models with two tokenisations of one
 * alphabet: the byte-string normalisations (SentencePiece `▁` / `<0xNN>`, byte-level `Ġ`), the intersection, the
 * draft's text kept in step with the target's, losslessness by chi-square against the target's exact warped law
 * (both directions: a byte-level draft for a SentencePiece target and the reverse; a negative control verifying
 * against q on I without renormalising fails the same test), greedy equality with `ar`, and
 * the catalog plumbing that lets only cross-vocabulary methods run on such a pair.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { DraftTextSync, draftText, restrictToIntersection, sdTliDecoder, type Restriction } from '../../electron/engine/decoders/sd-tli'
import type { DecoderModels } from '../../electron/engine/decoders/types'
import { UserInputError } from '../../electron/engine/errors'
import { assertVocabularyFits, crossVocabularyMethods, findMethod, prepare, prepareRun } from '../../electron/engine/methods/prepare'
import {
  binaryOf,
  byteLevelText,
  completeUtf8Length,
  crossVocabulary,
  tokenBytes,
  utf8Of,
  vocabularyBytes
} from '../../electron/engine/model/vocabulary-bytes'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report, sampleTokenGroups } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS } from '../helpers/toy-models'
import { crossVocabularyPair } from '../helpers/toy-tokenizers'

const SAMPLES = 20_000
const SEED = 20250205
const P_MIN = 0.001

describe('byte strings of tokens (model/vocabulary-bytes.ts)', () => {
  it('normalises SentencePiece ▁ and <0xNN>, byte-level Ġ/Ċ and raw UTF-8, and leaves control tokens unmapped', () => {
    expect(tokenBytes('▁the', 'normal', 'sentencepiece')).toBe(' the')
    expect(tokenBytes('the▁', 'normal', 'sentencepiece')).toBe('the ')
    expect(tokenBytes('<0x0A>', 'byte', 'sentencepiece')).toBe('\n')
    expect(tokenBytes('<0xE2>', 'byte', 'sentencepiece')).toBe('\u00e2') // one byte, 0xE2
    expect(tokenBytes('▁é', 'normal', 'sentencepiece')).toBe(binaryOf(' é'))
    expect(tokenBytes('Ġthe', 'normal', 'byte-level')).toBe(' the')
    expect(tokenBytes('ĊĊ', 'normal', 'byte-level')).toBe('\n\n')
    expect(tokenBytes('Ã©', 'normal', 'byte-level')).toBe(binaryOf('é')) // GPT-2 spells é's two bytes as Ã ©
    expect(tokenBytes('<|im_start|>', 'user-defined', 'byte-level')).toBe('<|im_start|>')
    for (const kind of ['control', 'unknown', 'unused'] as const) expect(tokenBytes('<s>', kind, 'sentencepiece')).toBeNull()
    expect(tokenBytes('', 'normal', 'byte-level')).toBeNull()
    expect(byteLevelText(binaryOf(' é\n'))).toBe('ĠÃ©Ċ')
    expect(utf8Of(binaryOf('naïve ✓'))).toBe('naïve ✓')
  })

  it('finds where a byte string stops being complete UTF-8', () => {
    const check = binaryOf('a✓') // ✓ = E2 9C 93
    expect(completeUtf8Length(check)).toBe(check.length)
    expect(completeUtf8Length(check.slice(0, 2))).toBe(1)
    expect(completeUtf8Length(check.slice(0, 3))).toBe(1)
    expect(completeUtf8Length('')).toBe(0)
  })

  it('intersects the two toy vocabularies by bytes, preferring pieces over byte tokens', () => {
    const { target, draft } = crossVocabularyPair('byte-level')
    const map = crossVocabulary(target, draft)
    expect(map.size).toBe(5) // "a", "b", "c", " a", " "
    expect(map.draftAddsSpace).toBe(false)
    const spm = vocabularyBytes(target)
    expect(spm.normalisation).toBe('sentencepiece')
    expect(spm.bytes).toEqual([null, ' a', ' b', 'a', 'b', 'c', 'ab', ' ', 'c', ' '])
    expect(spm.idOf.get('c')).toBe(5) // the piece, not <0x63>
    expect(spm.idOf.get(' ')).toBe(7) // ▁, not <0x20>
    expect(vocabularyBytes(draft).bytes).toEqual([null, 'a', 'b', 'c', ' a', ' ', 'bc', ' c', 'ca'])
    // Draft → target: the draft-only "bc", " c", "ca" and its control token map to nothing.
    expect([...map.draftToTarget]).toEqual([-1, 3, 4, 5, 1, 7, -1, -1, -1])
    // Target → draft: both spellings of "c" and " " map; " b" and "ab" are target-only.
    expect([...map.targetToDraft]).toEqual([-1, 4, -1, 1, 2, 3, -1, 5, 3, 5])
    expect([map.draftIds, map.targetIds]).toEqual([5, 7])
    expect(crossVocabulary(target, draft)).toBe(map) // cached per pair
    expect(crossVocabulary(...(Object.values(crossVocabularyPair('sentencepiece')) as [never, never])).draftAddsSpace).toBe(true)
  })

  it('restricts q to the intersection and renormalises it over target ids, adding up draft ids of one spelling', () => {
    const { target, draft } = crossVocabularyPair('byte-level')
    const map = crossVocabulary(target, draft)
    const q = draft.distribution([0], PLAIN)
    const restricted = restrictToIntersection(q, map)!
    const inI = [...q.ids].reduce((sum, id, i) => sum + (map.draftToTarget[id] >= 0 ? q.probs[i] : 0), 0)
    expect(restricted.mass).toBeCloseTo(inI, 12)
    expect(restricted.mass).toBeLessThan(0.95) // the draft-only tokens really carry mass
    expect([...restricted.target.probs].reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12)
    for (let i = 0; i < restricted.target.ids.length; i++) {
      expect(map.targetToDraft[restricted.target.ids[i]]).toBeGreaterThanOrEqual(0)
      const qOfDraft = [...q.ids].reduce((sum, id, j) => sum + (map.draftToTarget[id] === restricted.target.ids[i] ? q.probs[j] : 0), 0)
      expect(restricted.target.probs[i]).toBeCloseTo(qOfDraft / inI, 12)
    }
  })
})

describe("the draft's text follows the target's (DraftTextSync)", () => {
  it.each(['byte-level', 'sentencepiece'] as const)('%s draft: tokens in I map 1:1, target-only text is re-tokenised exactly', (side) => {
    const { target, draft } = crossVocabularyPair(side)
    const map = crossVocabulary(target, draft)
    const targetText = (ids: number[]) => ids.map((id) => map.target.bytes[id] ?? '').join('')
    // A prompt, then every target token one by one (whatever the draft's vocabulary lacks).
    const prompt = [TOY_BOS, ...target.tokenize('ab ca')]
    const sync = new DraftTextSync(draft, map, prompt)
    sync.sync()
    const draftPrefixSpace = side === 'sentencepiece' && !targetText(prompt).startsWith(' ') ? ' ' : ''
    expect(draftText(sync, map)).toBe(draftPrefixSpace + utf8Of(targetText(prompt)))
    const all = [...prompt]
    for (let id = 1; id < target.info.vocabularySize; id++) {
      const before = [...sync.tokens]
      sync.append(id)
      all.push(id)
      if (map.targetToDraft[id] >= 0) {
        expect(sync.inSync).toBe(true)
        expect(sync.tokens).toEqual([...before, map.targetToDraft[id]]) // 1:1, nothing re-tokenised
      } else {
        expect(sync.inSync).toBe(false)
        const written = sync.sync()
        expect(written).toBeGreaterThan(0)
        expect(sync.tokens.length - written).toBeGreaterThan(0)
      }
      expect(draftText(sync, map)).toBe(draftPrefixSpace + utf8Of(targetText(all)))
    }
    expect(sync.retokenised).toBeGreaterThan(0)
  })
})

describe('sd-tli is lossless: its output law is the target warped law (chi-square, 20k decodes each)', () => {
  const cases: { label: string; draftSide: 'byte-level' | 'sentencepiece'; warp: WarpConfig; gamma: number }[] = [
    { label: 'byte-level draft → SentencePiece target, T=1', draftSide: 'byte-level', warp: PLAIN, gamma: 3 },
    { label: 'SentencePiece draft → byte-level target, T=0.8 top-k 5', draftSide: 'sentencepiece', warp: { temperature: 0.8, topK: 5, topP: 1 }, gamma: 2 },
    // Top-2 often leaves the draft nothing in I: drafting stops there, and with nothing drafted the target decodes alone.
    { label: 'byte-level draft → SentencePiece target, T=1.2 top-k 2', draftSide: 'byte-level', warp: { temperature: 1.2, topK: 2, topP: 1 }, gamma: 4 }
  ]

  it.each(cases)('$label, γ = $gamma', async ({ label, draftSide, warp, gamma }) => {
    const { target, draft } = crossVocabularyPair(draftSide)
    const models: DecoderModels = { target, draft }
    const maxTokens = 4
    // Top-2 leaves 2⁴ sequences: test them jointly; otherwise the first and the last two tokens.
    const groups =
      warp.topK === 2
        ? [[0, 1, 2, 3]]
        : [
            [0, 1],
            [2, 3]
          ]
    const stats = { rounds: 0, proposed: 0, accepted: 0, rejections: 0, bonuses: 0, targetOnly: 0, retokenised: 0 }
    const counts = await sampleTokenGroups(
      { decoder: () => sdTliDecoder({ gamma }), models, warp, maxTokens, groups, samples: SAMPLES, seed: SEED },
      (result) => {
        for (const step of result.steps) {
          stats.rounds += 1
          stats.proposed += step.proposed
          stats.accepted += step.accepted
          if (step.resampled) stats.rejections += 1
          if (step.bonus) stats.bonuses += 1
          if (step.proposed === 0) stats.targetOnly += 1
          stats.retokenised += Number(step.decision?.retokenised ?? 0)
          expect(step.decision?.intersection).toBe(5)
        }
      }
    )
    console.log(
      `sd-tli ${label} γ=${gamma}: ${stats.rounds} rounds, acceptance ${(stats.accepted / stats.proposed).toFixed(3)}, ` +
        `rejection rounds ${(stats.rejections / stats.rounds).toFixed(3)}, bonus rounds ${(stats.bonuses / stats.rounds).toFixed(3)}, ` +
        `target-only rounds ${stats.targetOnly}, draft tokens re-tokenised ${stats.retokenised}`
    )
    // Every branch ran: acceptances, corrections (target-only tokens among them, re-tokenised for the draft), bonuses.
    expect(stats.accepted / stats.proposed).toBeGreaterThan(0.2)
    expect(stats.rejections / stats.rounds).toBeGreaterThan(0.1)
    expect(stats.bonuses).toBeGreaterThan(SAMPLES / 50)
    expect(stats.retokenised).toBeGreaterThan(SAMPLES / 10)
    if (warp.topK === 2) expect(stats.targetOnly).toBeGreaterThan(SAMPLES / 20)
    const law = exactSequenceDistribution(target, [TOY_BOS], maxTokens, warp)
    groups.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(counts[g], marginal(law, positions))
      report(`sd-tli ${label} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(10)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })

  // The mistake the renormalisation of q_I avoids: proposals drawn from q_I but verified against q's own mass on I,
  // so p/q is too large (accepted too often) and the residual max(0, p − q) too heavy. The toys' q puts about 0.6 of
  // its mass in I.
  it('negative control: verifying against q restricted to I WITHOUT renormalising fails the same test', async () => {
    const unnormalised: Restriction = (q, map) => {
      const restricted = restrictToIntersection(q, map)
      return restricted && { ...restricted, target: { ids: restricted.target.ids, probs: restricted.target.probs.map((x) => x * restricted.mass) } }
    }
    const { target, draft } = crossVocabularyPair('byte-level')
    const groups = [
      [0, 1],
      [2, 3]
    ]
    const counts = await sampleTokenGroups({
      decoder: () => sdTliDecoder({ gamma: 3, restrict: unnormalised }),
      models: { target, draft },
      warp: PLAIN,
      maxTokens: 4,
      groups,
      samples: SAMPLES / 4,
      seed: SEED
    })
    const law = exactSequenceDistribution(target, [TOY_BOS], 4, PLAIN)
    const fit = chiSquareGoodnessOfFit(counts[0], marginal(law, groups[0]))
    report('negative control: sd-tli without renormalising q_I', fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })
})

describe('greedy sd-tli reproduces ar exactly (toy models, both tokenisations as draft)', () => {
  it.each(['byte-level', 'sentencepiece'] as const)('%s draft: 4 prompts × γ ∈ {1, 2, 4}', async (side) => {
    const { target, draft } = crossVocabularyPair(side)
    let accepted = 0
    let rejected = 0
    for (const text of ['', 'a', 'ab c', 'c ca b']) {
      const promptTokens = [TOY_BOS, ...target.tokenize(text)]
      const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens: 20, warp: GREEDY }))
      for (const gamma of [1, 2, 4]) {
        const request = makeRequest({ promptTokens, maxTokens: 20, warp: GREEDY, rng: createPrng(gamma, 7) })
        const tli = await decode(prepare('sd-tli', { gamma, params: {} }).newRun()(), { target, draft }, request)
        expect(tli.tokens, `${side} "${text}" γ=${gamma}`).toEqual(ar.tokens)
        for (const step of tli.steps) {
          accepted += step.accepted
          if (step.resampled) rejected += 1
        }
      }
    }
    expect(accepted).toBeGreaterThan(10)
    expect(rejected).toBeGreaterThan(10)
  })
})

describe('catalog plumbing: which methods may run on different vocabularies', () => {
  it('sd-tli declares any vocabulary; a run needs a shared one when any of its methods compares ids', () => {
    expect(findMethod('sd-tli')?.vocabulary).toBe('any')
    expect(findMethod('sd')?.vocabulary ?? 'shared').toBe('shared')
    expect(crossVocabularyMethods()).toContain('sd-tli')
    expect(prepareRun(['sd-tli'], { gamma: 3, params: {} }).sharedVocabulary).toBe(false)
    expect(prepareRun(['ar', 'sd-tli'], { gamma: 3, params: {} }).sharedVocabulary).toBe(false) // ar uses the target alone
    expect(prepareRun(['ar', 'beam'], { gamma: 3, params: {} }).sharedVocabulary).toBe(false)
    expect(prepareRun(['ar', 'sd', 'sd-tli'], { gamma: 3, params: {} }).sharedVocabulary).toBe(true)
  })

  it('refuses id-comparing methods on a trio of different vocabularies with one line naming sd-tli', () => {
    const run = prepareRun(['ar', 'sd', 'sd-tli'], { gamma: 3, params: {} })
    const definitions = run.methods.map((m) => m.definition)
    expect(() => assertVocabularyFits(definitions, null)).not.toThrow()
    expect(() => assertVocabularyFits([findMethod('sd-tli')!], 'sizes differ')).not.toThrow()
    let message = ''
    try {
      assertVocabularyFits(definitions, 'vocabulary sizes differ by 1,536')
    } catch (error) {
      expect(error).toBeInstanceOf(UserInputError)
      message = (error as Error).message
    }
    expect(message).toMatch(/^sd compares token ids across models, but the loaded vocabularies differ \(vocabulary sizes differ by 1,536\): only .*sd-tli.* with another tokenizer$/)
  })
})
