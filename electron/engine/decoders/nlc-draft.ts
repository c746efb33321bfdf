/**
 * `nlc-draft`: node-llama-cpp's own speculative decoding (DraftSequenceTokenPredictor), the peer baseline.
 *
 * node-llama-cpp drafts with the small model in the background and validates by sample-and-match (the loop and
 * what its step records say: decoders/nlc-predictor.ts) — lossless in distribution, but it uses llama.cpp's sampler
 * chain rather than our warp, so its text matches `ar` exactly only when greedy.
 * Options (from the method catalog): maxTokens = γ, minConfidence and minTokens (node-llama-cpp's defaults).
 *
 * Vocabularies that differ by padding (model/vocabulary-check.ts): node-llama-cpp feeds the target's tokens to the
 * draft and the draft's predictions to the target as they are, and llama_decode refuses an id beyond a model's
 * vocabulary ("Eval has failed"). `PaddedVocabularyPredictor` hands the draft its stand-in for target ids it lacks
 * (as model sessions do: llama-cpp-model.ts) and cuts a prediction before the first id the target lacks (p = 0
 * there: it could never match the target's token), so the sample-and-match stays exact.
 */
import { withLock } from 'lifecycle-utils'
import { DraftSequenceTokenPredictor, type LlamaContextSequence, type SequenceEvaluateOptions, type Token } from 'node-llama-cpp'
import type { LlamaCppModel } from '../model/llama-cpp-model'
import { llamaModel, predictorDecode } from './nlc-predictor'
import type { Decoder } from './types'

/** DraftSequenceTokenPredictor's options. */
export interface NlcDraftOptions {
  maxTokens: number
  minTokens: number
  minConfidence: number
}

/** DraftSequenceTokenPredictor across vocabularies of different sizes (see the file comment). */
export class PaddedVocabularyPredictor extends DraftSequenceTokenPredictor {
  constructor(
    draftSequence: LlamaContextSequence,
    options: NlcDraftOptions,
    private readonly draft: LlamaCppModel,
    private readonly targetVocabularySize: number
  ) {
    super(draftSequence, options)
  }

  private toDraft(tokens: readonly Token[]): Token[] {
    return tokens.map((token) => this.draft.evaluable(token) as Token)
  }

  private forTarget(tokens: Token[]): Token[] {
    const cut = tokens.findIndex((token) => token >= this.targetVocabularySize)
    return cut < 0 ? tokens : tokens.slice(0, cut)
  }

  override reset(params: { targetSequence: LlamaContextSequence; stateTokens: Token[]; evaluateOptions: Readonly<SequenceEvaluateOptions> }): Promise<void> {
    return super.reset({ ...params, stateTokens: this.toDraft(params.stateTokens) })
  }

  override pushTokens(tokens: Token[]): void {
    super.pushTokens(this.toDraft(tokens))
  }

  override predictTokens(): Token[] | Promise<Token[]> {
    const predicted = super.predictTokens()
    return predicted instanceof Promise ? predicted.then((tokens) => this.forTarget(tokens)) : this.forTarget(predicted)
  }
}

export const nlcDraftDecoder = (options: NlcDraftOptions): Decoder => async function* (models, request) {
  const target = llamaModel(models.target, 'nlc-draft', 'target')
  const draft = llamaModel(models.draft, 'nlc-draft', 'draft')
  const draftSequence = draft.context.getSequence()
  const predictor =
    draft.info.vocabularySize === target.info.vocabularySize
      ? new DraftSequenceTokenPredictor(draftSequence, { ...options })
      : new PaddedVocabularyPredictor(draftSequence, { ...options }, draft, target.info.vocabularySize)
  yield* predictorDecode(
    {
      stage: 'nlc-draft',
      target,
      predictor,
      predicted: 'draft',
      decision: () => ({ minConfidence: predictor.minConfidence ?? null, maxTokens: predictor.maxTokens }),
      async release() {
        predictor.dispose()
        // dispose() does not wait for a draft evaluation already running in the background; freeing the draft
        // sequence under it leaves KV cells behind that break the next session on that sequence ("Eval has
        // failed"). The predictor drafts under its [predictor, 'evaluate'] lock (lifecycle-utils), so taking that
        // lock waits it out.
        await withLock([predictor, 'evaluate'], async () => {})
        draftSequence.dispose()
      }
    },
    models,
    request
  )
}
