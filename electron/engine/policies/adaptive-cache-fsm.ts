/**
 * `adaptive-cache-fsm` — Method 3 of Liu, Park & Shen, "A Drop-In Solution for On-the-Fly Adaptation of
 * Speculative Decoding in Large Language Models" (../shared/papers/on-the-fly-adaptation-speculative-decoding.txt,
 * §4.2, line 124): the FSM of Method 2 driven by a token cache of the prompt and of the generated text.
 *
 *   k_t  = #{ accepted draft tokens of round t that were already in the cache }
 *   Δ_t  = k_t  +  1[all drafted tokens accepted]  −  1[k_t = 0]
 *   γ_{t+1} = clamp(γ_t + Δ_t, 1, γ_max);   then cache ← cache ∪ {tokens emitted in round t}
 *
 * The paper gives no equation number for this rule (Eqs 1–2 belong to Method 1); the line numbers cite the text.
 *
 * Choices where the paper is silent or ambiguous (also in the method summary):
 * - "Found in the cache" is membership of the TOKEN ID in a set (unigrams): the cache "is populated with tokens in
 *   the prompt" and "updated with any previously unseen tokens" (line 124) — a set of tokens, no n-grams.
 *   The prompt's tokens (BOS included, as the decoder passes them) seed it in startPrompt, so the cache is PER
 *   PROMPT ("set up before the prefill stage", line 124).
 * - "It increases by one if a validated token is already in the cache" is read per token: +1 for EACH accepted
 *   draft token found in the cache (the other reading, +1 once if any is, is not implemented).
 * - "Validated token" = an accepted draft token (the speculated tokens the verifier kept); the correction/bonus
 *   token is the target's own and only enters the cache.
 * - Membership is tested against the cache as it was BEFORE the round (otherwise every accepted token would be
 *   found); the round's emitted tokens (accepted prefix + correction/bonus, after EOS/budget truncation) are added
 *   afterwards ("updates after every sampling step").
 * - The three terms add up: all accepted with none cached gives Δ = +1 − 1 = 0 (the paper's "Conversely" could
 *   also be read as exclusive branches, which would give −1 there); a rejection at the first draft token has no
 *   accepted tokens, so "none of the accepted tokens are in the cache" holds and Δ = −1.
 * - Bounds [1, γ_max]: only Method 2 is said to reach 0 (line 118). Method 3 cannot leave 0 by its own rule: a
 *   γ = 0 round has no validated speculated token (k = 0 → −1) and is vacuously all accepted (+1), Δ = 0 forever.
 * - γ_max = --gamma (line 118); γ starts at γ_max and persists across the prompts of a run, like Method 2; only
 *   the cache is per prompt.
 */
import type { DraftLengthPolicy, PolicyExplanation, VerificationOutcome } from './types'

export const CACHE_FSM_MIN_GAMMA = 1

export interface CacheFsmStep {
  gamma: number
  /** Accepted draft tokens found in the cache (k_t). */
  cached: number
  allAccepted: boolean
  delta: number
}

/** The pure transition of Method 3 (does not touch the cache). */
export function cacheFsmNextGamma(
  gamma: number,
  outcome: Pick<VerificationOutcome, 'proposed' | 'accepted' | 'draftTokens'>,
  cache: ReadonlySet<number>,
  gammaMax: number
): CacheFsmStep {
  let cached = 0
  for (let i = 0; i < outcome.accepted; i++) if (cache.has(outcome.draftTokens[i])) cached++
  const allAccepted = outcome.accepted >= outcome.proposed
  const delta = cached + (allAccepted ? 1 : 0) - (cached === 0 ? 1 : 0)
  const next = Math.min(gammaMax, Math.max(CACHE_FSM_MIN_GAMMA, gamma + delta))
  return { gamma: next, cached, allAccepted, delta }
}

export function adaptiveCacheFsmPolicy(gammaMax: number): DraftLengthPolicy & { readonly cache: ReadonlySet<number> } {
  let gamma = gammaMax
  const cache = new Set<number>()
  let last: (CacheFsmStep & { proposed: number; accepted: number; from: number }) | null = null
  let decided: PolicyExplanation = { threshold: null, decision: null }

  return {
    id: 'adaptive-cache-fsm',
    cache,
    startPrompt(promptTokens) {
      cache.clear()
      for (const token of promptTokens) cache.add(token)
    },
    draftLength() {
      decided = {
        threshold: null,
        decision: {
          gamma,
          gammaMax,
          reason: last
            ? `${last.cached} accepted token(s) in cache${last.allAccepted ? ', all accepted' : ''}: ` +
              `Δ ${last.delta >= 0 ? '+' : ''}${last.delta}, ${last.from} → ${last.gamma}`
            : 'start at γ_max',
          previousProposed: last?.proposed ?? null,
          previousAccepted: last?.accepted ?? null,
          previousCached: last?.cached ?? null,
          cacheSize: cache.size
        }
      }
      return gamma
    },
    shouldStop: () => false,
    update(outcome) {
      if (outcome.proposed > 0) {
        const step = cacheFsmNextGamma(gamma, outcome, cache, gammaMax)
        last = { ...step, proposed: outcome.proposed, accepted: outcome.accepted, from: gamma }
        gamma = step.gamma
      }
      for (const token of outcome.emittedTokens) if (token >= 0) cache.add(token)
    },
    explain: () => decided
  }
}
