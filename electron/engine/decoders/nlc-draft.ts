/**
 * `nlc-draft`: node-llama-cpp's own speculative decoding (DraftSequenceTokenPredictor), the peer baseline.
 *
 * node-llama-cpp drafts with the small model in the background and validates by sample-and-match: the target
 * samples its own token with its own sampler (seeded here from our PRNG) and a prediction is kept when it equals
 * that token — lossless in distribution, but it uses llama.cpp's sampler chain rather than our warp, so its text
 * matches `ar` exactly only when greedy. Its drafting rounds are internal; we see one token at a time and read
 * `sequence.tokenPredictions` after each: a token whose arrival raised `used` came from a validated prediction
 * (provenance `draft`), otherwise from the target. Each token becomes one step record whose time is all inside
 * node-llama-cpp (verifyMs), so this method reports no engine overhead and no target-call count (η is n/a).
 * Options (from the method catalog): maxTokens = γ, minConfidence and minTokens (node-llama-cpp's defaults).
 */
import { withLock } from 'lifecycle-utils'
import { DraftSequenceTokenPredictor, type Token } from 'node-llama-cpp'
import { LlamaCppModel } from '../model/llama-cpp-model'
import { UserInputError } from '../errors'
import { OutputBuffer } from './output'
import { now } from './session-sync'
import { stepRecord } from './step-record'
import type { Decoder } from './types'

function llamaModels(models: Parameters<Decoder>[0]): { target: LlamaCppModel; draft: LlamaCppModel } {
  const { target, draft } = models
  if (!(target instanceof LlamaCppModel) || !(draft instanceof LlamaCppModel))
    throw new UserInputError('nlc-draft needs GGUF target and draft models (node-llama-cpp)')
  return { target, draft }
}

/** DraftSequenceTokenPredictor's options. */
export interface NlcDraftOptions {
  maxTokens: number
  minTokens: number
  minConfidence: number
}

export const nlcDraftDecoder = (options: NlcDraftOptions): Decoder => async function* (models, request) {
  const { target, draft } = llamaModels(models)
  const draftSequence = draft.context.getSequence()
  const predictor = new DraftSequenceTokenPredictor(draftSequence, { ...options })
  const sequence = target.context.getSequence({ tokenPredictor: predictor })
  const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
  const { temperature, topK, topP } = request.warp
  const iterator = sequence.evaluate(request.promptTokens as Token[], {
    temperature,
    topK,
    topP,
    minP: 0,
    seed: Math.floor(request.rng.next() * 2 ** 32)
  })
  try {
    let previous = { ...sequence.tokenPredictions }
    let started = now()
    for (let step = 0; !output.done; step++) {
      if (output.cancelledBy(request.signal)) break
      const next = await iterator.next()
      if (next.done) break
      const counters = { ...sequence.tokenPredictions }
      const fromPrediction = counters.used > previous.used
      const events = output.commit([{ token: next.value, provenance: fromPrediction ? 'draft' : 'target' }], step)
      const finished = now()
      const record = stepRecord({
        index: step,
        stage: 'nlc-draft',
        proposed: counters.validated + counters.refuted - (previous.validated + previous.refuted),
        accepted: counters.validated - previous.validated,
        resampled: counters.refuted > previous.refuted,
        emitted: events.length,
        draftTokens: counters.validated + counters.refuted - (previous.validated + previous.refuted),
        acceptedDraftTokens: fromPrediction ? events.length : 0,
        decision: { minConfidence: predictor.minConfidence ?? null, maxTokens: predictor.maxTokens },
        verifyMs: finished - started,
        totalMs: finished - started
      })
      previous = counters
      yield* events
      yield { type: 'step', record }
      started = now()
    }
    yield { type: 'done', stopReason: output.stopReason ?? 'max-tokens' }
  } finally {
    await iterator.return()
    sequence.dispose()
    predictor.dispose()
    // dispose() does not wait for a draft evaluation already running in the background; freeing the draft sequence
    // under it leaves KV cells behind that break the next session on that sequence ("Eval has failed"). The
    // predictor drafts under its [predictor, 'evaluate'] lock (lifecycle-utils), so taking that lock waits it out.
    await withLock([predictor, 'evaluate'], async () => {})
    draftSequence.dispose()
  }
}
