/**
 * sampling/: warp (temperature → top-k → top-p), entropy, the residual norm(max(0, p − q)), Verify/Correct
 * (SVIP Appendix A, Alg. 2–5), the seeded PRNG and inverse-CDF sampling. Expected values are computed by hand or
 * from closed forms, never by calling the code under test a second way.
 */
import { describe, expect, it } from 'vitest'
import {
  argmax,
  entropy,
  fromWeights,
  probabilityOf,
  sample,
  softmaxEntropy,
  sortUnlessOrdered,
  type Distribution
} from '../../electron/engine/sampling/distribution'
import { createPrng, type Prng } from '../../electron/engine/sampling/prng'
import { acceptGreedy, acceptSampling, residual, verifyDraft } from '../../electron/engine/sampling/verify'
import { isGreedy, warp, type WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i)

/** Distribution from explicit {id: probability} pairs (must already sum to 1). */
function dist(entries: [number, number][]): Distribution {
  return fromWeights(
    entries.map(([id]) => id),
    entries.map(([, p]) => p)
  )
}

function asRecord(d: Distribution): Record<number, number> {
  const out: Record<number, number> = {}
  d.ids.forEach((id, i) => (out[id] = d.probs[i]))
  return out
}

function sum(values: ArrayLike<number>): number {
  let s = 0
  for (let i = 0; i < values.length; i++) s += values[i]
  return s
}

/** A PRNG that replays fixed numbers and counts draws. */
function scripted(values: number[]): Prng & { draws: number } {
  const rng = {
    draws: 0,
    next(): number {
      if (rng.draws >= values.length) throw new Error('scripted PRNG exhausted')
      return values[rng.draws++]
    }
  }
  return rng
}

const T1: WarpConfig = { temperature: 1, topK: 0, topP: 1 }

describe('warp', () => {
  it('scales logits by 1/T before the softmax', () => {
    const logits = [2, 1, 0]
    // T = 0.5: weights e^4, e^2, e^0.
    const cold = warp(range(3), logits, { temperature: 0.5, topK: 0, topP: 1 })
    const z = Math.exp(4) + Math.exp(2) + 1
    expect(Array.from(cold.ids)).toEqual([0, 1, 2])
    expect(cold.probs[0]).toBeCloseTo(Math.exp(4) / z, 12) // 0.866813…
    expect(cold.probs[1]).toBeCloseTo(Math.exp(2) / z, 12) // 0.117310…
    expect(cold.probs[2]).toBeCloseTo(1 / z, 12) // 0.015876…
    // T = 2: weights e^1, e^0.5, e^0.
    const hot = warp(range(3), logits, { temperature: 2, topK: 0, topP: 1 })
    const zh = Math.E + Math.exp(0.5) + 1
    expect(hot.probs[0]).toBeCloseTo(Math.E / zh, 12)
    expect(hot.probs[2]).toBeCloseTo(1 / zh, 12)
    // Colder is sharper.
    const plain = warp(range(3), logits, T1)
    expect(entropy(cold)).toBeLessThan(entropy(plain))
    expect(entropy(plain)).toBeLessThan(entropy(hot))
  })

  it('top-k keeps exactly the k most likely tokens, renormalised', () => {
    const logits = [0.1, 3, -1, 2, 0.5, 2.5]
    const d = warp(range(6), logits, { temperature: 1, topK: 3, topP: 1 })
    expect(Array.from(d.ids)).toEqual([1, 5, 3])
    const z = Math.exp(3) + Math.exp(2.5) + Math.exp(2)
    expect(d.probs[0]).toBeCloseTo(Math.exp(3) / z, 12)
    expect(d.probs[1]).toBeCloseTo(Math.exp(2.5) / z, 12)
    expect(d.probs[2]).toBeCloseTo(Math.exp(2) / z, 12)
    expect(probabilityOf(d, 0)).toBe(0)
    // k ≥ n and k = 0 keep everything.
    expect(warp(range(6), logits, { temperature: 1, topK: 100, topP: 1 }).ids).toHaveLength(6)
    expect(warp(range(6), logits, { temperature: 1, topK: 0, topP: 1 }).ids).toHaveLength(6)
    expect(warp(range(6), logits, { temperature: 1, topK: 1, topP: 1 }).ids).toEqual(Int32Array.from([1]))
  })

  it('top-p keeps the smallest nucleus whose mass reaches p, and always at least one token', () => {
    // Softmax of log-probabilities gives back 0.5, 0.3, 0.15, 0.05.
    const logits = [0.5, 0.3, 0.15, 0.05].map(Math.log)
    const nucleus = (topP: number, temperature = 1, topK = 0) =>
      asRecord(warp(range(4), logits, { temperature, topK, topP }))
    // 0.5 < 0.75 ≤ 0.5 + 0.3 → {0, 1}, renormalised 0.625 / 0.375.
    const two = nucleus(0.75)
    expect(Object.keys(two).map(Number)).toEqual([0, 1])
    expect(two[0]).toBeCloseTo(0.625, 12)
    expect(two[1]).toBeCloseTo(0.375, 12)
    // 0.8 < 0.81 ≤ 0.95 → three tokens.
    const three = nucleus(0.81)
    expect(Object.keys(three)).toHaveLength(3)
    expect(three[2]).toBeCloseTo(0.15 / 0.95, 12)
    // p below the top token's mass → just the top token; a tiny p still keeps one token.
    expect(nucleus(0.4)).toEqual({ 0: 1 })
    expect(nucleus(1e-9)).toEqual({ 0: 1 })
    // 0.95 < 0.999 → all four.
    expect(Object.keys(nucleus(0.999))).toHaveLength(4)
    // Temperature first: at T = 2 the masses are √p / Σ√p = 0.379, 0.294, 0.208, 0.120, so 0.7 needs 3 tokens
    // (at T = 1 it needs 2).
    expect(Object.keys(nucleus(0.7, 1))).toHaveLength(2)
    expect(Object.keys(nucleus(0.7, 2))).toHaveLength(3)
    // Top-k before top-p: within the top-2 the masses are 0.625 / 0.375, so p = 0.6 keeps 1 token
    // (over the whole vocabulary it would keep 2).
    expect(nucleus(0.6, 1, 2)).toEqual({ 0: 1 })
    expect(Object.keys(nucleus(0.6, 1, 0))).toHaveLength(2)
  })

  it('temperature 0 is greedy and returns the T = 1 softmax, whose argmax is the top token', () => {
    const logits = [0.3, -1, 2.2, 1.9, 0]
    const greedy: WarpConfig = { temperature: 0, topK: 0, topP: 1 }
    expect(isGreedy(greedy)).toBe(true)
    expect(isGreedy(T1)).toBe(false)
    const d0 = warp(range(5), logits, greedy)
    const z = sum(logits.map(Math.exp))
    expect(argmax(d0)).toBe(2)
    expect(Array.from(d0.ids)).toEqual([2, 3, 0, 4, 1])
    d0.ids.forEach((id, i) => expect(d0.probs[i]).toBeCloseTo(Math.exp(logits[id]) / z, 12))
    expect(entropy(d0)).toBeGreaterThan(0.5)
  })

  it('keeps arbitrary token ids, sorts by probability and breaks ties towards the lower id', () => {
    const d = warp([40, 7, 300], [0, 1, 0.5], T1)
    expect(Array.from(d.ids)).toEqual([7, 300, 40])
    const tie = warp([9, 4, 6, 1], [1, 2, 2, 0], T1)
    expect(Array.from(tie.ids)).toEqual([4, 6, 9, 1])
    expect(argmax(tie)).toBe(4)
  })

  it('always yields a normalised, descending, duplicate-free distribution', () => {
    const rng = createPrng(5, 5)
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(rng.next() * 40)
      const ids = range(n).map((i) => i * 3 + 1)
      const logits = ids.map(() => (rng.next() - 0.5) * 20)
      const config: WarpConfig = {
        temperature: [0, 0.3, 1, 1.7][trial % 4],
        topK: [0, 1, 5, 64][Math.floor(trial / 4) % 4],
        topP: [1, 0.9, 0.5, 0.05][Math.floor(trial / 16) % 4]
      }
      const d = warp(ids, logits, config)
      expect(sum(d.probs)).toBeCloseTo(1, 12)
      expect(d.ids.length).toBeGreaterThanOrEqual(1)
      if (config.topK > 0) expect(d.ids.length).toBeLessThanOrEqual(config.topK)
      expect(new Set(d.ids).size).toBe(d.ids.length)
      for (let i = 1; i < d.probs.length; i++) expect(d.probs[i]).toBeLessThanOrEqual(d.probs[i - 1])
      for (const p of d.probs) expect(p).toBeGreaterThan(0)
      // The kept token with the largest logit is the argmax.
      const best = ids[logits.indexOf(Math.max(...logits))]
      expect(argmax(d)).toBe(best)
    }
  })
})

describe('ranking: input in order passes through, any other is sorted', () => {
  const byLogit = (logits: number[], ids: number[]) => (a: number, b: number) => logits[b]! - logits[a]! || ids[a]! - ids[b]!

  it('sortUnlessOrdered leaves a ranked order as it is and sorts any other, ties by id', () => {
    const ids = [7, 3, 9, 1]
    const ranked = [4, 3, 3, 1] // logits: highest first; the tie (3, 3) is in id order only if 3 comes before 9
    expect(sortUnlessOrdered([0, 1, 2, 3], byLogit(ranked, ids))).toEqual([0, 1, 2, 3])
    // The tie in the other id order: ids 9 before 3 must swap.
    expect(sortUnlessOrdered([0, 1, 2, 3], byLogit(ranked, [7, 9, 3, 1]))).toEqual([0, 2, 1, 3])
    // Unordered logits, and an order that is ranked but for the last pair.
    expect(sortUnlessOrdered([0, 1, 2, 3], byLogit([0, 5, -1, 2], ids))).toEqual([1, 3, 0, 2])
    expect(sortUnlessOrdered([0, 1, 2, 3], byLogit([5, 4, 3, 3.5], ids))).toEqual([0, 1, 3, 2])
    expect(sortUnlessOrdered([], byLogit([], []))).toEqual([])
  })

  it('warp and fromWeights give the same distribution for any order of the same logits', () => {
    const ids = [12, 4, 30, 7, 19, 2]
    const logits = [1.5, 3, 1.5, -2, 0.25, 3]
    const prng = createPrng(11)
    for (let shuffle = 0; shuffle < 20; shuffle++) {
      const order = range(ids.length).sort(() => prng.next() - 0.5)
      for (const config of [T1, { temperature: 0.7, topK: 4, topP: 0.9 }]) {
        const shuffled = warp(order.map((i) => ids[i]!), order.map((i) => logits[i]!), config)
        // Highest logit first; equal logits (3: ids 4, 2; 1.5: ids 12, 30) by lower id.
        expect(Array.from(shuffled.ids.slice(0, 4))).toEqual([2, 4, 12, 30].slice(0, Math.min(4, shuffled.ids.length)))
        expect(shuffled).toEqual(warp(ids, logits, config))
      }
      const weights = [0.5, 2, 0.5, 0, 1, 2]
      expect(Array.from(fromWeights(order.map((i) => ids[i]!), order.map((i) => weights[i]!)).ids)).toEqual([2, 4, 19, 12, 30])
    }
  })
})

describe('entropy', () => {
  it('is ln n for the uniform distribution over n tokens and 0 for a point mass', () => {
    for (const n of [1, 2, 5, 64, 512]) {
      const uniform = fromWeights(range(n), new Array(n).fill(1))
      expect(entropy(uniform)).toBeCloseTo(Math.log(n), 12)
    }
    // (½, ¼, ¼): ½ ln 2 + 2 · ¼ ln 4 = 1.5 ln 2.
    expect(entropy(dist([[0, 0.5], [1, 0.25], [2, 0.25]]))).toBeCloseTo(1.5 * Math.LN2, 12)
    // Uniform logits through warp.
    expect(entropy(warp(range(6), new Array(6).fill(0.7), T1))).toBeCloseTo(Math.log(6), 12)
  })
})

describe('softmaxEntropy (the whole-vocabulary entropy SVIP thresholds)', () => {
  it('closed forms: uniform logits give ln n, any shift leaves it unchanged, −∞ and −1e9 entries count as absent', () => {
    expect(softmaxEntropy(new Array(512).fill(-3.25))).toBeCloseTo(Math.log(512), 12)
    // Logits ln(½), ln(¼), ln(¼) (+ any constant): the (½, ¼, ¼) law, 1.5 ln 2.
    for (const shift of [0, 40, -700])
      expect(softmaxEntropy([Math.log(0.5), Math.log(0.25), Math.log(0.25)].map((l) => l + shift))).toBeCloseTo(1.5 * Math.LN2, 12)
    expect(softmaxEntropy([0, 0, -Infinity, -1e9])).toBeCloseTo(Math.LN2, 15)
    expect(softmaxEntropy([5])).toBe(0)
    expect(() => softmaxEntropy([-Infinity, -Infinity])).toThrow()
  })

  it('is the entropy of the temperature-1 softmax of ALL logits, which a top-k warp truncates', () => {
    // 2 heavy tokens and a tail of 62 light ones: logits 2, 2, then 0 × 62. p = e²/(2e² + 62), tail 1/(2e² + 62).
    const logits = [2, 2, ...new Array(62).fill(0)]
    const z = 2 * Math.exp(2) + 62
    const expected = -(2 * (Math.exp(2) / z) * Math.log(Math.exp(2) / z) + 62 * (1 / z) * Math.log(1 / z))
    expect(softmaxEntropy(logits)).toBeCloseTo(expected, 12)
    // The whole-vocabulary warp at T = 1 agrees; the top-2 warp sees ln 2 only (what SpecLab thresholded before).
    expect(entropy(warp(range(64), logits, T1))).toBeCloseTo(expected, 12)
    expect(entropy(warp(range(64), logits, { temperature: 1, topK: 2, topP: 1 }))).toBeCloseTo(Math.LN2, 12)
    expect(expected).toBeGreaterThan(2.5 * Math.LN2)
  })
})

describe('residual norm(max(0, p − q))', () => {
  it('matches a hand-computed example', () => {
    // p = (0.5, 0.3, 0.2), q = (0.2, 0.2, 0.6) → max(0, p − q) = (0.3, 0.1, 0) → (0.75, 0.25, 0).
    const p = dist([[0, 0.5], [1, 0.3], [2, 0.2]])
    const q = dist([[0, 0.2], [1, 0.2], [2, 0.6]])
    const r = residual(p, q)
    expect(Array.from(r.ids)).toEqual([0, 1])
    expect(r.probs[0]).toBeCloseTo(0.75, 12)
    expect(r.probs[1]).toBeCloseTo(0.25, 12)
    // NOT SVIP's printed max(q − p, 0) = (0, 0, 0.4) → token 2.
    expect(probabilityOf(r, 2)).toBe(0)
  })

  it('handles supports that differ (sparse top-k distributions)', () => {
    // p = {0: 0.6, 1: 0.4}, q = {0: 0.1, 3: 0.9}: max(0, p − q) = {0: 0.5, 1: 0.4} → {0: 5/9, 1: 4/9}.
    const r = asRecord(residual(dist([[0, 0.6], [1, 0.4]]), dist([[0, 0.1], [3, 0.9]])))
    expect(r[0]).toBeCloseTo(5 / 9, 12)
    expect(r[1]).toBeCloseTo(4 / 9, 12)
    expect(r[3]).toBeUndefined()
  })

  it('falls back to p when p = q (no residual mass)', () => {
    const p = dist([[0, 0.7], [1, 0.3]])
    expect(asRecord(residual(p, dist([[0, 0.7], [1, 0.3]])))).toEqual(asRecord(p))
  })
})

describe('verifyDraft (greedy, SVIP Alg. 3 and 5)', () => {
  // argmax p1 = 3, argmax p2 = 4, argmax p3 = 0.
  const p1 = dist([[3, 0.6], [2, 0.3], [1, 0.1]])
  const p2 = dist([[4, 0.5], [2, 0.45], [0, 0.05]])
  const p3 = dist([[0, 0.4], [1, 0.35], [2, 0.25]])
  // q is irrelevant when greedy: make it prefer the rejected tokens.
  const q = dist([[2, 0.9], [3, 0.1]])
  const verify = (draft: number[]) => verifyDraft(draft, [q, q], [p1, p2, p3], true, createPrng(1))

  it('accepts the argmax-matching prefix and corrects with argmax p', () => {
    expect(verify([3, 2])).toEqual({ accepted: 1, next: 4, rejected: true })
    expect(verify([1, 4])).toEqual({ accepted: 0, next: 3, rejected: true })
  })

  it('adds the bonus argmax p_{γ+1} when every draft token is accepted', () => {
    expect(verify([3, 4])).toEqual({ accepted: 2, next: 0, rejected: false })
    expect(verifyDraft([3], [q], [p1, p2], true, createPrng(1))).toEqual({ accepted: 1, next: 4, rejected: false })
  })

  it('acceptGreedy compares with the argmax only', () => {
    expect(acceptGreedy(p2, 4)).toBe(true)
    expect(acceptGreedy(p2, 2)).toBe(false)
  })
})

describe('verifyDraft (sampling, SVIP Alg. 2 and 4)', () => {
  it('accepts with frequency min(1, p(x)/q(x))', () => {
    const p = dist([[0, 0.2], [1, 0.7], [2, 0.1]])
    const q = dist([[0, 0.5], [1, 0.3], [3, 0.2]])
    const rng = createPrng(77, 3)
    const n = 100_000
    let accepted = 0
    for (let i = 0; i < n; i++) if (acceptSampling(p, q, 0, rng)) accepted += 1
    // min(1, 0.2/0.5) = 0.4; σ = √(0.4·0.6/n) ≈ 0.00155 → 5σ ≈ 0.0077.
    expect(Math.abs(accepted / n - 0.4)).toBeLessThan(0.0077)
    // p(x) ≥ q(x): always; p(x) = 0: never.
    for (let i = 0; i < 1000; i++) {
      expect(acceptSampling(p, q, 1, rng)).toBe(true)
      expect(acceptSampling(p, q, 3, rng)).toBe(false)
    }
  })

  it('one draft token + Verify/Correct emits a token distributed as p (chi-square, 60k trials)', () => {
    // Σ min(p, q) = 0.2 + 0.2 + 0.2 = 0.6 acceptance.
    const p = dist([[0, 0.5], [1, 0.3], [2, 0.2]])
    const q = dist([[0, 0.2], [1, 0.2], [2, 0.6]])
    const pNext = dist([[5, 0.9], [6, 0.1]])
    const rng = createPrng(2024, 1)
    const first = new Map<string, number>()
    const bonus = new Map<string, number>()
    let accepted = 0
    const n = 60_000
    for (let i = 0; i < n; i++) {
      const x = sample(q, rng)
      const verdict = verifyDraft([x], [q], [p, pNext], false, rng)
      if (verdict.accepted === 1) {
        accepted += 1
        expect(verdict.rejected).toBe(false)
        tally(first, String(x))
        tally(bonus, String(verdict.next))
      } else {
        expect(verdict.rejected).toBe(true)
        tally(first, String(verdict.next))
      }
    }
    const law = (d: Distribution) => new Map(Array.from(d.ids, (id, i) => [String(id), d.probs[i]]))
    expect(chiSquareGoodnessOfFit(first, law(p)).pValue).toBeGreaterThan(0.001)
    expect(chiSquareGoodnessOfFit(bonus, law(pNext)).pValue).toBeGreaterThan(0.001)
    // σ = √(0.6·0.4/n) ≈ 0.002.
    expect(Math.abs(accepted / n - 0.6)).toBeLessThan(0.01)
  })

  it('draws one uniform per examined token plus one for the correction or bonus (replayable)', () => {
    const p = dist([[0, 0.5], [1, 0.5]])
    const q = dist([[0, 0.9], [1, 0.1]])
    // Token 0: accept iff u·0.9 < 0.5. Draws: 0.1 (accept), 0.99 (reject), then the correction draw.
    const rng = scripted([0.1, 0.99, 0.3])
    const verdict = verifyDraft([0, 0, 1], [q, q, q], [p, p, p, p], false, rng)
    expect(verdict.accepted).toBe(1)
    expect(verdict.rejected).toBe(true)
    // Residual max(0, p − q) = {1: 0.4} → token 1.
    expect(verdict.next).toBe(1)
    expect(rng.draws).toBe(3)
    // All accepted (γ = 2): 2 verify draws + 1 bonus draw.
    const all = scripted([0, 0, 0.7])
    expect(verifyDraft([0, 0], [q, q], [p, p, p], false, all)).toEqual({ accepted: 2, next: 1, rejected: false })
    expect(all.draws).toBe(3)
  })
})

describe('PRNG', () => {
  const draws = (rng: Prng, n: number) => Array.from({ length: n }, () => rng.next())

  it('is deterministic for (seed, stream); other streams and seeds differ', () => {
    const a = draws(createPrng(42, 0), 64)
    expect(draws(createPrng(42, 0), 64)).toEqual(a)
    expect(draws(createPrng(42), 64)).toEqual(a)
    const b = draws(createPrng(42, 1), 64)
    const c = draws(createPrng(43, 0), 64)
    for (const other of [b, c]) {
      expect(other).not.toEqual(a)
      // Not a shifted copy either.
      expect(other.filter((v) => a.includes(v)).length).toBeLessThan(2)
    }
    // Streams 0..999 of one seed all start differently.
    expect(new Set(range(1000).map((i) => createPrng(42, i).next())).size).toBe(1000)
  })

  it('is uniform on [0, 1), within and across streams, and consecutive draws look independent', () => {
    const rng = createPrng(9, 9)
    const n = 200_000
    const bins = new Map<string, number>()
    const pairs = new Map<string, number>()
    let previous = rng.next()
    let outside = 0
    for (let i = 0; i < n; i++) {
      const u = rng.next()
      if (!(u >= 0 && u < 1)) outside += 1
      tally(bins, String(Math.floor(u * 20)))
      tally(pairs, `${Math.floor(previous * 10)},${Math.floor(u * 10)}`)
      previous = u
    }
    expect(outside).toBe(0)
    const uniform = (k: number) => new Map(range(k).map((i) => [String(i), 1 / k]))
    expect(chiSquareGoodnessOfFit(bins, uniform(20)).pValue).toBeGreaterThan(0.001)
    const uniformPairs = new Map(range(100).map((i) => [`${Math.floor(i / 10)},${i % 10}`, 1 / 100]))
    expect(chiSquareGoodnessOfFit(pairs, uniformPairs).pValue).toBeGreaterThan(0.001)
    // The first draw of streams 0..N−1 (what the statistical decoder tests rely on) is uniform too.
    const firsts = new Map<string, number>()
    for (let i = 0; i < 50_000; i++) tally(firsts, String(Math.floor(createPrng(20240611, i).next() * 20)))
    expect(chiSquareGoodnessOfFit(firsts, uniform(20)).pValue).toBeGreaterThan(0.001)
  })
})

describe('sample', () => {
  it('draws tokens with the distribution’s frequencies', () => {
    const d = dist([[0, 0.5], [3, 0.3], [7, 0.15], [9, 0.05]])
    const rng = createPrng(3, 14)
    const counts = new Map<string, number>()
    for (let i = 0; i < 100_000; i++) tally(counts, String(sample(d, rng)))
    expect([...counts.keys()].sort()).toEqual(['0', '3', '7', '9'])
    const fit = chiSquareGoodnessOfFit(counts, new Map([['0', 0.5], ['3', 0.3], ['7', 0.15], ['9', 0.05]]))
    expect(fit.pValue).toBeGreaterThan(0.001)
    // Bias of 1% on the smallest token would be caught: the same counts against a shifted law fail.
    const shifted = new Map([['0', 0.49], ['3', 0.3], ['7', 0.15], ['9', 0.06]])
    expect(chiSquareGoodnessOfFit(counts, shifted).pValue).toBeLessThan(1e-6)
  })

  it('inverts the CDF: u = 0 gives the top token, u → 1 the last token with mass (even if Σp < 1)', () => {
    const d = dist([[4, 0.6], [2, 0.4]])
    expect(sample(d, scripted([0]))).toBe(4)
    expect(sample(d, scripted([0.59]))).toBe(4)
    expect(sample(d, scripted([0.61]))).toBe(2)
    const short: Distribution = { ids: Int32Array.from([4, 2]), probs: Float64Array.from([0.6, 0.3999999]) }
    expect(sample(short, scripted([0.99999995]))).toBe(2)
  })
})
