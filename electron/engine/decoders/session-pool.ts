/**
 * The session pool of the beam decoders — `beam` (beam.ts) and `dsbd` / `dsbd-1beam` (dsbd.ts; DSBD,
 * ../shared/papers/dsbd-dynamic-width-speculative-beam.txt §3.3): it keeps one KV sequence of a model per beam / tree
 * path and returns the next-token distributions after many sequences from as few batched decodes as it can. Its
 * sessions are created with the raw warp (RAW_WARP: temperature 1, whole vocabulary), because the beam law T∘p_beam
 * (beam.ts, Eq 1) needs raw, normalised conditionals and applies the run's warp to the joint itself.
 *
 * KV state (node-llama-cpp has no tree attention masks). One context sequence per distinct beam (DSBD: per tree
 * path); the evaluations of one step are issued together (Promise.all) so they share one llama.cpp decode. Between
 * steps a beam's session is rolled back to the longest prefix it shares with the beam that takes it over
 * (truncate); a beam that forks from another gets a KV copy of it (ModelSession.copyFrom: node-llama-cpp's internal
 * sequence copy — llama.cpp copies the whole KV stream of the sequence at the next decode, ~1–11 ms on the inflated
 * target at context 512, so it is used only when it saves ≥ 2 tokens of re-evaluation) and, where copying is
 * unavailable, the shared prefix is re-evaluated in the session it lands in. Duplicate beams share one session.
 * node-llama-cpp creates contexts with one KV stream per sequence, and llama.cpp then puts only sequences with
 * CONSECUTIVE ids, in increasing order, into one micro-batch (and takes equally many tokens of each): 4 sequences
 * × 1 token cost ~67 ms with consecutive ids and ~136 ms scattered on the inflated target, ~4 single decodes. So the
 * pool opens its sequences once per decode as a block of consecutive ids, issues each step's appends in id order,
 * moves a step onto adjacent sequences (forking by copy), and releases a sequence by emptying it rather than
 * closing it. The pool reports batched calls, evaluated vs requested positions (the re-evaluation and
 * duplicated-ancestor overhead), copies, live sequences (holding KV) and KV cells, in each step's `decision`.
 */
import type { LanguageModel, ModelSession } from '../model/types'
import type { Distribution } from '../sampling/distribution'
import type { WarpConfig } from '../sampling/warp'
import { commonPrefixLength, now } from './session-sync'

/** Sessions of beam decoders return raw next-token distributions; the warp is applied to the joint (Eq 1). */
export const RAW_WARP: WarpConfig = { temperature: 1, topK: 0, topP: 1 }


/** Distinct sequences (by content), first occurrence order. */
export function distinctSequences(sequences: readonly (readonly number[])[]): number[][] {
  const seen = new Set<string>()
  const out: number[][] = []
  for (const s of sequences) {
    const key = s.join(',')
    if (!seen.has(key)) {
      seen.add(key)
      out.push([...s])
    }
  }
  return out
}

export interface PoolStats {
  /** Batched evaluations (all sessions' appends issued together count once). */
  calls: number
  /** Root-to-leaf paths evaluated (one sequence each). */
  paths: number
  /** Distinct positions whose next-token distribution was asked for. */
  requested: number
  /** Tokens the model evaluated (≥ requested: prefixes re-evaluated, ancestors shared by several paths). */
  evaluated: number
  copies: number
  copyMs: number
  /** Wall time inside evaluations, copies and rollbacks. */
  ms: number
}

export function emptyPoolStats(): PoolStats {
  return { calls: 0, paths: 0, requested: 0, evaluated: 0, copies: 0, copyMs: 0, ms: 0 }
}

export function subtractStats(after: PoolStats, before: PoolStats): PoolStats {
  return {
    calls: after.calls - before.calls,
    paths: after.paths - before.paths,
    requested: after.requested - before.requested,
    evaluated: after.evaluated - before.evaluated,
    copies: after.copies - before.copies,
    copyMs: after.copyMs - before.copyMs,
    ms: after.ms - before.ms
  }
}

/** A pooled round's calls for its step record: the target pool's decodes are its verification, the draft pool's its drafting. */
export function pooledCalls(target: PoolStats, draft: PoolStats): { targetCalls: number; draftCalls: number; verifyMs: number } {
  return { targetCalls: target.calls, draftCalls: draft.calls, verifyMs: target.ms }
}

/**
 * What one round's scoring cost without tree attention masks, for the step record's decision (dsbd, sd-tree): the
 * target's paths, requested vs evaluated positions, and both models' KV copies.
 */
export function treePrice(target: PoolStats, draft: PoolStats): Record<'paths' | 'requested' | 'evaluated' | 'copies' | 'copyMs', number> {
  return {
    paths: target.paths,
    requested: target.requested,
    evaluated: target.evaluated,
    copies: target.copies + draft.copies,
    copyMs: target.copyMs + draft.copyMs
  }
}

export interface SessionPoolOptions {
  /** Most sessions to hold at once (further capped by the model's free sequences). */
  maxSessions: number
  /** Fork by KV copy when it saves at least this many re-evaluated tokens (default 2: on the inflated 78M target a
   * copy costs about one token of batched evaluation — the whole KV stream is copied). */
  copyThreshold?: number
  /** Evaluate a round's common prefix once (then fork) when it is at least this many tokens longer than any cache. */
  prefillThreshold?: number
  /** The warp of the sessions' distributions: RAW_WARP for the beam decoders (default), the run's warp for sd-tree. */
  warp?: WarpConfig
}

interface Path {
  tokens: number[]
  /** The session may keep at most this many tokens cached (the first requested distribution follows token maxKeep). */
  maxKeep: number
}

const byId = (a: ModelSession, b: ModelSession) => (a.sequenceId ?? 0) - (b.sequenceId ?? 0)

/**
 * Opens up to `count` sessions, preferring consecutive sequence ids: llama.cpp (one KV stream per sequence, as
 * node-llama-cpp creates its contexts) puts only sequences with consecutive ids, in increasing order, into one
 * micro-batch. Open but empty sequences hold no KV cells, so all free ones are opened, the best-packed window of
 * `count` is kept and the rest closed again. Sorted by id.
 */
export async function openSessions(model: LanguageModel, warpConfig: WarpConfig, count: number): Promise<ModelSession[]> {
  const free = model.sessionsLeft?.() ?? count
  const opened: ModelSession[] = []
  for (let i = 0; i < Math.max(count, free); i++) {
    if (model.sessionsLeft && model.sessionsLeft() <= 0) break
    try {
      opened.push(await model.createSession(warpConfig))
    } catch (error) {
      if (opened.length === 0) throw error
      break
    }
  }
  opened.sort(byId)
  const keep = Math.min(count, opened.length)
  let best = 0
  let bestScore = -1
  for (let start = 0; start + keep <= opened.length; start++) {
    let score = 0
    for (let i = start + 1; i < start + keep; i++) if (opened[i].sequenceId === (opened[i - 1].sequenceId ?? NaN) + 1) score += 1
    if (score > bestScore) {
      best = start
      bestScore = score
    }
  }
  const kept = opened.slice(best, best + keep)
  for (const session of opened) if (!kept.includes(session)) await session.dispose()
  return kept
}

/**
 * Keeps KV sessions of one model aligned with the sequences a beam decoder needs, and evaluates them in as few
 * batched decodes as the available sequences allow. The sessions are opened once per decode (consecutive ids, see
 * openSessions) and released by rolling them back to empty: a sequence holds KV cells only while it holds tokens,
 * so "live" sequences are the non-empty ones. (llama.cpp allocates every sequence's KV stream when the context is
 * created — sequences × context size cells — so what the memory mode saves is cells in use; a context created with
 * fewer sequences saves the allocation too, and the pool then needs more decodes per step.)
 */
export class SessionPool {
  readonly stats = emptyPoolStats()
  private sessions: ModelSession[] = []
  private opened = false
  private copyUnavailable = false
  private peak = 0
  private readonly copyThreshold: number
  private readonly prefillThreshold: number

  constructor(
    private readonly model: LanguageModel,
    private readonly options: SessionPoolOptions
  ) {
    this.copyThreshold = options.copyThreshold ?? 2
    this.prefillThreshold = options.prefillThreshold ?? 4
  }

  /** Sequences holding KV state. */
  get liveSessions(): number {
    return this.sessions.filter((s) => s.tokens.length > 0).length
  }

  /** Sequences open (live or empty). */
  get openSessions(): number {
    return this.sessions.length
  }

  /** KV cells held: Σ cached tokens over the sessions. */
  get kvCells(): number {
    return this.sessions.reduce((sum, s) => sum + s.tokens.length, 0)
  }

  /** The most live sequences at any point since the last call (then resets to the current count). */
  takePeak(): number {
    const peak = Math.max(this.peak, this.liveSessions)
    this.peak = this.liveSessions
    return peak
  }

  /** The next-token distribution after each sequence (raw or warped as the pool's sessions were created). */
  async distributions(sequences: readonly (readonly number[])[]): Promise<Distribution[]> {
    const started = now()
    const unique = distinctSequences(sequences)
    const byKey = new Map<string, Distribution>()
    if (unique.length > 0) {
      // Maximal sequences become paths; shorter ones are read off the path they prefix.
      const order = unique.map((_, i) => i).sort((a, b) => unique[b].length - unique[a].length)
      const paths: Path[] = []
      const coveredBy: { path: number; length: number }[] = new Array(unique.length)
      for (const i of order) {
        const s = unique[i]
        let owner = paths.findIndex((p) => p.tokens.length >= s.length && commonPrefixLength(p.tokens, s) === s.length)
        if (owner < 0) {
          paths.push({ tokens: s, maxKeep: s.length - 1 })
          owner = paths.length - 1
        }
        paths[owner].maxKeep = Math.min(paths[owner].maxKeep, s.length - 1)
        coveredBy[i] = { path: owner, length: s.length }
      }
      this.stats.requested += unique.length
      this.stats.paths += paths.length
      await this.open()
      const results: Distribution[][] = new Array(paths.length)
      for (let first = 0; first < paths.length; ) {
        const round = paths.slice(first, first + this.sessions.length)
        const out = await this.evaluateRound(round)
        out.forEach((d, j) => (results[first + j] = d))
        first += round.length
      }
      unique.forEach((s, i) => {
        const { path, length } = coveredBy[i]
        byKey.set(s.join(','), results[path][length - 1 - paths[path].maxKeep])
      })
    }
    this.stats.ms += now() - started
    return sequences.map((s) => byKey.get(s.join(','))!)
  }

  /**
   * Keeps one session per distinct sequence — the one sharing the longest prefix with it, rolled back to that
   * prefix — and empties the others (KV between layers/iterations = the beams that continue).
   */
  async retain(sequences: readonly (readonly number[])[]): Promise<void> {
    const started = now()
    const wanted = distinctSequences(sequences)
    const keep = new Map<ModelSession, number>()
    const pairs: { session: ModelSession; sequence: number; lcp: number }[] = []
    for (const session of this.sessions)
      if (session.tokens.length > 0)
        wanted.forEach((s, i) => pairs.push({ session, sequence: i, lcp: commonPrefixLength(session.tokens, s) }))
    pairs.sort((a, b) => b.lcp - a.lcp)
    const done = new Set<number>()
    for (const pair of pairs) {
      if (done.has(pair.sequence) || keep.has(pair.session) || pair.lcp === 0) continue
      done.add(pair.sequence)
      keep.set(pair.session, pair.lcp)
    }
    await Promise.all(this.sessions.map((session) => session.truncate(keep.get(session) ?? 0)))
    this.stats.ms += now() - started
  }

  async dispose(): Promise<void> {
    const sessions = this.sessions
    this.sessions = []
    for (const session of sessions) await session.dispose()
  }

  private async open(): Promise<void> {
    if (this.opened) return
    this.opened = true
    this.sessions = await openSessions(this.model, this.options.warp ?? RAW_WARP, Math.max(1, this.options.maxSessions))
  }

  private async evaluateRound(round: readonly Path[]): Promise<Distribution[][]> {
    if (round.length > 1 && !this.copyUnavailable) await this.prefillCommonPrefix(round)
    // Assign sessions: the pairs sharing the longest usable prefix first (ties: lower sequence id).
    const usable = (session: ModelSession, path: Path) => Math.min(commonPrefixLength(session.tokens, path.tokens), path.maxKeep)
    const pairs: { session: ModelSession; path: number; usable: number; rank: number }[] = []
    this.sessions.forEach((session, rank) => round.forEach((path, p) => pairs.push({ session, path: p, usable: usable(session, path), rank })))
    pairs.sort((a, b) => b.usable - a.usable || a.rank - b.rank)
    const assigned: (ModelSession | undefined)[] = new Array(round.length)
    const taken = new Set<ModelSession>()
    for (const pair of pairs) {
      if (assigned[pair.path] || taken.has(pair.session)) continue
      assigned[pair.path] = pair.session
      taken.add(pair.session)
    }
    this.packAssignment(assigned, (session, p) => usable(session, round[p]))
    // Fork by KV copy where another session holds a longer usable prefix (sources keep their state: a copy
    // destination is never a source in the same round, and copies run before any rollback or append).
    if (!this.copyUnavailable) {
      const destinations = new Set<ModelSession>()
      const sources = new Set<ModelSession>()
      for (let p = 0; p < round.length && !this.copyUnavailable; p++) {
        const destination = assigned[p]!
        if (sources.has(destination)) continue
        const own = usable(destination, round[p])
        let best: ModelSession | null = null
        let bestUsable = own
        for (const candidate of this.sessions) {
          if (candidate === destination || destinations.has(candidate)) continue
          const u = usable(candidate, round[p])
          if (u > bestUsable) {
            best = candidate
            bestUsable = u
          }
        }
        if (!best || bestUsable - own < this.copyThreshold || !destination.copyFrom) continue
        const copyStarted = now()
        const copied = await destination.copyFrom(best, bestUsable)
        this.stats.copyMs += now() - copyStarted
        if (!copied) {
          this.copyUnavailable = true
          break
        }
        this.stats.copies += 1
        destinations.add(destination)
        sources.add(best)
      }
    }
    // Increasing sequence ids, so llama.cpp can put consecutive ones into one micro-batch.
    const order = round.map((_, p) => p).sort((a, b) => byId(assigned[a]!, assigned[b]!))
    const keeps = round.map((path, p) => usable(assigned[p]!, path))
    await Promise.all(order.map((p) => assigned[p]!.truncate(keeps[p])))
    // One batched decode: every append is issued before any is awaited.
    const pending = order.map((p) => {
      const tokens = round[p].tokens.slice(keeps[p])
      this.stats.evaluated += tokens.length
      return assigned[p]!.append(tokens, round[p].maxKeep - keeps[p])
    })
    const settled = await Promise.all(pending)
    this.peak = Math.max(this.peak, this.liveSessions)
    this.stats.calls += 1
    const results: Distribution[][] = new Array(round.length)
    order.forEach((p, i) => (results[p] = settled[i]))
    return results
  }

  /**
   * Moves the round onto a run of adjacent sessions (consecutive sequence ids): llama.cpp batches only consecutive
   * ids together, and on the inflated target 4 scattered sequences cost ~2× 4 consecutive ones. Paths outside the
   * best window move to free sessions inside it; the copy step then forks their old session's KV (or re-evaluates).
   */
  private packAssignment(assigned: (ModelSession | undefined)[], usable: (session: ModelSession, path: number) => number): void {
    const rankOf = new Map(this.sessions.map((s, i) => [s, i]))
    const ranks = assigned.map((s) => rankOf.get(s!)!)
    const size = ranks.length
    // Without KV copies a moved path would re-evaluate its whole prefix: not worth a micro-batch.
    if (this.copyUnavailable || !this.sessions[0].copyFrom) return
    if (size <= 1 || Math.max(...ranks) - Math.min(...ranks) + 1 === size) return
    let bestStart = 0
    let bestScore = -1
    for (let start = 0; start + size <= this.sessions.length; start++) {
      let score = 0
      ranks.forEach((rank, p) => {
        if (rank >= start && rank < start + size) score += 1 + usable(this.sessions[rank], p) / 1e6
      })
      if (score > bestScore) {
        bestStart = start
        bestScore = score
      }
    }
    const inWindow = (rank: number) => rank >= bestStart && rank < bestStart + size
    const free = this.sessions.filter((_, rank) => inWindow(rank) && !ranks.includes(rank))
    ranks.forEach((rank, p) => {
      if (!inWindow(rank)) assigned[p] = free.shift()
    })
  }

  /**
   * Several paths sharing a prefix that no cache holds (the prompt at the first layer, or after a fallback): evaluate
   * it once in one session, so the others fork from it instead of each re-evaluating it.
   */
  private async prefillCommonPrefix(round: readonly Path[]): Promise<void> {
    let common = round[0].maxKeep
    for (const path of round) common = Math.min(common, path.maxKeep, commonPrefixLength(round[0].tokens, path.tokens))
    if (common <= 0) return
    const prefix = round[0].tokens.slice(0, common)
    let holder: ModelSession = this.sessions[0]
    let held = -1
    for (const session of this.sessions) {
      const lcp = commonPrefixLength(session.tokens, prefix)
      if (lcp > held) {
        holder = session
        held = lcp
      }
    }
    if (common - held < this.prefillThreshold || !holder.copyFrom) return
    await holder.truncate(held)
    const pending = prefix.slice(held)
    this.stats.evaluated += pending.length
    await holder.append(pending, pending.length)
    this.stats.calls += 1
  }
}
