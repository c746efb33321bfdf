/** Runs a decoder to completion and splits its event stream for assertions. */
import type {
  DecodeEvent,
  DecodeRequest,
  Decoder,
  DecoderModels,
  Provenance,
  StepRecord,
  StopReason
} from '../../electron/engine/decoders/types'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'

export interface DecodeResult {
  events: DecodeEvent[]
  tokens: number[]
  provenances: Provenance[]
  steps: StepRecord[]
  stopReason: StopReason | null
}

export function splitEvents(events: DecodeEvent[]): DecodeResult {
  const result: DecodeResult = { events, tokens: [], provenances: [], steps: [], stopReason: null }
  for (const event of events) {
    if (event.type === 'token') {
      result.tokens.push(event.token)
      result.provenances.push(event.provenance)
    } else if (event.type === 'step') result.steps.push(event.record)
    else result.stopReason = event.stopReason
  }
  return result
}

export async function decode(decoder: Decoder, models: DecoderModels, request: DecodeRequest): Promise<DecodeResult> {
  const events: DecodeEvent[] = []
  for await (const event of decoder(models, request)) events.push(event)
  return splitEvents(events)
}

export const GREEDY: WarpConfig = { temperature: 0, topK: 0, topP: 1 }
export const PLAIN: WarpConfig = { temperature: 1, topK: 0, topP: 1 }

export function makeRequest(overrides: Partial<DecodeRequest> & { promptTokens: number[] }): DecodeRequest {
  return {
    maxTokens: 16,
    warp: PLAIN,
    rng: createPrng(1234, 0),
    ...overrides
  }
}
