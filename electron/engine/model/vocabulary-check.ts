/**
 * Speculative decoding compares token ids across models, so a trio must share one vocabulary: same size, same
 * BOS/EOS, same token texts (llama.cpp's common/speculative.cpp checks the same things). A mismatch is one
 * clear error naming both files and the first difference.
 */
import { UserInputError } from '../errors'
import type { LanguageModel } from './types'

export function vocabularyMismatch(a: LanguageModel, b: LanguageModel): string | null {
  if (a.info.vocabularySize !== b.info.vocabularySize)
    return `vocabulary sizes differ (${a.info.vocabularySize} vs ${b.info.vocabularySize})`
  if (a.info.bos !== b.info.bos) return `BOS tokens differ (${a.info.bos} vs ${b.info.bos})`
  if (a.info.eos !== b.info.eos) return `EOS tokens differ (${a.info.eos} vs ${b.info.eos})`
  for (let token = 0; token < a.info.vocabularySize; token++) {
    const textA = a.tokenText(token)
    const textB = b.tokenText(token)
    if (textA !== textB) return `token ${token} is ${JSON.stringify(textA)} vs ${JSON.stringify(textB)}`
  }
  return null
}

/** Throws when any model's vocabulary differs from the first's (the target's). */
export function assertSameVocabulary(models: readonly LanguageModel[]): void {
  const [reference, ...others] = models
  for (const other of others) {
    const mismatch = vocabularyMismatch(reference, other)
    if (mismatch)
      throw new UserInputError(
        `vocabulary mismatch between ${reference.info.path} and ${other.info.path}: ${mismatch}`
      )
  }
}
