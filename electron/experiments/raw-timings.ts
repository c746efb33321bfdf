/**
 * Raw model costs for the physical speedup bound: t1 (one target token), t_draft (one draft token) and
 * t_verify(γ+1) (γ+1 target tokens in one batched call), measured straight on node-llama-cpp sequences with
 * llama.cpp's own greedy pick per position (logits computed, nothing transferred to JS). Also the same evaluations
 * with our top-k logits transfer, to show what the transfer adds.
 * Costs grow with the context (on CPU, attention over many small heads is far from free: the inflated 78M target
 * costs ~22 ms/token at 8 tokens of context and ~33 ms at 130), so each cost is averaged over prefixes spread
 * across the decoded range (midpoint rule), matching the contexts the decoders actually saw.
 *
 *   bound = tokens per round × t1 / (γ·t_draft + t_verify(γ+1));   engine efficiency = speedup / bound
 */
import type { ControlledEvaluateInputItem, LlamaContextSequence, Token } from 'node-llama-cpp'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'
import { mean } from '../engine/stats/bootstrap'

export interface RawTimings {
  t1Ms: number
  tDraftMs: number
  tVerifyMs: number
  /** Same batched verification but transferring the top-k logits of every position (what the engine does). */
  tVerifyTopKMs: number
  gamma: number
  repeats: number
}

type PositionRequest = 'argmax' | { topK: number }

function inputFor(tokens: readonly number[], request: PositionRequest): ControlledEvaluateInputItem[] {
  const generateNext =
    request === 'argmax'
      ? { token: true, options: { temperature: 0 } }
      : { logits: { filter: { tokens: [] as Token[], includeTop: request.topK } } }
  return tokens.map((t) => [t as Token, { generateNext }])
}

/**
 * Mean milliseconds of evaluating `tokens` after `prefix` (rolled back after each repeat). The mean, as the thread
 * calibration uses (engine/model/thread-calibration.ts): a count of threads can be bimodal — the prebuilt binary's
 * 6-token batch on two threads of the 2-core VM takes 14 ms or 25–55 — and a decode pays the mean, so a median bound
 * would credit the engine with llama.cpp's fast mode alone (peer-bench's sd@1/2 efficiency read 0.66 against it).
 */
async function timeEvaluation(
  model: LlamaCppModel,
  sequence: LlamaContextSequence,
  prefix: readonly number[],
  tokens: readonly number[],
  request: PositionRequest,
  repeats: number
): Promise<number> {
  await sequence.clearHistory()
  await model.inPhase(prefix.length, () => sequence.controlledEvaluate(prefix.map((t) => t as Token)))
  const samples: number[] = []
  for (let i = 0; i < repeats + 1; i++) {
    const started = performance.now()
    // With the threads the decoders' evaluation of as many tokens gets (per phase, llama-cpp-model.ts).
    await model.inPhase(tokens.length, () => sequence.controlledEvaluate(inputFor(tokens, request)))
    if (i > 0) samples.push(performance.now() - started) // the first is a warm-up
    await sequence.eraseContextTokenRanges([{ start: prefix.length, end: sequence.nextTokenIndex }])
  }
  return mean(samples)
}

/**
 * `sequence` = prompt + generated tokens of a real decode; costs are averaged over `points` prefixes at the
 * midpoints of equal slices of the generated part.
 */
export async function measureRawTimings(
  target: LlamaCppModel,
  draft: LlamaCppModel,
  sequence: readonly number[],
  promptLength: number,
  gamma: number,
  topK: number,
  { points = 4, repeats = 9 } = {}
): Promise<RawTimings> {
  const generated = sequence.length - promptLength
  const targetSequence = target.context.getSequence()
  const draftSequence = draft.context.getSequence()
  const sums = { t1Ms: 0, tDraftMs: 0, tVerifyMs: 0, tVerifyTopKMs: 0 }
  try {
    for (let i = 0; i < points; i++) {
      const cut = promptLength + Math.floor(((i + 0.5) / points) * Math.max(0, generated - gamma - 1))
      const prefix = sequence.slice(0, cut)
      const next = sequence.slice(cut, cut + gamma + 1)
      sums.t1Ms += await timeEvaluation(target, targetSequence, prefix, next.slice(0, 1), 'argmax', repeats)
      sums.tDraftMs += await timeEvaluation(draft, draftSequence, prefix, next.slice(0, 1), 'argmax', repeats)
      sums.tVerifyMs += await timeEvaluation(target, targetSequence, prefix, next, 'argmax', repeats)
      sums.tVerifyTopKMs += await timeEvaluation(target, targetSequence, prefix, next, { topK }, repeats)
    }
  } finally {
    targetSequence.dispose()
    draftSequence.dispose()
  }
  return {
    t1Ms: sums.t1Ms / points,
    tDraftMs: sums.tDraftMs / points,
    tVerifyMs: sums.tVerifyMs / points,
    tVerifyTopKMs: sums.tVerifyTopKMs / points,
    gamma,
    repeats
  }
}

/** tokens per round × t1 / (γ·t_draft + t_verify(γ+1)) — the best a perfect engine could do on this machine. */
export function speedupBound(tokensPerRound: number, meanGamma: number, timings: RawTimings): number {
  return (tokensPerRound * timings.t1Ms) / (meanGamma * timings.tDraftMs + timings.tVerifyMs)
}
