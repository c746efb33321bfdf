/**
 * `sd-tree` and `sd-tree+ngram`: multi-draft speculative decoding on a token tree.
 *
 * Drafting follows llama.cpp's examples/speculative/speculative.cpp (tree-based sampling with `--draft-p-split`): the
 * draft expands the tree one depth at a time, all open branches of a depth in ONE batched draft call; at a node whose
 * draft law q has candidates below the first with probability > p_split (ranks 1 … 7, consecutive from the top),
 * the node splits into that many more children, while the tree has fewer than `branches` leaves (llama.cpp's
 * n_seq_dft = -np) and fewer than `nodes` nodes (llama.cpp stops past n_draft tokens); depth ≤ γ. A child that ends
 * generation is a leaf.
 *
 * Verification is multi-draft recursive rejection sampling (SpecInfer, Miao et al. ASPLOS 2024, multi-step
 * speculative sampling; with children drawn WITHOUT replacement as in Recursive Speculative Decoding, Jeon et al.
 * 2024). At a node with target law p and children x_1 … x_k, where x_i was drawn from r_i:
 *     cur ← p;  for i = 1 … k:  accept x_i with probability min(1, cur(x_i)/r_i(x_i)), then continue at x_i;
 *                               otherwise cur ← norm(max(0, cur − r_i))
 *     no child accepted: the correction is drawn from cur (provenance `resampled`); a leaf reached: bonus from p.
 * The emitted token is distributed as p whatever the r_i are, as long as x_i ~ r_i given what was drawn before it
 * (P(y) = min(r_i(y), cur(y)) + max(0, cur(y) − r_i(y)) = cur(y), by induction over i) — so the proposals are:
 *   - the draft's children: r_1 = q, r_2 = q without x_1 (renormalised), … (sampling without replacement: no
 *     duplicate siblings; at temperature 0 the top-k of q in order). The NUMBER of children is decided from q
 *     before any is drawn (draft-side information only), so the law above holds.
 *   - the n-gram branch (`sd-tree+ngram`): the prompt lookup's continuation (as `pld`: the longest suffix n-gram of
 *     prompt + output, n ≤ `treengram.ngram`) as a chain of point masses r = δ(x) hanging from the root, tried FIRST
 *     (llama.cpp chains its n-gram types before the draft model); the draft's root children are then drawn from q
 *     without the looked-up token, so no sibling repeats it.
 * llama.cpp's example instead drafts the TOP candidates deterministically and tests them with r ≤ p/q as if they
 * had been sampled from q; that is not exact at temperature > 0 (a deterministic pick is a point mass, not q), and
 * it picks a random order of siblings. We keep llama.cpp's tree shape rule and make the verification exact.
 * Greedy (temperature 0): accept the child equal to argmax p, else correct with argmax p — the argmax path, text = ar.
 *
 * Scoring without tree attention masks (node-llama-cpp has none): one KV sequence per root-to-leaf path, every path's
 * evaluation issued together so they share one llama.cpp decode (decoders/session-pool.ts, as DSBD's forest), the
 * paths forking from the committed prefix by KV copy. Each step records the price: positions evaluated vs requested
 * (a node shared by several paths is evaluated once per path), paths, copies and their time.
 *
 * Step record: proposed = the tree's depth (the most tokens one round can accept), accepted = the accepted path's
 * length, draftTokens = the tree's nodes (σ counts the branches not taken as redundancy), draftEntropies = H(q) at
 * the parent of each draft node; decision: the tree's size, depth and leaves, the accepted path as child ranks
 * (`0` = the draft's first choice, `n` = the n-gram branch; e.g. `0.1.0`), and the KV price. Provenance of an
 * accepted token: `draft` (the draft's first choice at its node), `branch` (another sibling), `ngram` (the n-gram
 * branch).
 *
 * Its own round body: the proposal is a tree scored through session pools, one KV sequence per path, and verified by
 * walking it — not round.ts's chain in one target session. Its step record ends the round as round.ts's do.
 */
import type { LanguageModel } from '../model/types'
import { argmax, entropy, fromWeights, sample, type Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { acceptGreedy, acceptSampling, residual } from '../sampling/verify'
import { isGreedy } from '../sampling/warp'
import { pointMass, type TokenLookup } from './drafter'
import { OutputBuffer } from './output'
import { emitRound } from './round'
import { SessionPool, pooledCalls, subtractStats, treePrice } from './session-pool'
import { now } from './session-sync'
import { stepRecord } from './step-record'
import type { Decoder, DecodeEvent, DecodeRequest, DecoderModels, Provenance } from './types'

/** llama.cpp tries ranks f = 1 … 7 for a split (examples/speculative: `for (int f = 1; f < 8; ++f)`). */
export const MAX_CHILDREN = 8

export interface TreeOptions {
  /** The tree's depth cap (--gamma). */
  depth: number
  /** p_split: a candidate of rank ≥ 1 with draft probability above it becomes a sibling branch. */
  pSplit: number
  /** The most root-to-leaf paths (= KV sequences per model). */
  branches: number
  /** The most nodes per round. */
  nodes: number
  /** The most children per node (≤ MAX_CHILDREN). */
  maxChildren: number
}

export interface TreeNode {
  token: number
  parent: TreeNode | null
  depth: number
  /** Committed sequence + the path to this node. */
  sequence: number[]
  /** The law this token was drawn from (r_i above): verified against. */
  law: Distribution
  /** 'draft': a child of the draft model, `rank` among its siblings (0 = first choice); 'ngram': the lookup chain. */
  source: 'draft' | 'ngram'
  rank: number
  children: TreeNode[]
  /** An end-of-generation token: a leaf. */
  end: boolean
  /** The target's warped next-token law after this node (filled when the tree is scored). */
  p?: Distribution
}

/** How many children a node with draft law q gets (llama.cpp's split rule), before the budgets. */
export function splitCount(q: Distribution, pSplit: number, maxChildren: number, exclude: ReadonlySet<number>): number {
  const probs: number[] = []
  for (let i = 0; i < q.ids.length && probs.length < maxChildren; i++) if (!exclude.has(q.ids[i]) && q.probs[i] > 0) probs.push(q.probs[i])
  if (probs.length === 0) return 0
  let count = 1
  while (count < probs.length && probs[count] > pSplit) count++
  return count
}

/** q without the tokens of `exclude`, renormalised (null when nothing is left). */
function without(q: Distribution, exclude: ReadonlySet<number>): Distribution | null {
  if (exclude.size === 0) return q
  const weights = Array.from(q.probs, (p, i) => (exclude.has(q.ids[i]) ? 0 : p))
  return weights.some((w) => w > 0) ? fromWeights(q.ids, weights) : null
}

/**
 * k distinct children drawn from q without replacement, skipping `exclude` (greedy: the top k in order), each with
 * the law it was drawn from: r_1 = q \ exclude, r_{i+1} = r_i \ {x_i}, renormalised.
 */
export function drawChildren(
  q: Distribution,
  k: number,
  exclude: ReadonlySet<number>,
  greedy: boolean,
  rng: Prng
): { token: number; law: Distribution }[] {
  const drawn: { token: number; law: Distribution }[] = []
  const taken = new Set(exclude)
  let law = without(q, taken)
  while (law !== null && drawn.length < k) {
    const token = greedy ? argmax(law) : sample(law, rng)
    drawn.push({ token, law })
    taken.add(token)
    law = without(q, taken)
  }
  return drawn
}

/** The accepted path from the root and the token that follows it. */
export interface TreeVerdict {
  path: TreeNode[]
  next: number
  /** The walk ended on a rejection (correction from the residual) rather than at a leaf (bonus). */
  rejected: boolean
}

/** Multi-draft recursive rejection sampling down the scored tree (header); greedy follows the argmax path. */
export function verifyTree(root: TreeNode, greedy: boolean, rng: Prng): TreeVerdict {
  const path: TreeNode[] = []
  for (let node = root; ; ) {
    const p = node.p!
    let current = p
    let accepted: TreeNode | null = null
    for (const child of node.children) {
      if (greedy ? acceptGreedy(p, child.token) : acceptSampling(current, child.law, child.token, rng)) {
        accepted = child
        break
      }
      if (!greedy) current = residual(current, child.law)
    }
    if (accepted === null) {
      const rejected = node.children.length > 0
      return { path, next: greedy ? argmax(p) : sample(current, rng), rejected }
    }
    path.push(accepted)
    if (accepted.end) return { path, next: -1, rejected: false }
    node = accepted
  }
}

function childOf(parent: TreeNode, token: number, law: Distribution, source: TreeNode['source'], rank: number, target: LanguageModel): TreeNode {
  const node: TreeNode = {
    token,
    parent,
    depth: parent.depth + 1,
    sequence: [...parent.sequence, token],
    law,
    source,
    rank,
    children: [],
    end: target.isEndOfGeneration(token)
  }
  parent.children.push(node)
  return node
}

/** A drafted tree and what drafting it cost. */
interface DraftedTree {
  root: TreeNode
  nodes: TreeNode[]
  leaves: number
  entropies: number[]
  ngramChain: number
}

/**
 * Drafts the tree (header): the n-gram chain first when a lookup is given, then depth by depth, each depth's open
 * nodes in one batched draft call, splitting by p_split within the leaf and node budgets.
 */
async function draftTree(
  sequence: readonly number[],
  depthLimit: number,
  options: TreeOptions,
  draftPool: SessionPool,
  lookup: TokenLookup | null,
  target: LanguageModel,
  greedy: boolean,
  rng: Prng
): Promise<DraftedTree> {
  const root: TreeNode = {
    token: sequence[sequence.length - 1],
    parent: null,
    depth: 0,
    sequence: [...sequence],
    law: pointMass(sequence[sequence.length - 1]),
    source: 'draft',
    rank: 0,
    children: [],
    end: false
  }
  const tree: DraftedTree = { root, nodes: [], leaves: 1, entropies: [], ngramChain: 0 }
  const looked = lookup?.propose(sequence, Math.min(depthLimit, options.nodes)).tokens ?? []
  for (let node = root, i = 0; i < looked.length && !node.end; i++) {
    node = childOf(node, looked[i], pointMass(looked[i]), 'ngram', 0, target)
    tree.nodes.push(node)
    tree.ngramChain += 1
  }
  let frontier: TreeNode[] = [root]
  for (let depth = 1; depth <= depthLimit && tree.nodes.length < options.nodes; depth++) {
    const open = frontier.filter((node) => !node.end)
    if (open.length === 0) break
    const laws = await draftPool.distributions(open.map((node) => node.sequence))
    const next: TreeNode[] = []
    open.forEach((node, i) => {
      const q = laws[i]
      const exclude = new Set(node.children.map((child) => child.token))
      const isLeaf = node.children.length === 0
      const wanted = splitCount(q, options.pSplit, options.maxChildren, exclude)
      // The first child of a leaf continues its path; every other child opens a new one.
      const pathsLeft = options.branches - tree.leaves + (isLeaf ? 1 : 0)
      const k = Math.min(wanted, pathsLeft, options.nodes - tree.nodes.length)
      if (k <= 0) return
      const h = entropy(q)
      const drawn = drawChildren(q, k, exclude, greedy, rng)
      drawn.forEach(({ token, law }, rank) => {
        const child = childOf(node, token, law, 'draft', rank, target)
        tree.nodes.push(child)
        tree.entropies.push(h)
        next.push(child)
      })
      tree.leaves += drawn.length - (isLeaf ? 1 : 0)
    })
    frontier = next
  }
  return tree
}

const provenanceOf = (node: TreeNode): Provenance => (node.source === 'ngram' ? 'ngram' : node.rank === 0 ? 'draft' : 'branch')

/** The accepted path as child ranks: `0.1.0`; `n` for the n-gram branch. */
const pathLabel = (path: readonly TreeNode[]): string => path.map((n) => (n.source === 'ngram' ? 'n' : String(n.rank))).join('.')

/**
 * The tree decoder. `lookup` (sd-tree+ngram) makes the prompt's lookup state for the n-gram branch; absent for
 * sd-tree. `stage` names the step records.
 */
export function sdTreeDecoder(
  options: TreeOptions,
  stage = 'sd-tree',
  lookup?: (promptTokens: readonly number[], target: LanguageModel) => TokenLookup
): Decoder {
  return async function* (models: DecoderModels, request: DecodeRequest): AsyncGenerator<DecodeEvent> {
    const target = models.target
    const draftModel = models.draft
    if (!draftModel) throw new Error(`${stage} needs a draft model`)
    const greedy = isGreedy(request.warp)
    const targetPool = new SessionPool(target, { maxSessions: options.branches, warp: request.warp })
    const draftPool = new SessionPool(draftModel, { maxSessions: options.branches, warp: request.warp })
    const lookupState = lookup ? lookup(request.promptTokens, target) : null
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, target)
    try {
      for (let step = 0; !output.done; step++) {
        if (output.cancelledBy(request.signal)) break
        const started = now()
        const targetBefore = { ...targetPool.stats }
        const draftBefore = { ...draftPool.stats }
        const depthLimit = Math.min(options.depth, request.maxTokens - output.tokens.length)
        const tree = await draftTree(output.sequence, depthLimit, options, draftPool, lookupState, target, greedy, request.rng)
        const draftMs = now() - started

        const scored = [tree.root, ...tree.nodes.filter((node) => !node.end)]
        const laws = await targetPool.distributions(scored.map((node) => node.sequence))
        scored.forEach((node, i) => (node.p = laws[i]))
        const verdict = verifyTree(tree.root, greedy, request.rng)
        if (verdict.path.length > 0) lookupState?.accepted?.(verdict.path[0].source === 'ngram' ? verdict.path.length : 0)

        const candidates = verdict.path.map((node) => ({ token: node.token, provenance: provenanceOf(node) }))
        if (verdict.next >= 0) candidates.push({ token: verdict.next, provenance: tree.nodes.length === 0 ? 'target' : verdict.rejected ? 'resampled' : 'bonus' })
        const events = output.commit(candidates, step)
        const committed = output.done ? [] : [output.sequence]
        await targetPool.retain(committed)
        await draftPool.retain(committed)

        const t = subtractStats(targetPool.stats, targetBefore)
        const d = subtractStats(draftPool.stats, draftBefore)
        const treeDepth = tree.nodes.reduce((deepest, node) => Math.max(deepest, node.depth), 0)
        const record = stepRecord({
          index: step,
          stage,
          proposed: treeDepth,
          accepted: verdict.path.length,
          resampled: verdict.rejected,
          bonus: tree.nodes.length > 0 && !verdict.rejected,
          emitted: events.length,
          draftTokens: tree.nodes.length,
          acceptedDraftTokens: Math.min(verdict.path.length, events.length),
          draftEntropies: tree.entropies,
          threshold: options.pSplit,
          decision: {
            gamma: options.depth,
            treeNodes: tree.nodes.length,
            treeDepth,
            treeLeaves: tree.leaves,
            acceptedPath: pathLabel(verdict.path),
            branchAccepted: verdict.path.some((node) => node.source === 'draft' && node.rank > 0),
            ngramChain: lookup ? tree.ngramChain : null,
            ...treePrice(t, d)
          },
          ...pooledCalls(t, d),
          draftMs,
          totalMs: now() - started
        })
        yield* emitRound(events, record)
      }
      yield { type: 'done', stopReason: output.stopReason ?? 'max-tokens' }
    } finally {
      await targetPool.dispose()
      await draftPool.dispose()
    }
  }
}
