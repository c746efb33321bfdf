/**
 * `beam`: beam sampling (../shared/papers/dsbd-dynamic-width-speculative-beam.txt §2.1, Eq 1) — the baseline DSBD is
 * judged against (§4.2: widths 1–4) — plus what the DSBD decoders share with it: the beam law T∘p_beam and the beam
 * helpers. The session pool that keeps one KV sequence per beam / tree path is in session-pool.ts, the streaming of
 * a beam decoder's output in beam-stream.ts.
 *
 * Eq 1. With beams I = {x^{(1)} … x^{(W)}} (a multiset: beams are drawn with replacement, so a sequence drawn twice
 * counts twice), the next W beams are drawn i.i.d. from T∘p_beam, p_beam(x^{(i)}, v) ∝ p(x^{(i)}) · p(v | x^{(i)}),
 * where p(x^{(i)}) is the RAW target likelihood of the beam's generated tokens (the prompt's is common to all beams
 * and cancels) and T is the run's warp applied to the joint over I × V (as Eq 1 and Appendix A write T∘(p/𝒫)):
 * temperature on the joint log-likelihood, top-k over all W·|V| candidates, then top-p. (Hugging Face's beam sample
 * applies top-k per beam row; the paper's formula is global, which we follow.) W = 1 is multinomial sampling: the
 * beam's own likelihood is a constant factor, so T∘p_beam = T∘p(· | x). i.i.d. draws with replacement are what
 * Theorem 3.1 guarantees for DSBD's output beams, so `dsbd` with a fixed width W_L samples exactly `beam`'s law.
 * `beam.deterministic=true` keeps the W most probable candidates of T∘p_beam instead (§2.1 "deterministic beam
 * sampling", i.e. beam search). Temperature 0 (greedy) makes T∘p_beam the point mass on the best candidate, so the
 * sampled variant then equals greedy decoding (W identical beams); deterministic beam search is the option.
 * Sessions are created with the raw warp (temperature 1, whole vocabulary — cheap at the stories models' 512 tokens,
 * ~10 ms per position at a 32k vocabulary) because the joint needs raw, normalised conditionals.
 *
 * Finished beams (end-of-generation token) stay in the beam set with their whole mass on one "stay" candidate, so
 * they keep competing by their likelihood; decoding ends when every beam has finished or after --max-tokens layers.
 *
 * Output. The decoder seam carries ONE sequence: we return the final beam with the lowest perplexity under the
 * target (exp of minus the mean raw log-likelihood per generated token — Hugging Face's length-normalised beam
 * score, and §3.4's rule for picking the input beam in the memory mode), streamed by BeamStream (beam-stream.ts).
 *
 * KV state: one context sequence per distinct beam, kept by SessionPool (session-pool.ts).
 * Not a round of draft-then-verify (each step samples W beams from the target alone, nothing is verified), so it
 * runs the beam loop (beam-stream.ts beamSteps), which ends when the beams do, not round.ts's.
 */
import type { Distribution } from '../sampling/distribution'
import { fromWeights, probabilityOf, sample } from '../sampling/distribution'
import { warp, type WarpConfig } from '../sampling/warp'
import { BeamStream, beamSteps, type Beam, type BeamStep } from './beam-stream'
import { SessionPool, distinctSequences, subtractStats } from './session-pool'
import { now } from './session-sync'
import { stepRecord } from './step-record'
import type { Decoder, Provenance } from './types'

/** The token of a finished beam's only candidate: it stays as it is. */
export const STAY = -1

// ---------------------------------------------------------------------------------------------------------------
// The beam law T∘p_beam (Eq 1)

/** One beam of the current set: its joint log-likelihood and next-token distribution (null: finished → stay). */
export interface BeamRow {
  logWeight: number
  next: Distribution | null
}

/** Candidate (row, token) ↔ integer key, so beam laws are ordinary Distributions over keys. */
export class CandidateKeys {
  private readonly stride: number
  constructor(vocabularySize: number) {
    this.stride = vocabularySize + 1
  }
  key(row: number, token: number): number {
    return row * this.stride + (token + 1)
  }
  row(key: number): number {
    return Math.floor(key / this.stride)
  }
  token(key: number): number {
    return (key % this.stride) - 1
  }
}

/**
 * T∘p_beam over rows × V as a Distribution over candidate keys (sorted by descending probability). Greedy
 * (temperature 0) → the point mass on the most probable candidate (ties: lower row, then lower token).
 */
export function beamLaw(rows: readonly BeamRow[], config: WarpConfig, keys: CandidateKeys): Distribution {
  const ids: number[] = []
  const scores: number[] = []
  rows.forEach((row, r) => {
    if (!Number.isFinite(row.logWeight)) return
    if (row.next === null) {
      ids.push(keys.key(r, STAY))
      scores.push(row.logWeight)
      return
    }
    // The global top-k of the joint lies within each row's own top-k (a row's joint order is its token order).
    const limit = config.topK > 0 ? Math.min(config.topK, row.next.ids.length) : row.next.ids.length
    for (let i = 0; i < limit; i++) {
      const p = row.next.probs[i]
      if (p <= 0) continue
      ids.push(keys.key(r, row.next.ids[i]))
      scores.push(row.logWeight + Math.log(p))
    }
  })
  if (ids.length === 0) throw new Error('beam law: no candidate has mass')
  const law = warp(ids, scores, config)
  if (config.temperature === 0) return { ids: Int32Array.of(law.ids[0]), probs: Float64Array.of(1) }
  return law
}

/** The `count` most probable candidates of a law (fewer when its support is smaller): deterministic beam sampling. */
export function topCandidates(law: Distribution, count: number): number[] {
  return Array.from(law.ids.subarray(0, Math.min(count, law.ids.length)))
}

/** Restricts a law to the candidates whose row passes `keep`, renormalised (null when nothing is left). */
export function restrictLaw(law: Distribution, keep: (key: number) => number | null): Distribution | null {
  const ids: number[] = []
  const weights: number[] = []
  law.ids.forEach((key, i) => {
    const mapped = keep(key)
    if (mapped !== null && law.probs[i] > 0) {
      ids.push(mapped)
      weights.push(law.probs[i])
    }
  })
  return ids.length > 0 ? fromWeights(ids, weights) : null
}

// ---------------------------------------------------------------------------------------------------------------
// Beams

export type { Beam } from './beam-stream'

export function generatedLength(beam: Beam, promptLength: number): number {
  return beam.tokens.length - promptLength
}

/** exp(−logP / n) over the generated tokens (1 for an empty beam). */
export function beamPerplexity(beam: Beam, promptLength: number): number {
  const n = generatedLength(beam, promptLength)
  return n > 0 ? Math.exp(-beam.logP / n) : 1
}

/** The beam with the lowest perplexity under the target (first one on ties). */
export function bestBeam<B extends Beam>(beams: readonly B[], promptLength: number): B {
  let best = beams[0]
  let bestScore = -Infinity
  for (const beam of beams) {
    const n = generatedLength(beam, promptLength)
    const score = n > 0 ? beam.logP / n : 0
    if (score > bestScore) {
      best = beam
      bestScore = score
    }
  }
  return best
}

// ---------------------------------------------------------------------------------------------------------------
// The `beam` decoder

export interface BeamOptions {
  /** W: beams kept per step (Eq 1); 1 = multinomial sampling. */
  width: number
  /** Keep the W most probable candidates of T∘p_beam instead of sampling (beam search). */
  deterministic: boolean
}



/** Child of `parent` by candidate token (STAY keeps a finished beam as it is). */
export function extendBeam(parent: Beam, token: number, next: Distribution | null, provenance: Provenance): Beam {
  if (token === STAY || parent.finished) return parent
  const p = next ? probabilityOf(next, token) : 0
  return {
    tokens: [...parent.tokens, token],
    logP: parent.logP + Math.log(p),
    finished: false,
    provenance: [...parent.provenance, provenance]
  }
}

export function beamDecoder(options: BeamOptions): Decoder {
  return async function* beam(models, request) {
    const target = models.target
    const keys = new CandidateKeys(target.info.vocabularySize)
    const promptLength = request.promptTokens.length
    const pool = new SessionPool(target, { maxSessions: options.width })
    const stream = new BeamStream(promptLength, request.promptTokens, request.maxTokens, target)
    let beams: Beam[] = [{ tokens: [...request.promptTokens], logP: 0, finished: false, provenance: [] }]
    let depth = 0
    yield* beamSteps(stream, request, beamStep, () => pool.dispose())

    /** One step: its committed tokens, its record, and whether the beams are done. */
    async function beamStep(step: number): Promise<BeamStep> {
      const started = now()
      const before = { ...pool.stats }
      const live = beams.filter((b) => !b.finished)
      const dists = await pool.distributions(live.map((b) => b.tokens))
      const nextOf = new Map<Beam, Distribution>()
      live.forEach((b, i) => nextOf.set(b, dists[i]))
      const law = beamLaw(
        beams.map((b) => ({ logWeight: b.logP, next: nextOf.get(b) ?? null })),
        request.warp,
        keys
      )
      const picks = options.deterministic
        ? topCandidates(law, options.width)
        : Array.from({ length: options.width }, () => sample(law, request.rng))
      beams = picks.map((key) => {
        const parent = beams[keys.row(key)]
        const child = extendBeam(parent, keys.token(key), nextOf.get(parent) ?? null, 'target')
        if (child !== parent && target.isEndOfGeneration(keys.token(key))) child.finished = true
        return child
      })
      depth += 1
      const finished = beams.every((b) => b.finished) || depth >= request.maxTokens
      await pool.retain(beams.filter((b) => !b.finished).map((b) => b.tokens))
      const events = finished ? stream.finish(bestBeam(beams, promptLength), step) : stream.commitCommonPrefix(beams, step)
      const spent = subtractStats(pool.stats, before)
      const record = stepRecord({
        index: step,
        stage: 'beam',
        emitted: events.length,
        decision: {
          width: beams.length,
          layers: 1,
          widthSum: beams.length,
          distinctBeams: distinctSequences(beams.map((b) => b.tokens)).length,
          liveSequences: pool.liveSessions,
          peakSequences: pool.takePeak(),
          kvCells: pool.kvCells,
          requested: spent.requested,
          evaluated: spent.evaluated,
          copies: spent.copies,
          copyMs: spent.copyMs
        },
        targetCalls: spent.calls,
        verifyMs: spent.ms,
        totalMs: now() - started
      })
      return { events, record, finished }
    }
  }
}
