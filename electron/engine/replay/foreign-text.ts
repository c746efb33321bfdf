/**
 * The target's text as a draft of ANOTHER vocabulary reads it: the target's tokens spelled as bytes
 * (model/vocabulary-bytes.ts) and tokenised with the draft's tokenizer the way sd-uad keeps its draft in step
 * (decoders/sd-uad.ts DraftText: the draft's BOS, SentencePiece's space prefix undone, look-behind windows). The
 * advisor measures a foreign draft's costs — its time per drafted token and its prompt processing — at these
 * contexts, since the trace's token ids mean nothing to it.
 */
import { DEFAULT_LOOKBEHIND, DraftText, textTokenizer } from '../decoders/sd-uad'
import type { LanguageModel } from '../model/types'
import { bytesOfTokens } from '../model/vocabulary-bytes'

export interface DraftSequence {
  /** The draft's tokens for prompt + output. */
  sequence: number[]
  /** How many of them the prompt's text gave (BOS included). */
  promptLength: number
}

export function draftSequenceOf(target: LanguageModel, draft: LanguageModel, promptTokens: readonly number[], outputTokens: readonly number[] = []): DraftSequence {
  const targetBytes = textTokenizer(target).vocabulary
  const view = new DraftText(textTokenizer(draft), DEFAULT_LOOKBEHIND, bytesOfTokens(targetBytes, promptTokens))
  const promptLength = view.tokens.length
  if (outputTokens.length > 0) view.commit(bytesOfTokens(targetBytes, outputTokens), [])
  return { sequence: [...view.tokens], promptLength }
}
