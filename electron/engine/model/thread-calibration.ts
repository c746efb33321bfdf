/**
 * Thread calibration at load: which thread count makes each model fastest in each phase, measured
 * on this machine with this llama.cpp binary instead of assumed.
 *
 * Why measure: what a second thread is worth depends on the binary and the model, not on a rule. On the 2-core
 * machine (inflated 78M-compute target) node-llama-cpp's prebuilt binary (no OpenMP) makes one token SLOWER on two
 * threads (8.2 → 10–16 ms) while a 6-token batch gets faster (23.6 → 14 ms); the OpenMP build (`npm run
 * build:native`) makes both faster (6.5 ms per token on two); a 260K draft is slower on two threads in every build.
 *
 * What is measured: the phases the decoders run, through the same session API they use (top-k logits transferred
 * and warped per position, so the JS work between decodes is in the timing, which raw llama.cpp timings miss):
 *   - single: one token appended (target / mid decoding a token, a draft proposing one);
 *   - batch: `batchTokens` tokens appended in one evaluation with a distribution at every position (a verification
 *     of γ + 1 positions; prefill). Measured for verifiers (target, mid) only — drafts evaluate batches rarely
 *     (catching up after a rejection) and use their single-token count for them.
 * Every measurement starts from 128 tokens of context (prepareContext: a cost per token grows with the context). Each
 * candidate count runs in interleaved rounds (ABAB…, not AAA…BBB: this machine's load drifts), the first round a
 * warm-up; per round a candidate appends `batchTokens` single tokens and BATCHES_PER_ROUND batches. The figure per
 * candidate is the MEAN, not the median: what a decode pays is the total, and a second thread can be bimodal (the
 * prebuilt binary on the 2-core VM: a 6-token batch on two threads takes 14 ms or 25–55 ms, one thread a steady 24),
 * so a median would choose by the fast mode alone. After the first counted round, a candidate slower than 1.5× the
 * best in every measured phase is dropped, and rounds stop once `budgetMs` is spent (a large model on many cores
 * must not make loading slow), after at least one counted round.
 * When more threads win a phase — or have the lower mean without winning clearly — the rounds run once more (no
 * warm-up, same budget) and the choice is made again on all samples: a second thread that is fast in bursts must stay
 * fast for twice as long before it gets the core, and a real gain hidden by noise gets the data to show.
 * Choice: the FEWEST threads that no count with more threads beats CLEARLY — by more than `TIE_TOLERANCE` and by more
 * than two standard errors of the difference of the means. A thread that buys less is noise on a shared machine and
 * takes a core from the JS thread and the other model; and a bimodal count's mean moves from run to run (the inflated
 * target's one token on two prebuilt threads: 12.3–16.9 ms in four calibrations against 11.2–11.6 on one; comparing
 * means alone, one calibration in four chose two threads).
 * Measured on the 2-core machine, prebuilt binary (speclab models calibrate): inflated target one token 1 thread
 * 11.2–11.6 ms, 2 threads 12.3–16.9; a batch of 6 46.7–47.1 vs 30.6–33.5 → 1 per token, 2 per batch (what
 * `run --threads 1 --batch-threads 2` confirms end to end: sd 130–136 tok/s vs 113 with 1 per batch); 260K draft
 * 0.5 ms on 1 thread, 27 on 2.
 * No Node imports: the app's renderer reads TIE_TOLERANCE and the record's schema from here.
 */
import { z } from 'zod'
import { argmax } from '../sampling/distribution'
import { mean } from '../stats/bootstrap'
import type { WarpConfig } from '../sampling/warp'
import type { ModelSession } from './types'

/** Mean milliseconds of one evaluation with `threads` threads, and the standard error of that mean. */
export const ThreadTiming = z.object({ threads: z.number().int().positive(), ms: z.number().nonnegative(), sem: z.number().nonnegative() })
export type ThreadTiming = z.infer<typeof ThreadTiming>

export const PhaseThreads = z.object({ threads: z.number().int().positive(), batchThreads: z.number().int().positive() })
export type PhaseThreads = z.infer<typeof PhaseThreads>

/** One model's calibration, as cached and as recorded in a run's config (RunConfig.threadCalibration). */
export const ModelThreadCalibration = z.object({
  role: z.enum(['target', 'mid', 'draft']),
  /** The model file. */
  path: z.string(),
  /** 'measured' at this load, or read from the cache (measured at an earlier load of the same file, machine, binary). */
  source: z.enum(['measured', 'cached']),
  measuredAt: z.string(),
  /** Mean ms of one single-token evaluation per candidate thread count (dropped candidates have fewer rounds). */
  single: z.array(ThreadTiming),
  /** Mean ms of one `batchTokens`-token evaluation per candidate; null for drafts (not measured). */
  batch: z.array(ThreadTiming).nullable(),
  batchTokens: z.number().int().positive(),
  /** Tokens of context the evaluations followed. */
  contextTokens: z.number().int().nonnegative(),
  /** Counted rounds (after the warm-up). */
  rounds: z.number().int().nonnegative(),
  /** What the model runs with: single tokens, batches. */
  chosen: PhaseThreads
})
export type ModelThreadCalibration = z.infer<typeof ModelThreadCalibration>

/** A model whose per-phase threads can be set (LlamaCppModel). */
export interface CalibratableModel {
  readonly info: { bos: number | null | undefined; path: string }
  readonly phaseThreads: PhaseThreads
  createSession(warp: WarpConfig): Promise<ModelSession>
}

export interface CalibrationOptions {
  role: ModelThreadCalibration['role']
  /** Tokens per batch evaluation (γ + 1 of the default window). */
  batchTokens?: number
  /** Rounds after the warm-up round. */
  rounds?: number
  /** Stop starting new rounds once this much time is spent (after at least one counted round). */
  budgetMs?: number
  /** Logical cores of the machine (candidates: threadCandidates). */
  cores: number
  /** The model's context size (the measurements stay within it). */
  contextSize?: number
  now?: () => number
}

/** A thread that buys less than 3 % is not worth a core. */
export const TIE_TOLERANCE = 0.03
/** After the first counted round, candidates slower than this × the best in every phase are measured no more. */
const DROP_FACTOR = 1.5
/** Tokens of context before the measured evaluations (see prepareContext), at most the context size allows. */
const CONTEXT_TOKENS = 128
const GREEDY_TOKENS = 24
/** Batch evaluations per candidate and round (single tokens: the probe's length, `batchTokens`). */
const BATCHES_PER_ROUND = 3
const CALIBRATION_WARP: WarpConfig = { temperature: 1, topK: 64, topP: 1 }

/** 1, 2, 4, … up to the core count, and the core count itself (at most the 256 the contract allows). */
export function threadCandidates(cores: number): number[] {
  const limit = Math.max(1, Math.min(256, Math.floor(cores)))
  const candidates: number[] = []
  for (let n = 1; n < limit; n *= 2) candidates.push(n)
  candidates.push(limit)
  return candidates
}

/**
 * The fewest threads than which no candidate with more is CLEARLY faster: faster by more than TIE_TOLERANCE and by
 * more than two standard errors of the difference of the means (a thread must buy something the noise cannot explain).
 */
export function fewestThreadsNotClearlyBeaten(timings: readonly ThreadTiming[]): number {
  if (timings.length === 0) throw new Error('no thread timings to choose from')
  const ascending = [...timings].sort((a, b) => a.threads - b.threads)
  const clearlyFaster = (more: ThreadTiming, fewer: ThreadTiming) =>
    more.ms < fewer.ms * (1 - TIE_TOLERANCE) && fewer.ms - more.ms > 2 * Math.hypot(more.sem, fewer.sem)
  const chosen = ascending.find((fewer) => !ascending.some((more) => more.threads > fewer.threads && clearlyFaster(more, fewer)))
  return (chosen ?? ascending[ascending.length - 1]!).threads
}

/** Measures `model` (see the file comment) and returns its calibration; the model's threads are left as they were. */
export async function calibrateThreads(model: CalibratableModel, options: CalibrationOptions): Promise<ModelThreadCalibration> {
  const { role, batchTokens = 6, cores } = options
  const measureBatch = role !== 'draft'
  const before = { ...model.phaseThreads }
  const session = await model.createSession(CALIBRATION_WARP)
  try {
    const contextTokens = Math.min(CONTEXT_TOKENS, Math.max(1, (options.contextSize ?? Infinity) - 2 * batchTokens))
    const context = await prepareContext(session, model.info.bos, batchTokens, contextTokens)
    const candidates = threadCandidates(cores)
    const samples: Samples = new Map(candidates.map((threads) => [threads, { single: [], batch: [] }]))
    const first = await measureRounds(model, session, context, candidates, samples, measureBatch, { ...options, warmUp: true })
    let rounds = first.rounds
    let chosen = choose(samples, measureBatch)
    // More threads won a phase, or were faster without being clearly so: as many rounds again before the choice.
    if (contested(samples, chosen, measureBatch, candidates[0]!)) {
      rounds += (await measureRounds(model, session, context, first.alive, samples, measureBatch, { ...options, warmUp: false })).rounds
      chosen = choose(samples, measureBatch)
    }
    return {
      role,
      path: model.info.path,
      source: 'measured',
      measuredAt: new Date().toISOString(),
      single: timingsOf(samples, 'single'),
      batch: measureBatch ? timingsOf(samples, 'batch') : null,
      batchTokens,
      contextTokens: context.base,
      rounds,
      chosen
    }
  } finally {
    setThreads(model, before)
    await session.dispose()
  }
}

/** The counts per phase from the samples so far (drafts: their one-token count for batches too). */
function choose(samples: Samples, measureBatch: boolean): PhaseThreads {
  const threads = fewestThreadsNotClearlyBeaten(timingsOf(samples, 'single'))
  return { threads, batchThreads: measureBatch ? fewestThreadsNotClearlyBeaten(timingsOf(samples, 'batch')) : threads }
}

/** Whether a phase chose more than the fewest threads, or a count other than the one with the lowest mean. */
function contested(samples: Samples, chosen: PhaseThreads, measureBatch: boolean, fewest: number): boolean {
  const phases: ['single' | 'batch', number][] = [['single', chosen.threads], ...(measureBatch ? [['batch', chosen.batchThreads] as ['batch', number]] : [])]
  return phases.some(([phase, threads]) => {
    const timings = timingsOf(samples, phase)
    const fastest = timings.reduce((a, b) => (b.ms < a.ms ? b : a))
    return threads > fewest || fastest.threads !== threads
  })
}

type Samples = Map<number, { single: number[]; batch: number[] }>

/**
 * Interleaved rounds (the file comment) adding to `samples`: how many were counted, and the candidates still measured
 * (after the first counted round of a pass that starts with a warm-up, the far slower ones are dropped).
 */
async function measureRounds(
  model: CalibratableModel,
  session: ModelSession,
  context: { base: number; probe: number[] },
  candidates: number[],
  samples: Samples,
  measureBatch: boolean,
  { rounds = 8, budgetMs = 4000, now = () => performance.now(), warmUp }: CalibrationOptions & { warmUp: boolean }
): Promise<{ rounds: number; alive: number[] }> {
  let alive = candidates
  let counted = 0
  const started = now()
  const first = warmUp ? 0 : 1
  for (let round = first; round <= rounds; round++) {
    if (round >= first + 2 && now() - started > budgetMs) break
    // Rotate the order every round so no candidate always runs right after the same one.
    const order = alive.map((_, i) => alive[(i + round) % alive.length]!)
    for (const threads of order) {
      setThreads(model, { threads, batchThreads: threads })
      const single = await timeSingleTokens(session, context.base, context.probe, now)
      const batch = measureBatch ? await timeBatches(session, context.base, context.probe, now) : []
      if (round === 0) continue // warm-up
      samples.get(threads)!.single.push(...single)
      samples.get(threads)!.batch.push(...batch)
    }
    if (round > 0) counted++
    if (round === 1 && warmUp) alive = withoutSlowCandidates(alive, samples, measureBatch)
  }
  return { rounds: counted, alive }
}

/** Sets a model's per-phase threads (LlamaCppModel applies them before each evaluation). */
export function setThreads(model: { phaseThreads: PhaseThreads }, threads: PhaseThreads): void {
  model.phaseThreads.threads = threads.threads
  model.phaseThreads.batchThreads = threads.batchThreads
}

/**
 * The context every measurement starts from: BOS, GREEDY_TOKENS of the model's own greedy continuation, and that
 * continuation repeated up to CONTEXT_TOKENS (a cost per token grows with the context: attention over it — on the
 * 2-core machine the inflated target's verification of 6 grows from 24 ms at 25 tokens of context to 40 at 120 — so
 * a few tokens of context would misjudge the decode). The probe every measurement appends is the greedy continuation
 * after `base` tokens, text the model finds likely, as in a decode.
 */
async function prepareContext(
  session: ModelSession,
  bos: number | null | undefined,
  batchTokens: number,
  contextTokens: number
): Promise<{ base: number; probe: number[] }> {
  let [next] = await session.append([bos ?? 0], 0)
  const greedy: number[] = []
  while (greedy.length < GREEDY_TOKENS) {
    const token = argmax(next!)
    greedy.push(token)
    ;[next] = await session.append([token], 0)
  }
  const filler: number[] = []
  while (session.tokens.length + filler.length < contextTokens) filler.push(greedy[filler.length % greedy.length]!)
  if (filler.length > 0) [next] = await session.append(filler, filler.length - 1)
  const base = session.tokens.length
  const probe: number[] = []
  while (probe.length < batchTokens) {
    const token = argmax(next!)
    probe.push(token)
    ;[next] = await session.append([token], 0)
  }
  await session.truncate(base)
  return { base, probe }
}

/** Milliseconds of each of `probe`'s tokens appended one at a time after the first `base` tokens. */
async function timeSingleTokens(session: ModelSession, base: number, probe: readonly number[], now: () => number): Promise<number[]> {
  const times: number[] = []
  for (const token of probe) {
    const started = now()
    await session.append([token], 0)
    times.push(now() - started)
  }
  await session.truncate(base)
  return times
}

/** Milliseconds of `probe` appended as one evaluation with a distribution at every position, BATCHES_PER_ROUND times. */
async function timeBatches(session: ModelSession, base: number, probe: readonly number[], now: () => number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < BATCHES_PER_ROUND; i++) {
    const started = now()
    await session.append(probe, 0)
    times.push(now() - started)
    await session.truncate(base)
  }
  return times
}

function timingsOf(samples: Samples, phase: 'single' | 'batch'): ThreadTiming[] {
  return [...samples].filter(([, s]) => s[phase].length > 0).map(([threads, s]) => ({ threads, ms: round3(mean(s[phase])), sem: round3(standardError(s[phase])) }))
}

/** Candidates slower than DROP_FACTOR × the best median in every measured phase are dropped. */
function withoutSlowCandidates(alive: number[], samples: Samples, measureBatch: boolean): number[] {
  const phases: ('single' | 'batch')[] = measureBatch ? ['single', 'batch'] : ['single']
  const best = Object.fromEntries(phases.map((p) => [p, Math.min(...alive.map((t) => mean(samples.get(t)![p])))]))
  const kept = alive.filter((t) => phases.some((p) => mean(samples.get(t)![p]) <= DROP_FACTOR * best[p]!))
  return kept.length > 0 ? kept : alive
}

/** Standard error of the mean (sample standard deviation / √n); 0 for fewer than two values. */
function standardError(values: readonly number[]): number {
  if (values.length < 2) return 0
  const m = mean(values)
  const variance = values.reduce((sum, v) => sum + (v - m) ** 2, 0) / (values.length - 1)
  return Math.sqrt(variance / values.length)
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000
}
