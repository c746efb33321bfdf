/**
 * The objective of "A Drop-In Solution for On-the-Fly Adaptation of Speculative Decoding"
 * (../shared/papers/on-the-fly-adaptation-speculative-decoding.txt) Definition 1, Eq. 1:
 *
 *   G = max_γ (1 − Acc^{γ+1}) / ((1 − Acc)(γ·a_q + b_p(γ)))
 *
 * expected tokens per round over the round's latency (a_q: draft latency per token, b_p(γ): verification latency).
 * It is implemented once, by the `adaptive-analytic` policy that optimises it online; the theory module re-exports
 * that implementation rather than keeping a second copy.
 */
export { analyticObjective, bestWindow, type WindowChoice } from '../policies/adaptive-analytic'
