/**
 * Method id → decoder. Which models each method needs is declared here, so the CLI and the app can reject a run
 * that lacks them with one clear message before loading anything.
 */
import type { MethodId } from '../../api/contract'
import { fixedLengthPolicy } from '../policies/fixed'
import { autoregressive } from './autoregressive'
import { nlcDraft } from './nlc-draft'
import { speculativeDecoder } from './speculative'
import type { Decoder, DecodeRequest } from './types'

export interface MethodDefinition {
  id: MethodId
  summary: string
  needs: { draft: boolean; mid: boolean }
  /** A fresh decoder per prompt: policies keep state, and a prompt must not inherit another's. */
  create(request: DecodeRequest, gamma: number): Decoder
}

const METHODS: MethodDefinition[] = [
  {
    id: 'ar',
    summary: 'autoregressive decoding with the target alone (the speedup baseline)',
    needs: { draft: false, mid: false },
    create: () => autoregressive
  },
  {
    id: 'sd',
    summary: 'speculative decoding with a constant draft length γ (--gamma)',
    needs: { draft: true, mid: false },
    create: (_request, gamma) => speculativeDecoder(fixedLengthPolicy(gamma))
  },
  {
    id: 'nlc-draft',
    summary: "node-llama-cpp's DraftSequenceTokenPredictor (peer baseline; maxTokens = γ)",
    needs: { draft: true, mid: false },
    create: () => nlcDraft
  }
]

export function findMethod(id: string): MethodDefinition | undefined {
  return METHODS.find((method) => method.id === id)
}

export function availableMethods(): readonly MethodDefinition[] {
  return METHODS
}
