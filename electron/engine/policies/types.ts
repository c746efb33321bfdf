/**
 * The draft-length policy seam (separate from verification, like HF's candidate generator strategy):
 * `draftLength()` caps the next round (0 = let the target decode alone), `shouldStop` is asked after each drafted
 * token, `update` learns from the verifier's verdict. A policy records what it decided and why (`explain`), and
 * that lands in the step records.
 */
import type { Distribution } from '../sampling/distribution'

/**
 * Which entropy of a drafted token a policy thresholds (DraftLengthPolicy.entropy):
 * - 'warped': H(q) of the warped draft distribution the token was drawn from (the run's temperature, top-k, top-p;
 *   greedy: the temperature-1 softmax of the top-k);
 * - 'full': H of the draft model's own distribution, the softmax of its raw logits over the whole vocabulary
 *   (temperature 1, no top-k/top-p) — SVIP's authors' `calc_entropy(next_token_logits)`.
 * Either way the entropy only decides where drafting stops; verification never sees it (lossless either way).
 */
export type EntropySource = 'warped' | 'full'

export interface DraftedToken {
  /** 1-based position in the current draft. */
  position: number
  token: number
  /** The warped draft distribution q the token was drawn from (and is verified against). */
  distribution: Distribution
  /** Its entropy in nats, of the kind the policy asked for (`DraftLengthPolicy.entropy`; default H(q)). */
  entropy: number
}

/**
 * Why drafting stopped, as the decoder saw it: the policy's own test (`shouldStop`), its cap (`draftLength()`), the
 * engine (an end-of-generation token, or the --max-tokens budget cut the round short), or a model-free drafter that
 * had no more tokens to propose (its match ended: decoders/drafter.ts); null when nothing was drafted (a target-only
 * round). The decoder records it, so a policy keeps no state just to explain its stop.
 */
export type DraftStop = 'policy' | 'cap' | 'engine' | 'drafter' | null

/** The words step records have always used for a DraftStop (decision.reason). */
export const STOP_REASONS = { policy: 'threshold', cap: 'cap', engine: 'eos', drafter: 'match-end' } as const

export interface VerificationOutcome {
  stoppedBy: DraftStop
  /** Draft tokens sent to the verifier (0 for a target-only round). */
  proposed: number
  /** Leading draft tokens the verifier accepted; the entropy of the first rejected one is draftEntropies[accepted]. */
  accepted: number
  /** The drafted tokens' entropies, of the kind the policy asked for (as DraftedToken.entropy). */
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
  /**
   * The entropy `shouldStop` and `update` receive (absent: 'warped'). 'full' makes the decoder ask the draft session
   * for the whole-vocabulary entropy (ModelSession options.fullEntropy: every logit transferred per drafted token).
   */
  readonly entropy?: EntropySource
  /** A new prompt begins (policies that keep state only per prompt reset here; cache-FSM seeds its cache). */
  startPrompt?(promptTokens: readonly number[]): void
  /** Upper bound on the draft length of the coming round; 0 means a target-only step. */
  draftLength(): number
  /** Called after each drafted token; true stops drafting and sends the draft to the verifier. */
  shouldStop(drafted: DraftedToken): boolean
  update(outcome: VerificationOutcome): void
  explain(): PolicyExplanation
}
