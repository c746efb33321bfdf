/**
 * Synthetic acceptance (llama.cpp's `--spec-synth-rates`, vLLM's synthetic rejection sampler): verification accepts
 * draft position i with probability r_i, whatever the models say, so the engine's cost curve — time per round
 * against tokens per round — can be measured at chosen acceptance profiles. Positions beyond the list use its last
 * rate. The target still scores every drafted position in one batched call (the cost being measured); after a
 * rejection the next token is the target's own (argmax greedy, sampled from p otherwise), and after a fully
 * accepted draft the bonus is too. The output is therefore NOT the target's distribution: runs using it say so and
 * are kept out of speedup comparisons.
 */
import { argmax, sample, type Distribution } from './distribution'
import type { Prng } from './prng'
import { withBonus, type PrefixVerdict, type Verdict } from './verify'

/** Synthetic acceptance of draft positions without a bonus (as verifyPrefix): a rejection takes the target's own token. */
export function verifySyntheticPrefix(draft: readonly number[], p: readonly Distribution[], rates: readonly number[], greedy: boolean, rng: Prng): PrefixVerdict {
  for (let i = 0; i < draft.length; i++) {
    const rate = rates[Math.min(i, rates.length - 1)]!
    if (!(rng.next() < rate)) return { accepted: i, correction: greedy ? argmax(p[i]!) : sample(p[i]!, rng) }
  }
  return { accepted: draft.length, correction: null }
}

export function verifySynthetic(draft: readonly number[], p: readonly Distribution[], rates: readonly number[], greedy: boolean, rng: Prng): Verdict {
  return withBonus(verifySyntheticPrefix(draft, p, rates, greedy, rng), p, greedy, rng)
}
