/**
 * Raw model costs for the physical speedup bound: t1 (one target token), t_draft (one draft token) and
 * t_verify(γ+1) (γ+1 target tokens in one batched call), each with the fewest logits read per position: the top 1,
 * llama.cpp's greedy pick. Also the same verification with our top-k logits read, to show what the read adds.
 * Measured through the evaluation path the decoders take (a session of the model: node-llama-cpp's addon, on the JS
 * thread where SpecLab's CPU build allows it; direct-evaluation.ts) — a bound timed on a slower path than the decode's
 * own would be no bound: through node-llama-cpp's `controlledEvaluate` on libuv's workers the efficiency read 1.04–1.20
 * at 131,072 tokens (docs/performance.md, "Both patches at the default install"). t1 is timed as `ar` decodes, token
 * after token; t_draft and t_verify in rounds as speculative decoding makes them — γ draft tokens, then the
 * verification — because that order is part of the machine's cost: a model's threads wait (and sleep) while the other
 * model evaluates, whatever engine drives the two.
 * Costs grow with the context (on CPU, attention over many small heads is far from free: the inflated 78M target
 * costs ~22 ms/token at 8 tokens of context and ~33 ms at 130), so each cost is averaged over prefixes spread
 * across the decoded range (midpoint rule), matching the contexts the decoders actually saw.
 *
 *   bound = tokens per round × t1 / (γ·t_draft + t_verify(γ+1));   engine efficiency = speedup / bound
 */
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

/** Top-1 reads: what llama.cpp's greedy pick needs of a position. */
const TOP_1 = { temperature: 1, topK: 1, topP: 1 }

/**
 * Mean milliseconds of evaluating `tokens` after `prefix` with the top `topK` logits read at each of their positions
 * (rolled back after each repeat). The mean, as the thread calibration uses (engine/model/thread-calibration.ts): a
 * count of threads can be bimodal — the prebuilt binary's 6-token batch on two threads of the 2-core VM takes 14 ms or
 * 25–55 — and a decode pays the mean, so a median bound would credit the engine with llama.cpp's fast mode alone
 * (peer-bench's sd@1/2 efficiency read 0.66 against it).
 */
async function timeEvaluation(model: LlamaCppModel, prefix: readonly number[], tokens: readonly number[], topK: number, repeats: number): Promise<number> {
  // A session evaluates with the threads the decoders' evaluation of as many tokens gets (per phase, llama-cpp-model.ts).
  const session = await model.createSession({ ...TOP_1, topK })
  try {
    await session.append(prefix, prefix.length - 1)
    const samples: number[] = []
    for (let i = 0; i < repeats + 1; i++) {
      const started = performance.now()
      await session.append(tokens, 0)
      if (i > 0) samples.push(performance.now() - started) // the first is a warm-up
      await session.truncate(prefix.length)
    }
    return mean(samples)
  } finally {
    await session.dispose()
  }
}

/**
 * Mean milliseconds of one target token, timed as `ar` decodes: next's tokens appended one after the other (rolled
 * back after each repeat; the first a warm-up) — an evaluation repeated after a rollback would also time the wait
 * that the rollback puts between two tokens.
 */
async function timeTokens(model: LlamaCppModel, prefix: readonly number[], next: readonly number[], repeats: number): Promise<number> {
  const session = await model.createSession(TOP_1)
  try {
    await session.append(prefix, prefix.length - 1)
    const samples: number[] = []
    for (let i = 0; i < repeats + 1; i++) {
      for (const token of next) {
        const started = performance.now()
        await session.append([token], 0)
        if (i > 0) samples.push(performance.now() - started)
      }
      await session.truncate(prefix.length)
    }
    return mean(samples)
  } finally {
    await session.dispose()
  }
}

/**
 * Mean milliseconds of one draft token and of one verification of `next` (γ + 1 tokens) after `prefix`, timed in
 * rounds: the draft evaluates next's first γ tokens one at a time, then the target evaluates all of next at once (both
 * rolled back after each round; the first round a warm-up).
 */
async function timeRounds(target: LlamaCppModel, draft: LlamaCppModel, prefix: readonly number[], next: readonly number[], repeats: number): Promise<{ draftMs: number; verifyMs: number }> {
  const [targetSession, draftSession] = [await target.createSession(TOP_1), await draft.createSession(TOP_1)]
  try {
    await targetSession.append(prefix, prefix.length - 1)
    await draftSession.append(prefix, prefix.length - 1)
    const drafts: number[] = []
    const verifications: number[] = []
    for (let i = 0; i < repeats + 1; i++) {
      const round: number[] = []
      for (const token of next.slice(0, -1)) {
        const started = performance.now()
        await draftSession.append([token], 0)
        round.push(performance.now() - started)
      }
      const started = performance.now()
      await targetSession.append(next, 0)
      const verification = performance.now() - started
      if (i > 0) {
        drafts.push(...round)
        verifications.push(verification)
      }
      await draftSession.truncate(prefix.length)
      await targetSession.truncate(prefix.length)
    }
    return { draftMs: mean(drafts), verifyMs: mean(verifications) }
  } finally {
    await draftSession.dispose()
    await targetSession.dispose()
  }
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
  const sums = { t1Ms: 0, tDraftMs: 0, tVerifyMs: 0, tVerifyTopKMs: 0 }
  for (let i = 0; i < points; i++) {
    const cut = promptLength + Math.floor(((i + 0.5) / points) * Math.max(0, generated - gamma - 1))
    const prefix = sequence.slice(0, cut)
    const next = sequence.slice(cut, cut + gamma + 1)
    sums.t1Ms += await timeTokens(target, prefix, next, repeats)
    const round = await timeRounds(target, draft, prefix, next, repeats)
    sums.tDraftMs += round.draftMs
    sums.tVerifyMs += round.verifyMs
    sums.tVerifyTopKMs += await timeEvaluation(target, prefix, next, topK, repeats)
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
