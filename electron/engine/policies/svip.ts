/**
 * `svip`: SVIP's self-verification length policy (Zhang et al., "Draft Model Knows When to Stop", §2–3,
 * Algorithm 1). Pinsker bounds the acceptance probability, β ≥ 1 − √(½ KL(q‖p)) = 1 − √(½H_{q,p} − ½H_q)
 * (Eq. 4–5); approximating the cross entropy by a constant multiple of the draft entropy gives β ≥ 1 − √(c·H_q)
 * (Eq. 6), and drafting stops as soon as that estimated bound drops below a threshold. Algorithm 1, line 8:
 *
 *   after each draft token:  if √H(q) > h  then stop drafting and verify
 *
 * with H in nats, q the draft distribution the token was just drawn from. (Line 8 writes q_{x|x<n+j} after
 * j ← j+1, but line 6 of the same listing samples x_{n+j} with j starting at 0, i.e. one index early; read
 * consistently, the entropy is that of the token just drafted — which is also what the authors' code does.)
 * The stopping token itself is verified (it was drafted); the draft is also capped at T_max tokens.
 *
 * WHICH entropy. The paper writes H(q) of "the draft model's distribution" and never mentions top-k; its
 * experiments sample at temperature 1 or decode greedily, with no top-k/top-p. The authors' code
 * (vanilla-sd/eval_specbench.py, `AssistantModel.generate`) computes `calc_entropy(next_token_logits)`: the
 * entropy of the softmax of the draft's RAW logits over the WHOLE vocabulary, temperature 1 — in both its
 * sampling mode (where it also samples from `softmax(next_token_logits)`, so that is q) and its greedy mode (where
 * q is an argmax and the entropy is still the temperature-1 softmax's). So by default (`svip.warpedEntropy=false`)
 * H is that full-vocabulary, temperature-1 entropy, whatever the run's --temperature / --top-k / --top-p: the
 * engine asks the draft session for it (node-llama-cpp then transfers every logit of each drafted position,
 * model/llama-cpp-model.ts). `--set svip.warpedEntropy=true` thresholds H of the warped distribution q that
 * SpecLab samples and verifies the token with instead (temperature, top-k, top-p; greedy: the temperature-1
 * softmax of the top-k). With the default top-k of 64 that H leaves out the
 * tail (its mass and its spread), so in practice it is lower and, at the same h, drafts run longer; a temperature
 * ≠ 1 moves it either way. Neither choice touches verification: the entropy only decides where the draft stops
 * (lossless either way).
 *
 * The constant c. §2.3 "remove √c from Equation 6 and absorb it into the threshold h", so Algorithm 1 compares
 * √H with h. The authors' public code (github.com/Geralt-Targaryen/SVIP, vanilla-sd/eval_specbench.py) keeps it:
 * `torch.sqrt(entropy * 0.15) > self.entropy_threshold`, and the thresholds the paper reports (grid {0.2, 0.3,
 * 0.4, 0.5}, §3.1) are values of THAT threshold. Here the rule is √(c·H) > h with `svip.c` default 0.15, so the
 * paper's h values mean what they meant in its experiments; `--set svip.c=1` gives Algorithm 1 exactly as printed
 * (h = 0.3 with c = 0.15 is √H > 0.3/√0.15 ≈ 0.775, i.e. H > 0.6 nats; with c = 1 it would be H > 0.09 nats, a
 * one-token draft almost always).
 *
 * Defaults: h = 0.3 — §3.1 (line 164 of the text): "the entropy threshold … is chosen from {0.2, 0.3, 0.4, 0.5}
 * … which are 0.4 for Pythia, and 0.3 for Qwen2.5 and LLaMA-3" (0.3 for two of the three families, and the
 * default `entropy_threshold` of the authors' script); T_max = `svip.maxDraft` = 40 — §3.1: "we limit the maximum
 * draft length to 40 in both heuristics and SVIP scenarios" (the script's `min(40, max_new_tokens)`).
 *
 * explain(): threshold = h; decision {gamma: the cap, stop: drafted tokens, sqrtEntropy: √H of the last drafted
 * token (the one that crossed h when reason = 'threshold'), statistic: √(c·H) compared with h, c, entropySource:
 * 'full' | 'warped' (which H; the step's draftEntropies hold that one), reason 'threshold' | 'cap' | 'eos'}. reason
 * 'eos' means the engine ended the draft first (an end-of-generation token, or the last tokens of the --max-tokens
 * budget).
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

export interface SvipOptions {
  /** Threshold h on √(c·H): stop drafting when it is exceeded. */
  h: number
  /** The constant of Eq. 6 (0.15 in the authors' code; 1 = Algorithm 1 as printed). */
  c: number
  /** T_max: draft length cap. */
  maxDraft: number
  /** true: H of the warped draft distribution; false (default): of the whole-vocabulary softmax at temperature 1. */
  warpedEntropy?: boolean
}


export function svipPolicy({ h, c, maxDraft, warpedEntropy = false }: SvipOptions): DraftLengthPolicy {
  const source: EntropySource = warpedEntropy ? 'warped' : 'full'
  let entropy: number | null = null
  let round: { proposed: number; entropy: number | null; stoppedBy: DraftStop } | null = null
  return {
    id: 'svip',
    entropy: source,
    startPrompt() {
      round = null
    },
    draftLength() {
      entropy = null
      return maxDraft
    },
    shouldStop(drafted: DraftedToken) {
      entropy = Math.max(0, drafted.entropy)
      return Math.sqrt(c * entropy) > h
    },
    update(outcome: VerificationOutcome) {
      round = { proposed: outcome.proposed, entropy, stoppedBy: outcome.stoppedBy }
    },
    explain(): PolicyExplanation {
      if (!round) return { threshold: h, decision: { gamma: maxDraft, c, entropySource: source } }
      const reason = round.stoppedBy && STOP_REASONS[round.stoppedBy]
      const sqrtEntropy = round.entropy === null ? null : Math.sqrt(round.entropy)
      const statistic = round.entropy === null ? null : Math.sqrt(c * round.entropy)
      return { threshold: h, decision: { gamma: maxDraft, stop: round.proposed, sqrtEntropy, statistic, c, entropySource: source, reason } }
    }
  }
}

