/** Constant draft length γ (vanilla speculative decoding, Leviathan et al. 2023; SVIP Appendix A Alg. 6). */
import type { DraftLengthPolicy } from './types'

export function fixedLengthPolicy(gamma: number): DraftLengthPolicy {
  return {
    id: 'fixed',
    draftLength: () => gamma,
    shouldStop: () => false,
    update: () => {},
    explain: () => ({ threshold: null, decision: { gamma } })
  }
}

/**
 * Constant γ with nothing to explain: for the cross-vocabulary drafters (sd-tli, sd-uad), whose step records carry
 * their own facts alone.
 */
export function plainFixedLength(gamma: number): DraftLengthPolicy {
  return { ...fixedLengthPolicy(gamma), explain: () => ({ threshold: null, decision: null }) }
}
