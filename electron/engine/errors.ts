/**
 * Errors caused by what the user gave us (a missing or corrupt GGUF, mismatched vocabularies, invalid
 * parameters). The CLI turns them into exit code 2 and one clear line; the app shows the message as is.
 */
export class UserInputError extends Error {
  override name = 'UserInputError'
}
