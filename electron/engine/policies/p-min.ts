/**
 * `sd-pmin`: llama.cpp's confidence floor for draft-model speculation (common/speculative.cpp, the draft-model
 * drafting loop; `common_speculative_gen_draft` in 2025 versions):
 *
 *   if (cur_p->data[0].p < params.p_min) break;   // only collect very high-confidence draft tokens
 *   ...
 *   if (params.n_max <= (int) result.size()) break;
 *
 * Rule here: after each drafted token x_i, stop when the top-1 probability of its draft distribution q_i is below
 * p_min — but never before n_min tokens (a stop is allowed once position i ≥ n_min) — and never draft more than
 * n_max tokens.
 *
 * Defaults (`--set pmin.p`, `pmin.min`, `pmin.max`): p_min = 0.75, n_min = 0, n_max = 16 — llama.cpp's
 * `common_params_speculative { n_max = 16; n_min = 0; p_min = 0.75f }` (common/common.h at ggml-org/llama.cpp
 * de93b99, 2025; the `--draft-max`, `--draft-min`, `--draft-p-min` flags). The llama.cpp bundled with
 * node-llama-cpp 3.22.1 (llama/gitRelease.bundle, release v0.5.0) has since moved the draft settings to
 * `common_params_speculative_draft { n_max = 3; n_min = 0; p_min = 0.0f }` (common/common.h:326–330), i.e. the
 * floor is off by default there, which would make this method plain `sd` with γ = 3; we keep 0.75 / 16.
 * n_max is llama.cpp's, not --gamma: like SVIP's and HSDDW's caps it belongs to the method (pass
 * `--set pmin.max=5` to compare at sd's γ).
 *
 * Differences from llama.cpp, both forced or chosen for the seam and neither affecting exactness:
 * - llama.cpp drops the low-confidence token (it breaks before `result.push_back`); our drafting loop asks the
 *   policy after the token is drafted, so the token below the floor is still sent to the verifier (one extra draft
 *   token that may be accepted; the target call is batched either way).
 * - llama.cpp's n_min discards a whole draft shorter than n_min (`if (result.size() < n_min) result.clear()`),
 *   i.e. the target decodes alone that round; here n_min is a floor below which the confidence check is not
 *   applied. With the default n_min = 0 the two agree.
 * - q_i is the run's warped draft distribution (top-k 64 by default; temperature-1 softmax when greedy);
 *   llama.cpp's draft sampler renormalises over its top-10 candidates.
 *
 * explain(): threshold = p_min; decision {gamma: n_max, stop: drafted tokens, confidence: top-1 probability of
 * the last drafted token (the one below the floor when reason = 'threshold'), reason 'threshold' | 'cap' | 'eos',
 * min: n_min}. reason 'eos' means the engine ended the draft first (an end-of-generation token, or the last tokens
 * of the --max-tokens budget).
 */
import { STOP_REASONS, type DraftStop, type DraftedToken, type DraftLengthPolicy, type PolicyExplanation, type VerificationOutcome } from './types'

export interface PMinOptions {
  /** p_min ∈ [0, 1]: stop after a token whose draft top-1 probability is below it. */
  p: number
  /** n_min ≥ 0: no confidence stop before this many tokens. */
  min: number
  /** n_max ≥ 1: the draft length cap. */
  max: number
}


export function pMinPolicy({ p, min, max }: PMinOptions): DraftLengthPolicy {
  let confidence: number | null = null
  let round: { proposed: number; confidence: number | null; stoppedBy: DraftStop } | null = null
  return {
    id: 'p-min',
    startPrompt() {
      round = null
    },
    draftLength() {
      confidence = null
      return max
    },
    shouldStop(drafted: DraftedToken) {
      confidence = drafted.distribution.probs[0] ?? 0
      return drafted.position >= min && confidence < p
    },
    update(outcome: VerificationOutcome) {
      round = { proposed: outcome.proposed, confidence, stoppedBy: outcome.stoppedBy }
    },
    explain(): PolicyExplanation {
      if (!round) return { threshold: p, decision: { gamma: max, min } }
      const reason = round.stoppedBy && STOP_REASONS[round.stoppedBy]
      return { threshold: p, decision: { gamma: max, stop: round.proposed, confidence: round.confidence, reason, min } }
    }
  }
}

