/**
 * `hsddw` — Hierarchical Speculative Decoding with Dynamic Window (../shared/papers/hsddw-hierarchical-sd-dynamic-
 * window.txt): §3.2, Figure 4, Appendix D Algorithm 2. Three models: fast draft M_q1 (`--draft`), stronger draft
 * M_q2 (`--mid`), target M_p. The stages map onto Algorithm 2 as follows (building blocks in hierarchy.ts):
 *
 *   line 1       H_q1 = H_q2 = [], τ_q1 = τ_q2 = 0, n_tot = 0                 per prompt: two EntropyThresholds
 *   lines 4–12   Draft + Self-verify: M_q1 drafts x_i ~ q_i, i ≤ K, stops after H(q_i) > τ_q1     Hierarchy.draft
 *   lines 13–24  Pre-verify: M_q2 scores the draft in one call, accept with min(1, q2/q1), correct
 *                from norm(max(0, q2 − q1))                                                       Hierarchy.preVerify
 *   line 25      on a rejection τ_q1 = mean(H_q1 ∪ {H of the rejected M_q1 token})
 *   lines 27–38  Self-verify of M_q2: any appended token with H(q2) > τ_q2 → mode "verify", else "Draft" again
 *   line 29      n_tot += tokens appended in this pre-verify round
 *   lines 40–54  Verify: M_p scores the n_tot tokens in one call against q2's distributions          Hierarchy.verify
 *   line 53      on a rejection τ_q2 = mean(H_q2 ∪ {H(q2) of the rejected token})
 * K = --gamma (the paper's experiments use K = 10, Appendix A.1).
 *
 * Where the pseudo-code is ambiguous or would break exactness (the choice, then why):
 * 1. τ updates (lines 25, 53) append the entropy of the REJECTED token, H(q_{n+1}), not the listing's H(q_n): the
 *    text defines τ as "the average of H for all tokens rejected" (§3.1) / "the entropy of the i-th rejected token"
 *    (§4.4), and q_n does not exist when n = 0. Same rule as the `self-verify` policy (shared: entropy-threshold.ts).
 * 2. n_tot (line 29 writes n_tot = n + n_tot) counts every token the M_q2 level appended, n accepted + the
 *    correction y of line 24: with n alone, y would enter the output without M_p's verification (lossy). n_tot is
 *    reset after each Verify (the listing never resets it, yet line 41 splits off "the last n_tot draft tokens").
 * 3. Line 28's test j ← min{i ≤ l : H(p_i) > τ_q2} runs over M_q2's distributions of the tokens this round
 *    appended (the accepted x_1..x_n and y): §3.2 case (i) "M_2 is confident in the current output". Positions
 *    after a rejection are conditioned on discarded drafts, and the listing's p_i index is shifted by one
 *    (p_1 = M_p(x + [x_1]) in lines 13 and 42).
 * 4. Bonus tokens: when every draft is accepted, both levels sample one more token from the verifier's distribution
 *    at position l+1 (lines 13 and 42 list only p_1..p_l). That distribution comes with the same batched call, the
 *    bonus is part of Leviathan et al.'s and Chen's Algorithm 1 and of the code the paper builds on
 *    (LLMSpeculativeSampling, App. B), and it keeps exactness. M_q2's bonus is skipped after an end-of-generation.
 * 5. q for M_p (line 43, "retrieval q_1..q_ntot from the cache" with M_q = M_q2, line 37): q2's distribution at
 *    every position, for M_q1's accepted tokens AND M_q2's corrections/bonuses — each token's marginal law under the
 *    two-stage process is q2 (see hierarchy.ts), so the chain is lossless.
 * 6. The listing bounds n_tot only through "Draft" rounds; we also hand over at an end-of-generation token and when
 *    n_tot reaches the remaining --max-tokens budget (tokens past either could never be kept).
 * 7. H is the entropy of the WARPED q1 / q2 (the run's temperature, top-k, top-p), as M_q2 and M_p verify them.
 *    `self-verify` (policies/self-verify.ts) by default thresholds the draft's whole-vocabulary softmax at
 *    temperature 1 instead, like SVIP's code; here every M_q2 position of a batched pre-verify call would need its
 *    full logits transferred, so the hierarchies keep the warped entropy (self-verify's `warpedEntropy=true`).
 * The decisions (τ tests, budget, EOS) use only tokens already drawn, so the output follows M_p's warped
 * distribution (toy chi-square in test/unit/hierarchy-lossless.test.ts).
 *
 * Differences from `pre-self-verify` (pre-verify.ts): HSDDW tests M_q2's confidence once per pre-verify round and
 * hands over ALL n_tot tokens, with no window on n_tot; pre-self-verify stops at the first unconfident M_q2 token
 * inside a window W.
 * Its rounds run through round.ts's loop and tail; the round body is the hierarchy's own (hierarchy.ts says why).
 */
import { EntropyThreshold } from './entropy-threshold'
import { OutputBuffer } from './output'
import { Hierarchy, type ChainToken } from './hierarchy'
import { emitRound, runRounds } from './round'
import { now } from './session-sync'
import type { DecodeEvent, Decoder } from './types'

export interface HsddwOptions {
  /** K: M_q1's window (--gamma). */
  gamma: number
}


export function hsddwDecoder(options: HsddwOptions): Decoder {
  return async function* hsddw(models, request) {
    const h = await Hierarchy.open(models, request, 'hsddw')
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
    const tauQ1 = new EntropyThreshold() // line 1
    const tauQ2 = new EntropyThreshold()
    // line 2: while len(x) < L (OutputBuffer applies L = --max-tokens and end-of-generation)
    yield* runRounds(output, request, targetRound, () => h.dispose())

    /** One M_p round: the chain M_q1 and M_q2 build, verified by M_p. */
    async function* targetRound(step: number): AsyncGenerator<DecodeEvent> {
      const started = now()
      h.newRound()
      const tauQ2InForce = tauQ2.tau
      tauQ2.startRound()
      const remaining = request.maxTokens - output.tokens.length
      /** The n_tot tokens awaiting M_p (choice 2). */
      const chain: ChainToken[] = []
      let handover: 'entropy' | 'eos' | 'budget' | null = null
      let innerRounds = 0
      // mode = "Draft" (lines 3–38)
      while (handover === null) {
        const sequence = [...output.sequence, ...chain.map((t) => t.token)]
        const draft = await h.draft(sequence, Math.min(options.gamma, remaining - chain.length), tauQ1) // 4–12
        const round = await h.preVerify(sequence, draft, remaining - chain.length) // 13–24
        innerRounds += 1
        tauQ1.verified(draft.tokens.length, round.accepted, draft.entropies) // 25
        chain.push(...round.tokens) // 29
        // 28: j ← the first appended token M_q2 is not confident about (choice 3); every token is tested so
        // the τ_q2 bookkeeping sees the whole round.
        const unconfident = round.tokens.map((t) => tauQ2.exceeds(t.entropy, t.q)).some(Boolean)
        if (h.isEnd(chain[chain.length - 1].token)) handover = 'eos' // choice 6
        else if (unconfident) handover = 'entropy' // 34–37: mode ← "verify"
        else if (chain.length >= remaining) handover = 'budget' // choice 6
        // else 30–33: j = 0, mode ← "Draft"
      }
      // mode = "verify" (lines 40–55)
      const verdict = await h.verify(output, chain, step)
      tauQ2.verified(chain.length, verdict.accepted, chain.map((t) => t.entropy)) // 53
      const record = h.record(step, 'hsddw', chain, verdict, started, {
        threshold: tauQ2InForce,
        decision: { gamma: options.gamma, nTot: chain.length, innerRounds, handover, tauQ1: tauQ1.tau, tauQ2: tauQ2.tau }
      })
      yield* emitRound(verdict.events, record)
      // 55: mode ← "Draft"; n_tot ← 0 (choice 2)
    }
  }
}
