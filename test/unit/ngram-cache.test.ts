/**
 * `ngram-cache` (engine/lookup/ngram-cache.ts) against llama.cpp's rules, worked by hand from common/ngram-cache.cpp:
 * the counts of common_ngram_cache_update, the longest-first lookup with the lax (context) and strict (dynamic)
 * thresholds, the static weighting and the static fallback; the file format of common_ngram_cache_save byte by byte,
 * and corrupt files refused with one message; the dynamic cache carried across a run's prompts (not across runs); a
 * static cache of another vocabulary refused. Losslessness and greedy = ar: test/unit/lookup-lossless.test.ts;
 * greedy = ar on GGUF: test/integration/lookup-gguf.test.ts; the build command: test/integration/ngram-cache-cli.test.ts.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { buildStaticCache, draftFromCaches, loadNgramCache, NgramCache, NgramCacheRun } from '../../electron/engine/lookup/ngram-cache'
import { prepare } from '../../electron/engine/methods/prepare'

const empty = () => new NgramCache()
const levels = (context: NgramCache, dynamic = empty(), statics = empty()) => ({ context, dynamic, static: statics })

describe('the cache (common_ngram_cache_update / _draft)', () => {
  it('counts every 1–4-gram and its follower; an update of the last nnew tokens adds the n-grams ending before them', () => {
    const cache = new NgramCache()
    cache.update([7, 8, 7, 8, 9], 5)
    expect(Object.fromEntries(cache.part([7])!)).toEqual({ 8: 2 })
    expect(Object.fromEntries(cache.part([8])!)).toEqual({ 7: 1, 9: 1 })
    expect(Object.fromEntries(cache.part([7, 8])!)).toEqual({ 7: 1, 9: 1 })
    expect(Object.fromEntries(cache.part([7, 8, 7, 8])!)).toEqual({ 9: 1 })
    expect(cache.size).toBe(2 + 2 + 2 + 1) // 1-grams 7, 8; 2-grams 78, 87; 3-grams 787, 878; the 4-gram 7878
    // Appending one token: only the n-grams ending right before it (sizes 1–4) are added.
    const before = cache.size
    cache.update([7, 8, 7, 8, 9, 7], 1)
    expect(Object.fromEntries(cache.part([9])!)).toEqual({ 7: 1 })
    expect(cache.part([8, 7, 8, 9])!.get(7)).toBe(1)
    expect(cache.size).toBe(before + 4)
  })

  it('the context cache drafts with the lax thresholds, the longest n-gram first, until the first miss', () => {
    const context = new NgramCache()
    const history = [1, 2, 3, 1, 2, 3, 1, 2]
    context.update(history, history.length)
    // After …1 2: the 4-gram [3 1 2]… no — the 4-gram [2 3 1 2] was followed by 3 once (lax min sample 1 for size 4).
    const { tokens, levels: by } = draftFromCaches(history, 5, levels(context))
    expect(tokens).toEqual([3, 1, 2, 3, 1])
    expect(by).toBe('ccccc')
    // n_draft caps it; fewer than LLAMA_NGRAM_STATIC tokens: nothing.
    expect(draftFromCaches(history, 2, levels(context)).tokens).toEqual([3, 1])
    expect(draftFromCaches([1], 5, levels(context)).tokens).toEqual([])
  })

  it('a 1-gram needs ≥ 2 samples and a 66 % share in the context cache (lax); the dynamic cache needs ≥ 4 and 75 % (strict)', () => {
    // 5 was followed by 6 once: a 1-gram with one sample is below the lax minimum of 2.
    const once = new NgramCache()
    once.add([5], 6)
    expect(draftFromCaches([0, 5], 3, levels(once)).tokens).toEqual([])
    once.add([5], 6)
    expect(draftFromCaches([0, 5], 1, levels(once)).tokens).toEqual([6])
    // 2 of 3 is 66.7 % ≥ 66: drafted; 1 of 2 (50 %) is not.
    const split = new NgramCache()
    split.add([5], 6, 2)
    split.add([5], 7, 1)
    expect(draftFromCaches([0, 5], 1, levels(split)).tokens).toEqual([6])
    const even = new NgramCache()
    even.add([5], 6)
    even.add([5], 7)
    expect(draftFromCaches([0, 5], 1, levels(even)).tokens).toEqual([])
    // The dynamic cache: 3 samples of a 1-gram are below the strict 4; 4 at 75 % pass.
    const dynamic = new NgramCache()
    dynamic.add([5], 6, 3)
    expect(draftFromCaches([0, 5], 1, levels(empty(), dynamic)).tokens).toEqual([])
    dynamic.add([5], 6)
    expect(draftFromCaches([0, 5], 1, levels(empty(), dynamic))).toEqual({ tokens: [6], levels: 'd' })
    dynamic.add([5], 7, 2) // 4 of 6 = 66.7 % < 75
    expect(draftFromCaches([0, 5], 1, levels(empty(), dynamic)).tokens).toEqual([])
  })

  it('counts are weighted by 100 × the static count after the last two tokens; the static cache alone needs 2 samples at 50 %', () => {
    // A 4-gram seen twice with two followers: a tie, the first seen (6) wins, 50 % passes the lax 4-gram share …
    const context = new NgramCache()
    context.add([1, 2, 3, 5], 6)
    context.add([1, 2, 3, 5], 7)
    expect(draftFromCaches([1, 2, 3, 5], 1, levels(context)).tokens).toEqual([6])
    // … and a static cache that saw 7 after [3 5] weighs 7 by 100: 7 is drafted.
    const after35 = new NgramCache()
    after35.add([3, 5], 7)
    expect(draftFromCaches([1, 2, 3, 5], 1, levels(context, empty(), after35))).toEqual({ tokens: [7], levels: 'c' })
    // The share test uses the raw counts: 5 → 6 ×3, 7 ×1 with the static weight on 7 picks 7 at 25 % < 66 %: no draft
    // from the context cache; the static cache alone needs ≥ 2 samples.
    const skewed = new NgramCache()
    skewed.add([5], 6, 3)
    skewed.add([5], 7, 1)
    const statics = new NgramCache()
    statics.add([0, 5], 7, 1)
    expect(draftFromCaches([0, 5], 1, levels(skewed, empty(), statics)).tokens).toEqual([])
    statics.add([0, 5], 7, 1)
    expect(draftFromCaches([0, 5], 1, levels(skewed, empty(), statics))).toEqual({ tokens: [7], levels: 's' })
  })
})

describe('the file (common_ngram_cache_save / _load)', () => {
  it('writes llama.cpp’s layout: 4 int32 ids (−1 padding), int32 follower count, (token, count) pairs, little-endian', () => {
    const cache = new NgramCache()
    cache.add([3, 4], 9, 2)
    cache.add([3, 4], 1, 1)
    const expected = Buffer.alloc(16 + 4 + 16)
    ;[3, 4, -1, -1, 2, 9, 2, 1, 1].forEach((v, i) => expected.writeInt32LE(v, 4 * i))
    expect(cache.serialize()).toEqual(expected)
    const back = NgramCache.parse(expected, 'x')
    expect(Object.fromEntries(back.part([3, 4])!)).toEqual({ 9: 2, 1: 1 })
  })

  it('round-trips a corpus cache (lookup-create: 2-grams only)', () => {
    const cache = buildStaticCache([1, 5, 6, 5, 6, 7, 5, 6])
    expect([...cache.parts.keys()].every((key) => key.split(',').length === 2)).toBe(true)
    expect(Object.fromEntries(cache.part([5, 6])!)).toEqual({ 5: 1, 7: 1 })
    const back = NgramCache.parse(cache.serialize(), 'x')
    expect([...back.parts].map(([k, v]) => [k, [...v]])).toEqual([...cache.parts].map(([k, v]) => [k, [...v]]))
  })

  it('refuses corrupt files with one message (truncated, impossible counts, malformed padding) and missing files', () => {
    const good = buildStaticCache([1, 2, 3, 4]).serialize()
    const cases: [Buffer, RegExp][] = [
      [good.subarray(0, good.length - 3), /truncated record|follower count/],
      [good.subarray(0, 10), /truncated record at byte 0/],
      [Buffer.from(good).fill(0xff, 16, 20), /follower count -1/],
      [(() => { const b = Buffer.from(good); b.writeInt32LE(0, 24); return b })(), /count 0/],
      [(() => { const b = Buffer.from(good); b.writeInt32LE(-1, 0); return b })(), /malformed n-gram/],
      [(() => { const b = Buffer.from(good); b.writeInt32LE(2 ** 30, 16); return b })(), /follower count 1073741824/]
    ]
    for (const [bytes, message] of cases) {
      expect(() => NgramCache.parse(bytes, 'bad.bin')).toThrow(UserInputError)
      expect(() => NgramCache.parse(bytes, 'bad.bin')).toThrow(message)
    }
    expect(() => loadNgramCache('/nonexistent/cache.bin')).toThrow(/no such n-gram cache file/)
    expect(() => prepare('ngram-cache', { gamma: 5, params: { 'ngramcache.static': '/nonexistent/cache.bin' } })).toThrow(
      /^ngramcache\.static: \/nonexistent\/cache\.bin: no such n-gram cache file$/
    )
  })
})

describe('a run of ngram-cache', () => {
  it('the dynamic cache takes each prompt’s context when the next prompt starts, within a run only', () => {
    const run = new NgramCacheRun({ nDraft: 4, staticFile: '' })
    const first = run.start([1, 7, 8, 9], 100)
    first.propose([1, 7, 8, 9, 7, 8, 9, 7, 8, 9], 4)
    expect(run.dynamic.size).toBe(0)
    const second = run.start([1, 2], 100)
    expect(run.dynamic.part([7])!.get(8)).toBe(3)
    // The second prompt drafts after …8 9 7 from the dynamic cache alone ('d'): in the first prompt the 3-gram [8 9 7]
    // was followed by 8 twice (the strict minimum for a 3-gram is 2 samples), and so on.
    expect(second.propose([1, 2, 8, 9, 7], 3)).toMatchObject({ tokens: [8, 9, 7], facts: { levels: 'ddd' } })
    // A new run starts empty.
    const fresh = new NgramCacheRun({ nDraft: 4, staticFile: '' })
    expect(fresh.start([1, 2], 100).propose([1, 2, 8, 9, 7], 3).tokens).toEqual([])
  })

  it("llama.cpp's schedule: nothing is drafted before the first token is sampled from the prompt", () => {
    // The prompt alone repeats 7 8 9, so the context cache has what it needs to draft after its last token.
    const prompt = [1, 7, 8, 9, 7, 8, 9, 7, 8, 9]
    const lookup = new NgramCacheRun({ nDraft: 3, staticFile: '' }).start(prompt, 100)
    expect(lookup.propose(prompt, 3)).toMatchObject({ tokens: [], facts: { levels: null } })
    expect(lookup.propose([...prompt, 7], 3)).toMatchObject({ tokens: [8, 9, 7], facts: { levels: 'ccc' } })
  })

  it('a static cache with ids beyond the target’s vocabulary is refused when the run starts', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ngram-cache-'))
    try {
      const file = path.join(dir, 'static.bin')
      fs.writeFileSync(file, buildStaticCache([1, 600, 2]).serialize())
      const run = new NgramCacheRun({ nDraft: 4, staticFile: file })
      expect(() => run.start([1], 512)).toThrow(/holds token 600, beyond the target's vocabulary of 512 — it was built with another tokenizer/)
      expect(() => run.start([1], 32000)).not.toThrow()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
