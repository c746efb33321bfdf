/**
 * Expected rounds of parallel drafting — PEARL (`pearl`) and the `parallel` option of `sd` — along a sampled trace
 * (terms: replay/trace.ts; the rounds themselves: decoders/parallel-drafting.ts). PEARL: Liu et al., "PEARL: Parallel
 * Speculative Decoding with Adaptive Draft Length", ICLR 2025, §3.2 (pre-verify) and §3.3 (post-verify).
 *
 * Unlike sd's rounds (replay/expected.ts), a parallel round may leave drafts WAITING for the next one, so a round's
 * start is a state (t, k): output position t with k drafted tokens waiting at positions t … t + k − 1 (k = 0: none).
 * With α_i the acceptance rate at position i (Σ_y min(p_i(y), q_i(y)), read at the trace's context as expected.ts
 * reads it) and γ the window:
 *
 * - (t, 0), PEARL's pre-verify: the draft drafts m = min(γ, budget) tokens while the target scores position t; x_1
 *   is tested: with α_t it is committed and x_2 … x_m wait, → (t + 1, m − 1); else the correction, → (t + 1, 0).
 *   `sd.parallel` instead drafts k = min(γ, budget) tokens alone and goes on as a post-verify round of (t, k).
 * - (t, k ≥ 1), post-verify: the target scores the k waiting tokens while the draft drafts m' = min(γ, budget − k)
 *   after them; the k tokens and then y_1 (when m' > 0) are tested with rates α_t … α_{t+k}. All accepted: → (t + k
 *   + 1, m' − 1) (with m' = 0 a bonus token, → (t + k + 1, 0)); the first rejection at a: → (t + a + 1, 0).
 *
 * π(t, k), the probability that some round starts in state (t, k), flows forwards from π(0, 0) = 1 (every move
 * advances t), and the expectations are sums over the states as in expected.ts. Each round's shape carries its
 * overlap (o draft calls beside a verification of n positions), which cost-curve.ts prices as max(o · c_D, c_T(n)).
 * The approximation is expected.ts's (every rate read in the trace's context); the budget is min(--max-tokens, the
 * trace's end) as there, and an end-of-generation draw of the draft does not shorten a window.
 */
import { acceptedLengthLaw, countKind, type ExpectedRun, type RoundCost, type RoundKind, type RoundShape } from './expected'

export interface ParallelRounds {
  /** γ: the window the draft drafts (fixed). */
  gamma: number
  /** PEARL's pre-verify rounds after a rejection; false: `sd.parallel` (the window drafted alone first). */
  preVerify: boolean
  /** --max-tokens: with the trace's length, the budget that cuts a window. */
  maxTokens: number
}

/** One round from state (t, waiting): its shape, rates and where each accepted length leads. */
interface ParallelRound {
  shape: RoundShape
  rates: number[]
  /** The next state after a accepted tokens (a = 0 … rates.length). */
  next(accepted: number): { t: number; waiting: number }
}

function roundFrom(t: number, waiting: number, alpha: (i: number) => number, length: number, options: ParallelRounds): ParallelRound {
  const budget = Math.min(options.maxTokens, length) - t
  if (waiting === 0 && options.preVerify) {
    const drafted = Math.min(options.gamma, budget)
    return {
      shape: { proposed: 1, draftCalls: drafted, overlap: { draftCalls: drafted, positions: 1 } },
      rates: [alpha(t)],
      next: (accepted) => ({ t: t + 1, waiting: accepted === 1 ? drafted - 1 : 0 })
    }
  }
  // sd.parallel drafts its window alone first; then every round is a post-verify of what waits.
  const alone = waiting === 0 ? Math.min(options.gamma, budget) : 0
  const tested = waiting + alone
  const ahead = Math.max(0, Math.min(options.gamma, budget - tested))
  const rates = Array.from({ length: tested + (ahead > 0 ? 1 : 0) }, (_, j) => alpha(t + j))
  return {
    shape: { proposed: rates.length, draftCalls: alone + ahead, overlap: { draftCalls: ahead, positions: tested + 1 } },
    rates,
    next: (accepted) =>
      accepted === rates.length && ahead > 0
        ? { t: t + accepted, waiting: ahead - 1 }
        : { t: Math.min(length, t + accepted + 1), waiting: 0 }
  }
}

/**
 * The expected run over `length` output tokens with α_i = `alpha(i)`; `cost` (optional) prices E[time] at once.
 * `firstProposed` is the draft tokens the first round sends to the target's call (0 after PEARL's pre-verify).
 */
export function parallelExpectedRun(length: number, alpha: (i: number) => number, options: ParallelRounds, cost?: RoundCost): ExpectedRun {
  if (!Number.isInteger(options.gamma) || options.gamma < 1) throw new RangeError(`the window γ must be a positive integer, got ${options.gamma}`)
  // start[t][k] = π(t, k); k < γ + 1 (a post-verify's look-ahead leaves at most γ − 1 waiting, sd.parallel's window γ).
  const start = Array.from({ length: length + 1 }, () => new Float64Array(options.gamma + 1))
  start[0][0] = 1
  const kinds = new Map<string, RoundKind>()
  const run: ExpectedRun = { tokens: length, rounds: 0, proposed: 0, accepted: 0, kinds: [], firstProposed: 0, ms: 0 }
  for (let t = 0; t < length; t++)
    for (let waiting = 0; waiting <= options.gamma; waiting++) {
      const visit = start[t][waiting]
      if (visit === 0) continue
      const round = roundFrom(t, waiting, alpha, length, options)
      if (t === 0) run.firstProposed = (round.shape.overlap?.positions ?? 1) - 1
      countKind(kinds, round.shape, visit)
      run.rounds += visit
      run.proposed += visit * round.rates.length
      if (cost) run.ms += visit * cost(round.shape)
      acceptedLengthLaw(round.rates).forEach((probability, accepted) => {
        run.accepted += visit * probability * Math.min(accepted, length - t)
        const next = round.next(accepted)
        start[Math.min(length, next.t)][next.t >= length ? 0 : next.waiting] += visit * probability
      })
    }
  run.kinds = [...kinds.values()]
  return run
}
