/**
 * llama-server's own cost table — what the advisor prices the `llama-server:*` arms with — measured the way
 * replay/cost-curve.ts measures SpecLab's (the same prefixes of the workload's longest output, k = 1 … K, one warm-up
 * round then `repeats` timed rounds, every k once per round, the median of the rounds), but through the server's HTTP timings instead of the
 * ModelSession seam, so it is llama-server's engine that is timed.
 *
 * What the `timings` of /completion mean (llama.cpp tools/server: server_slot_stats in server-common.h, set in
 * server-context.cpp): `prompt_n` is the prompt tokens evaluated beyond the reused cache (`cache_n`), `prompt_ms` the
 * time from the slot starting the task (cache comparison, KV trim) to the first token SAMPLED from the prompt's last
 * logits; `predicted_n` counts generated tokens and `predicted_ms` runs from that first token to the last, so it spans
 * predicted_n − 1 decode steps (the first token comes free with the prompt batch).
 *
 * The choices:
 * - c_T(1), and c_D of a draft: predicted_ms / (predicted_n − 1) of plain autoregressive generation from each prefix:
 *   one decode of one token plus the sampling, as a round of the server pays it.
 * - c_T(k), k ≥ 2: c_T(1) + prompt_ms(k) − prompt_ms(1), each prompt_ms of k tokens appended to the cached prefix
 *   (`cache_prompt`; the prefix alone is sent first, so the cache holds exactly it). The difference cancels what
 *   every request pays once (slot start, cache comparison, sampler set-up); k = 1 runs at the server's `-t`, k ≥ 2 at
 *   `-tb`, as its verification batches do. A prompt batch outputs the LAST position's logits only while a
 *   verification outputs all k: the output projection of the k − 1 other positions is not in c_T(k) (small beside
 *   the layers on these models; it grows with the vocabulary). The curve is made non-decreasing (replay/isotonic.ts).
 * - prompt processing: each whole prompt evaluated in a fresh cache (`cache_prompt` off, as the peer methods send
 *   it), one token predicted. The target's is SpecLab's wall clock around the request — the arms are timed that way,
 *   so the request's own overhead belongs to each prompt once; a draft's is its prompt_ms (it runs inside the target
 *   server's request).
 */
import { nonDecreasing } from '../replay/isotonic'
import { median } from '../stats/bootstrap'
import { cuts, withDefaults, type CurveMeasurement } from '../replay/cost-curve'
import type { CostTable } from '../replay/advise'
import type { CompletionRequest, PeerServer } from './llama-server-process'

/** Tokens generated per one-token timing: enough decode steps that a step's mean is stable. */
const STEP_TOKENS = 16

export interface ServerCostInput {
  /** A server running the target alone (no speculation). */
  target: PeerServer
  /** By draft name: a server running that draft model as its only model, at the draft's threads. */
  drafts: Readonly<Record<string, PeerServer>>
  /** The contexts, K, prefixes and repeats — replay/cost-curve.ts's measurement of the same workload. */
  measurement: CurveMeasurement
  /** The workload's prompts (token ids, BOS included). */
  prompts: readonly (readonly number[])[]
  /** Stops the measurement between requests (and the request in flight). */
  signal?: AbortSignal
}

const requestOf = (m: Pick<CurveMeasurement, 'warp'>, prompt: readonly number[], nPredict: number, cachePrompt: boolean): CompletionRequest => ({
  prompt,
  nPredict,
  temperature: m.warp.temperature,
  topK: m.warp.topK,
  topP: m.warp.topP,
  seed: 0,
  cachePrompt
})

/**
 * prompt_ms of appending k = 1 … K tokens to the cached prefix `seq[0, cut)`, the median over `repeats` after a
 * warm-up (as replay/cost-curve.ts: one held-up request must not move the whole curve — every c_T(k) subtracts the
 * same prompt_ms(1)).
 */
async function timeServerAppends(server: PeerServer, m: ReturnType<typeof withDefaults>, cut: number, signal?: AbortSignal): Promise<number[]> {
  const samples = Array.from({ length: m.maxPositions }, () => [] as number[])
  for (let round = 0; round <= m.repeats; round++)
    for (let k = 1; k <= m.maxPositions; k++) {
      await server.complete(requestOf(m, m.sequence.slice(0, cut), 1, true), signal)
      const { timings } = await server.complete(requestOf(m, m.sequence.slice(0, cut + k), 1, true), signal)
      if (timings.promptN !== k) throw new Error(`llama-server evaluated ${timings.promptN} prompt tokens after a cached prefix of ${cut}, expected ${k}: its prompt cache did not hold the prefix`)
      if (round > 0) samples[k - 1].push(timings.promptMs)
    }
  return samples.map(median)
}

/**
 * Ms of one decode step of plain generation from the measurement's prefixes: each request's mean step, one warm-up
 * round then `repeats` per prefix; the median per prefix, then the mean over the prefixes.
 */
export async function serverStepMs(server: PeerServer, measurement: CurveMeasurement, signal?: AbortSignal): Promise<number> {
  const m = withDefaults(measurement)
  const perPrefix: number[] = []
  for (const cut of cuts(m, m.maxPositions)) {
    const steps: number[] = []
    for (let round = 0; round <= m.repeats; round++) {
      const { timings } = await server.complete(requestOf(m, m.sequence.slice(0, cut), STEP_TOKENS, true), signal)
      if (round > 0 && timings.predictedN >= 2) steps.push(timings.predictedMs / (timings.predictedN - 1))
    }
    if (steps.length > 0) perPrefix.push(median(steps))
  }
  if (perPrefix.length === 0) throw new Error('llama-server generated fewer than two tokens from every prefix: no decode step to time')
  return perPrefix.reduce((a, b) => a + b, 0) / perPrefix.length
}

/** c_T(k), k = 1 … K, of the target server (see the file comment). */
export async function serverTargetCurve(server: PeerServer, measurement: CurveMeasurement, signal?: AbortSignal): Promise<number[]> {
  const m = withDefaults(measurement)
  const at = cuts(m, m.maxPositions)
  const prompt = new Array<number>(m.maxPositions).fill(0)
  for (const cut of at) (await timeServerAppends(server, m, cut, signal)).forEach((ms, k) => (prompt[k] += ms / at.length))
  const single = await serverStepMs(server, measurement, signal)
  const curve = prompt.map((ms, k) => (k === 0 ? single : single + ms - prompt[0]))
  return m.raw ? curve : nonDecreasing(curve)
}

/** Σ over `prompts` of one whole-prompt request each (fresh cache): SpecLab's wall clock, or the server's prompt_ms. */
export async function serverPrefillMs(server: PeerServer, m: Pick<CurveMeasurement, 'warp' | 'clock'>, prompts: readonly (readonly number[])[], wallClock: boolean, signal?: AbortSignal): Promise<number> {
  const clock = m.clock ?? (() => performance.now())
  let total = 0
  for (const prompt of prompts) {
    const started = clock()
    const { timings } = await server.complete(requestOf(m, prompt, 1, false), signal)
    total += wallClock ? clock() - started : timings.promptMs
  }
  return total
}

/** The cost table llama-server's arms are priced with (replay/advise.ts price). */
export async function measureServerCosts(input: ServerCostInput): Promise<CostTable> {
  const { signal } = input
  const targetMs = await serverTargetCurve(input.target, input.measurement, signal)
  const costs: CostTable = { targetMs, drafts: {}, prefillMs: { target: await serverPrefillMs(input.target, input.measurement, input.prompts, true, signal), drafts: {} } }
  for (const [name, server] of Object.entries(input.drafts)) {
    costs.drafts[name] = { ms: await serverStepMs(server, input.measurement, signal) }
    costs.prefillMs!.drafts[name] = await serverPrefillMs(server, input.measurement, input.prompts, false, signal)
  }
  return costs
}
