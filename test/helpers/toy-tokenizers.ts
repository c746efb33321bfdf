/**
 * Two toy tokenisations of one string alphabet (a, b, c, space) for the cross-vocabulary methods: a
 * SentencePiece-style vocabulary (`▁` pieces, `<0xNN>` byte fallback, a space prefix like llama.cpp's
 * add_space_prefix, tokenizer model 'llama') and a byte-level BPE one (`Ġ` for a space, tokenizer model 'gpt2').
 * Their token-level intersection is {"a", "b", "c", " a", " "}; each side has tokens the other lacks, and the
 * SentencePiece side spells "c" and " " twice (a piece and its byte token).
 *
 * Both models score a token by the text it continues — the last character of the context's text and the token's
 * first character — so they agree on the text they are shown whatever their tokenisation, and the draft adds a
 * context-dependent perturbation so it also disagrees often enough for every branch of Verify/Correct to run.
 */
import { ToyModel } from '../../electron/engine/model/toy-model'
import type { TokenKind } from '../../electron/engine/model/types'
import { binaryOf, byteLevelText, utf8Of } from '../../electron/engine/model/vocabulary-bytes'
import { NEVER } from './toy-models'

interface ToyVocabulary {
  texts: readonly string[]
  kinds: readonly TokenKind[]
  /** The text each id spells (what both models condition on). */
  spelled: readonly string[]
  tokenizerModel: 'llama' | 'gpt2'
  tokenize(text: string): number[]
}

/** Greedy longest match of `text` over the normal entries of `texts`; `fallback` spells what matches nothing. */
function longestMatch(text: string, texts: readonly string[], kinds: readonly TokenKind[], fallback: (ch: string) => number[]): number[] {
  const out: number[] = []
  let i = 0
  while (i < text.length) {
    let best = -1
    for (let id = 0; id < texts.length; id++)
      if (kinds[id] === 'normal' && texts[id].length > (best < 0 ? 0 : texts[best].length) && text.startsWith(texts[id], i)) best = id
    if (best < 0) {
      out.push(...fallback(text[i]))
      i += 1
    } else {
      out.push(best)
      i += texts[best].length
    }
  }
  return out
}

export const SPM_TEXTS = ['<s>', '▁a', '▁b', 'a', 'b', 'c', 'ab', '▁', '<0x63>', '<0x20>'] as const
export const BYTE_LEVEL_TEXTS = ['<|endoftext|>', 'a', 'b', 'c', 'Ġa', 'Ġ', 'bc', 'Ġc', 'ca'] as const

export function sentencePieceVocabulary(): ToyVocabulary {
  const texts: string[] = [...SPM_TEXTS]
  const kinds: TokenKind[] = texts.map((t, id) => (id === 0 ? 'control' : t.startsWith('<0x') ? 'byte' : 'normal'))
  const spelled = texts.map((t, id) => (id === 0 ? '' : t.startsWith('<0x') ? String.fromCharCode(parseInt(t.slice(3, 5), 16)) : t.replace(/▁/g, ' ')))
  return {
    texts,
    kinds,
    spelled,
    tokenizerModel: 'llama',
    // llama.cpp's SPM: a space before the text, spaces as ▁, byte tokens for what no piece covers.
    tokenize: (text) =>
      text === ''
        ? []
        : longestMatch(`▁${text}`.replace(/ /g, '▁'), texts, kinds, (ch) =>
            [...binaryOf(ch === '▁' ? ' ' : ch)].map((byte) => {
              const id = texts.indexOf(`<0x${byte.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}>`)
              if (id < 0) throw new Error(`toy SentencePiece vocabulary cannot spell ${JSON.stringify(ch)}`)
              return id
            })
          )
  }
}

export function byteLevelVocabulary(): ToyVocabulary {
  const texts: string[] = [...BYTE_LEVEL_TEXTS]
  const kinds: TokenKind[] = texts.map((_, id) => (id === 0 ? 'control' : 'normal'))
  const spelled = texts.map((t, id) => (id === 0 ? '' : t.replace(/Ġ/g, ' ')))
  return {
    texts,
    kinds,
    spelled,
    tokenizerModel: 'gpt2',
    tokenize: (text) =>
      longestMatch(byteLevelText(binaryOf(text)), texts, kinds, (ch) => {
        throw new Error(`toy byte-level vocabulary cannot spell ${JSON.stringify(utf8Of(ch))}`)
      })
  }
}

/** How much the last character of the text favours each first character of the next token. */
const PREFERENCE: Record<string, Record<string, number>> = {
  '^': { a: 0.6, b: 0.1, c: -0.3, ' ': 0.2 },
  a: { a: -0.4, b: 0.9, c: 0.3, ' ': 0.5 },
  b: { a: 0.4, b: -0.6, c: 0.8, ' ': 0.1 },
  c: { a: 0.7, b: 0.2, c: -0.5, ' ': 0.6 },
  ' ': { a: 0.5, b: 0.4, c: 0.3, ' ': -0.8 }
}

/**
 * Logits over `vocabulary` from the text of the context: preference of the last character for the token's first
 * character, a length term, and (draft) a perturbation that depends on the text's length and the token.
 */
function textLogits(vocabulary: ToyVocabulary, perturbation: number) {
  return (context: readonly number[]): number[] => {
    const text = context.map((id) => vocabulary.spelled[id] ?? '').join('')
    const last = text.length === 0 ? '^' : text[text.length - 1]
    return vocabulary.spelled.map((s, id) => {
      if (vocabulary.kinds[id] === 'control') return NEVER
      const base = PREFERENCE[last][s[0]] + 0.25 * (s.length - 1) - (vocabulary.kinds[id] === 'byte' ? 0.7 : 0)
      return base + perturbation * Math.sin(1.7 * text.length + 2.3 * id + 0.5)
    })
  }
}

function toyModel(name: string, vocabulary: ToyVocabulary, perturbation: number): ToyModel {
  return new ToyModel({
    name,
    vocabulary: vocabulary.texts,
    logits: textLogits(vocabulary, perturbation),
    tokenizerModel: vocabulary.tokenizerModel,
    tokenKinds: vocabulary.kinds,
    tokenize: vocabulary.tokenize
  })
}

/** A target and a draft of the other tokenisation; `draftSide` picks which tokenisation the draft uses. */
export function crossVocabularyPair(draftSide: 'byte-level' | 'sentencepiece'): { target: ToyModel; draft: ToyModel } {
  const spm = sentencePieceVocabulary()
  const bpe = byteLevelVocabulary()
  return draftSide === 'byte-level'
    ? { target: toyModel('toy-spm-target', spm, 0), draft: toyModel('toy-bpe-draft', bpe, 0.8) }
    : { target: toyModel('toy-bpe-target', bpe, 0), draft: toyModel('toy-spm-draft', spm, 0.8) }
}
