/**
 * Method id → decoder. Which models each method needs is declared here, so the CLI and the app can reject a run
 * that lacks them with one clear message before loading anything.
 */
import type { MethodId } from '../../api/contract'
import { fixedLengthPolicy } from '../policies/fixed'
import { autoregressive } from './autoregressive'
import { nlcDraft } from './nlc-draft'
import { speculativeDecoder } from './speculative'
import type { Decoder, MethodParams } from './types'

export interface MethodSettings {
  /** --gamma: the draft length of fixed-window methods, the cap or starting point of adaptive ones. */
  gamma: number
  /** --set key=value pairs (method parameters, e.g. svip.h). */
  params: MethodParams
}

export interface MethodDefinition {
  id: MethodId
  summary: string
  needs: { draft: boolean; mid: boolean }
  /**
   * Called once per run and method; returns the decoder for each prompt. State that must persist across prompts
   * (e.g. the persistent HF heuristic) lives in this closure; per-prompt state resets in policy.startPrompt.
   */
  forRun(settings: MethodSettings): () => Decoder
}

const METHODS: MethodDefinition[] = [
  {
    id: 'ar',
    summary: 'autoregressive decoding with the target alone (the speedup baseline)',
    needs: { draft: false, mid: false },
    forRun: () => () => autoregressive
  },
  {
    id: 'sd',
    summary: 'speculative decoding with a constant draft length γ (--gamma)',
    needs: { draft: true, mid: false },
    forRun: ({ gamma }) => {
      const policy = fixedLengthPolicy(gamma)
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'nlc-draft',
    summary: "node-llama-cpp's DraftSequenceTokenPredictor (peer baseline; maxTokens = γ)",
    needs: { draft: true, mid: false },
    forRun: () => () => nlcDraft
  }
]

export function findMethod(id: string): MethodDefinition | undefined {
  return METHODS.find((method) => method.id === id)
}

export function availableMethods(): readonly MethodDefinition[] {
  return METHODS
}
