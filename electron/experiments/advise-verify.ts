/**
 * The advisor's verification: the best predicted candidates, `ar` and — where llama-server runs and a draft-model
 * candidate maps to it — llama-server's own default speculation (`llama-server:draft`, n_max 3, p_min 0) measured in
 * ONE interleaved run with repeats, stored like any run (suite 'advise'), so every speedup is paired with ar on the
 * same (prompt, repeat) and carries its 95 % interval, and `speclab runs` / `show` / `diff` find the advice.
 *
 * Why arms rather than methods: a run's config holds one γ and one parameter set, while the candidates are the same
 * method at several γ / parameters / draft models / thread plans. Each candidate is therefore an ARM of the runner
 * (runner.ts RunOptions.arms) whose cells are stored under its label; config.methods lists the methods the arms use
 * (for filters and the runs list), and config.advice says which candidate each label is (api/advice.ts).
 */
import type { AdviceArm, AdviceRecord, PricedWith, ServerPricingRecord } from '../api/advice'
import type { Deploy } from '../api/advisor'
import type { RunConfig, RunReport } from '../api/runs'
import type { DecoderModels } from '../engine/decoders/types'
import { llamaServerEquivalent } from '../engine/replay/deployment'
import { findMethod, prepare, type PreparedMethod } from '../engine/methods/prepare'
import type { ParamValue } from '../engine/methods/param-spec'
import type { LanguageModel } from '../engine/model/types'
import type { Verdict } from '../engine/replay/advise'
import type { WorkloadProfile } from '../engine/replay/profile'
import type { Candidate } from '../engine/replay/replay'
import type { RunStore } from '../store/run-store'
import type { Advice } from './advise'
import { withThreads, type ArmThreads } from './peer-bench'
import { isGreedy, type WarpConfig } from '../engine/sampling/warp'
import type { PromptItem } from './prompts'
import { executeRun, type Arm, type RunOptions } from './runner'

export type { Deploy } from '../api/advisor'

export interface VerifyArm {
  label: string
  candidate: Candidate
  threads: ArmThreads
  predicted: { tokensPerSecond: number; speedup: number; ms: number; pricedWith: PricedWith } | null
  /** The grid candidate whose replayed rounds predict it (itself, or the SpecLab twin of a llama-server arm); null: none. */
  basis: Candidate | null
}

/** llama-server's default speculation with a draft model in the bundled llama.cpp: n_max 3, n_min 0, p_min 0. */
export const LLAMA_SERVER_DEFAULT_GAMMA = 3

/** "sd γ=4", "sd-pmin pmin.p=0.3 pmin.max=8", with "← draft" when several drafts were compared. */
export function armLabel(candidate: Candidate, withDraft: boolean): string {
  if (candidate.method === 'ar') return 'ar'
  const gamma = findMethod(candidate.method)?.gamma ? [`γ=${candidate.gamma}`] : []
  const params = Object.entries(candidate.params).map(([key, value]) => `${key}=${value}`)
  // A hierarchy names its models always, the draft first: "← draft ← mid" reads as the chain the tokens pass.
  const draft = (withDraft || candidate.mid) && candidate.draft !== null ? [`← ${candidate.draft}`] : []
  const mid = candidate.mid ? [`← ${candidate.mid}`] : []
  return [candidate.method, ...gamma, ...params, ...draft, ...mid].join(' ')
}

const predictedOf = (verdict: Verdict | undefined): VerifyArm['predicted'] =>
  verdict?.prediction ? { tokensPerSecond: verdict.prediction.tokensPerSecond, speedup: verdict.prediction.speedup, ms: verdict.prediction.ms, pricedWith: 'speclab' } : null

export interface ArmChoice {
  /** How many predicted candidates to measure besides ar. */
  top: number
  deploy: Deploy
  /** Whether a llama-server binary was found (the `llama-server:draft` arm needs one). */
  serverAvailable: boolean
  /** Several drafts compared: labels name the draft. */
  severalDrafts: boolean
  /** The threads an arm runs with: its thread plan's, else the models' as loaded. */
  threadsOf(verdict: Verdict | undefined): ArmThreads
}

/** Whether llama-server can run the candidate (`--deploy llama-server` keeps only those). */
export const servable = (c: Candidate): boolean => llamaServerEquivalent({ ...c, draftFile: c.draft }).method !== null

/** Same method, draft and γ, and the same parameters once the catalog's defaults fill them in. */
function sameConfiguration(a: Candidate, b: Candidate): boolean {
  const resolved = (c: Candidate) => JSON.stringify(Object.entries(prepare(c.method, { gamma: c.gamma, params: c.params }).params).sort())
  return a.method === b.method && a.draft === b.draft && (a.mid ?? null) === (b.mid ?? null) && a.gamma === b.gamma && resolved(a) === resolved(b)
}

/** The `llama-server:*` candidate that runs `candidate`'s configuration; null when llama-server has none. */
function onLlamaServer(candidate: Candidate): Candidate | null {
  const equivalent = llamaServerEquivalent({ ...candidate, draftFile: candidate.draft })
  return equivalent.method === null ? null : { method: equivalent.method, gamma: equivalent.gamma, params: equivalent.params, draft: candidate.draft }
}

/**
 * The grid as llama-server runs it, for `--deploy llama-server` under sampling: each draft-model candidate becomes
 * its `llama-server:draft` equivalent (once), whose rounds under sampling are llama.cpp's own — the draft's top
 * token, kept while the target's sample equals it (replay/llama-server-draft.ts) — so the configurations are ranked
 * by what llama-server will do with them, and its best n_max / p_min is the one measured. Under greedy decoding both
 * engines make the same rounds and the grid is kept (its candidates replay with SpecLab's own decoders); the n-gram
 * candidates are kept too (a looked-up token is accepted with p(x) by either engine).
 */
export function gridAsServed(grid: readonly Candidate[], deploy: Deploy, warp: WarpConfig): Candidate[] {
  if (deploy !== 'llama-server' || isGreedy(warp)) return [...grid]
  const served: Candidate[] = []
  for (const candidate of grid) {
    const onServer = candidate.draft === null ? null : onLlamaServer(candidate)
    const next = onServer?.method === 'llama-server:draft' ? onServer : candidate
    if (!served.some((c) => sameConfiguration(c, next))) served.push(next)
  }
  return served
}

/**
 * ar, the best `top` predicted candidates that `deploy` allows, and — where a llama-server binary exists and the
 * deployment may be llama-server — llama-server's runs of them:
 *  - `deploy` 'llama-server': each top candidate is measured AS llama-server runs it (its `llama-server:*`
 *    equivalent), since that is what the user will deploy; the rounds are the same, so the prediction is the
 *    candidate's;
 *  - 'any': every top candidate's llama-server equivalent is measured beside it, so whichever of them the
 *    measurement makes the recommendation, the llama-server command it prints is a measured one (and, under greedy
 *    decoding, the same rounds are timed on both engines);
 *  - both: llama-server's own default speculation with that draft (`-md D --spec-type draft-simple`, n_max 3, p_min
 *    0), what a user who deploys without advice gets.
 * A configuration is measured once (a top candidate whose llama-server equivalent IS llama-server's default).
 */
export function chooseArms(verdicts: readonly Verdict[], choice: ArmChoice): VerifyArm[] {
  const ar = verdicts.find((v) => v.candidate.method === 'ar')
  const onServer = choice.serverAvailable && choice.deploy !== 'speclab'
  const top = verdicts.filter((v) => v.prediction && v.candidate.method !== 'ar' && (choice.deploy !== 'llama-server' || servable(v.candidate))).slice(0, choice.top)
  const arm = (verdict: Verdict | undefined, candidate: Candidate): VerifyArm => ({
    label: armLabel(candidate, choice.severalDrafts),
    candidate,
    threads: choice.threadsOf(verdict),
    predicted: predictedOf(verdict),
    basis: verdict?.candidate ?? null
  })
  const arms: VerifyArm[] = [arm(ar, { method: 'ar', gamma: 1, params: {}, draft: null })]
  const add = (a: VerifyArm) => {
    if (!arms.some((b) => sameConfiguration(a.candidate, b.candidate))) arms.push(a)
  }
  for (const verdict of top) {
    const served = choice.deploy === 'llama-server' && choice.serverAvailable ? onLlamaServer(verdict.candidate) : null
    add(arm(verdict, served ?? verdict.candidate))
  }
  if (onServer && choice.deploy === 'any') {
    for (const verdict of top) {
      const served = onLlamaServer(verdict.candidate)
      if (served) add(arm(verdict, served))
    }
  }
  const drafted = top.find((v) => v.candidate.draft !== null && onLlamaServer(v.candidate)?.method === 'llama-server:draft')
  if (onServer && drafted) {
    // Its rounds are SpecLab's sd at the same γ with the same draft: the same rounds, a different engine (priced
    // with llama-server's own costs where they were measured: advise-server-pricing.ts).
    const serverDefault: Candidate = { method: 'llama-server:draft', gamma: LLAMA_SERVER_DEFAULT_GAMMA, params: {}, draft: drafted.candidate.draft }
    const twin =
      verdicts.find((v) => sameConfiguration(v.candidate, serverDefault)) ??
      verdicts.find((v) => v.candidate.method === 'sd' && v.candidate.gamma === LLAMA_SERVER_DEFAULT_GAMMA && v.candidate.draft === serverDefault.draft)
    add(arm(twin, serverDefault))
  }
  return arms
}

/** The arm's method with its threads set and its draft model swapped in just before each decode (warm-up included). */
const armMethod = (method: PreparedMethod, threads: ArmThreads, draft: LanguageModel | undefined): PreparedMethod => withThreads(method, threads, draft)

/** The runner's arms for `arms`, each prepared by the method catalog (a bad parameter is refused here, before any decode). */
export function runnerArms(arms: readonly VerifyArm[], drafts: Readonly<Record<string, LanguageModel>>): Arm[] {
  return arms.map(({ label, candidate, threads }) => {
    const prepared = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params })
    return { label, method: armMethod(prepared, threads, candidate.draft === null ? undefined : drafts[candidate.draft]) }
  })
}

/** The distinct methods of the arms, ar first: what config.methods lists. */
export const armMethods = (arms: readonly VerifyArm[]): string[] => [...new Set(arms.map((a) => a.candidate.method))]

/** What the run stores about the advice (api/advice.ts). */
export function adviceRecord(advice: Advice, profile: WorkloadProfile, drafts: Readonly<Record<string, string>>, arms: readonly VerifyArm[], server?: ServerPricingRecord): AdviceRecord {
  const params = (p: Readonly<Record<string, ParamValue>>) => ({ ...p })
  return {
    trace: { prompts: advice.trace.prompts.length, tokens: advice.trace.prompts.reduce((n, p) => n + p.tokens.length, 0), mode: advice.verdicts[0]?.mode ?? 'replayed' },
    drafts: { ...drafts },
    profile,
    predictions: advice.verdicts.map((v) => ({
      method: v.candidate.method,
      gamma: v.candidate.gamma,
      params: params(v.candidate.params),
      draft: v.candidate.draft,
      ...(v.candidate.mid ? { mid: v.candidate.mid } : {}),
      plan: v.plan ?? null,
      ...(v.prediction ? { pricedWith: 'speclab' as const } : {}),
      tokensPerSecond: v.prediction?.tokensPerSecond ?? null,
      speedup: v.prediction?.speedup ?? null,
      error: v.error
    })),
    arms: arms.map((a): AdviceArm => ({
      label: a.label,
      method: a.candidate.method,
      gamma: a.candidate.gamma,
      params: params(a.candidate.params),
      draft: a.candidate.draft,
      ...(a.candidate.mid ? { mid: a.candidate.mid } : {}),
      threads: a.threads,
      predicted: a.predicted ? { tokensPerSecond: a.predicted.tokensPerSecond, speedup: a.predicted.speedup } : null,
      pricedWith: a.predicted?.pricedWith ?? null
    })),
    ...(server ? { llamaServerCosts: server.costs, llamaServerNote: server.note } : {})
  }
}

/** The verification run: `config` (suite 'advise', config.advice set) with the arms interleaved, stored in `store`. */
export async function runVerification(
  store: RunStore,
  config: RunConfig,
  models: DecoderModels,
  prompts: readonly PromptItem[],
  arms: readonly Arm[],
  options: Omit<RunOptions, 'arms'> = {}
): Promise<RunReport> {
  return executeRun(store, config, models, prompts, { ...options, arms })
}
