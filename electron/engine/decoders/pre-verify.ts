/**
 * `pre-verify` and `pre-self-verify` — HSDDW (../shared/papers/hsddw-hierarchical-sd-dynamic-window.txt) §4.3,
 * Figure 5: (a) "speculative decoding with Pre-verify, which can be viewed as two speculative decoding models
 * connected sequentially"; (b) "an extension of (a) with the addition of Self-verify". Both live in this file
 * because they differ ONLY in their stopping rules. The file also holds the three-model building blocks that
 * `hsddw` (hsddw.ts) and `hier-chen` (hierarchical-chen.ts) reuse: the `Hierarchy` class below.
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
 * Exactness. The inner SD is Leviathan et al.'s exact speculative sampling for the pair (q1, q2): conditional on
 * everything that happened before it, each token the M_q2 level appends is distributed as q2(·|its context),
 * whether it is an accepted M_q1 token, M_q2's correction or its bonus. So for M_p the n_tot tokens are a draft
 * drawn autoregressively from q2, and verifying them against q2's distributions (the very numbers M_q2's batched
 * call returned) is ordinary exact speculative sampling. A correction carries q2 as its q, NOT the residual
 * norm(max(0, q2 − q1)) it was drawn from: the residual is its law given that M_q1's token was rejected, but M_p's
 * test sees the token unconditionally, and its marginal law is q2. Every stopping rule decides whether to produce
 * position i+1 from what is known at position i (tokens, their distributions, τ), never from position i+1's
 * token, so the output follows the target's warped distribution (toy chi-square: test/unit/hierarchy-lossless).
 *
 * Provenance: M_q1 tokens that survive both verifiers are `draft`, M_q2's own tokens that M_p accepts `mid`, M_p's
 * correction `resampled`, M_p's bonus `bonus`. One step record per M_p round, with per-level counters (`levels`).
 */
import type { LanguageModel, ModelSession } from '../model/types'
import { argmax, entropy, probabilityOf, sample, type Distribution } from '../sampling/distribution'
import { acceptGreedy, acceptSampling, residual } from '../sampling/verify'
import { isGreedy } from '../sampling/warp'
import { integerParam, rejectUnknownParams } from '../params'
import { EntropyThreshold } from './entropy-threshold'
import { OutputBuffer } from './output'
import { evaluatePending, now, rewindTo } from './session-sync'
import type {
  DecodeEvent,
  DecodeRequest,
  Decoder,
  DecoderModels,
  LevelCounters,
  MethodParams,
  Provenance,
  StepRecord
} from './types'

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
      const started = now()
      const [q] = await evaluatePending(this.q1, pending)
      this.counters.q1.ms += now() - started
      this.counters.q1.calls += 1
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
    const started = now()
    const q2 = await evaluatePending(this.q2, pending, draft.tokens)
    this.counters.q2.ms += now() - started
    this.counters.q2.calls += 1
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
    const started = now()
    const [q] = await evaluatePending(this.q2, pending)
    this.counters.q2.ms += now() - started
    this.counters.q2.calls += 1
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
    return {
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
    }
  }
}

export interface PreVerifyOptions {
  /** K: M_q1's draft window per pre-verify round (--gamma). */
  gamma: number
  /** W: the M_q2-level tokens M_p verifies per target round (--set pre.window, default --gamma). */
  window: number
  /** pre-self-verify: entropy stops at both levels. */
  selfVerify: boolean
}

export const PRE_VERIFY_PARAMS = ['pre.window'] as const

export function preVerifyOptions(gamma: number, params: MethodParams, selfVerify: boolean): PreVerifyOptions {
  const method = selfVerify ? 'pre-self-verify' : 'pre-verify'
  rejectUnknownParams(params, 'pre', PRE_VERIFY_PARAMS, method)
  return { gamma, window: integerParam(params, 'pre.window', gamma, 1), selfVerify }
}

export function preVerifyDecoder(options: PreVerifyOptions): Decoder {
  const stage = options.selfVerify ? 'pre-self-verify' : 'pre-verify'
  return async function* preVerify(models, request) {
    const h = await Hierarchy.open(models, request, stage)
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
    // τ_q1, τ_q2 = 0 at the start of every prompt (Algorithm 2 line 1).
    const tauQ1 = options.selfVerify ? new EntropyThreshold() : null
    const tauQ2 = options.selfVerify ? new EntropyThreshold() : null
    try {
      for (let step = 0; !output.done; step++) {
        if (output.cancelledBy(request.signal)) break
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
        yield* verdict.events
        yield { type: 'step', record }
      }
      yield { type: 'done', stopReason: output.stopReason ?? 'max-tokens' }
    } finally {
      await h.dispose()
    }
  }
}
