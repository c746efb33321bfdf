/**
 * Text for each generated token as it arrives. Detokenizing one token at a time is wrong for tokenizers that
 * merge bytes or spaces across tokens, so each token's text is the growth of the whole output's text; a token
 * that ends inside a multi-byte character (U+FFFD at the end) yields nothing until the character completes.
 */
export class IncrementalText {
  private readonly tokens: number[] = []
  private text = ''

  constructor(private readonly detokenize: (tokens: readonly number[]) => string) {}

  /** The text this token adds to the output (may be '' while a character is incomplete). */
  push(token: number): string {
    this.tokens.push(token)
    const full = this.detokenize(this.tokens)
    if (full.endsWith('\uFFFD')) return ''
    if (!full.startsWith(this.text)) {
      // The tokenizer rewrote earlier text (rare): attribute the whole difference to this token.
      const common = commonPrefixLength(this.text, full)
      const added = full.slice(common)
      this.text = full
      return added
    }
    const added = full.slice(this.text.length)
    this.text = full
    return added
  }

  get value(): string {
    return this.text
  }
}

function commonPrefixLength(a: string, b: string): number {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  return i
}
