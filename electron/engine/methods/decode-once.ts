/**
 * One decode of one prompt: the only place a DecodeRequest is built. The runner, chat, the benches and the suites
 * all call it, so every decode draws from the PRNG stream (seed, stream) — the same prompt under different methods
 * sees the same randomness, and any prompt replays alone.
 */
import { createPrng } from '../sampling/prng'
import type { WarpConfig } from '../sampling/warp'
import { PROVENANCE_CODES, type DecodeEvent, type Decoder, type DecoderModels, type StopReason } from '../decoders/types'

export interface DecodeOnce {
  decoder: Decoder
  models: DecoderModels
  /** Prompt tokens, BOS included. */
  promptTokens: readonly number[]
  maxTokens: number
  warp: WarpConfig
  seed: number
  /** The PRNG stream: the prompt index in a run, 0 in chat. */
  stream: number
  signal?: AbortSignal
  /** Synthetic acceptance rates r_1, r_2, … (only methods that verify one draft position by position honour them; prepare checks). */
  syntheticAcceptance?: readonly number[] | null
  onEvent?(event: DecodeEvent): void
}

export interface DecodeOutcome {
  tokens: number[]
  /** One PROVENANCE_CODES letter per token. */
  provenance: string
  stopReason: StopReason
}

/**
 * Decodes to the end. `outcome` is filled as tokens arrive, so a caller that catches a failure mid-decode still
 * has the partial output.
 */
export async function decodeOnce(
  input: DecodeOnce,
  outcome: DecodeOutcome = { tokens: [], provenance: '', stopReason: 'max-tokens' }
): Promise<DecodeOutcome> {
  const request = {
    promptTokens: [...input.promptTokens],
    maxTokens: input.maxTokens,
    warp: input.warp,
    rng: createPrng(input.seed, input.stream),
    signal: input.signal,
    ...(input.syntheticAcceptance ? { syntheticAcceptance: input.syntheticAcceptance } : {})
  }
  for await (const event of input.decoder(input.models, request)) {
    if (event.type === 'token') {
      outcome.tokens.push(event.token)
      outcome.provenance += PROVENANCE_CODES[event.provenance]
    } else if (event.type === 'done') outcome.stopReason = event.stopReason
    input.onEvent?.(event)
  }
  return outcome
}
