/**
 * `adaptive-rl` — Method 4 ("Reinforcement Learning-Based Speculation") of Liu, Park & Shen, "A Drop-In Solution
 * for On-the-Fly Adaptation of Speculative Decoding in Large Language Models"
 * (../shared/papers/on-the-fly-adaptation-speculative-decoding.txt, §4.2 line 126, Appendix B.4 Algorithm 2 lines
 * 456–483, Appendix D.1 line 574): a tabular Q-learning agent picks the next γ.
 *
 *   state s_t = γ_{t−1} (the window of the previous round), action a_t = γ_t ∈ [1, γ_max],
 *   reward r_t = accepted_t / proposed_t ("the percentage of the accepted speculated tokens", Alg. 2 line 18),
 *   Q(s_t, a_t) ← Q(s_t, a_t) + α · (r_t + δ · max_a Q(s_{t+1}, a) − Q(s_t, a_t)),   s_{t+1} = a_t
 *
 * (the standard Watkins Q-learning update; the paper prints no equation for it and numbers none).
 *
 * Choices where the paper is silent or ambiguous (also in the method summary):
 * - State: "the previous states of γ" (line 126) is plural, but Algorithm 2 calls GetAction(Agent, y) with the
 *   single current window y (line 16). The state is that one value, the previous round's γ (γ_max before the
 *   first round). The transition is then deterministic (s_{t+1} = a_t), as in the paper's agent.
 * - Actions: γ ∈ [1, γ_max], γ_max = --gamma (line 118, line 245). γ = 0 is excluded: its reward
 *   (accepted/proposed = 0/0) is undefined.
 * - Credit: Algorithm 2 computes the reward (line 18) after GetAction (line 16), but the reward measures the window
 *   that was just verified, so it is credited to the action that CHOSE that window (standard Q-learning).
 * - α, δ and ε are not given in the paper: defaults α = 0.1 (rl.alpha), δ = 0.9 (rl.discount; "discount" to keep
 *   it apart from the window γ), ε = 0.1 (rl.epsilon). Q starts at 0; greedy ties go to the smaller γ.
 * - Warm-up: "we conducted 25 warmup trials before recording benchmarks" (line 574). A run cannot hide rounds from
 *   its record, so the first rl.warmup (default 25) DECISIONS of a run explore uniformly at random (ε = 1) and are
 *   recorded as phase 'warm-up'; ε-greedy follows.
 * - Exploration draws come from the policy's own seeded PRNG (rl.seed, default 0; the decoder's PRNG is not
 *   reachable from the policy), so a run replays exactly; greedy decoding stays deterministic.
 * - The Q-table, the state and the PRNG persist across the prompts of a run (online learning; the paper's agent
 *   is never reset). Decisions and updates are O(γ_max) on the CPU (paper: "< 1 millisecond", line 574).
 */
import { createPrng } from '../sampling/prng'
import type { DraftLengthPolicy, PolicyExplanation } from './types'


export interface RlOptions {
  gammaMax: number
  epsilon: number
  alpha: number
  discount: number
  warmup: number
  seed: number
}


/** One Q-learning step: Q + α(r + δ·max_a Q(s', a) − Q). */
export function qLearningUpdate(q: number, reward: number, nextMax: number, alpha: number, discount: number): number {
  return q + alpha * (reward + discount * nextMax - q)
}

export interface RlPolicy extends DraftLengthPolicy {
  /** Q(s, a) for s, a ∈ [1, γ_max]. */
  q(state: number, action: number): number
  /** The current state (the previous round's γ). */
  readonly state: number
}

export function adaptiveRlPolicy(options: RlOptions): RlPolicy {
  const { gammaMax: n, epsilon, alpha, discount, warmup, seed } = options
  const table = new Float64Array(n * n)
  const at = (s: number, a: number) => (s - 1) * n + (a - 1)
  const rng = createPrng(seed, 0)
  const randomAction = () => 1 + Math.min(n - 1, Math.floor(rng.next() * n))
  const greedy = (s: number): number => {
    let best = 1
    let value = table[at(s, 1)]
    for (let a = 2; a <= n; a++) {
      const v = table[at(s, a)]
      if (v > value) {
        value = v
        best = a
      }
    }
    return best
  }
  const maxQ = (s: number): number => table[at(s, greedy(s))]

  let state = n
  let decisions = 0
  let pending: { state: number; action: number } | null = null
  let lastReward: number | null = null
  let decided: PolicyExplanation = { threshold: null, decision: null }

  return {
    id: 'adaptive-rl',
    q: (s, a) => table[at(s, a)],
    get state() {
      return state
    },
    draftLength() {
      let action: number
      let phase: string
      if (decisions < warmup) {
        action = randomAction()
        phase = 'warm-up'
      } else if (epsilon > 0 && rng.next() < epsilon) {
        action = randomAction()
        phase = 'explore'
      } else {
        action = greedy(state)
        phase = 'greedy'
      }
      decisions++
      pending = { state, action }
      decided = {
        threshold: null,
        decision: {
          gamma: action,
          state,
          phase,
          epsilon: phase === 'warm-up' ? 1 : epsilon,
          q: table[at(state, action)],
          maxQ: maxQ(state),
          previousReward: lastReward,
          decisions
        }
      }
      return action
    },
    shouldStop: () => false,
    update(outcome) {
      if (pending === null || outcome.proposed <= 0) return
      const { state: s, action: a } = pending
      pending = null
      const reward = Math.min(1, outcome.accepted / outcome.proposed)
      table[at(s, a)] = qLearningUpdate(table[at(s, a)], reward, maxQ(a), alpha, discount)
      state = a
      lastReward = reward
    },
    explain: () => decided
  }
}
