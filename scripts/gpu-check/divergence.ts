/**
 * Where a greedy output first leaves `ar`'s: a numerical tie of the target, or a real difference.
 *
 * Terms. At the first differing position i of one prompt, `a` is ar's token and `b` the arm's. The gap is
 * ln p(a) − ln p(b) = logit(a) − logit(b) of the target's raw distribution after prompt + ar's first i tokens.
 * - gap alone: the position evaluated as ar's decode step did, its last token in a batch of one (position 0: the
 *   prompt's prefill);
 * - gap in a batch of k (k = 2 … K): the same position as the last of k tokens evaluated together, as a verification
 *   of k − 1 proposals evaluates it.
 *
 * On a GPU the two come from different kernels (a matrix-vector product for one token, a matrix product for several,
 * with other reduction orders), so they differ in the last bits, and greedy decoding's argmax flips where the target's
 * two best tokens are closer than that. llama.cpp's own speculative decoding shows it on the same models: its draft
 * decoding leaves its own AR output on the same prompts as SpecLab's `sd` (docs/performance.md, GPU check). Exact
 * equality with `ar` is therefore the lossless check on the CPU, where both evaluations agree bit for bit, and not on
 * the GPU. The rule chosen here: a divergence is a numerical tie when ar's token is the argmax alone (the replay is
 * ar's decision) and some batch size narrows or flips the gap by at least its size,
 *   |gap alone| ≤ max_k |gap alone − gap in a batch of k|.
 * Every other divergence is a real difference and fails the check — a wrong verification makes gaps far above the
 * kernels' disagreement (a crafted divergence to the runner-up token on the CPU is not a tie: gpu-check tests).
 */
import type { LanguageModel } from '../../electron/engine/model/types'
import type { Distribution } from '../../electron/engine/sampling/distribution'
import type { ArmResult } from '../../electron/experiments/peer-bench'
import { referenceArm, type GreedyRow } from './report'

export interface Divergence {
  prompt: number
  /** Index into the generated tokens of the first difference. */
  position: number
  /** ar's token and the arm's. */
  ar: number
  arm: number
  /** ln p(ar) − ln p(arm), evaluated alone; null when the arm's token is outside the transferred top-k. */
  gapAlone: number | null
  /** The same gap for each batch size k = 2 … K, in that order (position 0 skips the prefill's size). */
  gapInBatch: (number | null)[]
  /** The verdict of the rule above. */
  tie: boolean
}

/** First index where two outputs differ, or null when one is the other (a length difference has no gap to weigh). */
export function firstDifference(reference: readonly number[], other: readonly number[]): number | null {
  const n = Math.min(reference.length, other.length)
  for (let i = 0; i < n; i++) if (reference[i] !== other[i]) return i
  return null
}

function logProbability(distribution: Distribution, token: number): number | null {
  for (let i = 0; i < distribution.ids.length; i++) if (distribution.ids[i] === token) return Math.log(distribution.probs[i]!)
  return null
}

function gapOf(distribution: Distribution, a: number, b: number): number | null {
  const la = logProbability(distribution, a)
  const lb = logProbability(distribution, b)
  return la === null || lb === null ? null : la - lb
}

/** The rule of the header, on measured gaps. */
export function isNumericalTie(gapAlone: number | null, gapInBatch: readonly (number | null)[]): boolean {
  if (gapAlone === null || gapAlone < 0) return false
  const spread = Math.max(0, ...gapInBatch.filter((g): g is number => g !== null).map((g) => Math.abs(gapAlone - g)))
  return gapAlone <= spread
}

/** The raw distribution's 64 best tokens: a and b of a tie are among them, and ln p(a) − ln p(b) ignores the cut. */
const RAW_TOP_64 = { temperature: 1, topK: 64, topP: 1 }

/**
 * The gaps at `position` of ar's output: the target evaluates prompt + ar's first `position` tokens on a fresh session,
 * the last 1 (or, at position 0, the whole prompt: ar's prefill) or k of them in one batch.
 */
export async function weighDivergence(
  target: LanguageModel,
  prompt: readonly number[],
  arOutput: readonly number[],
  armToken: number,
  position: number,
  maxBatch: number
): Promise<Omit<Divergence, 'prompt'>> {
  const context = [...prompt, ...arOutput.slice(0, position)]
  const a = arOutput[position]!
  const gapWithLast = async (k: number): Promise<number | null> => {
    const session = await target.createSession(RAW_TOP_64)
    try {
      const prefix = context.slice(0, context.length - k)
      if (prefix.length > 0) await session.append(prefix, prefix.length)
      const [distribution] = await session.append(context.slice(context.length - k), k - 1)
      return gapOf(distribution!, a, armToken)
    } finally {
      await session.dispose()
    }
  }
  const asAr = position === 0 ? context.length : 1
  const gapAlone = await gapWithLast(asAr)
  const gapInBatch: (number | null)[] = []
  for (let k = 2; k <= Math.min(maxBatch, context.length); k++) if (k !== asAr) gapInBatch.push(await gapWithLast(k))
  return { position, ar: a, arm: armToken, gapAlone, gapInBatch, tie: isNumericalTie(gapAlone, gapInBatch) }
}

/** Weighs the first difference of every differing prompt of every row (batches up to `maxBatch`: γ + 1). */
export async function weighGreedyRows(
  rows: readonly GreedyRow[],
  results: readonly ArmResult[],
  target: LanguageModel,
  promptTokens: readonly (readonly number[])[],
  maxBatch: number
): Promise<GreedyRow[]> {
  const reference = referenceArm(results)
  const weighed: GreedyRow[] = []
  for (const row of rows) {
    const arm = results.find((r) => r.label === row.arm)!
    const divergences: Divergence[] = []
    for (const prompt of row.differing) {
      const arOutput = reference.outputs[prompt] ?? []
      const armOutput = arm.outputs[prompt] ?? []
      const position = firstDifference(arOutput, armOutput)
      if (position === null) continue
      divergences.push({ prompt, ...(await weighDivergence(target, promptTokens[prompt]!, arOutput, armOutput[position]!, position, maxBatch)) })
    }
    weighed.push({ ...row, divergences })
  }
  return weighed
}
