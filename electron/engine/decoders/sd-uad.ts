/**
 * `sd-uad`: speculative decoding with a draft of ANOTHER tokenizer by string-level exact match — Hugging Face's
 * Universal Assisted Generation (`AssistedCandidateGeneratorDifferentTokenizers` in
 * transformers/generation/candidate_generator.py: `convert_source_tokens_to_target_tokens`, `_get_tokens_diag`,
 * `target_lookbehind` / `assistant_lookbehind`, both 10 by default) and Timor et al., "Accelerating LLM Inference
 * with Lossless Speculative Decoding Algorithms for Heterogeneous Vocabularies" (ICML 2025, arXiv:2502.05202),
 * SLEM (String-Level Exact Match, §3). Verification is llama-server's sample-then-match for drafts
 * (llama.cpp common/sampling.cpp `common_sampler_sample_and_accept_n`: sample the target's own token at each drafted
 * position, keep the draft token while they agree, stop at the first that differs).
 *
 * Algorithm, one round:
 *  1. The draft (its own tokenizer, its own KV session) continues the text so far: up to `--gamma` draft tokens
 *     that add text, sampled from its warped q (greedy: argmax), stopping at its end-of-generation token or at a
 *     control token that spells no text. Token healing first (`uad.heal`, default on; not in HF or the paper): the
 *     committed text usually ends inside what the draft would write as one token (a target stopping at "…g" of
 *     "girl", or at "was" where the draft's pieces carry the space: "was▁"), and a draft conditioned on such a token
 *     guesses badly; so the draft's last token is taken back and its first token is drawn from q restricted to the
 *     tokens whose text begins with the taken-back text (renormalised; none in q's top-k: the token is given back).
 *     Measured on tinystories-656k → stories-target5M, greedy, γ = 4: 1.2–1.8 target tokens accepted per round
 *     with healing against 0.4 without. The proposal law never matters for exactness (below), so healing is free.
 *  2. Its text is re-tokenised with the TARGET's tokenizer with a look-behind: the text of the last `uad.lookbehind`
 *     committed target tokens (moved back to a word start when one is near) is tokenised together with the draft's
 *     text, and only the tokens after the committed text are proposed. When the tokenizer's own split has a token
 *     spanning the junction (committed "…th", drafted "e cat": it would write "the"), the target cannot take it
 *     back, so the junction piece ("e") is tokenised on its own and the tokens after that token follow.
 *  3. The target scores the k proposed tokens in ONE batched call (k + 1 distributions). At each position i it
 *     draws its own token y_i from its warped p_i with the run's seeded PRNG (greedy: argmax p_i) and keeps the
 *     proposal t_i while y_i = t_i; the first mismatch contributes y_i (provenance 'resampled'), a fully matched
 *     proposal the bonus y_{k+1} ('bonus').
 *  4. The draft is re-synced to the committed text (DraftText): its own tokens whose text lies wholly inside the
 *     committed text stay, then its look-behind window and the rest of the committed text are re-tokenised with
 *     the draft's tokenizer, and the draft session rolls back to the longest common prefix with that sequence
 *     (session-sync.ts rewindTo, as speculative.ts rewinds its sessions): only changed tokens are evaluated again.
 *
 * Lossless for sampling and greedy, whatever the draft and the re-tokenisation do: every emitted token is a fresh
 * draw y_i ~ p_i given the committed prefix (the proposal only decides whether the round goes on), so the output
 * is exactly the target's warped law — the same argument as llama.cpp's and HF's sample-and-match for lookup
 * drafts, and equal in law to verifying the proposal as a point mass q = δ(t_i) (decoders/drafter.ts). Greedy emits
 * argmax p_i at every position: the text equals `ar`'s. SLEM's exact match is the greedy case; at temperature > 0
 * its paper verifies by exact match of sampled tokens, which is this rule.
 *
 * Choices (where HF, the paper or llama.cpp leave room):
 *  - Text is compared as bytes (model/vocabulary-bytes.ts: SentencePiece `▁` / `<0xNN>`, byte-level `Ġ`), never
 *    as detokenised strings, so spaces, byte tokens and split UTF-8 are exact. Only complete UTF-8 is tokenised: a
 *    draft text ending inside a character proposes up to the character before it.
 *  - Alignment by byte offsets instead of HF's longest common diagonal of token ids (`_get_tokens_diag`): the
 *    proposal starts exactly where the committed text ends, and a junction-spanning token is split (step 2) — HF
 *    would propose the spanning token again and lose the round.
 *  - Look-behind: one `uad.lookbehind` (default 10, HF's default for both of its windows) for both directions. The
 *    window starts at the latest word start (a token beginning with a space or newline, or after one ending with
 *    one) at or before lookbehind tokens back (within 2·lookbehind), else exactly lookbehind back; a window the
 *    tokenizer cannot reproduce byte for byte is dropped for the next candidate, and the text alone is the last one.
 *  - SentencePiece tokenizers (llama.cpp's add_space_prefix) put a space before any text: a text starting with a
 *    space is tokenised without it, a lone leading `▁` token is dropped, and a first piece " x" that merged the
 *    added space is replaced by the piece "x" when the vocabulary has it. What no tokenisation spells exactly is
 *    spelled greedily by the longest byte strings of the vocabulary (byte tokens included). A vocabulary without
 *    byte tokens cannot spell every character (tinystories-656k has no "~" or "é", and llama.cpp's tokenizer then
 *    aborts the process): text with such a character is never handed to that tokenizer, and the character is left
 *    out of what the draft sees (its text only steers the proposals).
 *  - The draft's end-of-generation token, after a text that re-tokenised completely, proposes the target's EOS.
 *  - Re-syncing the draft rewrites its look-behind window (HF's "discrepancy" replacement in
 *    `_prepare_assistant_input_ids`): the window's text + the new text is re-tokenised with the draft's tokenizer and
 *    replaces the window when it spells it exactly (else only the new text is tokenised after the kept tokens), so
 *    the draft sees its own split of the text; the KV keeps the common prefix. The target's committed tokens are
 *    never rewritten.
 *  - The draft drafts at most min(γ, tokens left in the --max-tokens budget) tokens that add text, and at most
 *    that budget of target tokens is proposed; `uad.maxProposed` caps the target tokens of a
 *    round further (default 0 = none, as HF: a CPU verification costs nearly linearly in its tokens, and a cap
 *    trades the rare long match for cheaper rounds).
 *  - A round with nothing to propose (the draft's text is empty or cannot continue the committed text) is the
 *    target's own token, provenance 'target', one target call.
 * UAD is a drafter (`uadDrafter`), not a decoder of its own: the speculative round (round.ts) scores, verifies and
 * records its proposals, with sample-then-match as its verifier.
 * Step records are sd's: proposed = target tokens proposed, accepted, resampled / bonus, targetCalls = 1, draftTokens
 * = tokens the DRAFT model generated (its end-of-generation token included) and acceptedDraftTokens = those whose
 * text reached the output (so σ counts wasted draft tokens), draftEntropies = H of the draft's warped q per draft
 * token. `decision`: `draftChars` (characters of draft text), `keptChars` (its longest prefix that the round
 * committed — draft text that ended up in the output, a correction that happens to spell it included),
 * `textKept` = keptChars / draftChars, `junction` (a target token spanned the junction), `retokenised` (draft tokens
 * re-tokenised to re-sync) and `stoppedBy` ('cap', 'eog', 'control'). The run summary's `textKept` is Σ keptChars /
 * Σ draftChars (metrics/fold.ts).
 */
import type { LanguageModel, ModelSession } from '../model/types'
import { addsSpacePrefix, bytesOfTokens, completeUtf8Length, utf8Of, vocabularyBytes, type VocabularyBytes } from '../model/vocabulary-bytes'
import { argmax, entropy, fromWeights, sample, type Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import type { Verdict } from '../sampling/verify'
import { plainFixedLength } from '../policies/fixed'
import { pointMass, type DraftOutcome, type Drafter, type DraftSettlement } from './drafter'
import { countedCall } from './round'
import { now, rewindTo } from './session-sync'
import { speculativeDecoder } from './speculative'
import type { Decoder } from './types'
import type { ExactRule } from './verifier'

/** HF's `target_lookbehind` / `assistant_lookbehind` default (GenerationConfig). */
export const DEFAULT_LOOKBEHIND = 10

/** A model's tokenizer as text (binary strings of bytes) ↔ tokens with exact byte spans. */
export interface TextTokenizer {
  model: LanguageModel
  vocabulary: VocabularyBytes
  /** SentencePiece's add_space_prefix: tokenize("a") spells " a". */
  addsSpace: boolean
  /** The longest byte string of one token (bounds the greedy byte spelling). */
  longest: number
  /**
   * Every byte is a token (byte-level BPE, SentencePiece with `<0xNN>` fallback). Otherwise llama.cpp's SentencePiece
   * tokenizer aborts the process (std::out_of_range in its byte fallback) on a character it has no token for —
   * tinystories-656k on "~" or "é" — so such text never reaches it (tokenizeRaw).
   */
  everyByte: boolean
}

const tokenizers = new WeakMap<LanguageModel, TextTokenizer>()

export function textTokenizer(model: LanguageModel): TextTokenizer {
  const cached = tokenizers.get(model)
  if (cached) return cached
  const vocabulary = vocabularyBytes(model)
  let longest = 1
  for (const b of vocabulary.bytes) if (b !== null && b.length > longest) longest = b.length
  let everyByte = true
  for (let b = 0; b < 256 && everyByte; b++) everyByte = vocabulary.idOf.has(String.fromCharCode(b))
  const tokenizer: TextTokenizer = { model, vocabulary, addsSpace: addsSpacePrefix(model, vocabulary), longest, everyByte }
  tokenizers.set(model, tokenizer)
  return tokenizer
}

const spell = (tk: TextTokenizer, tokens: readonly number[]): string => bytesOfTokens(tk.vocabulary, tokens)
const lengthOf = (tk: TextTokenizer, token: number): number => (tk.vocabulary.bytes[token] ?? '').length
const isContinuationByte = (code: number): boolean => (code & 0xc0) === 0x80

/** The UTF-8 characters of a binary string, each as its bytes. */
function charactersOf(binary: string): string[] {
  const out: string[] = []
  for (let i = 0; i < binary.length; ) {
    let end = i + 1
    while (end < binary.length && isContinuationByte(binary.charCodeAt(end))) end++
    out.push(binary.slice(i, end))
    i = end
  }
  return out
}

/** Whether the tokenizer may be given `text`: it has every byte, or a token for every character of it. */
function tokenizable(tk: TextTokenizer, text: string): boolean {
  return tk.everyByte || charactersOf(text).every((ch) => tk.vocabulary.idOf.has(ch))
}

function tokenizeRaw(tk: TextTokenizer, text: string): number[] | null {
  if (!tokenizable(tk, text)) return null
  try {
    return tk.model.tokenize(utf8Of(text))
  } catch {
    return null
  }
}

/**
 * The model's own tokenisation of `text` (a binary string of complete UTF-8), when it spells exactly `text`;
 * null otherwise. Undoes a SentencePiece tokenizer's space prefix (see the file comment).
 */
export function tokenizeExact(tk: TextTokenizer, text: string): number[] | null {
  if (text === '') return []
  const exact = (ids: readonly number[] | null): boolean => ids !== null && spell(tk, ids) === text
  if (!tk.addsSpace) {
    const ids = tokenizeRaw(tk, text)
    return exact(ids) ? ids : null
  }
  if (text.startsWith(' ') && text.length > 1) {
    const ids = tokenizeRaw(tk, text.slice(1))
    if (exact(ids)) return ids
  }
  const ids = tokenizeRaw(tk, text)
  if (ids === null || ids.length === 0) return null
  if (exact(ids)) return ids
  const first = tk.vocabulary.bytes[ids[0]] ?? ''
  if (first === ' ' && exact(ids.slice(1))) return ids.slice(1)
  if (first.startsWith(' ') && first.length > 1) {
    const bare = tk.vocabulary.idOf.get(first.slice(1))
    const out = bare === undefined ? null : [bare, ...ids.slice(1)]
    if (exact(out)) return out
  }
  return null
}

/**
 * `text` spelled by greedy longest match over the vocabulary's byte strings; null when some byte has no token, or
 * with `skip` the characters nothing spells left out.
 */
export function spellGreedily(tk: TextTokenizer, text: string, skip = false): number[] | null {
  const out: number[] = []
  let i = 0
  while (i < text.length) {
    let found = -1
    let length = Math.min(tk.longest, text.length - i)
    for (; length > 0; length--) {
      const id = tk.vocabulary.idOf.get(text.slice(i, i + length))
      if (id !== undefined) {
        found = id
        break
      }
    }
    if (found < 0) {
      if (!skip) return null
      i++
      while (i < text.length && isContinuationByte(text.charCodeAt(i))) i++
      continue
    }
    out.push(found)
    i += length
  }
  return out
}

/**
 * Exact tokens for `text`: the tokenizer's own, else greedy by bytes; else (a character the vocabulary cannot spell)
 * the greedy spelling without it.
 */
function encode(tk: TextTokenizer, text: string): { tokens: number[]; exact: boolean } {
  const own = tokenizeExact(tk, text) ?? spellGreedily(tk, text)
  if (own !== null) return { tokens: own, exact: true }
  return { tokens: spellGreedily(tk, text, true) ?? [], exact: false }
}

/** How a text was continued: the tokens after the committed ones, and how they were found. */
export interface Continuation {
  tokens: number[]
  /** The tokens spell exactly the text. */
  exact: boolean
  /** A token of the tokenizer's own split spanned the junction and was split there. */
  junction: boolean
  /** Committed tokens re-tokenised with the text as look-behind (0: the text alone). */
  window: number
}

/** Whether a window may start at sequence[i]: a token with text that begins a word (or the text). */
function isWordStart(tk: TextTokenizer, sequence: readonly number[], i: number): boolean {
  const own = tk.vocabulary.bytes[sequence[i]]
  if (!own) return false
  if (own[0] === ' ' || own[0] === '\n') return true
  for (let j = i - 1; j >= 0; j--) {
    const before = tk.vocabulary.bytes[sequence[j]]
    if (!before) continue
    const last = before[before.length - 1]
    return last === ' ' || last === '\n'
  }
  return true // the first token of the text
}

/** Window starts to try, best first: the latest word start at or before `lookbehind` back, then exactly that. */
function windowStarts(tk: TextTokenizer, sequence: readonly number[], lookbehind: number): number[] {
  const end = sequence.length
  let base = Math.max(0, end - lookbehind)
  while (base < end - 1 && !tk.vocabulary.bytes[sequence[base]]) base++ // not at a BOS or another control token
  const starts: number[] = []
  for (let i = base; i >= Math.max(0, base - lookbehind); i--) {
    if (isWordStart(tk, sequence, i)) {
      starts.push(i)
      break
    }
  }
  if (!starts.includes(base)) starts.push(base)
  return starts
}

/**
 * Tokens of `tk` that continue `sequence` (tokens of the same model, never rewritten) with `text` (complete UTF-8
 * from where the sequence's text ends): the tokenizer's split of the last `lookbehind` tokens' text + `text`, after
 * the committed part — see the file comment (look-behind, junction).
 */
export function continueText(tk: TextTokenizer, sequence: readonly number[], text: string, lookbehind: number): Continuation {
  if (text === '') return { tokens: [], exact: true, junction: false, window: 0 }
  for (const start of windowStarts(tk, sequence, lookbehind)) {
    const committed = spell(tk, sequence.slice(start))
    if (committed === '') break // nothing to look behind at: the text alone
    if (isContinuationByte(committed.charCodeAt(0))) continue
    const full = committed + text
    const ids = tokenizeExact(tk, full)
    if (ids === null) continue
    const window = sequence.length - start
    let at = 0
    for (let j = 0; j < ids.length; j++) {
      const end = at + lengthOf(tk, ids[j])
      if (at === committed.length) return { tokens: ids.slice(j), exact: true, junction: false, window }
      if (at < committed.length && end > committed.length) {
        const piece = encode(tk, full.slice(committed.length, end))
        return { tokens: [...piece.tokens, ...ids.slice(j + 1)], exact: piece.exact, junction: true, window }
      }
      at = end
    }
  }
  const alone = encode(tk, text)
  return { tokens: alone.tokens, exact: alone.exact, junction: false, window: 0 }
}

/**
 * Sample-then-match (llama-server's verification of non-greedy drafts): at each proposed position the target draws
 * its own token y_i from p_i (greedy: argmax) and the proposal is kept while it equals y_i; the first mismatch
 * emits y_i, a fully matched proposal the bonus y_{k+1}. One uniform draw per examined position, in order.
 */
export function sampleThenMatch(proposal: readonly number[], p: readonly Distribution[], greedy: boolean, rng: Prng): Verdict {
  for (let i = 0; i < proposal.length; i++) {
    const own = greedy ? argmax(p[i]) : sample(p[i], rng)
    if (own !== proposal[i]) return { accepted: i, next: own, rejected: true }
  }
  const last = p[proposal.length]
  return { accepted: proposal.length, next: greedy ? argmax(last) : sample(last, rng), rejected: false }
}

/** How proposals are verified; sampleThenMatch, replaced only by the tests' negative control. */
export type MatchVerifier = (proposal: readonly number[], p: readonly Distribution[], greedy: boolean, rng: Prng) => Verdict

export interface SdUadOptions {
  /** Draft tokens per round (the cap). */
  gamma: number
  /** Committed tokens re-tokenised with new text on both sides. */
  lookbehind?: number
  /** Re-tokenise the draft's look-behind window when re-syncing (default true; see DraftText). */
  rewrite?: boolean
  /** Token healing of the draft's last token before drafting (default true; see draftText). */
  heal?: boolean
  /** The most target tokens proposed per round (0 or absent: all the draft's text re-tokenises into). */
  maxProposed?: number
  verify?: MatchVerifier
}

/**
 * The draft's view of the committed text: its token sequence (its BOS, then tokens spelling the first `covered`
 * bytes of `text`, the target's committed text as bytes). Bytes after `covered` wait for a complete character.
 */
export class DraftText {
  readonly tokens: number[] = []
  text: string
  covered = 0
  /** Draft tokens written by re-tokenisation so far. */
  retokenised = 0

  /** Index of the first text token (after the BOS). */
  private readonly first: number

  constructor(
    private readonly tk: TextTokenizer,
    private readonly lookbehind: number,
    committedText: string,
    private readonly rewrite = true
  ) {
    const { bos, addBos } = tk.model.info
    if (bos !== null && addBos !== false) this.tokens.push(bos)
    this.first = this.tokens.length
    this.text = committedText
    this.catchUp()
  }

  /**
   * The target committed `added` (bytes); `drafted` are the draft's own tokens of the round, which spell text
   * continuing `covered` (after taking back its last `healed` tokens, which the first drafted one replaced): those
   * wholly inside the committed text are kept, the rest is re-tokenised. Returns how many drafted tokens were kept.
   */
  commit(added: string, drafted: readonly number[], healed = 0): number {
    this.text += added
    for (let i = 0; i < healed; i++) this.covered -= (this.tk.vocabulary.bytes[this.tokens.pop()!] ?? '').length
    let at = this.covered
    let kept = 0
    for (const token of drafted) {
      const bytes = this.tk.vocabulary.bytes[token]
      if (!bytes) break
      if (at + bytes.length > this.text.length || this.text.slice(at, at + bytes.length) !== bytes) break
      this.tokens.push(token)
      at += bytes.length
      kept++
    }
    this.covered = at
    this.catchUp()
    return kept
  }

  /**
   * Tokenises the committed text after `covered` up to its last complete character. With `rewrite`, the draft's
   * last tokens (the look-behind window) are re-tokenised together with it and replaced by the tokenizer's split
   * (HF's "discrepancy" replacement), so the draft sees its own tokenisation of the text; else they are kept.
   */
  private catchUp(): void {
    const end = completeUtf8Length(this.text)
    if (end <= this.covered) return
    const text = this.text.slice(this.covered, end)
    if (this.rewrite && this.rewriteWindow(text)) {
      this.covered = end
      return
    }
    const added = continueText(this.tk, this.tokens, text, this.lookbehind)
    this.tokens.push(...added.tokens)
    this.retokenised += added.tokens.length
    this.covered = end
  }

  private rewriteWindow(text: string): boolean {
    for (const start of windowStarts(this.tk, this.tokens, this.lookbehind)) {
      if (start < this.first) continue
      const old = this.tokens.slice(start)
      const committed = spell(this.tk, old)
      if (committed !== '' && isContinuationByte(committed.charCodeAt(0))) continue
      const ids = tokenizeExact(this.tk, committed + text)
      if (ids === null) continue
      let same = 0
      while (same < old.length && same < ids.length && old[same] === ids[same]) same++
      this.tokens.length = start
      this.tokens.push(...ids)
      this.retokenised += ids.length - same
      return true
    }
    return false
  }
}

interface UadDraft {
  /**
   * Draft tokens with text, in order (the end-of-generation / control token that stopped drafting excluded). With
   * healing, the first one replaces the view's last token and spells its text first.
   */
  tokens: number[]
  /** View tokens the draft replaced (token healing: 1, else 0). */
  healed: number
  entropies: number[]
  /** The draft ended its text with its end-of-generation token. */
  eog: boolean
  calls: number
  ms: number
  stoppedBy: 'cap' | 'eog' | 'control'
}

/** q restricted to the tokens whose text starts with `prefix`, renormalised; null when q has none. */
export function restrictToPrefix(q: Distribution, prefix: string, tk: TextTokenizer): Distribution | null {
  const ids: number[] = []
  const weights: number[] = []
  for (let i = 0; i < q.ids.length; i++) {
    const bytes = tk.vocabulary.bytes[q.ids[i]]
    if (bytes?.startsWith(prefix) && q.probs[i] > 0) {
      ids.push(q.ids[i])
      weights.push(q.probs[i])
    }
  }
  return ids.length > 0 ? fromWeights(ids, weights) : null
}

/**
 * Up to `limit` draft tokens that add text after `sequence` (the view's tokens). With `heal` (token healing), the
 * view's last token is taken back and the first draft token is drawn from q restricted to the tokens that start
 * with its text (the text ends where the target stopped, usually inside what the draft would write as one token),
 * falling back to the unhealed sequence when q's top-k has none.
 */
async function draftText(
  session: ModelSession,
  sequence: readonly number[],
  heal: boolean,
  limit: number,
  tk: TextTokenizer,
  greedy: boolean,
  rng: Prng
): Promise<UadDraft> {
  const draft: UadDraft = { tokens: [], healed: 0, entropies: [], eog: false, calls: 0, ms: 0, stoppedBy: 'cap' }
  const last = sequence[sequence.length - 1]
  let prefix = heal && sequence.length > 1 ? (tk.vocabulary.bytes[last] ?? '') : ''
  let pending = await rewindTo(session, prefix === '' ? sequence : sequence.slice(0, -1))
  let added = 0
  for (;;) {
    const [q] = await countedCall(session, pending, draft)
    let from = q
    if (prefix !== '') {
      const restricted = restrictToPrefix(q, prefix, tk)
      if (restricted === null) {
        // Nothing in the top-k continues the healed text: give the draft its token back and draft after it.
        prefix = ''
        pending = [last]
        continue
      }
      from = restricted
    }
    const token = greedy ? argmax(from) : sample(from, rng)
    draft.entropies.push(entropy(from))
    if (tk.model.isEndOfGeneration(token)) {
      draft.eog = true
      draft.stoppedBy = 'eog'
      return draft
    }
    const bytes = tk.vocabulary.bytes[token]
    if (!bytes) {
      draft.stoppedBy = 'control'
      return draft
    }
    draft.tokens.push(token)
    if (prefix !== '') draft.healed = 1
    if (bytes.length > prefix.length) added++
    prefix = ''
    if (added >= limit) return draft
    pending = [token]
  }
}

/** Characters of a byte string (its complete UTF-8 prefix). */
const characters = (binary: string): number => [...utf8Of(binary.slice(0, completeUtf8Length(binary)))].length

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++
  return i
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000

/** Why drafting stopped, in the words the policy seam knows: the cap, the engine (EOG), the drafter (a control token). */
const DRAFT_STOPS = { cap: 'cap', eog: 'engine', control: 'drafter' } as const

/** Step 2's outcome: the target tokens proposed, and what the settlement after the commit needs of the round. */
interface TextProposal {
  tokens: number[]
  /** The draft's new text after the committed text (complete characters). */
  fresh: string
  junction: boolean
  /** The target's EOS closes the proposal (the draft ended its text there). */
  eosProposed: boolean
}

/**
 * Steps 2 (and the EOS choice): the draft's text after the committed text, re-tokenised with the target's tokenizer
 * and its look-behind, at most `budget` tokens (and uad.maxProposed).
 */
function proposeText(
  draft: UadDraft,
  view: DraftText,
  sequence: readonly number[],
  budget: number,
  options: SdUadOptions,
  targetTk: TextTokenizer,
  draftTk: TextTokenizer
): TextProposal {
  // The draft's text starts where its kept view ends (before the healed token); the target's committed text
  // runs further (the healed token's text, an incomplete character): the proposal starts after it.
  const drafted = spell(draftTk, draft.tokens)
  const draftStart = view.covered - (draft.healed > 0 ? lengthOf(draftTk, view.tokens[view.tokens.length - 1]) : 0)
  const waiting = view.text.slice(draftStart)
  const complete = completeUtf8Length(drafted)
  const fresh = drafted.startsWith(waiting) ? drafted.slice(waiting.length, Math.max(waiting.length, complete)) : ''
  const continuation = continueText(targetTk, sequence, fresh, options.lookbehind ?? DEFAULT_LOOKBEHIND)
  const tokens = continuation.tokens.slice(0, options.maxProposed ? Math.min(budget, options.maxProposed) : budget)
  const eos = targetTk.model.info.eos
  const eosProposed =
    draft.eog &&
    complete === drafted.length &&
    drafted.startsWith(waiting) &&
    tokens.length === continuation.tokens.length &&
    eos !== null &&
    tokens.length < budget
  if (eosProposed) tokens.push(eos!)
  return { tokens, fresh, junction: continuation.junction, eosProposed }
}

/**
 * Step 4 and the round's facts: the draft's view takes the committed text; returns how much of the draft's text and
 * which of its tokens reached the output.
 */
function settleText(view: DraftText, round: { draft: UadDraft; text: TextProposal }, outcome: DraftOutcome, targetTk: TextTokenizer): DraftSettlement {
  const { draft, text } = round
  const added = spell(targetTk, outcome.emitted)
  const before = view.retokenised
  // Draft tokens whose text reached the output (its end-of-generation token when the target took the EOS).
  let keptDraftTokens = view.commit(added, draft.tokens, draft.healed)
  if (text.eosProposed && outcome.accepted === outcome.proposed) keptDraftTokens++
  // Draft text kept: the longest prefix of the fresh draft text that this round committed.
  const kept = commonPrefixLength(text.fresh, added)
  const draftChars = characters(text.fresh)
  const keptChars = characters(text.fresh.slice(0, kept))
  return {
    facts: {
      draftChars,
      keptChars,
      textKept: draftChars > 0 ? round3(keptChars / draftChars) : null,
      junction: text.junction,
      retokenised: view.retokenised - before,
      stoppedBy: draft.stoppedBy
    },
    acceptedDrafted: Math.min(keptDraftTokens, draft.calls)
  }
}

/**
 * UAD as a drafter of the speculative round (HF's AssistedCandidateGeneratorDifferentTokenizers is a candidate
 * generator too): steps 1–2 propose, the round verifies (step 3, sample-then-match), `update` re-syncs (step 4).
 * The proposal's laws are point masses δ(t_i): what sample-then-match is equal to in law.
 */
export function uadDrafter(options: SdUadOptions): Drafter {
  return {
    stage: 'sd-uad',
    async open(models, request) {
      const draftModel = models.draft
      if (!draftModel) throw new Error('sd-uad needs a draft model')
      const targetTk = textTokenizer(models.target)
      const draftTk = textTokenizer(draftModel)
      const session = await draftModel.createSession(request.warp)
      const lookbehind = options.lookbehind ?? DEFAULT_LOOKBEHIND
      const view = new DraftText(draftTk, lookbehind, spell(targetTk, request.promptTokens), options.rewrite ?? true)
      let last: { draft: UadDraft; text: TextProposal } | null = null
      return {
        async propose({ sequence, limit, greedy, rng }) {
          const budget = request.maxTokens - (sequence.length - request.promptTokens.length)
          const heal = options.heal !== false && view.covered === view.text.length
          const draft = await draftText(session, view.tokens, heal, limit, draftTk, greedy, rng)
          const mapping = now()
          const text = proposeText(draft, view, sequence, budget, options, targetTk, draftTk)
          last = { draft, text }
          return {
            tokens: text.tokens,
            distributions: text.tokens.map(pointMass),
            entropies: draft.entropies,
            calls: draft.calls,
            ms: draft.ms + (now() - mapping),
            stoppedBy: DRAFT_STOPS[draft.stoppedBy],
            drafted: draft.calls
          }
        },
        update: (outcome) => (last ? settleText(view, last, outcome, targetTk) : undefined),
        dispose: () => session.dispose()
      }
    }
  }
}

/** sd-uad: the speculative round with the UAD drafter, γ fixed, verified by sample-then-match (`options.verify`). */
export function sdUadDecoder(options: SdUadOptions): Decoder {
  const verify = options.verify ?? sampleThenMatch
  const matching: ExactRule = (tokens, _q, p, greedy, rng) => verify(tokens, p, greedy, rng)
  return speculativeDecoder(plainFixedLength(options.gamma), uadDrafter(options), matching)
}
