/**
 * The advice's `llama-server:*` arms priced with llama-server's OWN costs. Such an arm runs the rounds of a grid
 * candidate (its basis: the same configuration, or SpecLab's sd at llama-server's default n_max), so its rounds are
 * that candidate's replayed rounds; but llama.cpp's server evaluates them at its own speed, so pricing them with
 * SpecLab's cost curve predicts SpecLab's speed of the configuration, not llama-server's. Here each distinct thread
 * setting of the llama-server arms gets llama-server's cost table (llama-server-costs.ts: c_T(k), c_D, prompt
 * processing, from the server's own timings), and the arm is priced with it by the same pricing as every candidate
 * (replay/advise.ts price). Its speedup is against SpecLab's `ar` arm, as the verification run pairs it.
 *
 * When the costs cannot be measured (a server that does not start, a timing that cannot be read) the arms keep
 * SpecLab's pricing and the advice says so in one line; the advice itself goes on.
 *
 * Under greedy decoding a draft's costs in the table are then scaled as SpecLab's are (replay/decode-calibration.ts):
 * one real request of a draft arm on the workload's longest prompt, s = the server's own generation time
 * (`timings.predicted_ms`) over the same prompt's replayed rounds priced with the table (prompt processing left out on
 * both sides; the server samples its first token from the prompt's evaluation, which the replay prices as a round —
 * one round of ~35 on 128 tokens). The table's costs are timed on servers holding one model each and may come from
 * the cache of an earlier advice; a speculative server's rounds pay more (measured: greedy draft arms predicted
 * 10–18 % fast without it). Under sampling a request's rounds are one draw, too few to scale by; the arms there were
 * predicted within 2–4 % without it.
 */
import type { PricedWith, ServerCosts, ServerPricingRecord } from '../api/advice'
import { isLlamaServerMethod } from '../engine/methods/catalog'
import { findMethod } from '../engine/methods/prepare'
import { price, replayCandidate, sampledReplay, type CostTable, type Replayed } from '../engine/replay/advise'
import { calibrated, type RoundCalibration } from '../engine/replay/decode-calibration'
import { isGreedy } from '../engine/sampling/warp'
import { longestPrompt, type Advice } from './advise'
import type { VerifyArm } from './advise-verify'
import type { MeasuredServerCosts } from './llama-server-costs'
import { threadsText, type ArmThreads } from './peer-bench'

/** Whether llama-server runs the arm (a `llama-server:*` method). */
export function isServerArm(arm: Pick<VerifyArm, 'candidate'>): boolean {
  const definition = findMethod(arm.candidate.method)
  return definition !== undefined && isLlamaServerMethod(definition)
}

/**
 * The rounds a llama-server arm runs. Under greedy decoding they are its basis's (llama.cpp's draft and verification
 * make SpecLab's decisions). Under sampling a draft-model arm's are its own: llama.cpp drafts the draft's top token
 * and keeps it while the target's sample equals it, which accepts less than SpecLab's rejection sampling
 * (replay/llama-server-draft.ts).
 */
function serverRounds(arm: VerifyArm, advice: Pick<Advice, 'trace' | 'replayed'>): Replayed | undefined {
  const own = !isGreedy(advice.trace.warp) && arm.candidate.method === 'llama-server:draft' ? ownRounds(arm, advice) : undefined
  return own ?? (arm.basis === null ? undefined : advice.replayed.find((r) => r.candidate === arm.basis))
}

/** The arm's own expected rounds; undefined when the trace cannot replay them (then its basis's are used). */
function ownRounds(arm: VerifyArm, advice: Pick<Advice, 'trace'>): Replayed | undefined {
  try {
    return sampledReplay(advice.trace, arm.candidate)
  } catch {
    return undefined
  }
}

/**
 * `arm` predicted from the rounds it runs (serverRounds) with `costs`; the speedup against `arMs` (SpecLab's ar
 * arm's predicted time on the same tokens) when given. Unchanged when its rounds were not replayed or cannot be priced.
 */
export function priceServerArm(arm: VerifyArm, advice: Pick<Advice, 'trace' | 'replayed'>, costs: CostTable, arMs: number | null, pricedWith: PricedWith = 'llama-server'): VerifyArm {
  const replayed = serverRounds(arm, advice)
  if (!replayed) return arm
  const prediction = price(replayed, advice.trace, costs).prediction
  if (!prediction) return arm
  const speedup = arMs !== null && prediction.ms > 0 ? arMs / prediction.ms : prediction.speedup
  return { ...arm, predicted: { tokensPerSecond: prediction.tokensPerSecond, speedup, ms: prediction.ms, pricedWith } }
}

/** Measures (or reads from the cache) llama-server's costs at `threads` for the arms' `drafts`. */
export type MeasureServerCosts = (threads: ArmThreads, drafts: string[]) => Promise<MeasuredServerCosts>

/** One real request of `arm` on the workload's prompt `prompt` (its index): the server's generation ms, or null. */
export type RunServerArm = (arm: VerifyArm, prompt: number) => Promise<number | null>

/** s of `table` for `arm`'s draft from one real request (module comment); null when nothing can be compared. */
export async function serverCalibration(arm: VerifyArm, advice: Pick<Advice, 'trace'>, table: CostTable, run: RunServerArm): Promise<RoundCalibration | null> {
  if (arm.basis === null || arm.candidate.draft === null || !isGreedy(advice.trace.warp)) return null
  const longest = longestPrompt(advice.trace)
  const prompt = advice.trace.prompts.indexOf(longest)
  const one = { ...advice.trace, prompts: [longest] }
  const priced = price(await replayCandidate(one, arm.basis), one, { ...table, prefillMs: undefined }).prediction
  const measured = await run(arm, prompt)
  if (!priced || priced.ms <= 0 || measured === null || measured <= 0) return null
  return { scale: measured / priced.ms, rounds: priced.rounds }
}

/** `table` with `draft`'s costs scaled by `calibration` (c_T(1) kept). */
export function calibratedTable(table: CostTable, draft: string, calibration: RoundCalibration): CostTable {
  const cost = table.drafts[draft]
  if (!cost) return table
  const scaled = calibrated({ targetMs: cost.targetMs ?? table.targetMs, draftMs: cost.ms }, calibration)
  return { ...table, drafts: { ...table.drafts, [draft]: { ...cost, ms: scaled.draftMs, targetMs: scaled.targetMs, roundScale: calibration.scale } } }
}

export interface PricedArms {
  arms: VerifyArm[]
  /** What the advice stores about llama-server's costs; undefined when no arm runs on llama-server. */
  server: ServerPricingRecord | undefined
}

const summary = (threads: ArmThreads, { costs, source }: MeasuredServerCosts): ServerCosts => {
  const scales = Object.entries(costs.drafts).flatMap(([name, d]) => (d.roundScale === undefined ? [] : [[name, d.roundScale] as const]))
  return {
    threads: { ...threads },
    targetMs: [...costs.targetMs],
    draftMs: Object.fromEntries(Object.entries(costs.drafts).map(([name, d]) => [name, d.ms])),
    ...(scales.length > 0 ? { roundScale: Object.fromEntries(scales) } : {}),
    source
  }
}

/**
 * Every llama-server arm priced with llama-server's costs at its threads, each table calibrated by one request of its
 * first draft arm when `run` is given (serverCalibration); the rest as they are.
 */
export async function priceServerArms(
  arms: readonly VerifyArm[],
  advice: Pick<Advice, 'trace' | 'replayed' | 'costs'>,
  measure: MeasureServerCosts,
  onMeasure?: () => void,
  run?: RunServerArm
): Promise<PricedArms> {
  const served = arms.filter((a) => isServerArm(a) && a.basis !== null)
  if (served.length === 0) return { arms: [...arms], server: undefined }
  onMeasure?.()
  const arMs = arms.find((a) => a.candidate.method === 'ar')?.predicted?.ms ?? null
  const tables = new Map<string, CostTable>()
  const costs: ServerCosts[] = []
  try {
    for (const arm of served) {
      const key = threadsText(arm.threads)
      if (tables.has(key)) continue
      const drafts = [...new Set(served.filter((a) => threadsText(a.threads) === key).flatMap((a) => (a.candidate.draft === null ? [] : [a.candidate.draft])))]
      const measured = await measure(arm.threads, drafts)
      const calibrating = served.find((a) => threadsText(a.threads) === key && a.candidate.draft !== null)
      const calibration = run && calibrating ? await serverCalibration(calibrating, advice, measured.costs, run) : null
      const table = calibration ? calibratedTable(measured.costs, calibrating!.candidate.draft!, calibration) : measured.costs
      tables.set(key, table)
      costs.push(summary(arm.threads, { ...measured, costs: table }))
    }
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim()
    // Still the rounds llama-server runs (under sampling its own, not its basis's), at SpecLab's prices.
    const sampled = !isGreedy(advice.trace.warp)
    const onSpecLabCurve = arms.map((arm) => (sampled && isServerArm(arm) ? priceServerArm(arm, advice, advice.costs, arMs, 'speclab') : arm))
    return { arms: onSpecLabCurve, server: { costs: [], note: `llama-server's own costs could not be measured (${reason}): its arms are priced with SpecLab's cost curve` } }
  }
  const priced = arms.map((arm) => {
    const table = isServerArm(arm) ? tables.get(threadsText(arm.threads)) : undefined
    return table ? priceServerArm(arm, advice, table, arMs) : arm
  })
  return { arms: priced, server: { costs, note: null } }
}
