/**
 * Records a workload's trace (replay/trace.ts): the target decodes every prompt once (`ar`, the user's sampling
 * settings and seed), then each candidate draft model reads the same tokens teacher-forced (replay/draft-trace.ts).
 * The target's pass and the draft passes are independent, so a draft can be added to a trace later.
 */
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
    drafts: Object.fromEntries(Object.entries(drafts).map(([name, model]) => [name, tracedModel(model)])),
    prompts: []
  }
  for (const [index, promptTokens] of prompts.entries()) {
    onProgress?.({ prompt: index, prompts: prompts.length, model: 'target' })
    const prompt = await recordTargetPass(target, promptTokens, settings, index)
    for (const [name, draft] of Object.entries(drafts)) {
      onProgress?.({ prompt: index, prompts: prompts.length, model: name })
      prompt.drafts[name] = await recordDraftPass(draft, prompt, { ...settings, warp: settings.warp })
    }
    trace.prompts.push(prompt)
  }
  return trace
}
