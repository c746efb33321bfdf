/**
 * The self-verify confidence threshold τ of one level of a hierarchy (HSDDW §3.1 and §4.4 "Confidence Threshold";
 * Appendix D Algorithm 2: τ_q1 at lines 9 and 25, τ_q2 at lines 28 and 53).
 *
 * The rule is the `self-verify` policy's (policies/self-verify.ts), reused here rather than re-implemented:
 * τ starts at 0 for every prompt (Alg. 2 line 1), drafting stops right after a token whose distribution has entropy
 * H > τ (that token is still proposed), and after every verification that rejects a token τ becomes the mean entropy
 * of all rejected tokens of the prompt so far — the entropy of the REJECTED token, H(q_{n+1}) (the text of §3.1/§4.4;
 * the listings' `H(q_n)` is the last accepted one, undefined when n = 0).
 *
 * A hierarchy needs two such thresholds driven by different verifiers — τ_q1 by M_q2's pre-verification of M_q1's
 * draft, τ_q2 by M_p's verification of the M_q2-level tokens — so each level owns one policy instance through this
 * adapter, whose three calls read like the algorithm: `startRound()` fixes τ for a drafting round, `exceeds(H)` is
 * the stop test, `verified(...)` feeds the verdict.
 */
import type { Distribution } from '../sampling/distribution'
import { selfVerifyPolicy, type SelfVerifyPolicy } from '../policies/self-verify'

export class EntropyThreshold {
  private readonly policy: SelfVerifyPolicy = selfVerifyPolicy({ maxDraft: Number.MAX_SAFE_INTEGER })
  private position = 0
  /** Entropies appended to the rejected set, in order (the τ history is their running mean). */
  readonly rejectedEntropies: number[] = []

  constructor() {
    this.policy.startPrompt?.([])
    this.policy.draftLength()
  }

  /** The threshold of the coming rounds (mean rejected entropy; 0 before the first rejection). */
  get tau(): number {
    return this.policy.tau
  }

  /** A drafting round begins: τ is fixed at its current value for the round's stop tests. */
  startRound(): void {
    this.position = 0
    this.policy.draftLength()
  }

  /** True when a token drafted from `distribution` (entropy H) ends the round: H > τ. */
  exceeds(entropy: number, distribution: Distribution): boolean {
    this.position += 1
    return this.policy.shouldStop({ position: this.position, token: -1, distribution, entropy })
  }

  /**
   * The verifier examined `proposed` tokens drafted with the given entropies and accepted the first `accepted`;
   * on a rejection the rejected token's entropy joins the mean.
   */
  verified(proposed: number, accepted: number, entropies: readonly number[]): void {
    if (accepted < proposed) this.rejectedEntropies.push(entropies[accepted])
    this.policy.update({
      // Only τ is read from the policy here; the hierarchy records its own stop reasons.
      stoppedBy: null,
      proposed,
      accepted,
      draftEntropies: entropies,
      draftTokens: [],
      emittedTokens: [],
      draftMs: 0,
      verifyMs: 0
    })
  }
}
