/**
 * The setup advisor inside the GPU check (`--advise`): the advisor's prediction on this machine (engine/replay via
 * experiments/advise.ts adviseWorkload: one trace of the check's prompts at its temperature — greedy: the rounds
 * replayed; sampled: their expected values —, the costs measured here, every candidate of the grid priced), and the arms that measure it — its best `top` SpecLab candidates and
 * llama-server's own default speculation (`-md D --spec-type draft-simple`: n_max 3, n_min 0, p_min 0) — which
 * entry.ts runs in the same interleaved bench as the check's other arms, so every figure has its 95 % interval and
 * every ratio is paired per (prompt, repeat). No store: the bundle never imports better-sqlite3, so the advisor's own
 * stored verification (experiments/advise-run.ts) is replaced by these arms.
 */
import type { DecoderModels } from '../../electron/engine/decoders/types'
import { AR_CANDIDATE } from '../../electron/engine/replay/advise'
import type { Candidate } from '../../electron/engine/replay/replay'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { adviseWorkload } from '../../electron/experiments/advise'
import { LLAMA_SERVER_DEFAULT_GAMMA } from '../../electron/experiments/advise-verify'
import { applyThreads, threadsText, type ArmSpec, type ArmThreads } from '../../electron/experiments/peer-bench'

/** One predicted configuration: its arm's label (as parseArm writes it) and the advisor's figures. */
export interface AdvisedArm {
  label: string
  method: string
  gamma: number
  params: Candidate['params']
  predicted: { tokensPerSecond: number; speedup: number }
}

export interface AdvicePlan {
  /** The advisor's best SpecLab candidates, fastest predicted first. */
  advised: AdvisedArm[]
  /** ar as the advisor priced it. */
  ar: { tokensPerSecond: number }
  /** The arm of llama-server's default speculation. */
  serverDefault: string
  /**
   * What priced them: c_T(k) for k = 1 … 9, the draft's c_D, s (sd's rounds) and s‖ (PEARL's), ms; and what each
   * decode paid outside its rounds and its prompt (null: not measured).
   */
  costs: { targetMs: number[]; draftMs: number; roundScale: number | null; overlapScale: number | null; decodeOutsideMs?: number | null }
  /** Candidates replayed and priced (the grid) and the seconds the advice took. */
  candidates: number
  seconds: number
}

/** The arm label of `candidate`: `METHOD[+key=value…]+gamma=N@T/B/D`, which parseArm reads back. */
export function armLabelOf(candidate: Pick<Candidate, 'method' | 'gamma' | 'params'>, threads: ArmThreads): string {
  const settings = Object.entries(candidate.params).map(([key, value]) => `+${key}=${value}`)
  return `${candidate.method}${settings.join('')}+gamma=${candidate.gamma}@${threadsText(threads)}`
}

/** The arm spec of an advised candidate (or llama-server's default) at `threads`. */
export function armSpecOf(candidate: Pick<Candidate, 'method' | 'gamma' | 'params'>, threads: ArmThreads): ArmSpec {
  return { label: armLabelOf(candidate, threads), method: candidate.method, params: { ...candidate.params }, gamma: candidate.gamma, threads }
}

export interface AdviceInput {
  models: DecoderModels
  /** The draft's name in the advice (its file's name). */
  draftName: string
  promptTokens: number[][]
  maxTokens: number
  warp: WarpConfig
  seed: number
  threads: ArmThreads
  top: number
}

/** Runs the advisor at `threads` and returns its plan and the arms that measure it. */
export async function planAdvice(input: AdviceInput): Promise<{ plan: AdvicePlan; specs: ArmSpec[] }> {
  const started = performance.now()
  applyThreads(input.models, input.threads)
  const draft = input.models.draft
  if (!draft) throw new Error('the advice needs the draft model')
  const advice = await adviseWorkload({
    target: input.models.target,
    drafts: { [input.draftName]: draft },
    prompts: input.promptTokens,
    warp: input.warp,
    seed: input.seed,
    maxTokens: input.maxTokens,
    verifyTop: 0
  })
  const priced = advice.verdicts.filter((v) => v.prediction && v.candidate.method !== AR_CANDIDATE.method)
  const advised = priced.slice(0, input.top).map((v) => ({
    label: armLabelOf(v.candidate, input.threads),
    method: v.candidate.method,
    gamma: v.candidate.gamma,
    params: v.candidate.params,
    predicted: { tokensPerSecond: v.prediction!.tokensPerSecond, speedup: v.prediction!.speedup }
  }))
  const ar = advice.verdicts.find((v) => v.candidate.method === AR_CANDIDATE.method)?.prediction
  const serverDefault = armSpecOf({ method: 'llama-server:draft', gamma: LLAMA_SERVER_DEFAULT_GAMMA, params: {} }, input.threads)
  const draftCost = advice.costs.drafts[input.draftName]
  const plan: AdvicePlan = {
    advised,
    ar: { tokensPerSecond: ar?.tokensPerSecond ?? 0 },
    serverDefault: serverDefault.label,
    costs: {
      targetMs: (draftCost?.targetMs ?? advice.costs.targetMs).slice(0, 9),
      draftMs: draftCost?.ms ?? 0,
      roundScale: draftCost?.roundScale ?? null,
      overlapScale: draftCost?.overlapScale ?? null,
      decodeOutsideMs: advice.costs.decodeOutsideMs ?? null
    },
    candidates: priced.length,
    seconds: (performance.now() - started) / 1000
  }
  return { plan, specs: [...advised.map((a) => armSpecOf(a, input.threads)), serverDefault] }
}
