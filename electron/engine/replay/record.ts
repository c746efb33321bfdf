/**
 * Records a workload's trace (replay/trace.ts): the target decodes every prompt once (`ar`, the user's sampling
 * settings and seed), then each candidate draft model reads the same tokens teacher-forced (replay/draft-trace.ts).
 * The target's pass and the draft passes are independent, so a draft can be added to a trace later.
 * A draft of another vocabulary (model/vocabulary-check.ts) is traced as `foreign` and gets no draft pass: its ids
 * are not the target's, so it cannot read the target's tokens; its candidates replay with the live draft.
 */
import { vocabularyMismatch } from '../model/vocabulary-check'
import type { LanguageModel } from '../model/types'
import { recordDraftPass, type DraftPassSettings } from './draft-trace'
import { recordTargetPass, tracedModel, type TargetPassSettings, type Trace } from './trace'

export interface TraceSettings extends TargetPassSettings, Omit<DraftPassSettings, 'warp'> {}

export interface TraceProgress {
  prompt: number
  prompts: number
  /** 'target' or the draft's name. */
  model: string
}

export async function recordTrace(
  target: LanguageModel,
  drafts: Readonly<Record<string, LanguageModel>>,
  prompts: readonly (readonly number[])[],
  settings: TraceSettings,
  onProgress?: (progress: TraceProgress) => void
): Promise<Trace> {
  const trace: Trace = {
    warp: settings.warp,
    seed: settings.seed,
    maxTokens: settings.maxTokens,
    rolloutLength: settings.rolloutLength,
    target: tracedModel(target),
    drafts: Object.fromEntries(
      Object.entries(drafts).map(([name, model]) => [name, vocabularyMismatch(target, model) === null ? tracedModel(model) : { ...tracedModel(model), foreign: true as const }])
    ),
    prompts: []
  }
  for (const [index, promptTokens] of prompts.entries()) {
    onProgress?.({ prompt: index, prompts: prompts.length, model: 'target' })
    const prompt = await recordTargetPass(target, promptTokens, settings, index)
    for (const [name, draft] of Object.entries(drafts)) {
      if (trace.drafts[name].foreign) continue
      onProgress?.({ prompt: index, prompts: prompts.length, model: name })
      prompt.drafts[name] = await recordDraftPass(draft, prompt, { ...settings, warp: settings.warp })
    }
    trace.prompts.push(prompt)
  }
  return trace
}
