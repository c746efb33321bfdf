/**
 * `dsbd` and `dsbd-1beam`: dynamic-width speculative beam decoding
 * (../shared/papers/dsbd-dynamic-width-speculative-beam.txt §3, Algorithm 1, Eq 1–7, Theorems 3.1–3.2, App. A).
 *
 * One iteration (one step record):
 *   Draft (§3.1 "Overview")  the small model beam-samples a forest from the input beams I: γ layers (--gamma) of W_S
 *        (dsbd.ws) beams, layer l drawn i.i.d. from T∘q_beam over (layer l−1) × V (Eq 1 with the draft's raw joint
 *        likelihoods q(x_{1:t}); the layer's beams are evaluated together, one batched draft call per layer).
 *   Score (§3.3)  the target scores every node of every tree in ONE batched decode (below).
 *   Verify (Algorithm 1 lines 4–30)  layer by layer: p' ← p_beam^{(l)} (over the accepted beams of layer l−1 × V);
 *        drafts whose parent was rejected are rejected (line 10); the others are tested in draft order and accepted
 *        with probability min(1, p'(x)/q_beam(x)); after a rejection p' ← norm(max(0, p' − q_beam)), after an
 *        acceptance p' ← p_beam; once W_L^{(l)} are accepted the rest are rejected. A layer short of W_L^{(l)}
 *        accepted beams is completed by one beam from p' and then beams from p_beam, and ends the iteration;
 *        if every layer passes, a layer is sampled from p_beam^{(γ+1)} (lines 31–33).
 *   Width (§3.2)  W_L^{(l)} = max(W_min, W̃_L^{(l)}(t)) from Eq 2–7 (dsbd-width.ts), or fixed (dsbd.fixedWidth).
 *   Next input  dsbd: the output beams (a multiset; one KV sequence per distinct beam, §3.3).
 *               dsbd-1beam: only the output beam with the lowest perplexity (§3.4), so one KV sequence is kept.
 *
 * The acceptance direction. §3.1's text and Algorithm 1 line 16 print the test as r ≤ q_beam(x)/p'(x). That favours
 * drafts the TARGET finds unlikely and is not lossless; Appendix A's proof (Eq 13, 15) and Eq 4's α_j use
 * min(1, p'(x)/q_beam(x)) — the speculative-sampling test — and so do we (sampling/verify.ts acceptSampling).
 * With it each output beam of a layer is distributed as p_beam and they are independent (Theorem 3.1), so with a
 * fixed width `dsbd` samples exactly `beam`'s law (test/unit/dsbd-lossless.test.ts).
 *
 * The proposal of layer l ≥ 2. Layer-l drafts were drawn from T∘q_beam over ALL of layer l−1; those that survive
 * line 10 are i.i.d. from that law restricted to the accepted parents and renormalised, so that restriction is the
 * q_beam of the test, Eq 4 and the residual. Without warping it equals Eq 1's q_beam over the accepted parents; with
 * top-k/top-p it is what the draft really sampled from (the paper does not say). Rows are beams by identity: two
 * beams with equal tokens are two rows (draws are with replacement), exactly as in `beam`.
 *
 * Widths the listing leaves open. M in Eq 5–7 = the drafts that reach the layer's test (W_S at layer 1). The extra
 * layer of line 33 has no draft layer to run Eq 6 on: it takes the width of the last verified layer (fixed mode:
 * the fixed width). An iteration whose forest depth is cut to 0 by --max-tokens samples one layer from p_beam with
 * the previous output width. Eq 5's sum from k = 1 is read as Eq 7's from k = 0.
 *
 * Forest-based parallel verification on node-llama-cpp (§3.3). node-llama-cpp exposes no tree attention masks, so
 * the forest is decomposed into root-to-leaf paths, one context sequence per path (decoders/session-pool.ts);
 * all paths' evaluations are issued together (Promise.all, consecutive sequence ids) and share one llama.cpp decode
 * — more when the context has too few free sequences (each round counted as a target call). The price of no tree
 * masks: ancestors shared by several paths are evaluated once per path, each path needs its input beam's KV in its
 * own sequence (forked by KV copy), and llama.cpp splits a multi-sequence batch into micro-batches of equally many
 * tokens per sequence, so paths of different lengths cost several passes. Step records carry `evaluated` vs
 * `requested` positions and the copies; `speclab dsbd-bench` prints them with a timing note. KV between
 * iterations: one sequence per distinct next input beam (§3.3 "the caches for b5 and b6 are kept"); the others are
 * emptied.
 *
 * Streaming and output as in `beam` (decoders/beam-stream.ts): the common prefix of the input beams is emitted as it
 * becomes fixed; at the end the output beam with the lowest perplexity. dsbd-1beam commits its chosen beam every
 * iteration. Provenance of a beam's token: `draft` (accepted draft beam), `resampled` (from the residual p' after a
 * rejection), `target` (completion from p_beam, or from p' = p_beam when no rejection preceded), `bonus` (line 33).
 *
 * Step record: proposed = drafts that reached a test, accepted = drafts accepted, draftTokens = drafts generated
 * (W_S per drafted layer), acceptedDraftTokens = accepted (σ = 1 − accepted / drafted beams); resampled = a layer
 * failed, bonus = all passed; decision: W_L per layer, accepted per layer, β_{W_min} and P(≥ W_L) per layer, layers
 * generated and their summed width (W̄ = Σ widthSum / Σ layers, metrics/fold.ts beamWidthTotals), live sequences
 * and KV cells of both models after the iteration, peak sequences, evaluated / requested positions, copies.
 * Temperature 0 makes both beam laws point masses: dsbd is then speculative greedy decoding (W identical beams).
 *
 * Its own loop: an iteration verifies a forest of beams layer by layer (Algorithm 1), not a chain, and its output
 * lags the beams; it shares `beam`'s loop (beam-stream.ts beamSteps), not round.ts's.
 */
import type { LanguageModel } from '../model/types'
import { entropy, probabilityOf, sample, type Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { acceptSampling, residual } from '../sampling/verify'
import type { WarpConfig } from '../sampling/warp'
import { CandidateKeys, STAY, beamLaw, bestBeam, restrictLaw, type Beam } from './beam'
import { BeamStream, beamSteps, type BeamStep } from './beam-stream'
import { dynamicWidth, type LayerWidth } from './dsbd-width'
import { SessionPool, distinctSequences, pooledCalls, subtractStats, treePrice } from './session-pool'
import { now } from './session-sync'
import { stepRecord } from './step-record'
import type { Decoder, DecodeEvent, DecodeRequest, DecoderModels, Provenance } from './types'

export interface DsbdOptions {
  /** γ: draft layers per iteration (--gamma). */
  gamma: number
  /** W_S: draft beams per layer. */
  ws: number
  /** t: the width threshold of Eq 6–7. */
  t: number
  /** W_min of Eq 6. */
  wMin: number
  /** 0 = dynamic width (Eq 6); otherwise W_L for every layer. */
  fixedWidth: number
  /** §3.4: only the lowest-perplexity output beam becomes the next input. */
  oneBeam: boolean
}



/** KV sequences a run should open per model so one iteration fits one decode (the pool works with fewer). */
export function dsbdSessions(options: DsbdOptions): { target: number; draft: number } {
  const inputs = options.oneBeam ? 1 : options.ws
  return { target: inputs + options.gamma * options.ws, draft: Math.max(inputs, options.ws) }
}

// ---------------------------------------------------------------------------------------------------------------
// One layer's verification (Algorithm 1 lines 12–28 with the Appendix A direction)

export interface LayerVerdict {
  /** Indices into `drafts` of the accepted draft beams, in order. */
  accepted: number[]
  /** W_L drafts were accepted: the layer passes. */
  passed: boolean
  /** When the layer failed: the completing candidates, first from p', then from p_beam. */
  completion: { key: number; provenance: Provenance }[]
  /** Drafts that were tested (the rest were rejected unseen once W_L were accepted). */
  examined: number
}

/**
 * Verifies draft beams `drafts` (candidate keys, drawn i.i.d. from `qBeam`) against `pBeam` with target width
 * `width`. Theorem 3.1: the accepted drafts followed by the completion are i.i.d. ~ pBeam.
 */
export function verifyLayer(
  pBeam: Distribution,
  qBeam: Distribution,
  drafts: readonly number[],
  width: number,
  rng: Prng
): LayerVerdict {
  let pPrime = pBeam
  let afterRejection = false
  const accepted: number[] = []
  let examined = 0
  for (let i = 0; i < drafts.length && accepted.length < width; i++) {
    examined += 1
    if (acceptSampling(pPrime, qBeam, drafts[i], rng)) {
      accepted.push(i)
      pPrime = pBeam
      afterRejection = false
    } else {
      pPrime = residual(pPrime, qBeam)
      afterRejection = true
    }
  }
  if (accepted.length >= width) return { accepted, passed: true, completion: [], examined }
  const completion: LayerVerdict['completion'] = [
    { key: sample(pPrime, rng), provenance: afterRejection ? 'resampled' : 'target' }
  ]
  while (accepted.length + completion.length < width) completion.push({ key: sample(pBeam, rng), provenance: 'target' })
  return { accepted, passed: false, completion, examined }
}

/** Aligned probability vectors of two laws over the union of their supports (for Eq 4). */
export function alignLaws(p: Distribution, q: Distribution): { p: Float64Array; q: Float64Array } {
  const index = new Map<number, number>()
  for (const id of [...p.ids, ...q.ids]) if (!index.has(id)) index.set(id, index.size)
  const pa = new Float64Array(index.size)
  const qa = new Float64Array(index.size)
  p.ids.forEach((id, i) => (pa[index.get(id)!] = p.probs[i]))
  q.ids.forEach((id, i) => (qa[index.get(id)!] = q.probs[i]))
  return { p: pa, q: qa }
}

// ---------------------------------------------------------------------------------------------------------------
// The decoder

interface Node extends Beam {
  parent: Node | null
  /** The token this node added to its parent. */
  token: number
  /** Σ raw draft log q of the generated tokens; null until the draft has scored the last one(s). */
  logQ: number | null
  /** Raw next-token distributions after this node (target / draft), once evaluated. */
  pNext?: Distribution
  qNext?: Distribution
}

/** A forest entry: a node of layer l and the index of its parent in layer l−1 (multisets: the same node may recur). */
interface Entry {
  node: Node
  parent: number
  /** The candidate's token (STAY: a finished parent carried over). */
  token: number
}

export interface DsbdObserver {
  /** The output beams of every iteration (before dsbd-1beam keeps one), for tests of Theorem 3.1. */
  onOutputBeams?(beams: readonly Beam[], iteration: number): void
  /** Every layer generated: the accepted drafts of a layer that passed, then the output layer (1-based in the iteration). */
  onLayer?(beams: readonly Beam[], layer: number, iteration: number): void
}

export function dsbdDecoder(options: DsbdOptions, observer: DsbdObserver = {}): Decoder {
  return (models, request) => runDsbd(models, request, options, observer)
}

function childNode(parent: Node, token: number, provenance: Provenance, target: LanguageModel): Node {
  if (token === STAY || parent.finished) return parent
  const p = parent.pNext ? probabilityOf(parent.pNext, token) : NaN
  const q = parent.qNext && parent.logQ !== null ? probabilityOf(parent.qNext, token) : null
  return {
    tokens: [...parent.tokens, token],
    parent,
    token,
    logP: parent.logP + Math.log(p),
    logQ: q === null ? null : parent.logQ! + Math.log(q),
    finished: target.isEndOfGeneration(token),
    provenance: [...parent.provenance, provenance]
  }
}

async function* runDsbd(
  models: DecoderModels,
  request: DecodeRequest,
  options: DsbdOptions,
  observer: DsbdObserver
): AsyncGenerator<DecodeEvent> {
  const target = models.target
  const draftModel = models.draft
  if (!draftModel) throw new Error('dsbd needs a draft model')
  const stage = options.oneBeam ? 'dsbd-1beam' : 'dsbd'
  const keys = new CandidateKeys(Math.max(target.info.vocabularySize, draftModel.info.vocabularySize))
  const warp: WarpConfig = request.warp
  const rng = request.rng
  const promptLength = request.promptTokens.length
  const sizes = dsbdSessions(options)
  const targetPool = new SessionPool(target, { maxSessions: sizes.target })
  const draftPool = new SessionPool(draftModel, { maxSessions: sizes.draft })
  const stream = new BeamStream(promptLength, request.promptTokens, request.maxTokens, target)
  let inputs: Node[] = [
    { tokens: [...request.promptTokens], parent: null, token: -1, logP: 0, logQ: 0, finished: false, provenance: [] }
  ]
  let previousWidth = options.fixedWidth > 0 ? options.fixedWidth : options.wMin

  /** Draft distributions after every unfinished node lacking one, and log q of nodes whose last token(s) lack it. */
  const scoreWithDraft = async (nodes: readonly Node[]): Promise<void> => {
    const need: Node[] = []
    const unknownQ: Node[] = []
    const seen = new Set<Node>()
    const visit = (node: Node) => {
      if (seen.has(node)) return
      seen.add(node)
      if (node.logQ === null) {
        unknownQ.push(node)
        if (node.parent) {
          if (!node.parent.qNext && !node.parent.finished) need.push(node.parent)
          visit(node.parent)
        }
      }
    }
    for (const node of nodes) {
      if (!node.finished && !node.qNext) need.push(node)
      visit(node)
    }
    const unique = [...new Set(need)]
    const dists = await draftPool.distributions(unique.map((n) => n.tokens))
    unique.forEach((n, i) => (n.qNext = dists[i]))
    // Parents before children.
    for (const node of unknownQ.sort((a, b) => a.tokens.length - b.tokens.length)) {
      const parent = node.parent
      if (!parent || parent.logQ === null || !parent.qNext) throw new Error('dsbd: cannot score a beam under the draft')
      node.logQ = parent.logQ + Math.log(probabilityOf(parent.qNext, node.token))
    }
  }

  let depth = 0
  yield* beamSteps(stream, request, iterate, async () => {
    await targetPool.dispose()
    await draftPool.dispose()
  })

  /** One iteration: its committed tokens, its record, and whether the beams are done. */
  async function iterate(iteration: number): Promise<BeamStep> {
    const started = now()
    const targetBefore = { ...targetPool.stats }
    const draftBefore = { ...draftPool.stats }
    const gamma = Math.min(options.gamma, request.maxTokens - depth - 1)

    // ---- Draft: beam sampling with the small model, W_S beams per layer, γ layers.
    const layers: Entry[][] = [inputs.map((node) => ({ node, parent: -1, token: node.token }))]
    const qLaws: Distribution[] = []
    const draftEntropies: number[] = []
    for (let l = 1; l <= gamma; l++) {
      const previous = layers[l - 1].map((e) => e.node)
      await scoreWithDraft(previous)
      // An input beam that holds a token the draft's vocabulary lacks (a padded target's id) has q = 0, log q = −∞,
      // and gets no drafts. When every input beam has, the draft weighs them alike instead of proposing nothing:
      // any proposal is exact, because the test, the residual and Eq 4 use the law the drafts were drawn from.
      const uniform = !previous.some((n) => Number.isFinite(n.logQ!))
      const qLaw = beamLaw(
        previous.map((n) => ({ logWeight: uniform ? 0 : n.logQ!, next: n.finished ? null : n.qNext! })),
        warp,
        keys
      )
      qLaws[l] = qLaw
      draftEntropies.push(entropy(qLaw))
      layers[l] = Array.from({ length: options.ws }, () => {
        const key = sample(qLaw, rng)
        const parent = keys.row(key)
        const token = keys.token(key)
        return { node: childNode(previous[parent], token, 'draft', target), parent, token }
      })
    }
    const draftMs = draftPool.stats.ms - draftBefore.ms

    // ---- Score every node of the forest with the target: one batched decode, one sequence per path.
    const unscored = new Set<Node>()
    for (const layer of layers) for (const { node } of layer) if (!node.finished && !node.pNext) unscored.add(node)
    const scored = [...unscored]
    const pDists = await targetPool.distributions(scored.map((n) => n.tokens))
    scored.forEach((n, i) => (n.pNext = pDists[i]))
    for (let l = 1; l <= gamma; l++)
      for (const { node } of layers[l])
        if (node.parent && Number.isNaN(node.logP)) node.logP = node.parent.logP + Math.log(probabilityOf(node.parent.pNext!, node.token))

    // ---- Verify layer by layer.
    let accepted = layers[0].map((_, i) => i)
    const widths: number[] = []
    const acceptedPerLayer: number[] = []
    const draftsPerLayer: number[] = []
    const betas: number[] = []
    const layerAcceptance: number[] = []
    let proposed = 0
    let acceptedDrafts = 0
    let outputs: Node[] | null = null
    let outputWidth = previousWidth
    let passedLayers = 0
    for (let l = 1; l <= gamma && outputs === null; l++) {
      const parents = accepted.map((i) => layers[l - 1][i].node)
      const rowOf = new Map(accepted.map((index, row) => [index, row]))
      const pLaw = beamLaw(
        parents.map((n) => ({ logWeight: n.logP, next: n.finished ? null : n.pNext! })),
        warp,
        keys
      )
      const qLaw = restrictLaw(qLaws[l], (key) => {
        const row = rowOf.get(keys.row(key))
        return row === undefined ? null : keys.key(row, keys.token(key))
      })
      const survivors = layers[l].map((entry, index) => ({ entry, index })).filter(({ entry }) => rowOf.has(entry.parent))
      const draftKeys = survivors.map(({ entry }) => keys.key(rowOf.get(entry.parent)!, entry.token))
      let width: number
      let widthInfo: LayerWidth | null = null
      if (options.fixedWidth > 0) width = options.fixedWidth
      else if (qLaw && survivors.length > 0) {
        const aligned = alignLaws(pLaw, qLaw)
        widthInfo = dynamicWidth(aligned.p, aligned.q, survivors.length, options.t, options.wMin)
        width = widthInfo.width
      } else width = options.wMin
      widths.push(width)
      draftsPerLayer.push(survivors.length)
      if (widthInfo) {
        betas.push(widthInfo.beta)
        layerAcceptance.push(widthInfo.acceptance)
      }
      const verdict = verifyLayer(pLaw, qLaw ?? pLaw, draftKeys, width, rng)
      proposed += verdict.examined
      acceptedDrafts += verdict.accepted.length
      acceptedPerLayer.push(verdict.accepted.length)
      outputWidth = width
      if (verdict.passed) {
        accepted = verdict.accepted.map((i) => survivors[i].index)
        passedLayers += 1
        observer.onLayer?.(accepted.map((i) => layers[l][i].node), l, iteration)
        continue
      }
      outputs = [
        ...verdict.accepted.map((i) => survivors[i].entry.node),
        ...verdict.completion.map(({ key, provenance }) =>
          childNode(parents[keys.row(key)], keys.token(key), provenance, target)
        )
      ]
    }
    const layerFailed = outputs !== null
    if (outputs === null) {
      // Line 31–33: every draft layer passed (or none was drafted): sample one more layer from p_beam^{(γ+1)}.
      const parents = accepted.map((i) => layers[gamma][i].node)
      const pLaw = beamLaw(
        parents.map((n) => ({ logWeight: n.logP, next: n.finished ? null : n.pNext! })),
        warp,
        keys
      )
      const width = options.fixedWidth > 0 ? options.fixedWidth : gamma > 0 ? widths[widths.length - 1] : previousWidth
      const provenance: Provenance = gamma > 0 ? 'bonus' : 'target'
      outputs = Array.from({ length: width }, () => {
        const key = sample(pLaw, rng)
        return childNode(parents[keys.row(key)], keys.token(key), provenance, target)
      })
      outputWidth = width
    }
    previousWidth = outputWidth
    observer.onLayer?.(outputs, passedLayers + 1, iteration)
    observer.onOutputBeams?.(outputs, iteration)
    depth += passedLayers + 1

    // ---- Next input beams; keep one KV sequence per distinct one (dsbd-1beam: exactly one).
    const next = options.oneBeam ? [bestBeam(outputs, promptLength)] : outputs
    const finished = next.every((n) => n.finished) || depth >= request.maxTokens
    const live = next.filter((n) => !n.finished).map((n) => n.tokens)
    // (Also after the last iteration, so its record reports what a continuing decode would keep.)
    await targetPool.retain(live)
    await draftPool.retain(live)
    for (const node of next) {
      // Only the parent can still be needed (for log q of a token the draft has not scored yet).
      if (node.logQ !== null) node.parent = null
      else if (node.parent) node.parent.parent = null
    }
    inputs = next
    const events = finished ? stream.finish(bestBeam(next, promptLength), iteration) : stream.commitCommonPrefix(next, iteration)

    const t = subtractStats(targetPool.stats, targetBefore)
    const d = subtractStats(draftPool.stats, draftBefore)
    const list = (values: readonly number[], digits?: number) =>
      values.map((v) => (digits === undefined ? String(v) : v.toFixed(digits))).join(',')
    const record = stepRecord({
      index: iteration,
      stage,
      proposed,
      accepted: acceptedDrafts,
      resampled: layerFailed,
      bonus: !layerFailed,
      emitted: events.length,
      draftTokens: gamma * options.ws,
      acceptedDraftTokens: acceptedDrafts,
      draftEntropies,
      threshold: options.fixedWidth > 0 ? null : options.t,
      decision: {
        gamma,
        inputBeams: layers[0].length,
        widths: list(widths),
        acceptedPerLayer: list(acceptedPerLayer),
        draftsPerLayer: list(draftsPerLayer),
        beta: betas.length > 0 ? betas.reduce((a, b) => a + b, 0) / betas.length : null,
        betas: list(betas, 4),
        layerAcceptance: list(layerAcceptance, 4),
        passedLayers,
        layers: passedLayers + 1,
        widthSum: widths.slice(0, passedLayers).reduce((a, b) => a + b, 0) + outputWidth,
        outputBeams: outputs.length,
        liveSequences: targetPool.liveSessions,
        draftLiveSequences: draftPool.liveSessions,
        kvCells: targetPool.kvCells,
        draftKvCells: draftPool.kvCells,
        peakSequences: targetPool.takePeak(),
        forestNodes: layers.reduce((n, layer) => n + layer.length, 0),
        scoredNodes: distinctSequences(scored.map((n) => n.tokens)).length,
        ...treePrice(t, d)
      },
      ...pooledCalls(t, d),
      draftMs,
      totalMs: now() - started
    })
    return { events, record, finished }
  }
}
