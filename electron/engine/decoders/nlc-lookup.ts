/**
 * `nlc-lookup`: node-llama-cpp's InputLookupTokenPredictor (node-llama-cpp 3.22.1,
 * dist/evaluator/LlamaContext/tokenPredictors/InputLookupTokenPredictor.js; "based on
 * github.com/apoorvumang/prompt-lookup-decoding"), the model-free peer baseline, run as `nlc-draft` runs its draft
 * predictor (decoders/nlc-predictor.ts: sample-and-match validation inside node-llama-cpp, one step record per
 * token, text = `ar` only when greedy).
 *
 * What it predicts: it looks up the end of the generated state in the INPUT tokens only (what
 * `updateInputTokens` was given; LlamaCompletion gives it the prompt — so do we, BOS included), never in the
 * output. Its longest-pattern search walks the input backwards and keeps the longest suffix match (at least
 * patternLength.min tokens, at most patternLength.max, 0 = unbounded; ties go to the match nearest the start),
 * then predicts the tokens after it, between predictionLength.min and predictionLength.max of them; after a
 * validated prediction it continues from the same match while the state still agrees with the input there.
 * The catalog's defaults are node-llama-cpp's: pattern ≥ 1 (no max), predictions 1 to 3.
 */
import { InputLookupTokenPredictor, type Token } from 'node-llama-cpp'
import { llamaModel, predictorDecode } from './nlc-predictor'
import type { Decoder } from './types'

/** InputLookupTokenPredictor's options. */
export interface NlcLookupOptions {
  patternMin: number
  patternMax: number
  predictionMin: number
  predictionMax: number
}

export const nlcLookupDecoder = (options: NlcLookupOptions): Decoder => async function* (models, request) {
  const target = llamaModel(models.target, 'nlc-lookup', 'target')
  const predictor = new InputLookupTokenPredictor({
    patternLength: { min: options.patternMin, max: options.patternMax },
    predictionLength: { min: options.predictionMin, max: options.predictionMax }
  })
  predictor.updateInputTokens(request.promptTokens as Token[])
  yield* predictorDecode(
    {
      stage: 'nlc-lookup',
      target,
      predictor,
      predicted: 'ngram',
      decision: () => ({
        patternMin: predictor.patternMinLength,
        patternMax: predictor.patternMaxLength,
        predictionMin: predictor.predictionMinLength,
        predictionMax: predictor.predictionMaxLength
      }),
      release: async () => predictor.dispose()
    },
    models,
    request
  )
}
