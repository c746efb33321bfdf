/**
 * `pre-verify` and `pre-self-verify` — HSDDW (../shared/papers/hsddw-hierarchical-sd-dynamic-window.txt) §4.3,
 * Figure 5: (a) "speculative decoding with Pre-verify, which can be viewed as two speculative decoding models
 * connected sequentially"; (b) "an extension of (a) with the addition of Self-verify". Both live in this file
 * because they differ ONLY in their stopping rules. The three-model building blocks they share with `hsddw`
 * (hsddw.ts) and `hier-chen` (hierarchical-chen.ts) are the `Hierarchy` class (hierarchy.ts).
 *
 * Models: M_q1 small draft (`--draft`), M_q2 mid draft (`--mid`), M_p target. One target round:
 *   repeat (inner SD, Algorithm 2 lines 4–26 "Draft" + "Pre-verify"):
 *     M_q1 drafts up to min(K, W − n_tot) tokens, one call each                                   (lines 4–12)
 *     M_q2 scores them in ONE batched call; Verify/Correct against q2: the accepted prefix, then a correction
 *       from norm(max(0, q2 − q1)) or, all accepted, a bonus token from q2                           (lines 13–24)
 *   until n_tot tokens wait for M_p; then M_p scores them in ONE batched call and Verify/Correct against
 *   q2's distributions: accepted prefix + correction from norm(max(0, p − q2)) or bonus from p      (lines 40–55)
 * K = --gamma, W = --set pre.window (default --gamma).
 *
 * Stopping rules (the only difference between the two methods):
 * - pre-verify:      M_q1 drafts exactly min(K, W − n_tot) tokens; M_p verifies once n_tot = W.
 * - pre-self-verify: Algorithm 1's self-verify at BOTH levels, inside the same windows K and W: M_q1 stops after a
 *   token with H(q1) > τ_q1 (line 9); the M_q2 level stops after the first token whose q2 has H(q2) > τ_q2 — the
 *   outer SD's drafter is M_q2 (the inner SD only speeds it up), so its self-verify tests M_q2's entropy token by
 *   token, exactly like Algorithm 1 line 9, and drops the rest of that pre-verify round. τ_q1 is the mean entropy
 *   of the M_q1 tokens M_q2 rejected, τ_q2 of the tokens M_p rejected (entropy-threshold.ts). HSDDW instead tests
 *   whole pre-verify rounds and has no window W (hsddw.ts) — the paper: "HSDDW differs from merely combining
 *   Pre-verify with Self-verify".
 * Both levels also stop at an end-of-generation token and at the --max-tokens budget. When the accepted M_q1
 * tokens exactly fill the window (or end with end-of-generation), M_q2's bonus token is not drawn.
 *
 * Exactness. Both levels are exact speculative sampling (hierarchy.ts: M_p verifies the chain against q2, each
 * token's marginal law under the inner SD). Every stopping rule decides whether to produce position i+1 from what
 * is known at position i (tokens, their distributions, τ), never from position i+1's token, so the output follows
 * the target's warped distribution (toy chi-square: test/unit/hierarchy-lossless).
 *
 * Provenance and step records as in hierarchy.ts: one step record per M_p round, with per-level counters (`levels`).
 * Its rounds run through round.ts's loop and tail; the round body is the hierarchy's own (hierarchy.ts says why).
 */
import { EntropyThreshold } from './entropy-threshold'
import { Hierarchy, type ChainToken } from './hierarchy'
import { OutputBuffer } from './output'
import { emitRound, runRounds } from './round'
import { now } from './session-sync'
import type { DecodeEvent, Decoder } from './types'

export interface PreVerifyOptions {
  /** K: M_q1's draft window per pre-verify round (--gamma). */
  gamma: number
  /** W: the M_q2-level tokens M_p verifies per target round (--set pre.window, default --gamma). */
  window: number
  /** pre-self-verify: entropy stops at both levels. */
  selfVerify: boolean
}


export function preVerifyDecoder(options: PreVerifyOptions): Decoder {
  const stage = options.selfVerify ? 'pre-self-verify' : 'pre-verify'
  return async function* preVerify(models, request) {
    const h = await Hierarchy.open(models, request, stage)
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
    // τ_q1, τ_q2 = 0 at the start of every prompt (Algorithm 2 line 1).
    const tauQ1 = options.selfVerify ? new EntropyThreshold() : null
    const tauQ2 = options.selfVerify ? new EntropyThreshold() : null
    yield* runRounds(output, request, targetRound, () => h.dispose())

    /** One M_p round: the chain M_q1 and M_q2 build, verified by M_p. */
    async function* targetRound(step: number): AsyncGenerator<DecodeEvent> {
      const started = now()
      h.newRound()
      const tauQ2InForce = tauQ2?.tau ?? null
      tauQ2?.startRound()
      const budget = Math.min(options.window, request.maxTokens - output.tokens.length)
      const chain: ChainToken[] = []
      let handover: 'window' | 'entropy' | 'eos' | null = null
      let innerRounds = 0
      while (handover === null) {
        const sequence = [...output.sequence, ...chain.map((t) => t.token)]
        const draft = await h.draft(sequence, Math.min(options.gamma, budget - chain.length), tauQ1)
        const round = await h.preVerify(sequence, draft, budget - chain.length)
        innerRounds += 1
        tauQ1?.verified(draft.tokens.length, round.accepted, draft.entropies)
        for (const t of round.tokens) {
          chain.push(t)
          if (h.isEnd(t.token)) handover = 'eos'
          else if (tauQ2?.exceeds(t.entropy, t.q)) handover = 'entropy'
          else if (chain.length >= budget) handover = 'window'
          // pre-self-verify: the tokens after an entropy stop are dropped (generated, so they count in σ).
          if (handover !== null) break
        }
      }
      const verdict = await h.verify(output, chain, step)
      tauQ2?.verified(chain.length, verdict.accepted, chain.map((t) => t.entropy))
      const record = h.record(step, stage, chain, verdict, started, {
        threshold: tauQ2InForce,
        decision: {
          gamma: options.gamma,
          window: options.window,
          innerRounds,
          handover,
          tauQ1: tauQ1?.tau ?? null,
          tauQ2: tauQ2?.tau ?? null
        }
      })
      yield* emitRound(verdict.events, record)
    }
  }
}
