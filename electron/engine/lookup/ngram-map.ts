/**
 * `ngram-simple`, `ngram-map-k`, `ngram-map-k4v`: llama.cpp's self-speculative n-gram drafters, ported line by line
 * from the llama.cpp bundled with node-llama-cpp 3.22.1 — common/ngram-map.{h,cpp} (`common_ngram_simple_draft`,
 * `common_ngram_map_begin / _draft / _accept`, llama.cpp PR #18471), driven as common/speculative.cpp drives them
 * (`common_speculative_impl_ngram_simple`, `common_speculative_impl_ngram_map_k`) and documented in
 * docs/speculative.md ("n-gram Map"). Quirks are kept, because the point is to measure what llama.cpp does; a C++
 * harness compiled from those files produced the fixture test/fixtures/llama-ngram-map/fixture.json that
 * test/unit/ngram-lookup.test.ts replays against this port.
 *
 * llama.cpp's calling convention, kept: `inp` is the token history WITHOUT the token just sampled, `sampled` is that
 * token (the key n-gram is the last n − 1 tokens of inp + sampled). llama.cpp drafts only after the first token has
 * been sampled from the prompt, so the first round of a prompt is target-only (see `ngramMapState`).
 *
 * - ngram-simple (`common_ngram_simple_draft`): needs more than n + m + 1 tokens; searches inp backwards from
 *   position L − n − 1 to 1 (position 0 is never a match) for the key; proposes the min(m, L − match − n) tokens
 *   after it, and nothing when that is fewer than n. Stateless; its `min_hits` option is read by nothing.
 * - ngram-map (`common_ngram_map`): the most recent occurrence of the key whose following m-gram lies inside inp,
 *   found through a 2^18-entry LCG hash table (first registered position per hash; collisions fall back to a scan
 *   of the positions not yet registered — not of the old ones), with per-key statistics: `key_num` (hits) and, per
 *   value m-gram, `n_accepted` = the accepted length of the last draft made from it (starting at m). A draft is
 *   min(m, n_accepted) tokens long — so a key whose last draft was rejected outright never drafts again.
 *   `key_only` (ngram-map-k) drafts the m tokens after the match; otherwise (ngram-map-k4v) up to 4 value m-grams
 *   per key are counted and the most frequent is drafted only once the key has `min_hits` hits and that value is at
 *   least twice as frequent as the others together. At this commit the key-only branch returns before the min-hits
 *   test, so ngram-map-k ignores `--spec-ngram-map-k-min-hits` (always ≥ 1 after the hit is counted: the default 1
 *   is a no-op either way); `minHitsKeyOnly` applies it as docs/speculative.md describes (off = the code).
 *   Positions within n + m + 1 of the prompt's end are never registered (the scans stop at `size_last_begin`).
 */
import type { LookupResult, TokenLookup } from '../decoders/drafter'

// ---------------------------------------------------------------------------------------------- n-gram simple

export interface NgramSimpleConfig {
  /** size_ngram: the key's length n (llama.cpp default 12). */
  n: number
  /** size_mgram: the most tokens drafted m (llama.cpp default 48). */
  m: number
}

/** common_ngram_simple_draft: the draft and where the key matched (0 = no match). */
export function ngramSimpleDraft(config: NgramSimpleConfig, tokens: readonly number[], sampled: number): { draft: number[]; matchPos: number } {
  const curLen = tokens.length
  const nMin = config.n
  const nMax = config.m
  if (curLen <= nMin + nMax + 1) return { draft: [], matchPos: 0 }
  const pattern = [...tokens.slice(curLen - nMin + 1, curLen), sampled]
  let matchPos = 0
  for (let j = curLen - nMin - 1; j > 0; --j) {
    let match = true
    for (let k = 0; k < pattern.length; ++k)
      if (tokens[j + k] !== pattern[k]) {
        match = false
        break
      }
    if (match) {
      matchPos = j
      break
    }
  }
  if (matchPos === 0) return { draft: [], matchPos: 0 }
  const copyMax = Math.min(nMax, curLen - (matchPos + nMin))
  if (copyMax < nMin) return { draft: [], matchPos }
  return { draft: tokens.slice(matchPos + nMin, matchPos + nMin + copyMax), matchPos }
}

// ------------------------------------------------------------------------------------------------- n-gram map

/** COMMON_NGRAM_MAX_VALUES, COMMON_NGRAM_HASH_MAP_SIZE, COMMON_NGRAM_MAX_VALUE_COUNT, LCG_FACTOR. */
const MAX_VALUES = 4
const HASH_MAP_SIZE = 262144
const MAX_VALUE_COUNT = 16380
const LCG_FACTOR = 2654435761

/** common_ngram_map_hash: 32-bit LCG over len tokens from start. */
function lcgHash(tokens: readonly number[], start: number, len: number): number {
  let hash = 0
  for (let i = 0; i < len; ++i) hash = (Math.imul(hash, LCG_FACTOR) + tokens[start + i]) >>> 0
  return hash
}

interface MapValue {
  /** value_idx: where the value m-gram starts in the history (0 = unused slot). */
  valueIdx: number
  valueNum: number
  nAccepted: number
}

interface MapKey {
  keyIdx: number
  statIdx: number
  keyNum: number
  values: MapValue[]
}

export interface NgramMapConfig {
  /** size_key n (llama.cpp default 12). */
  n: number
  /** size_value m (llama.cpp default 48). */
  m: number
  /** true: ngram-map-k; false: ngram-map-k4v. */
  keyOnly: boolean
  /** min_hits (llama.cpp default 1). */
  minHits: number
  /** Apply min_hits in key-only mode too (docs/speculative.md); false = the code at this commit. */
  minHitsKeyOnly?: boolean
}

/** What the last draft call found, for the step record. */
export interface NgramMapFacts {
  matchPos: number
  keyNum: number
  /** The value slot drafted from and its statistic before this draft (-1: no draft). */
  value: number
  nAccepted: number
}

/** common_ngram_map with begin / draft / accept. */
export class NgramMap {
  private readonly keys: MapKey[] = []
  private readonly keyMap = new Uint32Array(HASH_MAP_SIZE)
  private keyMapLastIdx = 0
  private sizeLastBegin = 0
  private idxLastCheck = 0
  private lastDraftCreated = false
  private lastDraftKeyIdx = 0
  private lastDraftValueIdx = 0

  constructor(private readonly config: NgramMapConfig) {
    if (!(config.n >= 1 && config.m >= 1)) throw new RangeError('ngram map: n and m must be at least 1')
  }

  /** common_ngram_map_begin on a fresh map (SpecLab makes one per prompt: nothing to clean up). */
  begin(tokens: readonly number[]): void {
    this.idxLastCheck = tokens.length
    this.sizeLastBegin = tokens.length
  }

  private keyMatches(inp: readonly number[], at: number, key: readonly number[]): boolean {
    for (let k = 0; k < key.length; ++k) if (inp[at + k] !== key[k]) return false
    return true
  }

  /** common_ngram_map_draft: the draft (possibly empty) after inp + sampled. */
  draft(inp: readonly number[], sampled: number, facts?: NgramMapFacts): number[] {
    this.lastDraftCreated = false
    this.lastDraftKeyIdx = 0
    this.lastDraftValueIdx = 0
    const draft: number[] = []
    const curLen = inp.length
    const { n, m } = this.config
    if (curLen < 2 * n + m) return draft
    if (this.idxLastCheck > curLen) throw new Error(`ngram map: idx_last_check > cur_len: ${this.idxLastCheck} > ${curLen}`)
    this.idxLastCheck = curLen
    const keyTokens = [...inp.slice(curLen - n + 1, curLen), sampled]
    if (this.sizeLastBegin > curLen) throw new Error(`ngram map: size_last_begin > cur_len: ${this.sizeLastBegin} > ${curLen}`)

    let matchPos = 0
    const idxHash = lcgHash(keyTokens, 0, n) % HASH_MAP_SIZE
    const idxKey = this.keyMap[idxHash]
    if (idxKey !== 0 && idxKey < curLen - n - m - 1 && this.keyMatches(inp, idxKey, keyTokens)) matchPos = idxKey
    if (matchPos === 0 && this.sizeLastBegin > n + m + 1) {
      for (let j = this.sizeLastBegin - n - m - 1; j > this.keyMapLastIdx; --j)
        if (this.keyMatches(inp, j, keyTokens)) {
          matchPos = j
          break
        }
    }
    if (matchPos === 0) {
      for (let j = curLen - n - m - 1; j > this.sizeLastBegin && j > this.keyMapLastIdx; --j)
        if (this.keyMatches(inp, j, keyTokens)) {
          matchPos = j
          break
        }
    }

    // Register the hashes of the new n-grams, in the same order (the first registered position keeps a slot).
    if (this.sizeLastBegin > n + m + 1) {
      for (let j = this.sizeLastBegin - n - m - 1; j > this.keyMapLastIdx; --j) {
        const slot = lcgHash(inp, j, n) % HASH_MAP_SIZE
        if (this.keyMap[slot] === 0) this.keyMap[slot] = j
      }
    }
    for (let j = curLen - n - m - 1; j > this.sizeLastBegin && j > this.keyMapLastIdx; --j) {
      const slot = lcgHash(inp, j, n) % HASH_MAP_SIZE
      if (this.keyMap[slot] === 0) this.keyMap[slot] = j
    }
    this.keyMapLastIdx = Math.max(curLen - n - m - 1, this.keyMapLastIdx)

    if (facts) Object.assign(facts, { matchPos, keyNum: 0, value: -1, nAccepted: -1 })
    if (matchPos === 0) return draft

    // The key's statistics entry (found by content), created at its first match.
    let keyOffset = this.keys.findIndex((key) => this.keyMatches(inp, key.keyIdx, keyTokens))
    if (keyOffset < 0) {
      keyOffset = this.keys.length
      this.keys.push({
        keyIdx: matchPos,
        statIdx: 0,
        keyNum: 0,
        values: Array.from({ length: MAX_VALUES }, () => ({ valueIdx: 0, valueNum: 0, nAccepted: m }))
      })
    }
    const key = this.keys[keyOffset]
    key.keyNum = Math.min(key.keyNum + 1, MAX_VALUE_COUNT)
    if (facts) facts.keyNum = key.keyNum

    if (this.config.keyOnly) {
      if (this.config.minHitsKeyOnly && key.keyNum < this.config.minHits) return draft
      const count = Math.min(m, key.values[0].nAccepted)
      for (let i = 0; i < count; ++i) draft.push(inp[matchPos + n + i])
      if (facts) Object.assign(facts, { value: 0, nAccepted: key.values[0].nAccepted })
      this.lastDraftCreated = true
      this.lastDraftKeyIdx = keyOffset
      this.lastDraftValueIdx = 0
      return draft
    }

    if (key.keyNum < this.config.minHits) return draft

    // Count the value m-grams after every occurrence of the key from stat_idx to match_pos.
    for (let i = key.statIdx; i <= matchPos; ++i) {
      if (!this.keyMatches(inp, i, keyTokens)) continue
      const begin = i + n
      let slot = -1
      for (let v = 0; v < MAX_VALUES; ++v) {
        const value = key.values[v]
        if (value.valueIdx === 0) {
          value.valueIdx = begin
          value.valueNum = 0
          value.nAccepted = m
          slot = v
          break
        }
        let same = true
        for (let j = 0; j < m; ++j)
          if (inp[begin + j] !== inp[value.valueIdx + j]) {
            same = false
            break
          }
        if (same) {
          slot = v
          break
        }
      }
      if (slot >= 0) key.values[slot].valueNum = Math.min(key.values[slot].valueNum + 1, MAX_VALUE_COUNT)
    }
    key.statIdx = matchPos

    let maxOccur = 0
    let slotMax = 0
    for (let v = 0; v < MAX_VALUES; ++v)
      if (key.values[v].valueNum > maxOccur) {
        maxOccur = key.values[v].valueNum
        slotMax = v
      }
    let sumOccur = 0
    for (let v = 0; v < MAX_VALUES; ++v) if (v !== slotMax) sumOccur += key.values[v].valueNum
    if (sumOccur > 0 && maxOccur < 2 * sumOccur) return draft

    // llama.cpp drafts the tokens after THIS match (match_pos + n), with the chosen value's n_accepted as the length.
    const count = Math.min(m, key.values[slotMax].nAccepted)
    for (let i = 0; i < count; ++i) draft.push(inp[matchPos + n + i])
    if (facts) Object.assign(facts, { value: slotMax, nAccepted: key.values[slotMax].nAccepted })
    this.lastDraftCreated = true
    this.lastDraftKeyIdx = keyOffset
    this.lastDraftValueIdx = slotMax
    return draft
  }

  /** common_ngram_map_accept: the drafted value remembers how many of its tokens were accepted. */
  accept(nAccepted: number): void {
    if (!this.lastDraftCreated) return
    this.keys[this.lastDraftKeyIdx].values[this.lastDraftValueIdx].nAccepted = nAccepted
  }
}

// ------------------------------------------------------------------------------------------ as TokenLookups

/**
 * llama.cpp's schedule around a drafter: `begin` with the prompt, no draft before the first token is sampled from
 * the prompt (the first round is target-only), then draft(inp = sequence without its last token, sampled = that
 * token) each round, and accept(n) only after a non-empty draft (common_speculative_accept is reached only then).
 * The engine's --max-tokens budget truncates a draft as llama.cpp's dp.n_max does (after the statistics are taken).
 */
export function ngramSimpleState(config: NgramSimpleConfig, promptLength: number): TokenLookup {
  return {
    propose(sequence): LookupResult {
      if (sequence.length <= promptLength) return { tokens: [], facts: { matchPos: null } }
      const { draft, matchPos } = ngramSimpleDraft(config, sequence.slice(0, -1), sequence[sequence.length - 1])
      return { tokens: draft, facts: { matchPos } }
    }
  }
}

export function ngramMapState(config: NgramMapConfig, promptTokens: readonly number[]): TokenLookup {
  const map = new NgramMap(config)
  map.begin(promptTokens)
  return {
    propose(sequence): LookupResult {
      if (sequence.length <= promptTokens.length) return { tokens: [], facts: { matchPos: null } }
      const facts: NgramMapFacts = { matchPos: 0, keyNum: 0, value: -1, nAccepted: -1 }
      const draft = map.draft(sequence.slice(0, -1), sequence[sequence.length - 1], facts)
      return { tokens: draft, facts: { ...facts } }
    },
    accepted: (accepted) => map.accept(accepted)
  }
}
