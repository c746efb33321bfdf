/**
 * `adaptive-fsm` — Method 2 of Liu, Park & Shen, "A Drop-In Solution for On-the-Fly Adaptation of Speculative
 * Decoding in Large Language Models" (../shared/papers/on-the-fly-adaptation-speculative-decoding.txt, §4.2,
 * line 118): a saturating counter on γ, as in branch prediction (Hennessy & Patterson).
 *
 *   after a verification of the window γ_t:   γ_{t+1} = min(γ_max, γ_t + 1)   if every drafted token was accepted
 *                                             γ_{t+1} = max(0,     γ_t − 1)   if a drafted token was rejected
 *
 * The paper gives no equation number for this rule (Eqs 1–2 belong to Method 1); the line numbers cite the text.
 *
 * Choices where the paper is silent or ambiguous (also in the method summary):
 * - γ_max is --gamma: "we still select a value for γ, but it is considered an upper limit, γ_max" (line 118).
 *   The counter starts at γ_max (the paper gives no start value; Appendix C.2, line 518, only illustrates one).
 * - γ may reach 0 (line 118: "potentially even at 0"; line 185: "sometimes reducing it to zero"); the round is then
 *   decoded by the target alone. LEAVING 0: a γ = 0 round proposes nothing, so no draft token is rejected and
 *   "all tokens are accepted" holds vacuously — the rule as written gives +1. The FSM therefore spends exactly one
 *   target-only step at 0 and then probes with γ = 1 (a draft that keeps failing makes it alternate 1, 0, 1, 0 …,
 *   i.e. half of the steps avoid the draft's cost).
 * - One −1 per round: verification stops at the first rejection, so a round has at most one rejected token.
 * - "All accepted" means accepted = proposed of the window actually sent (drafting may stop early at an
 *   end-of-generation token or at the token budget).
 * - γ persists across the prompts of a run (a branch predictor's counter is not reset between programs; the paper
 *   mentions no per-prompt reset). It lives in the run's closure (methods/catalog.ts newRun).
 */
import type { DraftLengthPolicy, PolicyExplanation, VerificationOutcome } from './types'

/** The pure transition of Method 2: γ after a verification of `outcome`. */
export function fsmNextGamma(gamma: number, outcome: Pick<VerificationOutcome, 'proposed' | 'accepted'>, gammaMax: number): number {
  const allAccepted = outcome.accepted >= outcome.proposed
  return allAccepted ? Math.min(gammaMax, gamma + 1) : Math.max(0, gamma - 1)
}

export function adaptiveFsmPolicy(gammaMax: number): DraftLengthPolicy {
  let gamma = gammaMax
  let reason = 'start at γ_max'
  let last: VerificationOutcome | null = null
  let decided: PolicyExplanation = { threshold: null, decision: null }

  return {
    id: 'adaptive-fsm',
    draftLength() {
      decided = {
        threshold: null,
        decision: {
          gamma,
          gammaMax,
          reason,
          previousProposed: last?.proposed ?? null,
          previousAccepted: last?.accepted ?? null
        }
      }
      return gamma
    },
    shouldStop: () => false,
    update(outcome) {
      const before = gamma
      gamma = fsmNextGamma(gamma, outcome, gammaMax)
      last = outcome
      const cause =
        outcome.proposed === 0
          ? 'γ = 0 round: nothing rejected (vacuously all accepted)'
          : outcome.accepted >= outcome.proposed
            ? 'all accepted'
            : 'rejection'
      reason = `${cause}: ${before} → ${gamma}${gamma === before ? ' (saturated)' : ''}`
    },
    explain: () => decided
  }
}
