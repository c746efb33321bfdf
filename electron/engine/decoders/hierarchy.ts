/**
 * The three-model hierarchy M_q1 (small draft, `--draft`) → M_q2 (mid draft, `--mid`) → M_p (target): sessions on
 * the three models, per-level counters (`levels`), and the stages of HSDDW
 * (../shared/papers/hsddw-hierarchical-sd-dynamic-window.txt) Appendix D Algorithm 2 as methods of `Hierarchy`:
 *   draft       Draft + Self-verify: M_q1 drafts up to a limit, one call per token, stops after H(q1) > τ_q1 (lines 4–12)
 *   preVerify   M_q2 scores them in ONE batched call; Verify/Correct against q2: the accepted prefix, then a
 *               correction from norm(max(0, q2 − q1)) or, all accepted, a bonus token from q2             (lines 13–24)
 *   verify      M_p scores the chain in ONE batched call and Verify/Correct against each token's q: accepted prefix
 *               + correction from norm(max(0, p − q)) or bonus from p                                    (lines 40–55)
 * and, for Haotian Chen's hierarchy (../shared/papers/hierarchical-sd-exploration-chen.txt §2.2 Algorithm 2),
 * `guess` (M_q2's one guess, lines 6–7) and verify's `target` correction (t ~ p_{k+1}, line 14 as printed).
 * The methods built on it differ only in their stopping rules: `pre-verify` / `pre-self-verify` (pre-verify.ts),
 * `hsddw` (hsddw.ts), `hier-chen` (hierarchical-chen.ts). Their rounds run through round.ts's loop and tail but keep
 * their own round body: the chain is built by an inner speculative loop (M_q1 → M_q2), M_p verifies each token
 * against the law of the level that drew it, and every round counts per level.
 *
 * Exactness. The inner SD is Leviathan et al.'s exact speculative sampling for the pair (q1, q2): conditional on
 * everything that happened before it, each token the M_q2 level appends is distributed as q2(·|its context),
 * whether it is an accepted M_q1 token, M_q2's correction or its bonus. So for M_p the n_tot tokens are a draft
 * drawn autoregressively from q2, and verifying them against q2's distributions (the very numbers M_q2's batched
 * call returned) is ordinary exact speculative sampling. A correction carries q2 as its q, NOT the residual
 * norm(max(0, q2 − q1)) it was drawn from: the residual is its law given that M_q1's token was rejected, but M_p's
 * test sees the token unconditionally, and its marginal law is q2.
 *
 * Provenance: M_q1 tokens that survive both verifiers are `draft`, M_q2's own tokens that M_p accepts `mid`, M_p's
 * correction `resampled`, M_p's bonus `bonus`. One step record per M_p round, with per-level counters (`levels`).
 */
import type { LanguageModel, ModelSession } from '../model/types'
import { argmax, entropy, probabilityOf, sample, type Distribution } from '../sampling/distribution'
import { acceptGreedy, acceptSampling, residual } from '../sampling/verify'
import { isGreedy } from '../sampling/warp'
import type { EntropyThreshold } from './entropy-threshold'
import type { OutputBuffer } from './output'
import { countedCall } from './round'
import { evaluatePending, now, rewindTo } from './session-sync'
import { stepRecord } from './step-record'
import type { DecodeEvent, DecodeRequest, DecoderModels, LevelCounters, Provenance, StepRecord } from './types'

/** A token waiting for M_p's verification. */
export interface ChainToken {
  token: number
  /** Who produced it: M_q1 (`draft`) or M_q2 (`mid`). */
  origin: 'draft' | 'mid'
  /** The law it was drawn from under the whole drafting process — M_p's test uses it as q. */
  q: Distribution
  /** H(q) in nats. */
  entropy: number
  /** M_q1's / M_q2's distribution in this token's context where that model evaluated it (for β / α). */
  q1: Distribution | null
  q2: Distribution | null
}

export interface Level1Draft {
  tokens: number[]
  distributions: Distribution[]
  entropies: number[]
  stop: 'window' | 'entropy' | 'eos'
}

export interface PreVerified {
  /** What the M_q2 level appends: the accepted M_q1 tokens, then M_q2's correction or bonus (when drawn). */
  tokens: ChainToken[]
  accepted: number
  rejected: boolean
}

export interface TargetVerdict {
  accepted: number
  rejected: boolean
  events: DecodeEvent[]
  /** Chain tokens that reached the output (σ's numerator). */
  committed: number
  verifyMs: number
}

export type Correction = 'residual' | 'target'

export function emptyLevels(q2VerifiesQ1 = true): LevelCounters {
  return {
    q1: {
      drafted: 0,
      examinedByQ2: q2VerifiesQ1 ? 0 : null,
      acceptedByQ2: q2VerifiesQ1 ? 0 : null,
      acceptedByP: 0,
      calls: 0,
      ms: 0
    },
    q2: { drafted: 0, accepted: 0, calls: 0, ms: 0 },
    p: { calls: 0, examined: 0, accepted: 0 },
    alpha: { sum: 0, positions: 0 },
    beta: { sum: 0, positions: 0 }
  }
}

/**
 * The probability that a token drawn from q passes the verifier p: Σ_y min(p(y), q(y)) when sampling (Leviathan
 * et al. 2023, Def. 3.1: β = 1 − D_LK(p, q)), [argmax q = argmax p] when greedy.
 */
export function acceptanceProbability(p: Distribution, q: Distribution, greedy: boolean): number {
  if (greedy) return argmax(p) === argmax(q) ? 1 : 0
  // A linear scan per token is cheapest for top-k transfers; a map keeps full-vocabulary runs O(V).
  let pOf = (token: number) => probabilityOf(p, token)
  if (p.ids.length > 128) {
    const map = new Map<number, number>()
    p.ids.forEach((id, i) => map.set(id, p.probs[i]))
    pOf = (token) => map.get(token) ?? 0
  }
  let sum = 0
  for (let i = 0; i < q.ids.length; i++) sum += Math.min(q.probs[i], pOf(q.ids[i]))
  return sum
}

/** Sessions on the three models and the per-round counters; the stages of Algorithm 2 as methods. */
export class Hierarchy {
  readonly greedy: boolean
  counters: LevelCounters = emptyLevels()

  private constructor(
    readonly models: { target: LanguageModel; mid: LanguageModel; draft: LanguageModel },
    private readonly q1: ModelSession,
    private readonly q2: ModelSession,
    private readonly p: ModelSession,
    private readonly request: DecodeRequest
  ) {
    this.greedy = isGreedy(request.warp)
  }

  static async open(models: DecoderModels, request: DecodeRequest, method: string): Promise<Hierarchy> {
    const { target, mid, draft } = models
    if (!draft || !mid) throw new Error(`${method} needs a draft model (M_q1) and a mid model (M_q2)`)
    const sessions: ModelSession[] = []
    try {
      for (const model of [draft, mid, target]) sessions.push(await model.createSession(request.warp))
    } catch (error) {
      for (const session of sessions) await session.dispose()
      throw error
    }
    return new Hierarchy({ target, mid, draft }, sessions[0], sessions[1], sessions[2], request)
  }

  async dispose(): Promise<void> {
    await this.q1.dispose()
    await this.q2.dispose()
    await this.p.dispose()
  }

  /** A target round begins: fresh counters. */
  newRound(q2VerifiesQ1 = true): void {
    this.counters = emptyLevels(q2VerifiesQ1)
  }

  isEnd(token: number): boolean {
    return this.models.target.isEndOfGeneration(token)
  }

  private pick(distribution: Distribution): number {
    return this.greedy ? argmax(distribution) : sample(distribution, this.request.rng)
  }

  /**
   * Draft + Self-verify (Algorithm 2 lines 4–12): M_q1 drafts after `sequence`, one forward call per token, until
   * `limit` tokens, an end-of-generation token, or — with a threshold — a token whose H(q1) > τ_q1 (kept).
   */
  async draft(sequence: readonly number[], limit: number, threshold: EntropyThreshold | null): Promise<Level1Draft> {
    threshold?.startRound()
    const draft: Level1Draft = { tokens: [], distributions: [], entropies: [], stop: 'window' }
    let pending = await rewindTo(this.q1, sequence)
    for (;;) {
      const [q] = await countedCall(this.q1, pending, this.counters.q1)
      this.counters.q1.drafted += 1
      const token = this.pick(q)
      const h = entropy(q)
      draft.tokens.push(token)
      draft.distributions.push(q)
      draft.entropies.push(h)
      if (this.isEnd(token)) draft.stop = 'eos'
      else if (threshold?.exceeds(h, q)) draft.stop = 'entropy'
      else if (draft.tokens.length < limit) {
        pending = [token]
        continue
      }
      return draft
    }
  }

  /**
   * Pre-verify (Algorithm 2 lines 13–24): M_q2 scores `draft` in ONE batched call and Verify/Correct runs against
   * q2 — accept x_i with probability min(1, q2(x_i)/q1(x_i)), correct from norm(max(0, q2 − q1)) (greedy: argmax q2).
   * All accepted: a bonus token from q2 when `room` allows another token and the draft did not end the text.
   */
  async preVerify(sequence: readonly number[], draft: Level1Draft, room: number): Promise<PreVerified> {
    const pending = await rewindTo(this.q2, sequence)
    const q2 = await countedCall(this.q2, pending, this.counters.q2, draft.tokens)
    const { rng } = this.request
    const tokens: ChainToken[] = []
    const chainToken = (token: number, origin: 'draft' | 'mid', i: number, q1: Distribution | null): ChainToken => ({
      token,
      origin,
      q: q2[i],
      entropy: entropy(q2[i]),
      q1,
      q2: q2[i]
    })
    let accepted = 0
    for (; accepted < draft.tokens.length; accepted++) {
      const x = draft.tokens[accepted]
      const q1 = draft.distributions[accepted]
      const ok = this.greedy ? acceptGreedy(q2[accepted], x) : acceptSampling(q2[accepted], q1, x, rng)
      if (!ok) break
      tokens.push(chainToken(x, 'draft', accepted, q1))
    }
    const rejected = accepted < draft.tokens.length
    this.counters.q1.examinedByQ2! += accepted + (rejected ? 1 : 0)
    this.counters.q1.acceptedByQ2! += accepted
    if (rejected) {
      const q1 = draft.distributions[accepted]
      const y = this.greedy ? argmax(q2[accepted]) : sample(residual(q2[accepted], q1), rng)
      tokens.push(chainToken(y, 'mid', accepted, q1))
      this.counters.q2.drafted += 1
    } else if (accepted < room && draft.stop !== 'eos') {
      tokens.push(chainToken(this.pick(q2[accepted]), 'mid', accepted, null))
      this.counters.q2.drafted += 1
    }
    return { tokens, accepted, rejected }
  }

  /** M_q2 alone proposes the next token after `sequence` (one call; hier-chen's mid-model guess). */
  async guess(sequence: readonly number[]): Promise<ChainToken> {
    const pending = await rewindTo(this.q2, sequence)
    const [q] = await countedCall(this.q2, pending, this.counters.q2)
    this.counters.q2.drafted += 1
    return { token: this.pick(q), origin: 'mid', q, entropy: entropy(q), q1: null, q2: q }
  }

  /**
   * Verify (Algorithm 2 lines 40–55): M_p scores the chain in ONE batched call; accept x_i with probability
   * min(1, p(x_i)/q(x_i)) using each token's own q; after a rejection the correction comes from
   * norm(max(0, p − q)) (`residual`, exact) or from p itself (`target`: Chen's Algorithm 2 line 14 as printed);
   * all accepted: a bonus token from p. Commits to `output` and counts per level.
   */
  async verify(output: OutputBuffer, chain: readonly ChainToken[], step: number, correction: Correction = 'residual'): Promise<TargetVerdict> {
    const pending = await rewindTo(this.p, output.sequence)
    const started = now()
    const p = await evaluatePending(this.p, pending, chain.map((t) => t.token))
    const verifyMs = now() - started
    const { rng } = this.request
    const c = this.counters
    c.p.calls += 1
    let accepted = 0
    for (; accepted < chain.length; accepted++) {
      const t = chain[accepted]
      if (t.q2) {
        c.alpha.sum += acceptanceProbability(p[accepted], t.q2, this.greedy)
        c.alpha.positions += 1
      }
      if (t.q1) {
        c.beta.sum += acceptanceProbability(p[accepted], t.q1, this.greedy)
        c.beta.positions += 1
      }
      const ok = this.greedy ? acceptGreedy(p[accepted], t.token) : acceptSampling(p[accepted], t.q, t.token, rng)
      if (!ok) break
    }
    const rejected = accepted < chain.length
    let next: number
    if (!rejected) next = this.pick(p[accepted])
    else if (this.greedy) next = argmax(p[accepted])
    else next = sample(correction === 'residual' ? residual(p[accepted], chain[accepted].q) : p[accepted], rng)
    c.p.examined += accepted + (rejected ? 1 : 0)
    c.p.accepted += accepted
    const candidates: { token: number; provenance: Provenance }[] = chain
      .slice(0, accepted)
      .map((t) => ({ token: t.token, provenance: t.origin }))
    candidates.push({ token: next, provenance: rejected ? 'resampled' : 'bonus' })
    const events = output.commit(candidates, step)
    const committed = Math.min(accepted, events.length)
    for (let i = 0; i < committed; i++) {
      if (chain[i].origin === 'draft') c.q1.acceptedByP += 1
      else c.q2.accepted += 1
    }
    return { accepted, rejected, events, committed, verifyMs }
  }

  /** The step record of a target round: σ's counts from both draft models, η's one target call. */
  record(
    step: number,
    stage: string,
    chain: readonly ChainToken[],
    verdict: TargetVerdict,
    started: number,
    explanation: Pick<StepRecord, 'threshold' | 'decision'>
  ): StepRecord {
    const c = this.counters
    return stepRecord({
      index: step,
      stage,
      proposed: chain.length,
      accepted: verdict.accepted,
      resampled: verdict.rejected,
      bonus: !verdict.rejected,
      emitted: verdict.events.length,
      draftTokens: c.q1.drafted + c.q2.drafted,
      acceptedDraftTokens: verdict.committed,
      draftEntropies: chain.map((t) => t.entropy),
      ...explanation,
      targetCalls: c.p.calls,
      draftCalls: c.q1.calls + c.q2.calls,
      draftMs: c.q1.ms + c.q2.ms,
      verifyMs: verdict.verifyMs,
      totalMs: now() - started,
      levels: c
    })
  }
}
