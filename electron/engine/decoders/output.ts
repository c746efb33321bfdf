/**
 * Commits tokens to the output, applying the two stopping rules every decoder shares: end-of-generation and the
 * token budget. Tokens after either are discarded (they never reach the output or the metrics).
 */
import type { LanguageModel } from '../model/types'
import type { DecodeEvent, Provenance, StopReason } from './types'

export class OutputBuffer {
  readonly tokens: number[] = []
  stopReason: StopReason | null = null

  constructor(
    readonly sequence: number[],
    private readonly maxTokens: number,
    private readonly target: LanguageModel
  ) {}

  get done(): boolean {
    return this.stopReason !== null
  }

  /** Decoders ask once per round: a fired signal ends the output as `cancelled` (what was committed stays). */
  cancelledBy(signal: AbortSignal | undefined): boolean {
    if (signal?.aborted) this.stopReason = 'cancelled'
    return this.stopReason === 'cancelled'
  }

  /** Commits what fits; returns the token events of the tokens actually committed. */
  commit(candidates: readonly { token: number; provenance: Provenance }[], step: number): DecodeEvent[] {
    const events: DecodeEvent[] = []
    for (const { token, provenance } of candidates) {
      if (this.done) break
      this.tokens.push(token)
      this.sequence.push(token)
      events.push({ type: 'token', token, provenance, step })
      if (this.target.isEndOfGeneration(token)) this.stopReason = 'eos'
      else if (this.tokens.length >= this.maxTokens) this.stopReason = 'max-tokens'
    }
    return events
  }
}
