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
