/**
 * The model-session seam: everything a decoder needs from a language model.
 *
 * A session mirrors one KV cache. `append` evaluates tokens in ONE batched call and returns the warped next-token
 * distribution after each appended token from `distributionsFrom` on; `truncate` rolls the cache back. Both the
 * node-llama-cpp adapter and the pure-TS toy model return RAW logits to the shared `warp` function, so draft and
 * target are always warped identically (see sampling/warp.ts).
 */
import type { Distribution } from '../sampling/distribution'
import type { WarpConfig } from '../sampling/warp'

export interface ModelInfo {
  /** Absolute path of the GGUF, or a name for toy models. */
  path: string
  name: string
  architecture: string
  vocabularySize: number
  bos: number | null
  eos: number | null
  /**
   * What the vocabulary check compares besides sizes, ids and texts (model/vocabulary-check.ts): llama.cpp's vocab
   * type ('spm', 'bpe', …; toy models 'toy'), the GGUF's tokenizer.ggml.model, and whether the tokenizer adds BOS /
   * EOS. Absent = unknown (compared as null).
   */
  vocabularyType?: string | null
  tokenizerModel?: string | null
  addBos?: boolean | null
  addEos?: boolean | null
  /** Parameters when the file says so. */
  parameters: number | null
  quantization: string | null
  sizeBytes: number | null
}

/** What a session computes besides the warped distributions. */
export interface SessionOptions {
  /**
   * Give every returned distribution its `fullEntropy`: H of the softmax of the raw logits over the whole
   * vocabulary (temperature 1, no top-k/top-p). node-llama-cpp then transfers every logit of each requested
   * position (like --full-vocabulary; ~10 ms per position at a 32k vocabulary), so decoders ask for it only for the
   * draft sessions of policies that threshold it (svip, self-verify).
   */
  fullEntropy?: boolean
}

export interface ModelSession {
  /** Tokens whose state the cache holds, in order. */
  readonly tokens: readonly number[]
  /**
   * Append `tokens` in one batched evaluation. Returns the warped next-token distribution after each appended
   * token with index ≥ `distributionsFrom` (so `tokens.length - distributionsFrom` distributions).
   * Tokens may be ids of another model of the trio that this model's vocabulary lacks (vocabularies may differ in
   * size by padding, model/vocabulary-check.ts): they are evaluated as a stand-in token and kept as given in
   * `tokens`. What follows such a token only steers what a drafter proposes, never the output law.
   */
  append(tokens: readonly number[], distributionsFrom: number): Promise<Distribution[]>
  /** Keep the first `length` tokens of the cache, erase the rest. */
  truncate(length: number): Promise<void>
  /**
   * Optional: replace this session's cache by the first `length` tokens of `source`'s cache (a session of the same
   * model) without re-evaluating them. Resolves false when it cannot (the caller re-evaluates instead); this
   * session's `tokens` then tell what its cache holds. Beam decoders fork beams with it (decoders/beam.ts).
   */
  copyFrom?(source: ModelSession, length: number): Promise<boolean>
  /**
   * Optional: the backend's KV sequence id. llama.cpp (one KV stream per sequence) puts only sequences with
   * consecutive ids into one micro-batch, so decoders that evaluate several sessions together order them by it.
   */
  readonly sequenceId?: number
  dispose(): Promise<void>
}

/** llama.cpp's token types (llama_token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte). */
export type TokenKind = 'normal' | 'unknown' | 'control' | 'user-defined' | 'unused' | 'byte'

export interface LanguageModel {
  readonly info: ModelInfo
  /** Text → tokens, without BOS. */
  tokenize(text: string): number[]
  detokenize(tokens: readonly number[]): string
  /** The vocabulary's text for one token (used by the compatibility check). */
  tokenText(token: number): string
  /**
   * Optional: what kind of entry a token is (GGUF tokenizer.ggml.token_type). Cross-vocabulary methods map only
   * text tokens (normal, byte, user-defined) between vocabularies (model/vocabulary-bytes.ts); absent = BOS / EOS are
   * control tokens and every other id is normal.
   */
  tokenKind?(token: number): TokenKind
  /** True for end-of-generation tokens (EOS, EOT, ...). */
  isEndOfGeneration(token: number): boolean
  createSession(warp: WarpConfig, options?: SessionOptions): Promise<ModelSession>
  /** Optional: how many more sessions can be open at once (node-llama-cpp: free context sequences); absent = no limit. */
  sessionsLeft?(): number
  /**
   * log p(tokens[i] | tokens[<i]) for i = 1 … n−1 under the raw model (temperature 1, no warping), in one batched
   * evaluation on a scratch sequence — for perplexities (draft-model selection features, beam quality).
   */
  logProbabilities(tokens: readonly number[]): Promise<number[]>
  dispose(): Promise<void>
}
