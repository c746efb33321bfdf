/**
 * Token ids → the bytes they stand for, and the map between two vocabularies that it gives: the ground the
 * cross-vocabulary methods (`sd-tli`, and `sd-uad`'s text round trips) stand on. Two tokens of different
 * vocabularies are "the same" when they spell the same byte string (Timor et al. 2025, the vocabularies' token-level
 * intersection; Hugging Face's AssistantToTargetTranslator compares the tokenizers' strings after swapping their
 * space signs — bytes compare across every normalisation at once).
 *
 * Normalisation, by the GGUF's tokenizer.ggml.model (ModelInfo.tokenizerModel):
 *  - 'gpt2' (llama.cpp's BPE: byte-level BPE, GPT-2 / Llama 3 / Qwen …): every character of a token's text is one
 *    byte through GPT-2's bytes_to_unicode table (`Ġ` = space, `Ċ` = newline, …). A text with a character outside
 *    the table (an added token stored as plain text) is taken as UTF-8.
 *  - anything else ('llama' = SentencePiece, toys …): `▁` (U+2581) is a space, `<0xNN>` byte tokens are the byte NN,
 *    the rest is UTF-8.
 *  - Control, unknown and unused tokens (BOS, EOS, `<unk>`, padding; token_type 2, 3, 5, or BOS / EOS when the file
 *    has no types) and empty strings are unmapped: they never enter the intersection.
 * Several ids may spell one byte string (SentencePiece's `a` and its byte fallback `<0x61>`): the byte string maps
 * to the first normal token, else the first user-defined, else the byte token — what the tokenizer itself emits.
 *
 * Byte strings are kept as binary strings (one char per byte, 0–255: Buffer 'latin1'), so they are Map keys and
 * concatenate cheaply; `utf8Of` turns one back into text.
 */
import type { LanguageModel, TokenKind } from './types'

export type Normalisation = 'sentencepiece' | 'byte-level'

export interface VocabularyBytes {
  normalisation: Normalisation
  /** Per id: its byte string (binary string), or null when unmapped. */
  bytes: readonly (string | null)[]
  /** Byte string → the id that represents it (see the file comment). */
  idOf: ReadonlyMap<string, number>
}

/** GPT-2's bytes_to_unicode: printable bytes map to themselves, the other 68 to U+0100 onwards in byte order. */
function byteLevelDecoder(): Map<string, number> {
  const decoder = new Map<string, number>()
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
  let next = 0
  for (let b = 0; b < 256; b++) {
    if (printable(b)) decoder.set(String.fromCharCode(b), b)
    else decoder.set(String.fromCharCode(256 + next++), b)
  }
  return decoder
}
const BYTE_LEVEL = byteLevelDecoder()

/** GPT-2's byte-level spelling of a binary string (`Ġ` for a space …): how byte-level BPE vocabularies store text. */
export function byteLevelText(binary: string): string {
  const encoder = new Map([...BYTE_LEVEL].map(([ch, b]) => [b, ch]))
  let out = ''
  for (let i = 0; i < binary.length; i++) out += encoder.get(binary.charCodeAt(i))!
  return out
}

const SPM_BYTE = /^<0x([0-9A-Fa-f]{2})>$/

/** UTF-8 of `text` as a binary string. */
export function binaryOf(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1')
}

/** A binary string's bytes as UTF-8 text (invalid sequences become U+FFFD). */
export function utf8Of(binary: string): string {
  return Buffer.from(binary, 'latin1').toString('utf8')
}

/** The length of the longest prefix of `binary` that ends on a complete UTF-8 sequence. */
export function completeUtf8Length(binary: string): number {
  // Walk back over at most 3 continuation bytes to the lead byte of the last sequence.
  let i = binary.length - 1
  let continuation = 0
  while (i >= 0 && continuation < 3 && (binary.charCodeAt(i) & 0xc0) === 0x80) {
    i--
    continuation++
  }
  if (i < 0) return binary.length
  const lead = binary.charCodeAt(i)
  const needed = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0
  return lead >= 0xc0 && continuation < needed ? i : binary.length
}

export function normalisationOf(model: LanguageModel): Normalisation {
  return model.info.tokenizerModel === 'gpt2' || model.info.vocabularyType === 'bpe' ? 'byte-level' : 'sentencepiece'
}

const UNMAPPED: ReadonlySet<TokenKind> = new Set(['control', 'unknown', 'unused'])

/** The byte string of one token, or null when it is unmapped. */
export function tokenBytes(text: string, kind: TokenKind, normalisation: Normalisation): string | null {
  if (UNMAPPED.has(kind) || text === '') return null
  if (normalisation === 'byte-level') {
    if (kind !== 'user-defined') {
      let out = ''
      for (const ch of text) {
        const b = BYTE_LEVEL.get(ch)
        if (b === undefined) return binaryOf(text)
        out += String.fromCharCode(b)
      }
      return out
    }
    return binaryOf(text)
  }
  const byte = SPM_BYTE.exec(text)
  if (byte && (kind === 'byte' || kind === 'normal')) return String.fromCharCode(parseInt(byte[1], 16))
  return binaryOf(text.replace(/\u2581/g, ' '))
}

function kindOf(model: LanguageModel, token: number): TokenKind {
  return model.tokenKind?.(token) ?? (token === model.info.bos || token === model.info.eos ? 'control' : 'normal')
}

/** Preference among ids spelling one byte string: normal, then user-defined, then byte tokens; lower id first. */
const RANK: Partial<Record<TokenKind, number>> = { normal: 0, 'user-defined': 1, byte: 2 }

const vocabularies = new WeakMap<LanguageModel, VocabularyBytes>()

/** Every id's byte string, computed once per model. */
export function vocabularyBytes(model: LanguageModel): VocabularyBytes {
  const cached = vocabularies.get(model)
  if (cached) return cached
  const normalisation = normalisationOf(model)
  const bytes: (string | null)[] = []
  const idOf = new Map<string, number>()
  const rankOf = new Map<string, number>()
  for (let token = 0; token < model.info.vocabularySize; token++) {
    const kind = kindOf(model, token)
    const b = tokenBytes(model.tokenText(token), kind, normalisation)
    bytes.push(b)
    if (b === null) continue
    const rank = RANK[kind] ?? 0
    if (!idOf.has(b) || rank < rankOf.get(b)!) {
      idOf.set(b, token)
      rankOf.set(b, rank)
    }
  }
  const result: VocabularyBytes = { normalisation, bytes, idOf }
  vocabularies.set(model, result)
  return result
}

/** The byte string of a token sequence (unmapped tokens spell nothing). */
export function bytesOfTokens(vocabulary: VocabularyBytes, tokens: readonly number[]): string {
  let out = ''
  for (const token of tokens) out += vocabulary.bytes[token] ?? ''
  return out
}

/**
 * The token-level intersection of a target and a draft vocabulary: I = the byte strings both spell. Each draft id
 * in I maps to the target id of its byte string and back; -1 outside I.
 */
export interface CrossVocabulary {
  target: VocabularyBytes
  draft: VocabularyBytes
  /** Draft id → target id of the same byte string, -1 when the target has none. */
  draftToTarget: Int32Array
  /** Target id → the draft id of the same byte string, -1 when the draft has none. */
  targetToDraft: Int32Array
  /** |I|: distinct byte strings in both vocabularies. */
  size: number
  /** Ids of each vocabulary inside I (duplicates spelling one byte string counted each). */
  draftIds: number
  targetIds: number
  /**
   * The draft's tokenizer puts a space before the text it is given (SentencePiece's add_space_prefix: llama.cpp
   * tokenizes "a" as "▁a"), found by tokenizing "a". Re-tokenising text for it then starts after a space.
   */
  draftAddsSpace: boolean
}

const pairs = new WeakMap<LanguageModel, WeakMap<LanguageModel, CrossVocabulary>>()

/** Whether `model.tokenize("a")` spells " a". */
export function addsSpacePrefix(model: LanguageModel, vocabulary = vocabularyBytes(model)): boolean {
  try {
    return bytesOfTokens(vocabulary, model.tokenize('a')) === ' a'
  } catch {
    return false
  }
}

/** The intersection of two vocabularies, computed once per (target, draft) pair (like HF's AssistantVocabTranslatorCache). */
export function crossVocabulary(target: LanguageModel, draft: LanguageModel): CrossVocabulary {
  let byDraft = pairs.get(target)
  if (!byDraft) pairs.set(target, (byDraft = new WeakMap()))
  const cached = byDraft.get(draft)
  if (cached) return cached
  const t = vocabularyBytes(target)
  const d = vocabularyBytes(draft)
  const draftToTarget = new Int32Array(d.bytes.length).fill(-1)
  const targetToDraft = new Int32Array(t.bytes.length).fill(-1)
  let draftIds = 0
  let targetIds = 0
  d.bytes.forEach((b, id) => {
    const mapped = b === null ? undefined : t.idOf.get(b)
    if (mapped === undefined) return
    draftToTarget[id] = mapped
    draftIds++
  })
  t.bytes.forEach((b, id) => {
    const mapped = b === null ? undefined : d.idOf.get(b)
    if (mapped === undefined) return
    targetToDraft[id] = mapped
    targetIds++
  })
  let size = 0
  for (const b of d.idOf.keys()) if (t.idOf.has(b)) size++
  const result: CrossVocabulary = { target: t, draft: d, draftToTarget, targetToDraft, size, draftIds, targetIds, draftAddsSpace: addsSpacePrefix(draft, d) }
  byDraft.set(draft, result)
  return result
}
