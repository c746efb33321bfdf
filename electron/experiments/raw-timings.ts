/**
 * Raw model costs for the physical speedup bound: t1 (one target token), t_draft (one draft token) and
 * t_verify(γ+1) (γ+1 target tokens in one batched call), measured straight on node-llama-cpp sequences with
 * llama.cpp's own greedy pick per position (logits computed, nothing transferred to JS), after a realistic
 * prefix. Also the same evaluations with our top-k logits transfer, to show what the transfer adds.
 *
 *   bound = tokens per round × t1 / (γ·t_draft + t_verify(γ+1));   engine efficiency = speedup / bound
 */
import type { ControlledEvaluateInputItem, LlamaContextSequence, Token } from 'node-llama-cpp'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'

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

/** Median milliseconds of evaluating `tokens` after `prefix` (rolled back after each repeat). */
async function timeEvaluation(
  sequence: LlamaContextSequence,
  prefix: readonly number[],
  tokens: readonly number[],
  request: PositionRequest,
  repeats: number
): Promise<number> {
  await sequence.clearHistory()
  await sequence.controlledEvaluate(prefix.map((t) => t as Token))
  const samples: number[] = []
  for (let i = 0; i < repeats + 1; i++) {
    const started = performance.now()
    await sequence.controlledEvaluate(inputFor(tokens, request))
    if (i > 0) samples.push(performance.now() - started) // the first is a warm-up
    await sequence.eraseContextTokenRanges([{ start: prefix.length, end: sequence.nextTokenIndex }])
  }
  samples.sort((a, b) => a - b)
  return samples[Math.floor(samples.length / 2)]
}

export async function measureRawTimings(
  target: LlamaCppModel,
  draft: LlamaCppModel,
  prefix: readonly number[],
  gamma: number,
  topK: number,
  repeats = 15
): Promise<RawTimings> {
  const continuation = prefix.slice(1, gamma + 2)
  const targetSequence = target.context.getSequence()
  const draftSequence = draft.context.getSequence()
  try {
    return {
      t1Ms: await timeEvaluation(targetSequence, prefix, continuation.slice(0, 1), 'argmax', repeats),
      tDraftMs: await timeEvaluation(draftSequence, prefix, continuation.slice(0, 1), 'argmax', repeats),
      tVerifyMs: await timeEvaluation(targetSequence, prefix, continuation, 'argmax', repeats),
      tVerifyTopKMs: await timeEvaluation(targetSequence, prefix, continuation, { topK }, repeats),
      gamma,
      repeats
    }
  } finally {
    targetSequence.dispose()
    draftSequence.dispose()
  }
}

/** tokens per round × t1 / (γ·t_draft + t_verify(γ+1)) — the best a perfect engine could do on this machine. */
export function speedupBound(tokensPerRound: number, meanGamma: number, timings: RawTimings): number {
  return (tokensPerRound * timings.t1Ms) / (meanGamma * timings.tDraftMs + timings.tVerifyMs)
}
