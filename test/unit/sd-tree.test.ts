/**
 * `sd-tree` / `sd-tree+ngram` (decoders/sd-tree.ts): llama.cpp's p_split tree shape, children drawn without
 * replacement, multi-draft recursive rejection sampling.
 *   - one node by hand: the emitted token's law equals p exactly for the without-replacement laws, and NOT for
 *     llama.cpp's deterministic top candidates tested as if drawn from q (negative control, exact enumeration and χ²);
 *   - end to end on toy models: the joint law of the first tokens is the target's warped law (χ², 20k decodes), with
 *     sibling branches, n-gram chains and rejections really happening;
 *   - greedy: the text equals `ar`'s; the tree's shape obeys p_split and the budgets; the step records.
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { drawChildren, splitCount, verifyTree, type TreeNode } from '../../electron/engine/decoders/sd-tree'
import type { Decoder, DecoderModels, Provenance } from '../../electron/engine/decoders/types'
import { prepare } from '../../electron/engine/methods/prepare'
import { fromWeights, probabilityOf, type Distribution } from '../../electron/engine/sampling/distribution'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'
import { decode, GREEDY, makeRequest, PLAIN } from '../helpers/decode'
import { report } from '../helpers/sampling'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20251124
const P_MIN = 0.001

const law = (weights: Record<number, number>): Distribution =>
  fromWeights(
    Object.keys(weights).map(Number),
    Object.values(weights)
  )

/** A root whose children were drawn by `children`, with target law p at the root and at each (leaf) child. */
function oneLevelTree(p: Distribution, children: { token: number; law: Distribution }[]): TreeNode {
  const root: TreeNode = { token: 0, parent: null, depth: 0, sequence: [0], law: p, source: 'draft', rank: 0, children: [], end: false, p }
  children.forEach(({ token, law: r }, rank) =>
    root.children.push({ token, parent: root, depth: 1, sequence: [0, token], law: r, source: 'draft', rank, children: [], end: false, p })
  )
  return root
}

describe('one node: recursive rejection over children drawn without replacement', () => {
  const p = law({ 1: 0.5, 2: 0.3, 3: 0.15, 4: 0.05 })
  const q = law({ 1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4 })

  it('splitCount: 1 + the consecutive runner-ups above p_split, at most maxChildren, skipping excluded tokens', () => {
    expect(splitCount(q, 0.25, 8, new Set())).toBe(2) // 0.4, then 0.3 > 0.25, then 0.2 is not
    expect(splitCount(q, 0.05, 8, new Set())).toBe(4)
    expect(splitCount(q, 0.05, 3, new Set())).toBe(3)
    expect(splitCount(q, 0.5, 8, new Set())).toBe(1)
    expect(splitCount(q, 0.15, 8, new Set([3]))).toBe(2) // 0.4, (0.3 excluded), 0.2 > 0.15, 0.1 is not
    expect(splitCount(law({ 4: 1 }), 0, 8, new Set([4]))).toBe(0)
  })

  it('drawChildren: distinct tokens; each law is q without the earlier ones (and the excluded), renormalised; greedy = top k', () => {
    const rng = createPrng(7, 0)
    for (let i = 0; i < 200; i++) {
      const drawn = drawChildren(q, 3, new Set([4]), false, rng)
      expect(new Set(drawn.map((c) => c.token)).size).toBe(3)
      expect(drawn.map((c) => c.token)).not.toContain(4)
      expect(probabilityOf(drawn[0].law, 3)).toBeCloseTo(0.3 / 0.6, 12)
      const taken = new Set([4, drawn[0].token])
      const rest = [1, 2, 3].filter((t) => !taken.has(t))
      const mass = rest.reduce((s, t) => s + probabilityOf(q, t), 0)
      for (const t of rest) expect(probabilityOf(drawn[1].law, t)).toBeCloseTo(probabilityOf(q, t) / mass, 12)
    }
    expect(drawChildren(q, 2, new Set(), true, rng).map((c) => c.token)).toEqual([4, 3])
    expect(drawChildren(q, 9, new Set([1]), true, rng).map((c) => c.token)).toEqual([4, 3, 2])
  })

  /** The exact law of the emitted token: enumerate the children's draws, then the accept/reject branches. */
  function emittedLaw(draw: 'without-replacement' | 'llama-top-k', k: number): Map<number, number> {
    const out = new Map<number, number>()
    const add = (token: number, mass: number) => out.set(token, (out.get(token) ?? 0) + mass)
    const verify = (children: { token: number; law: Distribution }[], mass: number) => {
      let cur = p
      let left = mass
      for (const child of children) {
        const accept = Math.min(1, probabilityOf(cur, child.token) / probabilityOf(child.law, child.token))
        add(child.token, left * accept)
        left *= 1 - accept
        const weights = Array.from(cur.probs, (pi, i) => Math.max(0, pi - probabilityOf(child.law, cur.ids[i])))
        if (weights.some((w) => w > 0)) cur = fromWeights(cur.ids, weights)
      }
      cur.ids.forEach((id, i) => add(id, left * cur.probs[i]))
    }
    if (draw === 'llama-top-k') {
      verify([...q.ids.slice(0, k)].map((token) => ({ token, law: q })), 1)
      return out
    }
    const enumerate = (prefix: { token: number; law: Distribution }[], mass: number) => {
      if (prefix.length === k) return verify(prefix, mass)
      const taken = new Set(prefix.map((c) => c.token))
      const weights = Array.from(q.probs, (w, i) => (taken.has(q.ids[i]) ? 0 : w))
      const r = fromWeights(q.ids, weights)
      r.ids.forEach((token, i) => enumerate([...prefix, { token, law: r }], mass * r.probs[i]))
    }
    enumerate([], 1)
    return out
  }

  it('exactly p for 1, 2 and 3 children drawn without replacement; llama.cpp’s deterministic top-k tested against q is not', () => {
    for (const k of [1, 2, 3]) for (const [token, mass] of emittedLaw('without-replacement', k)) expect(mass, `k=${k} token ${token}`).toBeCloseTo(probabilityOf(p, token), 12)
    const wrong = emittedLaw('llama-top-k', 2)
    const tv = [1, 2, 3, 4].reduce((s, t) => s + Math.abs((wrong.get(t) ?? 0) - probabilityOf(p, t)), 0) / 2
    console.log(`llama.cpp's deterministic top-2 tested as draws from q: total variation ${tv.toFixed(3)} from p`)
    expect(tv).toBeGreaterThan(0.05)
  })

  it('verifyTree samples p (χ², 20k) with drawChildren; the deterministic top-k control fails the same test', () => {
    const expected = new Map([...p.ids].map((id, i) => [String(id), p.probs[i]]))
    const run = (children: (rng: ReturnType<typeof createPrng>) => { token: number; law: Distribution }[]) => {
      const counts = new Map<string, number>()
      for (let i = 0; i < SAMPLES; i++) {
        const rng = createPrng(SEED, i)
        const verdict = verifyTree(oneLevelTree(p, children(rng)), false, rng)
        tally(counts, String(verdict.path.length > 0 ? verdict.path[0].token : verdict.next))
      }
      return chiSquareGoodnessOfFit(counts, expected)
    }
    const exact = run((rng) => drawChildren(q, 3, new Set(), false, rng))
    report('one node, 3 children without replacement', exact)
    expect(exact.pValue).toBeGreaterThan(P_MIN)
    const control = run(() => [...q.ids.slice(0, 3)].map((token) => ({ token, law: q })))
    report('negative control: top-3 tested as draws from q', control)
    expect(control.pValue).toBeLessThan(1e-6)
  })
})

// ---------------------------------------------------------------------------------------------------------------
// End to end on toy models

type Params = Record<string, number>
const decoderOf = (id: string, params: Params, gamma = 3): (() => Decoder) => prepare(id, { gamma, params }).newRun()
const TREE: Params = { 'tree.pSplit': 0.12, 'tree.branches': 3, 'tree.nodes': 8 }
const TREE_NGRAM: Params = { 'treengram.pSplit': 0.12, 'treengram.branches': 3, 'treengram.nodes': 8, 'treengram.ngram': 2 }
/** A prompt that repeats itself, so the n-gram branch proposes (and is both accepted and rejected). */
const REPEATING = [TOY_BOS, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
const MAX_TOKENS = 4
const GROUPS = [
  [0, 1],
  [2, 3]
]

interface Tally {
  counts: Map<string, number>[]
  provenance: Map<Provenance, number>
  rejections: number
  rounds: number
}

async function sampleTree(id: string, params: Params, prompt: number[], warp: WarpConfig): Promise<Tally> {
  const out: Tally = { counts: GROUPS.map(() => new Map()), provenance: new Map(), rejections: 0, rounds: 0 }
  const models: DecoderModels = { target: toyTarget(), draft: toyDraft() }
  for (let i = 0; i < SAMPLES; i++) {
    const result = await decode(decoderOf(id, params)(), models, { promptTokens: [...prompt], maxTokens: MAX_TOKENS, warp, rng: createPrng(SEED, i) })
    expect(result.tokens).toHaveLength(MAX_TOKENS)
    GROUPS.forEach((positions, g) => tally(out.counts[g], positions.map((j) => result.tokens[j]).join(',')))
    for (const p of result.provenances) out.provenance.set(p, (out.provenance.get(p) ?? 0) + 1)
    for (const step of result.steps) {
      out.rounds += 1
      if (step.resampled) out.rejections += 1
    }
  }
  return out
}

describe('sd-tree is lossless at temperature > 0 (χ² of the first 4 tokens, 20k decodes each)', () => {
  const cases = [
    { id: 'sd-tree', params: TREE, prompt: [TOY_BOS], label: 'T=1', warp: PLAIN },
    { id: 'sd-tree', params: TREE, prompt: [TOY_BOS], label: 'T=0.7 top-k 4', warp: { temperature: 0.7, topK: 4, topP: 1 } },
    { id: 'sd-tree+ngram', params: TREE_NGRAM, prompt: REPEATING, label: 'T=1', warp: PLAIN }
  ]
  it.each(cases)('$id, $label', async ({ id, params, prompt, warp }) => {
    const sampled = await sampleTree(id, params, prompt, warp)
    const counts = Object.fromEntries(sampled.provenance)
    console.log(`${id}: ${sampled.rounds} rounds, ${sampled.rejections} with a rejection, output provenance ${JSON.stringify(counts)}`)
    // Every branch of the verification must really run, often.
    expect(sampled.rejections / sampled.rounds).toBeGreaterThan(0.2)
    expect(sampled.provenance.get('branch') ?? 0).toBeGreaterThan(SAMPLES / 10)
    expect(sampled.provenance.get('draft') ?? 0).toBeGreaterThan(SAMPLES / 10)
    if (id === 'sd-tree+ngram') expect(sampled.provenance.get('ngram') ?? 0).toBeGreaterThan(SAMPLES / 10)
    const exact = exactSequenceDistribution(toyTarget(), prompt, MAX_TOKENS, warp)
    GROUPS.forEach((positions, g) => {
      const fit = chiSquareGoodnessOfFit(sampled.counts[g], marginal(exact, positions))
      report(`${id} tokens ${positions.join('+')}`, fit)
      expect(fit.df).toBeGreaterThanOrEqual(8)
      expect(fit.pValue).toBeGreaterThan(P_MIN)
    })
  })
})

describe('sd-tree: greedy, shape, records', () => {
  const prompts = [[TOY_BOS], [TOY_BOS, 3, 4, 3, 4, 3], REPEATING, [TOY_BOS, 2, 1, 4, 3, 2, 1]]

  it.each([
    { id: 'sd-tree', params: TREE },
    { id: 'sd-tree+ngram', params: TREE_NGRAM }
  ])('greedy $id = greedy ar (4 prompts, top-k 0 and 3), with sibling branches accepted', async ({ id, params }) => {
    const seen = new Map<Provenance, number>()
    for (const warp of [GREEDY, { temperature: 0, topK: 3, topP: 1 }])
      for (const promptTokens of prompts) {
        const models = { target: toyTarget(), draft: toyDraftClose() }
        const ar = await decode(autoregressive, models, makeRequest({ promptTokens, maxTokens: 24, warp }))
        const tree = await decode(decoderOf(id, params, 4)(), models, makeRequest({ promptTokens, maxTokens: 24, warp }))
        expect(tree.tokens, `${id} prompt ${promptTokens}`).toEqual(ar.tokens)
        for (const p of tree.provenances) seen.set(p, (seen.get(p) ?? 0) + 1)
      }
    console.log(`greedy ${id}: ${JSON.stringify(Object.fromEntries(seen))}`)
    expect(seen.get('branch') ?? 0).toBeGreaterThan(0)
    expect(seen.get('draft') ?? 0).toBeGreaterThan(0)
    if (id === 'sd-tree+ngram') expect(seen.get('ngram') ?? 0).toBeGreaterThan(0)
  })

  it('the tree obeys its budgets; every round is one batched target call; records carry the shape and the accepted path', async () => {
    const params = { 'tree.pSplit': 0.05, 'tree.branches': 3, 'tree.nodes': 7 }
    const result = await decode(decoderOf('sd-tree', params, 4)(), { target: toyTarget(), draft: toyDraft() }, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 40, warp: PLAIN }))
    expect(result.steps.length).toBeGreaterThan(5)
    for (const step of result.steps) {
      const d = step.decision as Record<string, number | string | boolean | null>
      expect(step.stage).toBe('sd-tree')
      expect(d.treeLeaves).toBeLessThanOrEqual(3)
      expect(d.treeNodes).toBeLessThanOrEqual(7)
      expect(d.treeDepth).toBeLessThanOrEqual(4)
      expect(step.draftTokens).toBe(d.treeNodes)
      expect(step.proposed).toBe(d.treeDepth)
      expect(step.draftEntropies).toHaveLength(step.draftTokens)
      expect(step.targetCalls).toBe(1)
      // One batched draft call per depth drafted.
      expect(step.draftCalls).toBeLessThanOrEqual(4)
      expect(String(d.acceptedPath).split('.').filter(Boolean)).toHaveLength(step.accepted)
      expect(step.threshold).toBe(0.05)
      expect(step.resampled).not.toBe(step.bonus)
    }
    // With p_split 0.05 on these toys nearly every node splits: trees use their leaf budget.
    expect(result.steps.some((s) => (s.decision as Record<string, number>).treeLeaves === 3)).toBe(true)
    expect(result.steps.some((s) => (s.decision as Record<string, boolean>).branchAccepted)).toBe(true)
  })

  it('branches = 1 is a chain: sd-tree then samples what sd samples (same greedy text, one path per round)', async () => {
    const models = { target: toyTarget(), draft: toyDraftClose() }
    const chain = await decode(decoderOf('sd-tree', { 'tree.branches': 1 }, 4)(), models, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 24, warp: GREEDY }))
    const sd = await decode(prepare('sd', { gamma: 4, params: {} }).newRun()(), models, makeRequest({ promptTokens: [TOY_BOS], maxTokens: 24, warp: GREEDY }))
    expect(chain.tokens).toEqual(sd.tokens)
    expect(chain.provenances).toEqual(sd.provenances)
    expect(chain.steps.every((s) => (s.decision as Record<string, number>).treeLeaves === 1)).toBe(true)
  })

  it('catalog: KV sequences = branches; parameters validated with one clear message', () => {
    expect(prepare('sd-tree', { gamma: 5, params: { 'tree.branches': 6 } }).sessions).toBe(6)
    expect(prepare('sd-tree+ngram', { gamma: 5, params: {} }).params).toMatchObject({ 'treengram.branches': 4, 'treengram.pSplit': 0.1, 'treengram.nodes': 16, 'treengram.ngram': 3 })
    expect(() => prepare('sd-tree', { gamma: 5, params: { 'tree.pSplit': 1.5 } })).toThrow(/tree\.pSplit \(sd-tree\) must be a number in \[0, 1\]/)
    expect(() => prepare('sd-tree', { gamma: 5, params: { 'tree.branches': 0 } })).toThrow(/tree\.branches/)
    expect(() => prepare('sd-tree', { gamma: 5, params: { 'tree.maxChildren': 9 } })).toThrow(/tree\.maxChildren/)
    expect(() => prepare('sd-tree', { gamma: 5, params: {} }, { draft: false, mid: false })).toThrow(/needs a draft model/)
  })
})
