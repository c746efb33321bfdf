/**
 * Can two models run speculative decoding together? Decoders compare token ids across models, so the ids must mean
 * the same thing in both. SpecLab decides it as llama.cpp does (common/speculative.cpp,
 * `common_speculative_are_compatible`, in the llama.cpp bundled with node-llama-cpp), one rule after the other:
 *
 *   1. tokenizer   the same tokenizer model (llama.cpp's vocab type: SPM, BPE, WPM, UGM, RWKV, …);
 *   2. BOS / EOS   the same add-BOS and add-EOS flags, and the same BOS and EOS ids. llama.cpp compares an id only
 *                  when its add flag is set; SpecLab always compares both, because it starts every sequence of every
 *                  model with the target's BOS and ends generation on the target's end-of-generation tokens;
 *   3. size        vocabulary sizes differ by at most 128 (`SPEC_VOCAB_MAX_SIZE_DIFFERENCE`): conversions pad the
 *                  embedding / output matrices to a multiple of 64 or 128 (Qwen2.5 7B and larger: 152,064 entries;
 *                  0.5B–3B: 151,936), and the padded ids are never produced by the tokenizer;
 *   4. texts       every token text of the common range [5, min(sizes)) is identical (`SPEC_VOCAB_CHECK_START_TOKEN_ID`
 *                  = 5, compared with strcmp as here). The first five ids are control tokens (unknown, BOS, EOS,
 *                  padding, …) whose spelling differs between conversions of one tokenizer; the ones that matter to
 *                  decoding, BOS and EOS, are compared by id in rule 2. We follow llama.cpp rather than compare from
 *                  0, so SpecLab accepts exactly the pairs llama.cpp's own speculative decoding accepts, and we say
 *                  when ids 0–4 differ.
 *
 * Padding is exact (docs/methods.md, "Vocabularies of different sizes"): a draft only proposes ids of its own
 * vocabulary; an id the target lacks has p = 0 and is always rejected; mass the target puts on ids the draft lacks is
 * covered by the residual norm(max(0, p − q)), where q = 0 there. Models evaluate an id of the other model's
 * vocabulary that they lack as a stand-in token (llama-cpp-model.ts), which only changes what the drafter proposes
 * next, never the output law.
 *
 * One implementation of the rules, `compareVocabularies`, serves both the loaded-model check (`assertSameVocabulary`,
 * on every load) and the header check of the Models screen and `speclab models inspect` (host/model-library.ts).
 */
import { UserInputError } from '../errors'
import type { LanguageModel } from './types'

/** llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE. */
export const MAX_VOCABULARY_SIZE_DIFFERENCE = 128
/** llama.cpp's SPEC_VOCAB_CHECK_START_TOKEN_ID: token texts are compared from this id on. */
export const TOKEN_TEXT_CHECK_START = 5

/** What the rules look at, from a loaded model or from a GGUF header. */
export interface VocabularyFacts {
  /** llama.cpp's vocab type ('spm', 'bpe', 'wpm', 'ugm', 'rwkv', 'plamo2', 'none'; toy models 'toy'); null = unknown. */
  vocabularyType: string | null
  /** The GGUF's tokenizer.ggml.model ('llama', 'gpt2', …), for messages. */
  tokenizerModel: string | null
  size: number
  bos: number | null
  eos: number | null
  /** Whether the tokenizer adds BOS / EOS (tokenizer.ggml.add_bos_token / add_eos_token or llama.cpp's default). */
  addBos: boolean | null
  addEos: boolean | null
  tokenText(token: number): string
}

export type VocabularyRule = 'tokenizer' | 'add-bos' | 'bos' | 'add-eos' | 'eos' | 'size' | 'token-text'

export type VocabularyVerdict =
  | {
      compatible: true
      /** |size(target) − size(other)|: 0, or padding within llama.cpp's 128. */
      sizeDifference: number
      targetSize: number
      otherSize: number
      /** The common range's size, min(sizes): texts of ids [TOKEN_TEXT_CHECK_START, commonSize) are identical. */
      commonSize: number
      /** The first id below TOKEN_TEXT_CHECK_START whose text differs (allowed, as llama.cpp), or null. */
      controlTextDifference: number | null
      /** Every id of the larger vocabulary has the same text in both (same size, ids 0–4 included). */
      identical: boolean
    }
  | { compatible: false; rule: VocabularyRule; reason: string }

const count = (n: number): string => n.toLocaleString('en-US')
const quoted = (text: string): string => JSON.stringify(text)

function tokenizerName(facts: VocabularyFacts): string {
  const type = facts.vocabularyType ? facts.vocabularyType.toUpperCase() : 'unknown type'
  return facts.tokenizerModel ? `${facts.tokenizerModel} (${type})` : type
}

/**
 * llama.cpp's rules (see the file comment) for `other` speculating for `target`; the verdict names the first rule
 * that fails (in words, from `other`'s side: "… vs the target's …"), or says what held.
 */
export function compareVocabularies(target: VocabularyFacts, other: VocabularyFacts): VocabularyVerdict {
  const fail = (rule: VocabularyRule, reason: string): VocabularyVerdict => ({ compatible: false, rule, reason })
  if (target.vocabularyType !== other.vocabularyType)
    return fail('tokenizer', `tokenizer models differ (${tokenizerName(other)} vs the target's ${tokenizerName(target)}; llama.cpp requires the same one)`)
  if (target.addBos !== other.addBos)
    return fail('add-bos', `add-BOS flags differ (${other.addBos} vs the target's ${target.addBos})`)
  if (target.bos !== other.bos) return fail('bos', `BOS tokens differ (${other.bos} vs the target's ${target.bos})`)
  if (target.addEos !== other.addEos)
    return fail('add-eos', `add-EOS flags differ (${other.addEos} vs the target's ${target.addEos})`)
  if (target.eos !== other.eos) return fail('eos', `EOS tokens differ (${other.eos} vs the target's ${target.eos})`)
  const sizeDifference = Math.abs(target.size - other.size)
  if (sizeDifference > MAX_VOCABULARY_SIZE_DIFFERENCE)
    return fail(
      'size',
      `vocabulary sizes differ by ${count(sizeDifference)} (${count(other.size)} vs the target's ${count(target.size)} tokens; ` +
        `more than llama.cpp's ${MAX_VOCABULARY_SIZE_DIFFERENCE})`
    )
  const commonSize = Math.min(target.size, other.size)
  for (let token = TOKEN_TEXT_CHECK_START; token < commonSize; token++) {
    const mine = other.tokenText(token)
    const theirs = target.tokenText(token)
    if (mine !== theirs)
      return fail(
        'token-text',
        `token ${count(token)} is ${quoted(mine)} vs the target's ${quoted(theirs)} (llama.cpp requires identical texts for ids ` +
          `${TOKEN_TEXT_CHECK_START}–${count(commonSize - 1)}, the common range)`
      )
  }
  let controlTextDifference: number | null = null
  for (let token = 0; token < Math.min(TOKEN_TEXT_CHECK_START, commonSize); token++)
    if (other.tokenText(token) !== target.tokenText(token)) {
      controlTextDifference = token
      break
    }
  return {
    compatible: true,
    sizeDifference,
    targetSize: target.size,
    otherSize: other.size,
    commonSize,
    controlTextDifference,
    identical: sizeDifference === 0 && controlTextDifference === null
  }
}

/**
 * Which rule held, in words, for a compatible pair: "sizes differ by 88 — padding (600 vs the target's 512 tokens);
 * the first 512 token texts are identical (llama.cpp's rule: from id 5)".
 */
export function describeCompatible(verdict: Extract<VocabularyVerdict, { compatible: true }>): string {
  const texts =
    verdict.controlTextDifference === null
      ? `the first ${count(verdict.commonSize)} token texts are identical (llama.cpp's rule: from id ${TOKEN_TEXT_CHECK_START})`
      : `token texts ${TOKEN_TEXT_CHECK_START}–${count(verdict.commonSize - 1)} are identical (llama.cpp's rule: from id ` +
        `${TOKEN_TEXT_CHECK_START}; id ${verdict.controlTextDifference} below it differs, allowed)`
  if (verdict.sizeDifference === 0) return `same ${count(verdict.commonSize)} tokens; ${texts}`
  return `sizes differ by ${count(verdict.sizeDifference)} — padding (${count(verdict.otherSize)} vs the target's ${count(verdict.targetSize)} tokens); ${texts}`
}

/** The rules' facts of a loaded model (ModelInfo carries what llama.cpp reports; toy models their own). */
export function vocabularyFactsOf(model: LanguageModel): VocabularyFacts {
  const info = model.info
  return {
    vocabularyType: info.vocabularyType ?? null,
    tokenizerModel: info.tokenizerModel ?? null,
    size: info.vocabularySize,
    bos: info.bos,
    eos: info.eos,
    addBos: info.addBos ?? null,
    addEos: info.addEos ?? null,
    tokenText: (token) => model.tokenText(token)
  }
}

/** null when `b` can speculate with `a` (the target) by llama.cpp's rules; else the rule that failed, in words. */
export function vocabularyMismatch(a: LanguageModel, b: LanguageModel): string | null {
  const verdict = compareVocabularies(vocabularyFactsOf(a), vocabularyFactsOf(b))
  return verdict.compatible ? null : verdict.reason
}

/** Throws when any model's vocabulary is not compatible with the first's (the target's), naming the failed rule. */
export function assertSameVocabulary(models: readonly LanguageModel[]): void {
  const [reference, ...others] = models
  for (const other of others) {
    const mismatch = vocabularyMismatch(reference, other)
    if (mismatch)
      throw new UserInputError(
        `vocabulary mismatch between ${reference.info.path} and ${other.info.path}: ${mismatch}. ` +
          'Speculative decoding compares token ids, so a draft must use the target’s vocabulary (llama.cpp’s rule: same ' +
          `tokenizer, BOS/EOS, sizes within ${MAX_VOCABULARY_SIZE_DIFFERENCE}, identical token texts from id ${TOKEN_TEXT_CHECK_START})`
      )
  }
}

// ---------------------------------------------------------------------------------------------------------------
// From a GGUF header (no llama.cpp at hand): llama.cpp's vocab type and its add-BOS / add-EOS defaults.

/** tokenizer.ggml.model → llama.cpp's vocab type (src/llama-vocab.cpp `llama_vocab::impl::load`). */
export function vocabularyTypeOf(tokenizerModel: string | null): string | null {
  switch (tokenizerModel) {
    case null:
      return null
    case 'no_vocab':
    case 'none':
      return 'none'
    case 'llama':
      return 'spm'
    case 'bert':
      return 'wpm'
    case 'gpt2':
    case 'hybriddna':
    case 'whitespace':
    case 'gemma4':
      return 'bpe'
    case 't5':
      return 'ugm'
    default:
      return tokenizerModel // rwkv, plamo2, test, and names llama.cpp may add: compared as they are
  }
}

/** BPE pre-tokenizers for which llama.cpp turns add_bos on by default. */
const BPE_ADD_BOS = new Set(['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2', 'jina-v5-nano', 'tekken', 'chameleon'])
/** Pre-tokenizers for which llama.cpp forces add_bos on whatever the header says (its Gemma 4 workaround). */
const FORCED_ADD_BOS = new Set(['gemma4', 'granite-embed-multi-311m'])

/**
 * add-BOS / add-EOS as llama.cpp decides them from a header: tokenizer.ggml.add_bos_token / add_eos_token when
 * present, else the default of the vocab type (SPM and WPM add BOS, UGM adds EOS, BPE adds BOS for a few
 * pre-tokenizers). The loaded-model check asks llama.cpp itself.
 */
export function addFlagsOf(
  tokenizerModel: string | null,
  pre: string | null,
  addBosKey: boolean | null,
  addEosKey: boolean | null
): { addBos: boolean | null; addEos: boolean | null } {
  const type = vocabularyTypeOf(tokenizerModel)
  if (type === null) return { addBos: addBosKey, addEos: addEosKey }
  const defaultBos = type === 'spm' || type === 'wpm' || (type === 'bpe' && pre !== null && BPE_ADD_BOS.has(pre))
  const defaultEos = type === 'ugm'
  const forced = type === 'bpe' && pre !== null && FORCED_ADD_BOS.has(pre)
  return { addBos: forced || (addBosKey ?? defaultBos), addEos: addEosKey ?? defaultEos }
}
