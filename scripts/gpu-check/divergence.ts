/**
 * Where a greedy output first leaves `ar`'s: within the target's own numerical noise, or a real difference.
 *
 * Terms, for one prompt and ar's greedy output o_0 … o_{n−1}:
 * - a history: how the tokens before a position were evaluated. ar's own is the prompt in one batch, then one token
 *   per evaluation. A chunked history of k evaluates o in batches of k, as a verification of k − 1 proposals does.
 * - gap_h(j; x, y) = ln p(x) − ln p(y) = logit(x) − logit(y) of the target's raw distribution for position j under
 *   history h.
 * - ar's competitor at j: the best token other than o_j under ar's history.
 * - the noise of the prompt: the largest |gap_ar(j; o_j, competitor) − gap_k(j; o_j, competitor)| over every position j
 *   and every chunked history k = 2 … K (K = γ + 1), together with the same spread of the divergence's own two tokens.
 * At the first difference i, `a` = o_i and `b` is the arm's token. The divergence is a numerical tie when ar's history
 * prefers `a` (gap_ar(i; a, b) ≥ 0, i.e. the replay is ar's decision) by no more than the noise.
 *
 * Why. On a GPU a position's logits depend on how the tokens before it were evaluated: a batch of one uses a
 * matrix-vector kernel, a batch of several a matrix product with other reduction orders, and the keys and values those
 * evaluations wrote into the cache differ in the last bits too. Greedy decoding's argmax then flips where the target's
 * two best tokens are closer than that. llama.cpp's own speculative decoding leaves its own AR output at the same
 * tokens as SpecLab's `sd` on an H100 (docs/performance.md, GPU check), and a replay with the prefix in one batch
 * already disagrees with ar's decisions there. The CPU has the same noise, smaller: under 0.001 nats for the f32
 * stories target, 0.015–0.022 for the f16 inflated one (story prompts, 32–128 tokens); the *-gguf tests forgive a
 * fixed near-tie (top two probabilities within 0.02, test/helpers/gguf.ts) where this measures the tolerance on the
 * machine. What this rule cannot see is a decoder bug that only ever flips choices within the noise; the χ² tests on
 * toy models, exact at any batch shape, are there for that. A wrong verification makes gaps far above the noise (a
 * crafted divergence to the runner-up token is not a tie: test/integration/gpu-check-divergence-gguf.test.ts).
 */
import type { LanguageModel } from '../../electron/engine/model/types'
import { argmax, probabilityOf, type Distribution } from '../../electron/engine/sampling/distribution'
import { DEFAULT_WARP } from '../../electron/engine/sampling/warp'

export interface Divergence {
  prompt: number
  /** Index into the generated tokens of the first difference. */
  position: number
  /** ar's token and the arm's. */
  ar: number
  arm: number
  /** gap_ar(i; a, b); null when b is outside the transferred top-64 (then no tie). */
  gap: number | null
  /** gap_k(i; a, b) for the chunked histories k = 2 … K, in that order. */
  gapChunked: (number | null)[]
  /** The prompt's noise (the header's definition), in nats. */
  noise: number
  /** The verdict of the rule above. */
  tie: boolean
}

/** First index where two outputs differ, or null when one is the other (a length difference has no gap to weigh). */
export function firstDifference(reference: readonly number[], other: readonly number[]): number | null {
  const n = Math.min(reference.length, other.length)
  for (let i = 0; i < n; i++) if (reference[i] !== other[i]) return i
  return null
}

/** ln p(a) − ln p(b); null when either is outside the distribution's tokens. */
export function gapOf(distribution: Distribution, a: number, b: number): number | null {
  const pa = probabilityOf(distribution, a)
  const pb = probabilityOf(distribution, b)
  return pa === 0 || pb === 0 ? null : Math.log(pa) - Math.log(pb)
}

/** The best token of a distribution other than `token`. */
function competitor(distribution: Distribution, token: number): number | null {
  for (let i = 0; i < distribution.ids.length; i++) if (distribution.ids[i] !== token) return distribution.ids[i]!
  return null
}

/**
 * ar's greedy output of `length` tokens as ar decodes it (the prompt in one batch, then one token per evaluation),
 * with the distribution each token was chosen from.
 */
export async function greedyOutput(target: LanguageModel, prompt: readonly number[], length: number): Promise<{ output: number[]; distributions: Distribution[] }> {
  const session = await target.createSession(DEFAULT_WARP)
  try {
    const distributions = await session.append(prompt, prompt.length - 1)
    const output: number[] = []
    for (let i = 0; i < length; i++) {
      output.push(argmax(distributions[i]!))
      if (i + 1 < length) distributions.push(...(await session.append([output[i]!], 0)))
    }
    return { output, distributions }
  } finally {
    await session.dispose()
  }
}

/**
 * The target's distribution for every position of `output` under one history: the prompt in one batch, then the
 * output in batches of `chunk` (1 = ar's own). Entry j is the distribution o_j was chosen from.
 */
export async function distributionsUnderHistory(target: LanguageModel, prompt: readonly number[], output: readonly number[], chunk: number): Promise<Distribution[]> {
  // The raw distribution's 64 best tokens: a and b of a near-tie are among them, and a gap ignores the cut.
  const session = await target.createSession(DEFAULT_WARP)
  try {
    const distributions = await session.append(prompt, prompt.length - 1)
    for (let j = 0; j < output.length - 1; j += chunk) distributions.push(...(await session.append(output.slice(j, Math.min(j + chunk, output.length - 1)), 0)))
    return distributions
  } finally {
    await session.dispose()
  }
}

/** The header's noise over every position of ar's output: ar's history is histories[0], the chunked ones follow. */
export function noiseOf(histories: readonly (readonly Distribution[])[], output: readonly number[]): number {
  const [own, ...chunked] = histories
  let noise = 0
  for (let j = 0; j < output.length; j++) {
    const rival = competitor(own![j]!, output[j]!)
    if (rival === null) continue
    const reference = gapOf(own![j]!, output[j]!, rival)
    if (reference === null) continue
    for (const history of chunked) {
      const gap = gapOf(history[j]!, output[j]!, rival)
      if (gap !== null) noise = Math.max(noise, Math.abs(reference - gap))
    }
  }
  return noise
}

/** The rule of the header, on measured gaps. */
export function isNumericalTie(gap: number | null, gapChunked: readonly (number | null)[], noise: number): boolean {
  if (gap === null || gap < 0) return false
  const spread = Math.max(noise, ...gapChunked.filter((g): g is number => g !== null).map((g) => Math.abs(gap - g)))
  return gap <= spread
}

/** Weighs one divergence on histories already evaluated (histories[0] = ar's, then chunks of 2 … K). */
export function weighDivergence(histories: readonly (readonly Distribution[])[], output: readonly number[], position: number, armToken: number, noise: number): Omit<Divergence, 'prompt'> {
  const a = output[position]!
  const gap = gapOf(histories[0]![position]!, a, armToken)
  const gapChunked = histories.slice(1).map((h) => gapOf(h[position]!, a, armToken))
  return { position, ar: a, arm: armToken, gap, gapChunked, noise, tie: isNumericalTie(gap, gapChunked, noise) }
}

/**
 * ar's history and the chunked ones (k = 2 … maxChunk) for one prompt. `own`: ar's history where the caller has it
 * already (greedyOutput's distributions), so it is not evaluated twice.
 */
export async function historiesOf(target: LanguageModel, prompt: readonly number[], output: readonly number[], maxChunk: number, own?: Distribution[]): Promise<Distribution[][]> {
  const histories: Distribution[][] = [own ?? (await distributionsUnderHistory(target, prompt, output, 1))]
  for (let chunk = 2; chunk <= maxChunk; chunk++) histories.push(await distributionsUnderHistory(target, prompt, output, chunk))
  return histories
}
