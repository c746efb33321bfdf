/**
 * Runs 004 §5 adaptive draft-model selection inside a run (the algorithm itself is
 * engine/selection/draft-model-selection.ts): profile every draft with `sd` on the first r prompts, fit Eq 5 per
 * draft, then choose a draft for every prompt. Features, observations, predictions and choices go to the store.
 */
import type { RunConfig } from '../api/runs'
import type { DecoderModels, StepRecord } from '../engine/decoders/types'
import type { LanguageModel } from '../engine/model/types'
import { decodeOnce } from '../engine/methods/decode-once'
import { prepare } from '../engine/methods/prepare'
import { DraftModelSelector, perplexity, type PromptFeatures } from '../engine/selection/draft-model-selection'
import { TfIdfCorpus } from '../engine/selection/tf-idf'
import { UserInputError } from '../engine/errors'
import type { RunStore } from '../store/run-store'
import { warpOfSettings } from './run-request'

const ACC_MAX = 0.98

export class RunDraftSelection {
  private readonly selector: DraftModelSelector
  private readonly corpus = new TfIdfCorpus()
  /** Per prompt index, per draft: computed once, in prompt order, so TF-IDF sees exactly the prompts before. */
  private readonly features = new Map<number, PromptFeatures[]>()

  constructor(
    private readonly store: RunStore,
    private readonly runId: number,
    private readonly config: RunConfig,
    private readonly models: DecoderModels,
    private readonly drafts: readonly LanguageModel[]
  ) {
    this.selector = new DraftModelSelector(drafts.length, config.draftSelection!.warmupPrompts, {
      gammaMax: config.gamma,
      accMax: ACC_MAX
    })
  }

  private async featuresOf(promptIndex: number, promptTokens: readonly number[]): Promise<PromptFeatures[]> {
    const cached = this.features.get(promptIndex)
    if (cached) return cached
    const tfidf = this.corpus.addAndScore(promptTokens)
    const features = await Promise.all(
      this.drafts.map(async (draft) => ({
        length: promptTokens.length,
        perplexity: perplexity(await draft.logProbabilities(promptTokens)),
        tfidf
      }))
    )
    this.features.set(promptIndex, features)
    return features
  }

  /** Decodes the first r prompts with `sd` (γ = --gamma) on every draft and fits each draft's Eq 5. */
  async warmUp(promptTokens: readonly number[][], signal?: AbortSignal): Promise<void> {
    const r = Math.min(this.selector.warmupPrompts, promptTokens.length)
    if (r < this.selector.warmupPrompts)
      throw new UserInputError(`draft selection needs ${this.selector.warmupPrompts} warm-up prompts; the run has ${promptTokens.length} (raise --limit or lower --select-warmup)`)
    for (let promptIndex = 0; promptIndex < r; promptIndex++) {
      const features = await this.featuresOf(promptIndex, promptTokens[promptIndex])
      for (let d = 0; d < this.drafts.length; d++) {
        if (signal?.aborted) return
        const steps = await this.profile(this.drafts[d], promptTokens[promptIndex], promptIndex)
        const observation = this.selector.recordWarmup(d, features[d], steps)
        this.store.addDraftChoice(this.runId, {
          promptIndex,
          phase: 'warmup',
          draftPath: this.drafts[d].info.path,
          detail: { features: features[d], observedAcceptance: observation.acceptance, rounds: steps.length }
        })
      }
    }
    this.selector.fit()
  }

  private async profile(draft: LanguageModel, promptTokens: number[], promptIndex: number): Promise<StepRecord[]> {
    const steps: StepRecord[] = []
    // Profiling is plain `sd` at the run's γ, whatever methods the run compares.
    const decoder = prepare('sd', { gamma: this.config.gamma, params: {} }).newRun()()
    await decodeOnce({
      decoder,
      models: { ...this.models, draft },
      promptTokens,
      maxTokens: this.config.maxTokens,
      warp: warpOfSettings(this.config.sampling),
      seed: this.config.seed,
      stream: promptIndex,
      onEvent: (event) => {
        if (event.type === 'step') steps.push(event.record)
      }
    })
    return steps
  }

  /** The draft for this prompt, with its features and every draft's prediction recorded. */
  async choose(promptIndex: number, promptTokens: readonly number[]): Promise<LanguageModel> {
    const features = await this.featuresOf(promptIndex, promptTokens)
    const decision = this.selector.choose(features)
    const chosen = this.drafts[decision.chosen]
    this.store.addDraftChoice(this.runId, {
      promptIndex,
      phase: 'choice',
      draftPath: chosen.info.path,
      detail: {
        candidates: this.drafts.map((draft, d) => ({
          path: draft.info.path,
          features: features[d],
          coefficients: this.selector.coefficients()[d],
          ...decision.predictions[d]
        }))
      }
    })
    return chosen
  }
}
