/**
 * `ngram-mod`: llama.cpp's rolling-hash n-gram pool, ported from the llama.cpp bundled with node-llama-cpp 3.22.1 —
 * common/ngram-mod.{h,cpp} (`common_ngram_mod`, llama.cpp PR #19164) driven as common/speculative.cpp drives it
 * (`common_speculative_impl_ngram_mod`: begin / draft_one / accept), defaults from common/common.h
 * `common_params_speculative_ngram_mod` (n_match 24, n_max 64, n_min 48).
 *
 * - The pool: a table of 4·2^20 int32 entries; an n-gram (n = n_match tokens) hashes to
 *   idx = (Σ-fold res·6364136223846793005 + token, in 64-bit arithmetic) mod size, and the entry holds the token that
 *   last followed an n-gram of that hash (later writes overwrite, collisions included; −1 = empty). Since the size
 *   is a power of two, only the hash's low 22 bits matter and 32-bit arithmetic gives them exactly.
 * - begin(prompt): every n-gram of the prompt is added (the last one is not: its follower is not known yet); when
 *   the pool is more than 25% full afterwards, it is emptied (but the prompt position is not reset — kept).
 * - draft (inp = history without the token just sampled, sampled = that token): the n-grams added since the last
 *   addition are added in chunks (only once more than 32 new tokens are there); then the key is the last n − 1
 *   tokens of inp + sampled and the draft is a chain: each looked-up token extends the window by one and the next
 *   n-gram is looked up, up to n_max tokens; a miss ends the chain, and a chain shorter than n_min is no draft at
 *   all (variable draft length between n_min and n_max).
 * - accept(k): when the last draft had L > 0 tokens and k/L < 0.25 for 5 drafts in a row, the pool is emptied.
 *
 * One pool is shared by every slot of a llama-server (one common_speculative_impl_ngram_mod, its `mod` "shared across
 * all sequences"); SpecLab's equivalent is one pool per RUN, shared across its prompts, which are decoded one after
 * another as one slot's requests would be (so the slot's low-acceptance streak carries across prompts too; begin
 * resets only its position and last draft length, as llama.cpp's does). A fresh run starts with an empty pool.
 */
import type { LookupResult, TokenLookup } from '../decoders/drafter'

/** common_ngram_mod::EMPTY. */
const EMPTY = -1
/** The pool size common_speculative_impl_ngram_mod allocates: 4*1024*1024 entries. */
export const NGRAM_MOD_POOL_SIZE = 4 * 1024 * 1024
/** The low 32 bits of the LCG factor 6364136223846793005 (0x5851F42D4C957F2D). */
const FACTOR_LO = 0x4c957f2d
/** begin(): reset above this occupancy (f_thold). */
const OCCUPANCY_THRESHOLD = 0.25
/** add new n-grams once more than this many tokens are new (draft_one's chunking). */
const CHUNK = 32
/** accept(): an acceptance fraction below LOW_FRACTION for LOW_STREAK drafts in a row resets the pool. */
const LOW_FRACTION = 0.25
const LOW_STREAK = 5

export interface NgramModConfig {
  /** n_match: the n-gram length hashed (llama.cpp default 24). */
  n: number
  /** n_max: the longest chain drafted (default 64). */
  nMax: number
  /** n_min: a shorter chain is no draft (default 48). */
  nMin: number
}

/** common_ngram_mod: the hashed pool. `size` must be a power of two (llama.cpp's is 2^22). */
export class NgramModPool {
  private readonly entries: Int32Array
  private readonly mask: number
  used = 0
  /** How many times the pool was emptied (occupancy or a low-acceptance streak): for the step records and tests. */
  resets = 0

  constructor(
    readonly n: number,
    readonly size = NGRAM_MOD_POOL_SIZE
  ) {
    if (!(n >= 1)) throw new RangeError('ngram-mod: n must be at least 1')
    if (!(size > 0 && (size & (size - 1)) === 0 && size <= 2 ** 30)) throw new RangeError('ngram-mod: the pool size must be a power of two')
    this.entries = new Int32Array(size).fill(EMPTY)
    this.mask = size - 1
  }

  /** common_ngram_mod::idx over tokens[start .. start + n). */
  idx(tokens: readonly number[], start: number): number {
    let res = 0
    for (let i = 0; i < this.n; ++i) res = (Math.imul(res, FACTOR_LO) + tokens[start + i]) >>> 0
    return res & this.mask
  }

  /** common_ngram_mod::add: tokens[start + n] follows the n-gram at start. */
  add(tokens: readonly number[], start: number): void {
    const i = this.idx(tokens, start)
    if (this.entries[i] === EMPTY) this.used++
    this.entries[i] = tokens[start + this.n]
  }

  /** common_ngram_mod::get: the follower of the n-gram at start, or −1. */
  get(tokens: readonly number[], start: number): number {
    return this.entries[this.idx(tokens, start)]
  }

  reset(): void {
    this.entries.fill(EMPTY)
    this.used = 0
    this.resets++
  }
}

/** A run's ngram-mod state: the pool and the one slot's seq_info, shared by every prompt of the run. */
export class NgramModRun {
  readonly pool: NgramModPool
  /** seq_info: the last position added, the last draft's length, the low-acceptance streak. */
  private iLast = 0
  private nDraftLast = 0
  private nLow = 0

  constructor(
    readonly config: NgramModConfig,
    poolSize = NGRAM_MOD_POOL_SIZE
  ) {
    if (!(config.nMax >= 1 && config.nMin >= 0)) throw new RangeError('ngram-mod: nMax must be at least 1 and nMin at least 0')
    this.pool = new NgramModPool(config.n, poolSize)
  }

  /** common_speculative_impl_ngram_mod::begin. */
  begin(prompt: readonly number[]): void {
    this.iLast = 0
    this.nDraftLast = 0
    const n = this.pool.n
    if (prompt.length < n) return
    for (let i = 0; i < prompt.length - n; ++i) this.pool.add(prompt, i)
    this.iLast = prompt.length - n
    if (this.pool.used / this.pool.size > OCCUPANCY_THRESHOLD) this.pool.reset()
  }

  /** common_speculative_impl_ngram_mod::draft_one: the chain after inp + sampled ([] when shorter than n_min). */
  draft(inp: readonly number[], sampled: number): number[] {
    this.nDraftLast = 0
    const curLen = inp.length
    const n = this.pool.n
    if (curLen < n) return []
    if (this.iLast + CHUNK < curLen) {
      for (let i = this.iLast; i < curLen - n; ++i) this.pool.add(inp, i)
      this.iLast = curLen - n
    }
    const result = [...inp.slice(curLen - n + 1, curLen), sampled]
    for (let i = 0; i < this.config.nMax; ++i) {
      const token = this.pool.get(result, i)
      if (token === EMPTY) {
        if (i < this.config.nMin) return []
        break
      }
      result.push(token)
    }
    const draft = result.slice(n)
    this.nDraftLast = draft.length
    return draft
  }

  /** common_speculative_impl_ngram_mod::accept. */
  accept(accepted: number): void {
    if (this.nDraftLast <= 0) return
    if (accepted / this.nDraftLast < LOW_FRACTION) {
      this.nLow++
      if (this.nLow >= LOW_STREAK) {
        this.pool.reset()
        this.nLow = 0
        this.iLast = 0
      }
    } else this.nLow = 0
  }

  /** One prompt's TokenLookup: begin with the prompt; llama.cpp's schedule (no draft before the first sampled token). */
  start(promptTokens: readonly number[]): TokenLookup {
    this.begin(promptTokens)
    return {
      propose: (sequence): LookupResult => {
        if (sequence.length <= promptTokens.length) return { tokens: [], facts: { chain: null, poolUsed: this.pool.used } }
        const draft = this.draft(sequence.slice(0, -1), sequence[sequence.length - 1])
        return { tokens: draft, facts: { chain: draft.length, poolUsed: this.pool.used, poolResets: this.pool.resets } }
      },
      accepted: (accepted) => this.accept(accepted)
    }
  }
}
