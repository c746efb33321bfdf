/**
 * `ngram-cache`: llama.cpp's three-level n-gram cache, ported from the llama.cpp bundled with node-llama-cpp 3.22.1 —
 * common/ngram-cache.{h,cpp} (`common_ngram_cache_update`, `common_ngram_cache_draft` with its two `try_draft`,
 * `common_ngram_cache_save` / `_load` / `_merge`), driven as examples/lookup/lookup.cpp drives it, and the static file
 * format of examples/lookup/lookup-create.cpp.
 *
 * - A cache maps an n-gram (LLAMA_NGRAM_MIN = 1 … LLAMA_NGRAM_MAX = 4 tokens) to the counts of the tokens that followed
 *   it. Three caches: CONTEXT (this prompt + output, every n-gram of 1–4 tokens, updated as tokens are committed),
 *   DYNAMIC (what earlier generations said: lookup.cpp merges the context cache into it after a generation and saves
 *   it to a file for the next one; here it lives for a RUN and takes each prompt's context cache when the prompt ends —
 *   so a run's later prompts draft from its earlier ones, a new run starts empty), STATIC (2-grams of a large corpus,
 *   LLAMA_NGRAM_STATIC = 2, loaded from a file that `speclab ngram-cache build` or llama.cpp's `llama-lookup-create`
 *   writes; absent = empty).
 * - Drafting (common_ngram_cache_draft), never before the first token is sampled from the prompt (lookup.cpp and
 *   llama-server draft only after a sample), one token at a time up to n_draft: the n-grams of 1–4 tokens ending at the
 *   current draft end are looked up, longest first, in the context cache with the lax thresholds (min sample size
 *   {2, 2, 1, 1}, min share of the top token {66, 50, 50, 50} % by n-gram size), then in the dynamic cache with the
 *   strict ones ({4, 3, 2, 2}, {75, 66, 66, 66} %); a candidate's count is weighted by 100 × its count in the static
 *   cache after the last 2 tokens (1 when absent there). Without a candidate, the static cache alone drafts when its
 *   2-gram has ≥ 2 samples and a top share ≥ 50 %. The first miss ends the draft.
 * - Choices: ties between candidates go to the token first seen (llama.cpp takes the first in std::unordered_map
 *   order, which is implementation-defined). llama-server's `--spec-type ngram-cache` (common/speculative.cpp
 *   `common_speculative_impl_ngram_cache`) differs from lookup.cpp in ways we do not copy: n_draft is fixed at 8 (here
 *   `ngramcache.nDraft`, default 8), its context cache is updated only with the n-grams inside each new chunk of
 *   tokens (those spanning the previous chunk's end are lost) and is never reset between a slot's requests, and its
 *   dynamic cache is only read from a file, never updated.
 * - The file format (common_ngram_cache_save): per n-gram, 4 int32 token ids (LLAMA_TOKEN_NULL = −1 after the n-gram's
 *   end), an int32 count of followers, then (int32 token, int32 count) per follower, little-endian, no header. Files
 *   are checked when read: truncated records, non-positive counts, ids outside the vocabulary, malformed padding — one
 *   clear error, never a crash (llama.cpp asserts).
 */
import fs from 'node:fs'
import { UserInputError } from '../errors'
import type { LookupResult, TokenLookup } from '../decoders/drafter'

export const LLAMA_NGRAM_MIN = 1
export const LLAMA_NGRAM_MAX = 4
export const LLAMA_NGRAM_STATIC = 2
/** common_speculative_impl_ngram_cache's n_draft ("TODO get from config?"). */
export const NGRAM_CACHE_N_DRAFT = 8
/** LLAMA_TOKEN_NULL: the padding of an n-gram shorter than LLAMA_NGRAM_MAX. */
const TOKEN_NULL = -1

const DRAFT_MIN_SAMPLE_SIZE_LAX = [2, 2, 1, 1]
const DRAFT_MIN_PERCENT_LAX = [66, 50, 50, 50]
const DRAFT_MIN_SAMPLE_SIZE_STRICT = [4, 3, 2, 2]
const DRAFT_MIN_PERCENT_STRICT = [75, 66, 66, 66]

/** One record of the file: 16 bytes of n-gram and the follower count. */
const NGRAM_BYTES = 4 * LLAMA_NGRAM_MAX
const RECORD_HEAD_BYTES = NGRAM_BYTES + 4

/** token → how many times it followed the n-gram (common_ngram_cache_part); Map keeps first-seen order. */
export type CachePart = Map<number, number>

/** n-gram → its part (common_ngram_cache); keys are the n-gram's ids joined with ','. */
export class NgramCache {
  readonly parts = new Map<string, CachePart>()

  get size(): number {
    return this.parts.size
  }

  part(ngram: readonly number[]): CachePart | undefined {
    return this.parts.get(ngram.join(','))
  }

  /** One more time `token` followed `ngram`. */
  add(ngram: readonly number[], token: number, count = 1): void {
    const key = ngram.join(',')
    let part = this.parts.get(key)
    if (!part) this.parts.set(key, (part = new Map()))
    part.set(token, (part.get(token) ?? 0) + count)
  }

  /** common_ngram_cache_update: the n-grams of sizes [min, max] ending before each of the last `nnew` tokens. */
  update(tokens: readonly number[], nnew: number, min = LLAMA_NGRAM_MIN, max = LLAMA_NGRAM_MAX): void {
    for (let size = min; size <= max; size++)
      for (let i = Math.max(tokens.length - nnew, size); i < tokens.length; i++) this.add(tokens.slice(i - size, i), tokens[i])
  }

  /** common_ngram_cache_merge. */
  merge(other: NgramCache): void {
    for (const [key, part] of other.parts) {
      const ngram = key.split(',').map(Number)
      for (const [token, count] of part) this.add(ngram, token, count)
    }
  }

  /** common_ngram_cache_save's bytes. */
  serialize(): Buffer {
    let bytes = 0
    for (const part of this.parts.values()) bytes += RECORD_HEAD_BYTES + 8 * part.size
    const out = Buffer.alloc(bytes)
    let at = 0
    for (const [key, part] of this.parts) {
      const ngram = key.split(',').map(Number)
      for (let i = 0; i < LLAMA_NGRAM_MAX; i++) out.writeInt32LE(i < ngram.length ? ngram[i] : TOKEN_NULL, at + 4 * i)
      out.writeInt32LE(part.size, at + NGRAM_BYTES)
      at += RECORD_HEAD_BYTES
      for (const [token, count] of part) {
        out.writeInt32LE(token, at)
        out.writeInt32LE(count, at + 4)
        at += 8
      }
    }
    return out
  }

  /** common_ngram_cache_load's reading, checked: `what` names the file in errors. */
  static parse(bytes: Uint8Array, what: string): NgramCache {
    const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const cache = new NgramCache()
    const bad = (at: number, why: string) =>
      new UserInputError(`${what}: not an n-gram cache file (llama.cpp common_ngram_cache_save format): ${why} at byte ${at}`)
    for (let at = 0; at < data.length; ) {
      if (data.length - at < RECORD_HEAD_BYTES) throw bad(at, 'truncated record')
      const ngram: number[] = []
      for (let i = 0; i < LLAMA_NGRAM_MAX; i++) {
        const id = data.readInt32LE(at + 4 * i)
        if (id === TOKEN_NULL) continue
        if (id < 0 || ngram.length < i) throw bad(at, `malformed n-gram (token ${id} at slot ${i})`)
        ngram.push(id)
      }
      if (ngram.length === 0) throw bad(at, 'empty n-gram')
      const followers = data.readInt32LE(at + NGRAM_BYTES)
      at += RECORD_HEAD_BYTES
      if (followers <= 0 || followers > (data.length - at) / 8) throw bad(at - 4, `follower count ${followers}`)
      for (let i = 0; i < followers; i++, at += 8) {
        const token = data.readInt32LE(at)
        const count = data.readInt32LE(at + 4)
        if (token < 0 || count <= 0) throw bad(at, `follower token ${token} with count ${count}`)
        cache.add(ngram, token, count)
      }
    }
    return cache
  }

  /** The largest token id the cache mentions (−1 when empty), for the vocabulary check. */
  maxToken(): number {
    let max = -1
    for (const [key, part] of this.parts) {
      for (const id of key.split(',')) max = Math.max(max, Number(id))
      for (const token of part.keys()) max = Math.max(max, token)
    }
    return max
  }
}

/** Reads a static cache file once per (path, size, mtime): validation at `prepare` and the run share it. */
const loaded = new Map<string, { stamp: string; cache: NgramCache }>()

export function loadNgramCache(file: string): NgramCache {
  let stat: fs.Stats
  try {
    stat = fs.statSync(file)
  } catch {
    throw new UserInputError(`${file}: no such n-gram cache file`)
  }
  if (!stat.isFile()) throw new UserInputError(`${file}: not a file`)
  const stamp = `${stat.size}:${stat.mtimeMs}`
  const hit = loaded.get(file)
  if (hit?.stamp === stamp) return hit.cache
  const cache = NgramCache.parse(fs.readFileSync(file), file)
  loaded.set(file, { stamp, cache })
  return cache
}

/** The static cache of a corpus (examples/lookup/lookup-create.cpp): every 2-gram of the tokens and its follower. */
export function buildStaticCache(tokens: readonly number[]): NgramCache {
  const cache = new NgramCache()
  cache.update(tokens, tokens.length, LLAMA_NGRAM_STATIC, LLAMA_NGRAM_STATIC)
  return cache
}

/** try_draft over the static cache alone. */
function tryStatic(staticPart: CachePart | undefined): number {
  if (!staticPart) return TOKEN_NULL
  let maxCount = 0
  let sum = 0
  let best = TOKEN_NULL
  for (const [token, count] of staticPart) {
    if (count > maxCount) {
      best = token
      maxCount = count
    }
    sum += count
  }
  if (sum < DRAFT_MIN_SAMPLE_SIZE_LAX[LLAMA_NGRAM_STATIC - 1]) return TOKEN_NULL
  if (100 * maxCount < DRAFT_MIN_PERCENT_LAX[LLAMA_NGRAM_STATIC - 1] * sum) return TOKEN_NULL
  return best
}

/** try_draft over a primary cache (context or dynamic), the longest n-gram first, counts weighted by the static part. */
function tryPrimary(
  primary: NgramCache,
  ngrams: readonly (readonly number[])[],
  staticPart: CachePart | undefined,
  minSampleSize: readonly number[],
  minPercent: readonly number[]
): number {
  for (let i = ngrams.length - 1; i >= 0; i--) {
    const part = primary.part(ngrams[i])
    if (!part) continue
    let maxCount = 0
    let maxStatic = 0
    let sum = 0
    let best = TOKEN_NULL
    for (const [token, count] of part) {
      const fromStatic = staticPart?.get(token)
      const weight = fromStatic !== undefined ? 100 * fromStatic : 1
      if (count * weight > maxCount * maxStatic) {
        best = token
        maxCount = count
        maxStatic = weight
      }
      sum += count
    }
    if (sum < minSampleSize[i]) continue
    if (100 * maxCount < minPercent[i] * sum) continue
    return best
  }
  return TOKEN_NULL
}

export interface NgramCacheLevels {
  context: NgramCache
  dynamic: NgramCache
  static: NgramCache
}

/**
 * common_ngram_cache_draft: up to `nDraft` tokens after `sequence` (prompt + output, the last token just committed),
 * and which cache drafted each (`c` context, `d` dynamic, `s` static).
 */
export function draftFromCaches(sequence: readonly number[], nDraft: number, caches: NgramCacheLevels): { tokens: number[]; levels: string } {
  const tokens: number[] = []
  let levels = ''
  if (sequence.length < LLAMA_NGRAM_STATIC) return { tokens, levels }
  const at = (i: number) => (i < sequence.length ? sequence[i] : tokens[i - sequence.length])
  const window = (size: number) => {
    const end = sequence.length + tokens.length
    return Array.from({ length: size }, (_, j) => at(end - size + j))
  }
  while (tokens.length < nDraft) {
    const staticPart = caches.static.part(window(LLAMA_NGRAM_STATIC))
    const ngrams: number[][] = []
    for (let size = LLAMA_NGRAM_MIN; size <= LLAMA_NGRAM_MAX; size++) ngrams.push(window(size))
    let token = tryPrimary(caches.context, ngrams, staticPart, DRAFT_MIN_SAMPLE_SIZE_LAX, DRAFT_MIN_PERCENT_LAX)
    let level = 'c'
    if (token === TOKEN_NULL) {
      token = tryPrimary(caches.dynamic, ngrams, staticPart, DRAFT_MIN_SAMPLE_SIZE_STRICT, DRAFT_MIN_PERCENT_STRICT)
      level = 'd'
    }
    if (token === TOKEN_NULL) {
      token = tryStatic(staticPart)
      level = 's'
    }
    if (token === TOKEN_NULL) break
    tokens.push(token)
    levels += level
  }
  return { tokens, levels }
}

export interface NgramCacheConfig {
  /** Tokens drafted at most per round (n_draft). */
  nDraft: number
  /** The static cache ('' = none). */
  staticFile: string
}

/**
 * A run's ngram-cache state: the dynamic cache shared by the run's prompts and the static cache. `start` makes one
 * prompt's lookup (lookup.cpp: the context cache starts with the prompt's n-grams, grows with every committed token,
 * and is merged into the dynamic cache when the next prompt starts or the run ends).
 */
export class NgramCacheRun {
  readonly dynamic = new NgramCache()
  readonly static: NgramCache
  private pendingContext: NgramCache | null = null

  constructor(readonly config: NgramCacheConfig) {
    this.static = config.staticFile === '' ? new NgramCache() : loadNgramCache(config.staticFile)
  }

  start(promptTokens: readonly number[], vocabularySize: number): TokenLookup {
    if (this.static.maxToken() >= vocabularySize)
      throw new UserInputError(
        `${this.config.staticFile}: this n-gram cache holds token ${this.static.maxToken()}, beyond the target's vocabulary of ` +
          `${vocabularySize} — it was built with another tokenizer (speclab ngram-cache build --model <the target>)`
      )
    // The previous prompt's context goes into the dynamic cache (lookup.cpp's merge after a generation).
    if (this.pendingContext) this.dynamic.merge(this.pendingContext)
    const context = new NgramCache()
    context.update(promptTokens, promptTokens.length)
    this.pendingContext = context
    let seen = promptTokens.length
    return {
      propose: (sequence, limit): LookupResult => {
        // Every committed token since the last round (lookup.cpp updates per accepted token; the result is the same).
        context.update(sequence, sequence.length - seen)
        seen = sequence.length
        // lookup.cpp samples the prompt's first token before its first common_ngram_cache_draft (the draft starts from
        // a sampled token), and llama-server drafts only after a slot has sampled: the first round is the target's.
        if (sequence.length <= promptTokens.length) return { tokens: [], facts: { levels: null, contextNgrams: context.size, dynamicNgrams: this.dynamic.size } }
        const { tokens, levels } = draftFromCaches(sequence, Math.min(this.config.nDraft, limit), {
          context,
          dynamic: this.dynamic,
          static: this.static
        })
        return { tokens, facts: { levels: levels === '' ? null : levels, contextNgrams: context.size, dynamicNgrams: this.dynamic.size } }
      }
    }
  }
}
