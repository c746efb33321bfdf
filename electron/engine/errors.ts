/**
 * Errors caused by what the user gave us (a missing or corrupt GGUF, mismatched vocabularies, invalid
 * parameters). The CLI turns them into exit code 2 and one clear line; the app shows the message as is.
 */
export class UserInputError extends Error {
  override name = 'UserInputError'
}

/**
 * Text a SentencePiece tokenizer without byte fallback cannot encode: llama.cpp would abort the process
 * (`std::out_of_range` in its SPM tokenizer) rather than return an error, so the model refuses it first.
 */
export class UnencodableTextError extends UserInputError {
  override name = 'UnencodableTextError'
}
