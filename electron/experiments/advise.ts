/**
 * The setup advisor's workflow on loaded models — what `speclab advise` and the app screen call: record one trace
 * of the workload (engine/replay/record.ts), measure the costs (the target's c_T(k) and each draft's time per
 * token, with the full-vocabulary transfer too when a candidate's policy reads it), replay and rank every candidate
 * (engine/replay/advise.ts), then MEASURE the best `verifyTop` candidates and `ar` by real runs on the same prompts,
 * so the prediction is checked where it matters.
 *
 * The real runs are timed with the same clock as the costs, prompt processing included; so is the prediction
 * (CostTable.prefillMs: each prompt evaluated in one call by the target and by each draft).
 */
import { decodeOnce } from '../engine/methods/decode-once'
import { prepare } from '../engine/methods/prepare'
import type { LanguageModel } from '../engine/model/types'
import { AR_CANDIDATE, rankCandidates, type CostTable, type Verdict } from '../engine/replay/advise'
import { candidateGrid, rolloutLengthFor } from '../engine/replay/candidates'
import { measureCostCurve, measureDraftCost, measurePrefill, type CurveMeasurement } from '../engine/replay/cost-curve'
import { readsFullEntropy } from '../engine/replay/expected-replay'
import { recordTrace, type TraceProgress } from '../engine/replay/record'
import type { Candidate } from '../engine/replay/replay'
import type { Trace } from '../engine/replay/trace'
import type { WarpConfig } from '../engine/sampling/warp'

export interface AdviseInput {
  target: LanguageModel
  /** Candidate draft models by name (the names candidates refer to). */
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
  onProgress?(stage: string, detail?: TraceProgress): void
}

export interface Measured {
  candidate: Candidate
  tokens: number
  ms: number
  tokensPerSecond: number
}

export interface Advice {
  trace: Trace
  costs: CostTable
  /** ar and every candidate, fastest predicted first. */
  verdicts: Verdict[]
  /** Real runs of ar and the best `verifyTop` candidates. */
  measured: Measured[]
}

/** The prompt with the longest output, whose contexts the costs are measured at. */
function measurementOf(trace: Trace, maxPositions: number, clock: (() => number) | undefined): CurveMeasurement {
  const prompt = trace.prompts.reduce((a, b) => (b.tokens.length > a.tokens.length ? b : a))
  const k = Math.min(maxPositions, prompt.tokens.length)
  if (k < 1) throw new Error('the workload produced no output tokens to measure costs at')
  return { sequence: [...prompt.promptTokens, ...prompt.tokens], promptLength: prompt.promptTokens.length, warp: trace.warp, maxPositions: k, ...(clock ? { clock } : {}) }
}

async function measureCosts(input: AdviseInput, trace: Trace, candidates: readonly Candidate[]): Promise<CostTable> {
  const measurement = { ...measurementOf(trace, input.curve?.maxPositions ?? 16, input.clock), ...(input.curve?.points ? { points: input.curve.points } : {}), ...(input.curve?.repeats ? { repeats: input.curve.repeats } : {}) }
  input.onProgress?.('costs')
  const curve = await measureCostCurve(input.target, null, measurement)
  const prompts = trace.prompts.map((p) => p.promptTokens)
  const prefill = { clock: input.clock }
  const costs: CostTable = { targetMs: curve.targetMs, drafts: {}, prefillMs: { target: await measurePrefill(input.target, prompts, trace.warp, prefill), drafts: {} } }
  for (const [name, draft] of Object.entries(input.drafts)) {
    const used = candidates.filter((c) => c.draft === name)
    if (used.length === 0) continue
    costs.drafts[name] = { ms: await measureDraftCost(draft, measurement) }
    if (used.some(readsFullEntropy)) costs.drafts[name].fullEntropyMs = await measureDraftCost(draft, measurement, { fullEntropy: true })
    costs.prefillMs!.drafts[name] = await measurePrefill(draft, prompts, trace.warp, prefill)
  }
  return costs
}

/** One real run of `candidate` over the workload, timed with `clock`. */
async function measureRun(input: AdviseInput, candidate: Candidate, clock: () => number): Promise<Measured> {
  const run = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).newRun()
  const draft = candidate.draft === null ? undefined : input.drafts[candidate.draft]
  let tokens = 0
  let ms = 0
  for (const [index, promptTokens] of input.prompts.entries()) {
    const started = clock()
    const outcome = await decodeOnce({
      decoder: run(),
      models: draft ? { target: input.target, draft } : { target: input.target },
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
  const candidates = input.candidates ?? candidateGrid(Object.keys(input.drafts))
  const used = Object.fromEntries(Object.entries(input.drafts).filter(([name]) => candidates.some((c) => c.draft === name)))
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
  const costs = await measureCosts(input, trace, candidates)
  input.onProgress?.('replay')
  const verdicts = await rankCandidates(trace, candidates, costs)
  const measured: Measured[] = []
  const top = verdicts.filter((v) => v.prediction && v.candidate.method !== 'ar').slice(0, input.verifyTop ?? 0)
  if (top.length > 0) {
    const clock = input.clock ?? (() => performance.now())
    for (const candidate of [AR_CANDIDATE, ...top.map((v) => v.candidate)]) {
      input.onProgress?.('measure')
      measured.push(await measureRun(input, candidate, clock))
    }
  }
  return { trace, costs, verdicts, measured }
}
