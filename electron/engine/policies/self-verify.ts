/**
 * `self-verify`: HSDDW's self-verify dynamic window (§3.1; §4.4 "Confidence Threshold"; Appendix C,
 * Algorithm 1 "SD+Self-Verify").
 *
 * Drafting (Algorithm 1, lines 3–11): for i = 1..K draw x_i ~ q_i and stop after the token when H(q_i) > τ
 * (H in nats; §3.1: "if the confidence is low, such that H(q(y_t|x, y<t)) > τ, the generation process is
 * halted"). The stopping token is verified too (Figure 3: the third token stops the draft and is then verified).
 *
 * Threshold (§4.4, the equation after "the update rule for the threshold τ is defined as"):
 *   τ = (1/|S_reject|) Σ_{i ∈ S_reject} H(q_i)
 * the running mean of the entropies of the draft tokens REJECTED by the target; one entry per round with a
 * rejection (the first rejected token; the tokens after it are discarded unverified). Algorithm 1, line 25 writes
 * `τ_q = Average(H_q.append(H(q_n)))` — index n, the last ACCEPTED token — but the text (§3.1 "the average of H for
 * all tokens rejected by the target model", §4.4 "the entropy of the i-th rejected token") says the rejected one,
 * and with n = 0 (first token rejected) q_n does not exist; we follow the text: H(q_{n+1}) =
 * draftEntropies[accepted].
 *
 * τ starts at 0 (Algorithm 1, line 1: H_q = [], τ_q = 0), and the algorithm has no special case for "no rejection
 * yet": with τ = 0 every token with H > 0 stops the draft, so each round drafts ONE token until the first
 * rejection is seen (a token with H = 0 exactly, a one-hot draft distribution, would not stop it). We implement
 * exactly that; it is what the listing implies and the text does not contradict.
 *
 * Scope of τ: reset at every prompt. §3.1: τ "is calculated as the average of H for all tokens rejected by the
 * target model in the current sentence"; §4.4: "S_reject represent[s] the set of positions in a sentence";
 * Algorithm 1 initialises H_q and τ_q once per input prefix x. One prompt's generation is the "sentence".
 *
 * Which entropy: §3.1 thresholds H(q(y_t | x, y<t)), the draft MODEL's distribution; the experiments run at
 * temperature 1 (App. A.1) or greedily, with no top-k or top-p, and no code is public. By default
 * (`selfverify.warpedEntropy=false`) H is therefore the entropy of the draft's softmax of its raw logits over the
 * whole vocabulary at temperature 1 — the same quantity as SVIP's authors' code (policies/svip.ts) — for the
 * stop test and for τ alike (draftEntropies then hold it). `--set selfverify.warpedEntropy=true` uses H of the
 * warped draft distribution q (the run's temperature, top-k, top-p) instead. Only the stop
 * depends on it; verification never does (lossless either way). (pre-self-verify and hsddw still threshold the
 * warped entropies of M_q1 and M_q2.)
 *
 * Window cap K = `selfverify.maxDraft`, default 10: Appendix A.1 "Consistent with (Leviathan et al., 2023), the
 * fixed window size was set to K = 10" (the setting of the main results in §4; Figure 7 varies K for robustness).
 *
 * explain(): threshold = τ in force while the round was drafted (recorded for every step); decision {gamma: K,
 * stop: drafted tokens, entropy: H of the last drafted token (the one above τ when reason = 'threshold'),
 * reason 'threshold' | 'cap' | 'eos', rejected: the entropy appended to S_reject by this round (null when all
 * were accepted), rejections: |S_reject| so far, next: τ for the coming round, entropySource: 'full' | 'warped'
 * (which H; the step's draftEntropies hold that one)}. reason 'eos' means the engine ended the draft first (an
 * end-of-generation token, or the last tokens of the --max-tokens budget).
 */
import {
  STOP_REASONS,
  type DraftStop,
  type DraftedToken,
  type DraftLengthPolicy,
  type EntropySource,
  type PolicyExplanation,
  type VerificationOutcome
} from './types'

export interface SelfVerifyOptions {
  /** Window size K: the draft length cap. */
  maxDraft: number
  /** true: H of the warped draft distribution; false (default): of the whole-vocabulary softmax at temperature 1. */
  warpedEntropy?: boolean
}


export interface SelfVerifyPolicy extends DraftLengthPolicy {
  /** The current confidence threshold τ (mean entropy of the rejected draft tokens of this prompt; 0 before any). */
  readonly tau: number
}

export function selfVerifyPolicy({ maxDraft, warpedEntropy = false }: SelfVerifyOptions): SelfVerifyPolicy {
  const source: EntropySource = warpedEntropy ? 'warped' : 'full'
  let rejectedSum = 0
  let rejections = 0
  let tau = 0
  let tauInForce = 0
  let entropy: number | null = null
  let round: { proposed: number; entropy: number | null; stoppedBy: DraftStop; rejected: number | null } | null = null
  return {
    id: 'self-verify',
    entropy: source,
    get tau() {
      return tau
    },
    startPrompt() {
      rejectedSum = 0
      rejections = 0
      tau = 0
      tauInForce = 0
      round = null
    },
    draftLength() {
      tauInForce = tau
      entropy = null
      return maxDraft
    },
    shouldStop(drafted: DraftedToken) {
      entropy = drafted.entropy
      return entropy > tauInForce
    },
    update(outcome: VerificationOutcome) {
      let rejected: number | null = null
      if (outcome.proposed > 0 && outcome.accepted < outcome.proposed) {
        rejected = outcome.draftEntropies[outcome.accepted]
        rejectedSum += rejected
        rejections += 1
        tau = rejectedSum / rejections
      }
      round = { proposed: outcome.proposed, entropy, stoppedBy: outcome.stoppedBy, rejected }
    },
    explain(): PolicyExplanation {
      if (!round) return { threshold: tau, decision: { gamma: maxDraft, rejections, next: tau, entropySource: source } }
      const reason = round.stoppedBy && STOP_REASONS[round.stoppedBy]
      return {
        threshold: tauInForce,
        decision: {
          gamma: maxDraft,
          stop: round.proposed,
          entropy: round.entropy,
          reason,
          rejected: round.rejected,
          rejections,
          next: tau,
          entropySource: source
        }
      }
    }
  }
}

