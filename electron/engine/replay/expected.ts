/**
 * Sampling replay: expected values of a chain method's rounds along a trace recorded at temperature > 0 (terms:
 * replay/trace.ts). A sampled run's rounds are random, so the replay gives their expectation rather than one draw.
 *
 * Per round. A round that starts at output position t proposes x_1..x_k. Draft token j (at position t + j − 1) is
 * accepted, given that tokens 1..j − 1 were, with probability
 *   α_j = Σ_y min(p(y), q(y))   for a draft-model token (q the draft's warped distribution: Leviathan et al. 2023,
 *                               §3.3, the β of Definition 3.1 / α = E[β]),
 *   α_j = p(x_j)                for a looked-up token (q = δ(x_j), decoders/drafter.ts),
 * with p, q the distributions recorded at that position. The accepted length A then has P(A ≥ i) = Π_{j≤i} α_j and
 * the round emits A + 1 tokens (a correction or a bonus); with one α at every position
 *   E[A + 1] = Σ_{i=0}^{γ} α^i = (1 − α^{γ+1}) / (1 − α)   (Leviathan et al. 2023, Eq. 1; theory/leviathan.ts).
 *
 * Per run. The next round starts at t + A + 1, so the rounds form a renewal process along the trace (L output
 * tokens). π(t), the probability that some round starts at t, follows forwards from π(0) = 1:
 *   π(s) = Σ_{t < s} π(t) · P(A_t = s − t − 1)   (a round that accepts everything left ends at L),
 * and every expectation is a sum over start positions: E[rounds] = Σ_t π(t), E[proposed] = Σ_t π(t)·k(t), E[time] =
 * Σ_t π(t)·cost(round at t). Rounds are kept by kind (tokens proposed, draft calls), so any cost curve prices the
 * same replay afterwards (replay/predict.ts).
 *
 * The approximation: every rate is read in the trace's context — the target's sampled tokens — whereas in a real
 * run draft token j is judged after the ACCEPTED tokens 1..j − 1, which are draft tokens, not the trace's. For
 * position 1 of a round, and for models whose distributions do not depend on the context, this is exact; elsewhere
 * it is the teacher-forced estimate. Likewise a policy's stop decision reads q at the trace's context, and the
 * proposal's length is taken as fixed given t (an end-of-generation draw of the draft does not stop it). Only
 * policies and lookups whose decisions depend on the current round alone (fixed γ, p-min, SVIP; prompt lookup,
 * ngram-simple) are valid here: every start position is asked independently, whatever the rounds before it decided.
 */
import type { TokenLookup } from '../decoders/drafter'
import type { DraftLengthPolicy } from '../policies/types'
import { probabilityOf, type Distribution } from '../sampling/distribution'
import type { DraftTrace, PromptTrace } from './trace'

/** One round's proposal from output position t, read along the trace. */
export interface ExpectedProposal {
  /** α_1..α_k (k = draft tokens proposed; 0 = the target decodes one token alone). */
  rates: number[]
  /** Draft-model forward calls the round makes (0 for a lookup); a hierarchy's small model M_q1. */
  draftCalls: number
  /** A hierarchy's mid-model (M_q2) forward calls; absent: none. */
  midCalls?: number
}

/** The round a configuration makes from output position t (0 ≤ t < L). */
export type Proposer = (t: number) => ExpectedProposal

/**
 * A parallel round (PEARL, `sd.parallel`: decoders/parallel-drafting.ts): `draftCalls` of the round's draft calls
 * were made while the target evaluated `positions` positions, so that part of the round costs the longer of the two.
 */
export interface Overlap {
  draftCalls: number
  positions: number
}

/** What prices a round: the draft tokens it proposed, its calls, and what of them overlapped the verification. */
export interface RoundShape {
  proposed: number
  draftCalls: number
  /** A hierarchy's mid-model calls per round; absent: none. */
  midCalls?: number
  /** A parallel round's overlapped part; absent: every call one after another, the verification of proposed + 1. */
  overlap?: Overlap
}

/** What a round of `shape` costs, ms (replay/cost-curve.ts roundCost). */
export type RoundCost = (shape: RoundShape) => number

/** Rounds of one shape: how many (an expected number for a sampling replay). */
export interface RoundKind extends RoundShape {
  count: number
}

/** Rounds of one shape share this key. */
export const kindKey = (kind: RoundShape) =>
  `${kind.proposed}/${kind.draftCalls}/${kind.midCalls ?? 0}${kind.overlap ? `/${kind.overlap.draftCalls}‖${kind.overlap.positions}` : ''}`

export interface ExpectedRun {
  /** L: output tokens. */
  tokens: number
  /** E[rounds]. */
  rounds: number
  /** E[draft tokens proposed] and E[of them accepted], summed over the rounds. */
  proposed: number
  accepted: number
  /** E[rounds] of each kind. */
  kinds: RoundKind[]
  /** Draft tokens the first round proposes (it always starts at 0; its target call also evaluates the prompt). */
  firstProposed: number
  /** E[time] priced with the `cost` given to expectedRun (0 without one). */
  ms: number
}

/** Σ_y min(p(y), q(y)) over the sparse supports (a token absent from one has probability 0 there). */
export function overlap(p: Distribution, q: Distribution): number {
  const qOf = new Map<number, number>()
  q.ids.forEach((id, i) => qOf.set(id, q.probs[i]))
  let sum = 0
  p.ids.forEach((id, i) => (sum += Math.min(p.probs[i], qOf.get(id) ?? 0)))
  return sum
}

/** P(A = a) for a = 0..k from the conditional rates α_1..α_k. */
export function acceptedLengthLaw(rates: readonly number[]): number[] {
  const law: number[] = []
  let survive = 1 // P(A ≥ a)
  for (let a = 0; a < rates.length; a++) {
    law.push(survive * (1 - rates[a]))
    survive *= rates[a]
  }
  law.push(survive)
  return law
}

/** Adds `visits` rounds of `shape` to `kinds` (keyed by kindKey). */
export function countKind(kinds: Map<string, RoundKind>, shape: RoundShape, visits: number): void {
  const key = kindKey(shape)
  const kind = kinds.get(key) ?? { ...shape, count: 0 }
  kind.count += visits
  kinds.set(key, kind)
}

/** The renewal sums of the header over L output tokens; `cost` (optional) prices E[time] at once. */
export function expectedRun(length: number, proposer: Proposer, cost?: RoundCost): ExpectedRun {
  const start = new Float64Array(length + 1) // π(t)
  start[0] = 1
  const kinds = new Map<string, RoundKind>()
  const run: ExpectedRun = { tokens: length, rounds: 0, proposed: 0, accepted: 0, kinds: [], firstProposed: 0, ms: 0 }
  for (let t = 0; t < length; t++) {
    const visit = start[t]
    if (visit === 0) continue
    const { rates, draftCalls, midCalls = 0 } = proposer(t)
    if (t === 0) run.firstProposed = rates.length
    const shape: RoundShape = { proposed: rates.length, draftCalls, ...(midCalls > 0 ? { midCalls } : {}) }
    countKind(kinds, shape, visit)
    run.rounds += visit
    run.proposed += visit * rates.length
    if (cost) run.ms += visit * cost(shape)
    acceptedLengthLaw(rates).forEach((probability, a) => {
      run.accepted += visit * probability * Math.min(a, length - t)
      start[Math.min(length, t + a + 1)] += visit * probability
    })
  }
  run.kinds = [...kinds.values()]
  return run
}

/** The most tokens a round from t may propose: the policy's cap, the --max-tokens budget and the trace's end. */
const roundLimit = (cap: number, t: number, prompt: PromptTrace, maxTokens: number) =>
  Math.min(cap, maxTokens - t, prompt.tokens.length - t)

/**
 * The draft model under a draft-length policy: the policy is asked after each token, with q and its entropy at the
 * trace's position, as decoders/speculative.ts asks it (the token shown is q's argmax; p-min and SVIP read only q).
 */
export function modelProposer(prompt: PromptTrace, draft: DraftTrace, policy: DraftLengthPolicy, maxTokens: number): Proposer {
  policy.startPrompt?.(prompt.promptTokens)
  return (t) => {
    const limit = roundLimit(policy.draftLength(), t, prompt, maxTokens)
    const rates: number[] = []
    for (let j = 1; j <= limit; j++) {
      const i = t + j - 1
      const point = draft.points[i]
      const entropy = policy.entropy === 'full' ? point.fullEntropy : point.entropy
      if (entropy === null) throw new Error('the trace holds no whole-vocabulary draft entropy (record it with fullEntropy)')
      rates.push(overlap(prompt.target[i], point.distribution))
      if (policy.shouldStop({ position: j, token: point.argmax, distribution: point.distribution, entropy })) break
    }
    return { rates, draftCalls: rates.length }
  }
}

/**
 * A model-free drafter: `lookup` proposes from prompt + tokens[<t]; its tokens are cut at the cap, the budget and
 * after an end-of-generation token, as decoders/drafter.ts lookupDrafter cuts them (a fixed cap: no policy stop).
 */
export function lookupProposer(prompt: PromptTrace, lookup: TokenLookup, cap: number, maxTokens: number, isEnd: (token: number) => boolean): Proposer {
  return (t) => {
    const limit = roundLimit(cap, t, prompt, maxTokens)
    if (limit <= 0) return { rates: [], draftCalls: 0 }
    const found = lookup.propose([...prompt.promptTokens, ...prompt.tokens.slice(0, t)], limit)
    const rates: number[] = []
    for (const token of found.tokens.slice(0, limit)) {
      rates.push(probabilityOf(prompt.target[t + rates.length], token))
      if (isEnd(token)) break
    }
    return { rates, draftCalls: 0 }
  }
}

/**
 * Chen's hierarchy (decoders/hierarchical-chen.ts): per round m blocks of n small-model guesses (one call each) and
 * one mid-model guess (one call), cut at the budget and the trace's end as the decoder cuts them; each guess is
 * judged against its own drafter's distribution, so α_j = Σ min(p, s) for a small guess and Σ min(p, q) for a mid
 * one, both read at the trace's context.
 */
export function hierarchyProposer(prompt: PromptTrace, small: DraftTrace, mid: DraftTrace, shape: { m: number; n: number }, maxTokens: number): Proposer {
  return (t) => {
    const limit = roundLimit(shape.m * (shape.n + 1), t, prompt, maxTokens)
    const rates: number[] = []
    let draftCalls = 0
    let midCalls = 0
    while (rates.length < limit) {
      const drafter = (rates.length + 1) % (shape.n + 1) === 0 ? mid : small
      if (drafter === mid) midCalls++
      else draftCalls++
      const i = t + rates.length
      rates.push(overlap(prompt.target[i], drafter.points[i].distribution))
    }
    return { rates, draftCalls, midCalls }
  }
}

/** Drafters chained as decoders/drafter.ts chainDrafter chains them: the first non-empty proposal is the round's. */
export function chainProposer(links: readonly Proposer[]): Proposer {
  return (t) => {
    for (const link of links) {
      const proposal = link(t)
      if (proposal.rates.length > 0) return proposal
    }
    return { rates: [], draftCalls: 0 }
  }
}
