/**
 * The draft-length policy seam (separate from verification, like HF's candidate generator strategy):
 * `draftLength()` caps the next round (0 = let the target decode alone), `shouldStop` is asked after each drafted
 * token, `update` learns from the verifier's verdict. A policy records what it decided and why (`explain`), and
 * that lands in the step records.
 */
import type { Distribution } from '../sampling/distribution'

export interface DraftedToken {
  /** 1-based position in the current draft. */
  position: number
  token: number
  distribution: Distribution
  /** H(q_i) in nats. */
  entropy: number
}

/**
 * Why drafting stopped, as the decoder saw it: the policy's own test (`shouldStop`), its cap (`draftLength()`), or
 * the engine (an end-of-generation token, or the --max-tokens budget cut the round short); null when nothing was
 * drafted (a target-only round). The decoder records it, so a policy keeps no state just to explain its stop.
 */
export type DraftStop = 'policy' | 'cap' | 'engine' | null

/** The words step records have always used for a DraftStop (decision.reason). */
export const STOP_REASONS = { policy: 'threshold', cap: 'cap', engine: 'eos' } as const

export interface VerificationOutcome {
  stoppedBy: DraftStop
  /** Draft tokens sent to the verifier (0 for a target-only round). */
  proposed: number
  /** Leading draft tokens the verifier accepted; the entropy of the first rejected one is draftEntropies[accepted]. */
  accepted: number
  draftEntropies: readonly number[]
  /** The drafted tokens, and the tokens this round appended to the output (accepted prefix + correction/bonus). */
  draftTokens: readonly number[]
  emittedTokens: readonly number[]
  draftMs: number
  verifyMs: number
}

export interface PolicyExplanation {
  threshold: number | null
  decision: Record<string, number | string | boolean | null> | null
}

export interface DraftLengthPolicy {
  readonly id: string
  /** A new prompt begins (policies that keep state only per prompt reset here; cache-FSM seeds its cache). */
  startPrompt?(promptTokens: readonly number[]): void
  /** Upper bound on the draft length of the coming round; 0 means a target-only step. */
  draftLength(): number
  /** Called after each drafted token; true stops drafting and sends the draft to the verifier. */
  shouldStop(drafted: DraftedToken): boolean
  update(outcome: VerificationOutcome): void
  explain(): PolicyExplanation
}
