/**
 * `pld`: prompt lookup decoding as Hugging Face transformers writes it — `PromptLookupCandidateGenerator.get_candidates`
 * (src/transformers/generation/candidate_generator.py; after Saxena's prompt-lookup-decoding,
 * github.com/apoorvumang/prompt-lookup-decoding). For n from min(max_matching_ngram_size, L − 1) down to 1, the
 * suffix n-gram of the whole sequence (prompt + output, length L) is matched against every window of the sequence,
 * left to right; the FIRST match whose continuation is non-empty wins (HF's TODO says it may not be the longest
 * continuation; we keep HF's choice), and the following tokens up to `num_output_tokens` (k) — and never past the
 * sequence's end — are proposed, cut before the first end-of-generation token (HF: "otherwise the target model may
 * accept eos and the rest"). No match at any n: no candidates, the target decodes one token alone.
 * Left out: HF's `logits_processor` check of forbidden tokens (SpecLab has no such processors; top-k / top-p are
 * warpers, and a token outside the target's support is simply rejected) and its max_length rule (the engine's
 * --max-tokens budget cuts every method's drafts alike). The proposal is verified as a point mass (decoders/drafter.ts).
 */
import type { LookupResult, TokenLookup } from '../decoders/drafter'

export interface PromptLookupOptions {
  /** max_matching_ngram_size (HF default 2). */
  maxNgram: number
  /** num_output_tokens / prompt_lookup_num_tokens: the most tokens proposed. */
  k: number
}

/** HF's get_candidates on `sequence`; isEnd marks end-of-generation tokens. */
export function promptLookup(sequence: readonly number[], options: PromptLookupOptions, isEnd: (token: number) => boolean): LookupResult {
  const length = sequence.length
  for (let n = Math.min(options.maxNgram, length - 1); n > 0; n--) {
    const suffix = length - n
    for (let index = 0; index <= length - n; index++) {
      let match = true
      for (let j = 0; j < n && match; j++) match = sequence[index + j] === sequence[suffix + j]
      if (!match) continue
      const start = index + n
      const end = Math.min(start + options.k, length)
      if (start >= end) continue
      const tokens = sequence.slice(start, end)
      const eos = tokens.findIndex(isEnd)
      return { tokens: eos >= 0 ? tokens.slice(0, eos) : tokens, facts: { ngram: n, matchAt: index } }
    }
  }
  return { tokens: [], facts: { ngram: 0, matchAt: null } }
}

export function promptLookupState(options: PromptLookupOptions, isEnd: (token: number) => boolean): TokenLookup {
  return { propose: (sequence, limit) => promptLookup(sequence, { ...options, k: Math.min(options.k, limit) }, isEnd) }
}
