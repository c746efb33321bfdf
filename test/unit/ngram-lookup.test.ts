/**
 * The model-free drafters' lookups, against their peers: Hugging Face's PromptLookupCandidateGenerator (by hand-made
 * cases of its rules) and llama.cpp's common/ngram-map.cpp (replayed against a fixture that llama.cpp's own code
 * produced: test/fixtures/llama-ngram-map/, rebuilt by its make-fixture.sh), and llama.cpp's schedule around them.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { NgramMap, ngramMapState, ngramSimpleDraft, ngramSimpleState } from '../../electron/engine/lookup/ngram-map'
import { promptLookup } from '../../electron/engine/lookup/prompt-lookup'

const EOS = 2
const isEnd = (token: number) => token === EOS

describe('pld: HF PromptLookupCandidateGenerator.get_candidates', () => {
  it('matches the longest suffix n-gram first, at its first occurrence from the left', () => {
    //                 0  1  2  3  4  5  6  7  8  9 10 11
    const sequence = [1, 5, 6, 7, 9, 5, 6, 7, 8, 4, 6, 7]
    // n = 2: [6, 7] first occurs at 2 (not at 6, the more recent one): propose what followed it.
    expect(promptLookup(sequence, { maxNgram: 2, k: 3 }, isEnd)).toEqual({ tokens: [9, 5, 6], facts: { ngram: 2, matchAt: 2 } })
    // maxNgram 3: [4, 6, 7] is nowhere else, so n drops to 2.
    expect(promptLookup(sequence, { maxNgram: 3, k: 2 }, isEnd).facts).toEqual({ ngram: 2, matchAt: 2 })
    // n = 1 when no 2-gram matches: [.., 3, 7] → 7 at 3.
    expect(promptLookup([1, 5, 6, 7, 9, 3, 7], { maxNgram: 2, k: 4 }, isEnd)).toEqual({ tokens: [9, 3, 7], facts: { ngram: 1, matchAt: 3 } })
  })

  it('skips matches with nothing after them, clips at the sequence end and proposes nothing without a match', () => {
    // The suffix itself is a window with no continuation; the overlapping match one earlier has one token after it.
    expect(promptLookup([1, 4, 4, 4], { maxNgram: 2, k: 5 }, isEnd)).toEqual({ tokens: [4], facts: { ngram: 2, matchAt: 1 } })
    expect(promptLookup([1, 3, 4, 5], { maxNgram: 3, k: 5 }, isEnd)).toEqual({ tokens: [], facts: { ngram: 0, matchAt: null } })
    expect(promptLookup([1], { maxNgram: 2, k: 5 }, isEnd).tokens).toEqual([])
  })

  it('cuts the candidates before the first end-of-generation token (HF: eos and the rest are dropped)', () => {
    expect(promptLookup([1, 7, 8, EOS, 9, 7], { maxNgram: 2, k: 4 }, isEnd).tokens).toEqual([8])
    // EOS right after the match: no candidates at all (HF returns the input unchanged).
    expect(promptLookup([1, 7, EOS, 9, 7], { maxNgram: 2, k: 4 }, isEnd).tokens).toEqual([])
  })
})

interface FixtureCase {
  mode: 'simple' | 'k' | 'k4v'
  n: number
  m: number
  minHits: number
  promptLength: number
  stream: number[]
  drafts: number[][]
}

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/llama-ngram-map/fixture.json')

/**
 * The driver of test/fixtures/llama-ngram-map/driver.cpp, replayed: the history follows `stream`; each step drafts
 * after (history, sampled = the next stream token), accepts the draft's prefix that agrees with the stream, tells the
 * map (after a non-empty draft) and appends sampled + the accepted tokens.
 */
function replay(c: FixtureCase, options: { minHitsKeyOnly?: boolean } = {}): number[][] {
  const map = c.mode === 'simple' ? null : new NgramMap({ n: c.n, m: c.m, keyOnly: c.mode === 'k', minHits: c.minHits, ...options })
  const history = c.stream.slice(0, c.promptLength)
  map?.begin(history)
  const drafts: number[][] = []
  let pos = c.promptLength
  while (pos < c.stream.length) {
    const sampled = c.stream[pos]
    const draft = map ? map.draft(history, sampled) : ngramSimpleDraft({ n: c.n, m: c.m }, history, sampled).draft
    let accepted = 0
    while (accepted < draft.length && pos + 1 + accepted < c.stream.length && draft[accepted] === c.stream[pos + 1 + accepted]) accepted++
    if (map && draft.length > 0) map.accept(accepted)
    drafts.push(draft)
    history.push(sampled, ...draft.slice(0, accepted))
    pos += 1 + accepted
  }
  return drafts
}

describe("llama.cpp's ngram-simple / ngram-map, replayed against llama.cpp's own code", () => {
  const cases = JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as FixtureCase[]

  it('the fixture exercises every mode with real drafts', () => {
    for (const mode of ['simple', 'k', 'k4v'] as const) {
      const ofMode = cases.filter((c) => c.mode === mode)
      expect(ofMode.length).toBeGreaterThanOrEqual(10)
      expect(ofMode.reduce((sum, c) => sum + c.drafts.filter((d) => d.length > 0).length, 0)).toBeGreaterThan(100)
    }
    // Some ngram-map-k drafts are shorter than m: the accepted-token statistic at work.
    expect(cases.some((c) => c.mode === 'k' && c.drafts.some((d) => d.length > 0 && d.length < c.m))).toBe(true)
  })

  it.each(cases.map((c, i) => [i, c.mode, c.n, c.m, c.minHits, c] as const))(
    'case %i: %s n=%i m=%i min_hits=%i drafts exactly what llama.cpp drafted',
    (_i, _mode, _n, _m, _hits, c) => {
      expect(replay(c)).toEqual(c.drafts)
    }
  )

  it('min hits in key-only mode (docs/speculative.md): 1 is the code exactly; more withholds a key until it recurs', () => {
    const keyOnly = cases.filter((c) => c.mode === 'k')
    for (const c of keyOnly) expect(replay(c, { minHitsKeyOnly: true })).toEqual(c.drafts)
    const strict = keyOnly.map((c) => replay({ ...c, minHits: 3 }, { minHitsKeyOnly: true }))
    const drafted = (all: number[][][]) => all.flat().filter((d) => d.length > 0).length
    expect(drafted(strict)).toBeLessThan(drafted(keyOnly.map((c) => c.drafts)))
  })

  it("ngram-map-k: a key whose draft was rejected outright never drafts again (n_accepted = 0)", () => {
    const map = new NgramMap({ n: 1, m: 2, keyOnly: true, minHits: 1 })
    const history = [1, 5, 6, 7, 8, 9]
    map.begin(history)
    // Key [5] (sampled) matched at 1: draft the 2 tokens after it.
    expect(map.draft(history, 5)).toEqual([6, 7])
    map.accept(0)
    history.push(5)
    history.push(3, 4, 4)
    expect(map.draft(history, 5)).toEqual([])
    // A partial acceptance caps the next draft of that key at the accepted length.
    const other = new NgramMap({ n: 1, m: 3, keyOnly: true, minHits: 1 })
    const h2 = [1, 5, 6, 7, 8, 9, 9, 9]
    other.begin(h2)
    expect(other.draft(h2, 5)).toEqual([6, 7, 8])
    other.accept(1)
    h2.push(5, 6, 2, 2, 2)
    expect(other.draft(h2, 5)).toEqual([6])
  })

  it("llama.cpp's schedule: nothing is drafted before the first token is sampled from the prompt", () => {
    const prompt = [1, 4, 5, 6, 4, 5, 6, 4, 5]
    const simple = ngramSimpleState({ n: 1, m: 2 }, prompt.length)
    expect(simple.propose(prompt, 8).tokens).toEqual([])
    expect(simple.propose([...prompt, 6], 8).tokens).toEqual(ngramSimpleDraft({ n: 1, m: 2 }, prompt, 6).draft)
    expect(simple.propose([...prompt, 6], 8).tokens.length).toBeGreaterThan(0)
    const map = ngramMapState({ n: 1, m: 2, keyOnly: true, minHits: 1 }, prompt)
    expect(map.propose(prompt, 8).tokens).toEqual([])
    expect(map.propose([...prompt, 6], 8)).toMatchObject({ tokens: [4, 5], facts: { keyNum: 1, value: 0, nAccepted: 2 } })
  })
})
