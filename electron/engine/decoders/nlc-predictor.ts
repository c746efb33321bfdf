/**
 * The loop `nlc-draft` and `nlc-lookup` share: node-llama-cpp's own token predictor on the target's sequence
 * (`getSequence({ tokenPredictor })`). node-llama-cpp validates a prediction by sample-and-match: the target samples
 * its own token with llama.cpp's sampler chain (seeded here from our PRNG) and a prediction is kept when it equals
 * that token — lossless in distribution (sampling y ~ p and keeping x iff y = x is the point-mass verification of
 * decoders/drafter.ts), but by llama.cpp's sampler rather than our warp, so the text equals `ar` exactly only when
 * greedy. Predicting and verifying are internal; we see one token at a time and read `sequence.tokenPredictions`
 * after each: a token whose arrival raised `used` came from a validated prediction (provenance `draft` for the draft
 * model's, `ngram` for the input lookup's: PredictorRun.predicted), otherwise
 * from the target. Each token becomes one step record whose time is all inside node-llama-cpp (verifyMs), so these
 * methods report no engine overhead and no target-call count (η is n/a).
 * Not round.ts's loop: node-llama-cpp drafts and verifies inside its own evaluation, and we only see its tokens.
 */
import type { LlamaContextSequence, Token, TokenPredictor } from 'node-llama-cpp'
import { LlamaCppModel } from '../model/llama-cpp-model'
import { UserInputError } from '../errors'
import type { LanguageModel } from '../model/types'
import { OutputBuffer } from './output'
import { now } from './session-sync'
import { stepRecord } from './step-record'
import type { DecodeEvent, DecodeRequest, DecoderModels, Provenance } from './types'

/** The models as node-llama-cpp models, or a UserInputError naming the method. */
export function llamaModel(model: LanguageModel | undefined, method: string, role: string): LlamaCppModel {
  if (!(model instanceof LlamaCppModel)) throw new UserInputError(`${method} needs a GGUF ${role} model (node-llama-cpp)`)
  return model
}

export interface PredictorRun {
  /** The step records' stage: the method id. */
  stage: string
  target: LlamaCppModel
  predictor: TokenPredictor
  /** The provenance of a validated prediction: `draft` (nlc-draft's draft model) or `ngram` (nlc-lookup's input lookup). */
  predicted: Provenance
  /** What the step records' decision says about the predictor's settings. */
  decision(): Record<string, number | string | boolean | null>
  /** Called after the target sequence is disposed (the predictor's own clean-up). */
  release(): Promise<void>
}

export async function* predictorDecode(run: PredictorRun, models: DecoderModels, request: DecodeRequest): AsyncGenerator<DecodeEvent> {
  let sequence: LlamaContextSequence
  try {
    run.target.useSingleTokenThreads()
    sequence = run.target.context.getSequence({ tokenPredictor: run.predictor })
  } catch (error) {
    await run.release()
    throw error
  }
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
      const events = output.commit([{ token: next.value, provenance: fromPrediction ? run.predicted : 'target' }], step)
      const finished = now()
      const record = stepRecord({
        index: step,
        stage: run.stage,
        proposed: counters.validated + counters.refuted - (previous.validated + previous.refuted),
        accepted: counters.validated - previous.validated,
        resampled: counters.refuted > previous.refuted,
        emitted: events.length,
        draftTokens: counters.validated + counters.refuted - (previous.validated + previous.refuted),
        acceptedDraftTokens: fromPrediction ? events.length : 0,
        decision: run.decision(),
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
    await run.release()
  }
}
