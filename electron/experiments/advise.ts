/**
 * The setup advisor's workflow on loaded models — what `speclab advise` and the app screen call: record one trace
 * of the workload (engine/replay/record.ts), measure the costs (the target's c_T(k) and each draft's time per
 * token, with the full-vocabulary transfer too when a candidate's policy reads it), replay and rank every candidate
 * (engine/replay/advise.ts), then MEASURE the best `verifyTop` candidates and `ar` by real runs on the same prompts,
 * so the prediction is checked where it matters.
 *
 * The real runs are timed with the same clock as the costs, prompt processing included; so is the prediction
 * (CostTable.prefillMs: each prompt evaluated in one call by the target and by each draft).
 *
 * A mid model (`--mid`) is one of the drafts by name, and each candidate of Chen's hierarchy names it as `mid`: it is
 * traced and priced like a draft, its batch cost c(k) measured for the calls it makes there, and each (draft, mid)
 * pair calibrated by real hierarchy decodes (calibrateHierarchies).
 *
 * A draft of ANOTHER vocabulary (model/vocabulary-check.ts) is a candidate too: the grid gives it the
 * cross-vocabulary methods (sd-tli, sd-uad), the trace marks it foreign, its rounds replay with the live draft beside
 * the recorded target (replay/replay.ts; greedy only), and its costs are measured on the target's text as its own
 * tokenizer splits it (replay/foreign-text.ts).
 */
import { UserInputError } from '../engine/errors'
import { decodeOnce } from '../engine/methods/decode-once'
import { prepare } from '../engine/methods/prepare'
import type { LanguageModel } from '../engine/model/types'
import { AR_CANDIDATE, fastestFirst, hierarchyShapeOf, midBatchOf, price, rankPlans, replayAll, roundAcceptanceByDraft, type CostTable, type DraftCost, type Replayed, type Verdict } from '../engine/replay/advise'
import { vocabularyMismatch } from '../engine/model/vocabulary-check'
import { draftSequenceOf } from '../engine/replay/foreign-text'
import type { PhaseThreads } from '../engine/model/thread-calibration'
import { candidateGrid, rolloutLengthFor } from '../engine/replay/candidates'
import { nonDecreasing } from '../engine/replay/isotonic'
import { measureCostCurve, measureDraftCost, measurePrefill, targetCost, type CostCurve, type CurveMeasurement } from '../engine/replay/cost-curve'
import { calibrated, calibrateOverlap, calibrateRounds, calibrateSingle } from '../engine/replay/decode-calibration'
import { readsFullEntropy } from '../engine/replay/expected-replay'
import { recordTrace, type TraceProgress } from '../engine/replay/record'
import { draftsInParallel, type Candidate } from '../engine/replay/replay'
import type { Trace } from '../engine/replay/trace'
import type { WarpConfig } from '../engine/sampling/warp'

export interface AdviseInput {
  target: LanguageModel
  /** Candidate draft models by name (the names candidates refer to, as `draft` and, a mid model, as `mid`). */
  drafts: Readonly<Record<string, LanguageModel>>
  /** Prompt tokens, BOS included. */
  prompts: readonly (readonly number[])[]
  warp: WarpConfig
  seed: number
  maxTokens: number
  /** Default: candidateGrid over the drafts. */
  candidates?: readonly Candidate[]
  /** Real runs of the best predicted candidates (and ar) to measure; 0 = none. */
  verifyTop?: number
  /** The draft pass's tokens per call (default 16). */
  batch?: number
  /** Cost measurement: largest k, prefixes, repeats (cost-curve.ts defaults). */
  curve?: Pick<CurveMeasurement, 'maxPositions' | 'points' | 'repeats'>
  /** Milliseconds now (default performance.now; tests pass a fake clock). */
  clock?: () => number
  /** Thread counts to compare (ThreadChoice); absent: the costs of the models as loaded. */
  threads?: ThreadChoice
  onProgress?(stage: string, detail?: TraceProgress): void
}

/**
 * Thread plans to compare. For each count the target's c_T(k) and prompt processing and each draft's costs are
 * measured; a plan is (target single-token threads t1, target batch threads t2, draft threads d) over `counts`:
 * c_T(1) at t1, c_T(k ≥ 2) and the prompt at t2, the draft at d (a draft's batches use its single-token count, as
 * experiments/models.ts loads it). Sequential methods pay the phases one after the other, so the plan is priced
 * from these alone; each candidate keeps its fastest plan (replay/advise.ts rankPlans).
 */
export interface ThreadChoice {
  counts: readonly number[]
  /** Make `model` evaluate single tokens and batches with these counts (LlamaCppModel: thread-calibration setThreads). */
  apply(model: LanguageModel, phase: PhaseThreads): void
  /** What `model` uses now (restored afterwards). */
  current(model: LanguageModel): PhaseThreads
}

/** A thread plan: the target's single-token and batch threads, the drafts' threads. */
export interface ThreadPlan {
  target: PhaseThreads
  draft: number
}

export const planName = (plan: ThreadPlan): string => `target ${plan.target.threads}/${plan.target.batchThreads}, draft ${plan.draft}`

export interface Measured {
  candidate: Candidate
  /** The thread plan it ran with (Advice.plans), when plans were compared. */
  plan?: string
  tokens: number
  ms: number
  tokensPerSecond: number
}

export interface Advice {
  trace: Trace
  /** The costs as loaded, or with ThreadChoice those of the fastest plan for the best candidate. */
  costs: CostTable
  /** With ThreadChoice: every plan compared, by name (Verdict.plan). */
  plans?: Record<string, ThreadPlan>
  /** ar and every candidate, fastest predicted first. */
  verdicts: Verdict[]
  /** Real runs of ar and the best `verifyTop` candidates. */
  measured: Measured[]
  /** Each draft of another vocabulary: acceptance per position from its replayed sd-tli rounds (the profile's). */
  roundAcceptance: Record<string, (number | null)[]>
  /** ar and every candidate replayed once: what prices them again under other costs (llama-server's). */
  replayed: Replayed[]
}

/** The drafts whose vocabulary is not the target's: the grid gives them only sd-tli and sd-uad. */
export function foreignDrafts(target: LanguageModel, drafts: Readonly<Record<string, LanguageModel>>): Set<string> {
  return new Set(Object.entries(drafts).filter(([, draft]) => vocabularyMismatch(target, draft) !== null).map(([name]) => name))
}

/** The prompt with the longest output, whose contexts the costs are measured at. */
export const longestPrompt = (trace: Trace) => trace.prompts.reduce((a, b) => (b.tokens.length > a.tokens.length ? b : a))

/** The contexts (longest prompt's output) and K every cost of the advice is measured at. */
export function measurementOf(trace: Trace, maxPositions: number, clock: (() => number) | undefined): CurveMeasurement {
  const prompt = longestPrompt(trace)
  const k = Math.min(maxPositions, prompt.tokens.length)
  if (k < 1) throw new UserInputError('the workload is empty: the target produced no output tokens to measure costs at')
  return { sequence: [...prompt.promptTokens, ...prompt.tokens], promptLength: prompt.promptTokens.length, warp: trace.warp, maxPositions: k, ...(clock ? { clock } : {}) }
}

async function measureCosts(input: AdviseInput, trace: Trace, candidates: readonly Candidate[]): Promise<CostTable> {
  const measurement = { ...measurementOf(trace, input.curve?.maxPositions ?? 16, input.clock), ...(input.curve?.points ? { points: input.curve.points } : {}), ...(input.curve?.repeats ? { repeats: input.curve.repeats } : {}) }
  input.onProgress?.('costs')
  const timed = await measureCostCurve(input.target, null, measurement)
  const single = await calibrateSingle(input.target, measurement, timed)
  const curve = single ? { ...timed, targetMs: nonDecreasing([timed.targetMs[0] * single.scale, ...timed.targetMs.slice(1)]) } : timed
  const prompts = trace.prompts.map((p) => p.promptTokens)
  const prefill = { clock: input.clock }
  const costs: CostTable = {
    targetMs: curve.targetMs,
    ...(single ? { singleScale: single.scale, decodeOutsideMs: single.outsideMs } : {}),
    drafts: {},
    prefillMs: { target: await measurePrefill(input.target, prompts, trace.warp, prefill), drafts: {} }
  }
  for (const [name, draft] of Object.entries(input.drafts)) {
    const used = candidates.filter((c) => c.draft === name)
    const asMid = candidates.filter((c) => c.mid === name)
    if (used.length === 0 && asMid.length === 0) continue
    const foreign = trace.drafts[name]?.foreign === true
    const own = foreign ? foreignMeasurement(input, trace, draft, measurement) : { measurement, prompts }
    // A mid model's batch curve holds its one-token call too (a mid model shares the target's vocabulary: `own` is
    // the target's measurement), so that call is not timed a second time.
    const batchMs = asMid.length > 0 ? (await measureCostCurve(draft, null, { ...measurement, maxPositions: Math.min(measurement.maxPositions ?? 16, Math.max(...asMid.map(midBatchOf))) })).targetMs : undefined
    const apart = batchMs ? batchMs[0] : await measureDraftCost(draft, own.measurement)
    costs.drafts[name] = foreign || used.length === 0 ? { ms: apart } : await calibratedDraft(input.target, draft, measurement, { draftMs: apart, targetMs: curve.targetMs }, used.some(draftsInParallel))
    if (batchMs) costs.drafts[name].batchMs = batchMs
    if (used.some(readsFullEntropy)) {
      // Every logit transferred costs the same on top of a draft call timed apart as in a decode's round.
      costs.drafts[name].fullEntropyMs = (await measureDraftCost(draft, own.measurement, { fullEntropy: true })) + costs.drafts[name].ms - apart
    }
    costs.prefillMs!.drafts[name] = await measurePrefill(draft, own.prompts, trace.warp, prefill)
  }
  await calibrateHierarchies(input, candidates, measurement, costs)
  return costs
}

/**
 * Each (small draft, mid model) pair of the hier-chen candidates priced as its decodes pay: two short real decodes
 * at the pair's middle shape among the candidates, timed round by round (decode-calibration.ts), give s for
 * the pair's apart costs (CostTable DraftCost.hierarchyScale). A hierarchy's round makes three models' calls in turn
 * and builds its chain between them, which the small draft's `sd` scale does not cover.
 */
async function calibrateHierarchies(input: AdviseInput, candidates: readonly Candidate[], measurement: CurveMeasurement, costs: CostTable): Promise<void> {
  const pairs = new Map<string, { small: string; mid: string; group: Candidate[] }>()
  for (const c of candidates) {
    if (!c.mid || c.draft === null) continue
    const key = JSON.stringify([c.draft, c.mid])
    const pair = pairs.get(key) ?? { small: c.draft, mid: c.mid, group: [] }
    pair.group.push(c)
    pairs.set(key, pair)
  }
  for (const { small, mid, group } of pairs.values()) {
    const shape = middleShape(group)
    const smallCost = costs.drafts[small]
    const midCost = costs.drafts[mid]
    if (!smallCost || !midCost?.batchMs) continue
    const apart: CostCurve = {
      targetMs: costs.targetMs,
      draftMs: smallCost.ms / (smallCost.roundScale ?? 1),
      midMs: targetCost({ targetMs: midCost.batchMs, draftMs: 0 }, shape.n + 1)
    }
    const calibration = await calibrateRounds(input.target, input.drafts[small], measurement, apart, { mid: input.drafts[mid], shape })
    if (calibration) midCost.hierarchyScale = { ...midCost.hierarchyScale, [small]: calibration.scale }
  }
}

/**
 * The shape whose rounds stand for the group's: the middle one by chain length m(n + 1), on a tie the one with more
 * mid-model calls — (2, 1) for the grid's six shapes, whose rounds make both models' calls.
 */
function middleShape(candidates: readonly Candidate[]): { m: number; n: number } {
  const shapes = candidates.map(hierarchyShapeOf).sort((a, b) => a.m * (a.n + 1) - b.m * (b.n + 1) || b.m - a.m)
  return shapes[Math.floor((shapes.length - 1) / 2)]
}

/**
 * A draft of the target's vocabulary priced as its rounds pay: c_D timed apart and the target's c_T(k ≥ 2), both
 * scaled to what real decodes' rounds with this draft cost (replay/decode-calibration.ts), which takes in what each
 * model pays for following the other's call as well as the decoder's own work; c_T(1) stays the target's own (a
 * target-only round follows no draft call); with `parallel` candidates, s‖ of PEARL's overlapped rounds too
 * (decode-calibration.ts calibrateOverlap). A foreign draft's rounds re-tokenise between the calls and are priced
 * with the costs timed apart.
 */
async function calibratedDraft(target: LanguageModel, draft: LanguageModel, measurement: CurveMeasurement, apart: CostCurve, parallel: boolean): Promise<DraftCost> {
  const calibration = await calibrateRounds(target, draft, measurement, apart)
  const costs = calibration ? calibrated(apart, calibration) : apart
  // PEARL's rounds: what overlapping the two models costs beyond the longer, on top of the costs as sd's rounds pay them.
  const overlap = parallel ? await calibrateOverlap(target, draft, measurement, costs) : null
  return { ms: costs.draftMs, targetMs: costs.targetMs, ...(calibration ? { roundScale: calibration.scale } : {}), ...(overlap ? { overlapScale: overlap.scale } : {}) }
}

/** A foreign draft's contexts: the same prompts and output, tokenised by its own tokenizer (foreign-text.ts). */
function foreignMeasurement(input: AdviseInput, trace: Trace, draft: LanguageModel, measurement: CurveMeasurement) {
  const longest = longestPrompt(trace)
  const { sequence, promptLength } = draftSequenceOf(input.target, draft, longest.promptTokens, longest.tokens)
  const maxPositions = Math.max(1, Math.min(measurement.maxPositions ?? 16, sequence.length - promptLength))
  if (sequence.length - promptLength < 1) throw new UserInputError(`${draft.info.name} reads none of the target's output as text: its cost cannot be measured`)
  return {
    measurement: { ...measurement, sequence, promptLength, maxPositions },
    prompts: trace.prompts.map((p) => draftSequenceOf(input.target, draft, p.promptTokens).sequence)
  }
}

/** Costs per thread count (target curve and prompt, each draft's costs) and the plans they combine into. */
async function measurePlans(input: AdviseInput, trace: Trace, candidates: readonly Candidate[], choice: ThreadChoice) {
  const models = [input.target, ...Object.values(input.drafts)]
  const original = models.map((model) => choice.current(model))
  const byCount = new Map<number, CostTable>()
  try {
    for (const count of choice.counts) {
      for (const model of models) choice.apply(model, { threads: count, batchThreads: count })
      input.onProgress?.(`costs at ${count} threads`)
      byCount.set(count, await measureCosts({ ...input, onProgress: undefined }, trace, candidates))
    }
  } finally {
    models.forEach((model, i) => choice.apply(model, original[i]))
  }
  const plans: { plan: string; costs: CostTable; threads: ThreadPlan }[] = []
  for (const t1 of choice.counts)
    for (const t2 of choice.counts)
      for (const d of Object.keys(input.drafts).length > 0 ? choice.counts : [choice.counts[0]]) {
        const single = byCount.get(t1)!
        const batch = byCount.get(t2)!
        const drafting = byCount.get(d)!
        const threads: ThreadPlan = { target: { threads: t1, batchThreads: t2 }, draft: d }
        // A draft's rounds: its calls at `d` threads; the verifications as calibrated with that draft at `t2` (where
        // both models had t2 threads — the nearest measured), after the plan's own c_T(1).
        const drafts: Record<string, DraftCost> = Object.fromEntries(
          Object.entries(drafting.drafts).map(([name, { targetMs: _atD, overlapScale: _overlapAtD, ...cost }]) => {
            const verifying = batch.drafts[name]?.targetMs
            // s‖ as measured with both models at the target's batch threads: its verification is the longer part.
            const overlapScale = batch.drafts[name]?.overlapScale
            const withOverlap = overlapScale === undefined ? cost : { ...cost, overlapScale }
            return [name, verifying ? { ...withOverlap, targetMs: nonDecreasing([single.targetMs[0], ...verifying.slice(1)]) } : withOverlap]
          })
        )
        const costs: CostTable = {
          targetMs: [single.targetMs[0], ...batch.targetMs.slice(1)],
          drafts,
          prefillMs: { target: batch.prefillMs!.target, drafts: drafting.prefillMs!.drafts },
          batchSingleMs: batch.targetMs[0],
          ...(single.decodeOutsideMs === undefined ? {} : { decodeOutsideMs: single.decodeOutsideMs })
        }
        plans.push({ plan: planName(threads), costs, threads })
      }
  return plans
}

/** Runs `work` with `plan`'s threads applied to the models, restoring what they had. */
async function withPlan<T>(input: AdviseInput, plan: ThreadPlan | undefined, work: () => Promise<T>): Promise<T> {
  const choice = input.threads
  if (!choice || !plan) return work()
  const models = [input.target, ...Object.values(input.drafts)]
  const original = models.map((model) => choice.current(model))
  choice.apply(input.target, plan.target)
  for (const draft of Object.values(input.drafts)) choice.apply(draft, { threads: plan.draft, batchThreads: plan.draft })
  try {
    return await work()
  } finally {
    models.forEach((model, i) => choice.apply(model, original[i]))
  }
}

/** One real run of `candidate` over the workload, timed with `clock`. */
async function measureRun(input: AdviseInput, candidate: Candidate, clock: () => number): Promise<Measured> {
  const run = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).newRun()
  const draft = candidate.draft === null ? undefined : input.drafts[candidate.draft]
  const mid = candidate.mid ? input.drafts[candidate.mid] : undefined
  let tokens = 0
  let ms = 0
  for (const [index, promptTokens] of input.prompts.entries()) {
    const started = clock()
    const outcome = await decodeOnce({
      decoder: run(),
      models: { target: input.target, ...(draft ? { draft } : {}), ...(mid ? { mid } : {}) },
      promptTokens,
      maxTokens: input.maxTokens,
      warp: input.warp,
      seed: input.seed,
      stream: index
    })
    ms += clock() - started
    tokens += outcome.tokens.length
  }
  return { candidate, tokens, ms, tokensPerSecond: ms > 0 ? (1000 * tokens) / ms : 0 }
}

export async function adviseWorkload(input: AdviseInput): Promise<Advice> {
  const candidates = input.candidates ?? candidateGrid(Object.keys(input.drafts), foreignDrafts(input.target, input.drafts))
  const used = Object.fromEntries(Object.entries(input.drafts).filter(([name]) => candidates.some((c) => c.draft === name || c.mid === name)))
  const trace = await recordTrace(
    input.target,
    used,
    input.prompts,
    {
      warp: input.warp,
      seed: input.seed,
      maxTokens: input.maxTokens,
      batch: input.batch ?? 16,
      rolloutLength: rolloutLengthFor(candidates),
      fullEntropy: candidates.some(readsFullEntropy)
    },
    (detail) => input.onProgress?.('trace', detail)
  )
  input.onProgress?.('replay')
  const replayed = await replayAll(trace, candidates, { target: input.target, drafts: used })
  let costs: CostTable
  let verdicts: Verdict[]
  let plans: Record<string, ThreadPlan> | undefined
  if (input.threads) {
    const compared = await measurePlans(input, trace, candidates, input.threads)
    plans = Object.fromEntries(compared.map((p) => [p.plan, p.threads]))
    verdicts = rankPlans(replayed, trace, compared)
    costs = compared.find((p) => p.plan === verdicts[0]?.plan)?.costs ?? compared[0].costs
  } else {
    costs = await measureCosts(input, trace, candidates)
    verdicts = fastestFirst(replayed.map((r) => price(r, trace, costs)))
  }
  const measured: Measured[] = []
  const top = verdicts.filter((v) => v.prediction && v.candidate.method !== 'ar').slice(0, input.verifyTop ?? 0)
  if (top.length > 0) {
    const clock = input.clock ?? (() => performance.now())
    const ar = verdicts.find((v) => v.candidate.method === 'ar')
    for (const verdict of [ar ?? { candidate: AR_CANDIDATE, plan: undefined }, ...top]) {
      input.onProgress?.('measure')
      const plan = verdict.plan === undefined ? undefined : plans?.[verdict.plan]
      measured.push({ ...(await withPlan(input, plan, () => measureRun(input, verdict.candidate, clock))), ...(verdict.plan === undefined ? {} : { plan: verdict.plan }) })
    }
  }
  return { trace, costs, ...(plans ? { plans } : {}), verdicts, measured, roundAcceptance: roundAcceptanceByDraft(replayed), replayed }
}
