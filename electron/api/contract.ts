/**
 * The ONE contract shared by Electron IPC, the browser bridge and the CLI: zod schemas validate every payload
 * that crosses a process boundary, and the TypeScript types are inferred from them.
 */
import { z } from 'zod'

/** Method ids (DESIGN.md CLI contract — keep stable). */
export const METHOD_IDS = [
  'ar',
  'sd',
  'sd-heuristic',
  'sd-pmin',
  'svip',
  'self-verify',
  'adaptive-analytic',
  'adaptive-fsm',
  'adaptive-cache-fsm',
  'adaptive-rl',
  'pre-verify',
  'pre-self-verify',
  'hsddw',
  'hier-chen',
  'beam',
  'dsbd',
  'dsbd-1beam',
  'nlc-draft'
] as const
export const MethodId = z.enum(METHOD_IDS)
export type MethodId = z.infer<typeof MethodId>

export const SamplingConfig = z.object({
  /** 0 = greedy (argmax verify/correct). */
  temperature: z.number().min(0).max(10),
  /** Top-k warping for draft and target alike; 0 = whole vocabulary. */
  topK: z.number().int().min(0).max(1_000_000),
  topP: z.number().gt(0).max(1),
  /** Transfer the full vocabulary from node-llama-cpp instead of the top-k (exact but ~10 ms/position at 32k). */
  fullVocabulary: z.boolean()
})
export type SamplingConfig = z.infer<typeof SamplingConfig>

export const ModelPaths = z.object({
  target: z.string().min(1),
  mid: z.string().min(1).optional(),
  draft: z.string().min(1).optional(),
  /** Every candidate draft when the run selects a draft per prompt (004 §5); `draft` is then the first. */
  drafts: z.array(z.string().min(1)).optional()
})
export type ModelPaths = z.infer<typeof ModelPaths>

/** What a model file was when the run used it: size + a hash of its head and tail (fast on multi-GB files). */
export const ModelFingerprint = z.object({
  path: z.string(),
  sizeBytes: z.number(),
  fingerprint: z.string(),
  architecture: z.string(),
  vocabularySize: z.number()
})
export type ModelFingerprint = z.infer<typeof ModelFingerprint>

export const PromptSource = z.object({
  /** Built-in prompt set id (resources/prompts) … */
  dataset: z.string().optional(),
  /** … or a JSONL file with `turns`, `question`, `prompt` or `text` per line. */
  file: z.string().optional(),
  limit: z.number().int().positive().optional()
})
export type PromptSource = z.infer<typeof PromptSource>

export const ParamValue = z.union([z.number(), z.string(), z.boolean()])

export const RunConfig = z.object({
  suite: z.string().nullable(),
  methods: z.array(MethodId).min(1),
  models: ModelPaths,
  modelFingerprints: z.array(ModelFingerprint).default([]),
  prompts: PromptSource,
  maxTokens: z.number().int().positive().max(100_000),
  sampling: SamplingConfig,
  seed: z.number().int().min(0).max(2 ** 32 - 1),
  /** Draft length γ for fixed-window methods. */
  gamma: z.number().int().min(1).max(128),
  /** Method parameters given with --set key=value. */
  params: z.record(z.string(), ParamValue),
  threads: z.number().int().positive().max(256),
  contextSize: z.number().int().positive(),
  /** Adaptive draft-model selection (004 §5) among models.drafts; null = always models.draft. */
  draftSelection: z.object({ warmupPrompts: z.number().int().min(3).max(1000) }).nullable().default(null)
})
export type RunConfig = z.infer<typeof RunConfig>

export const RunStatus = z.enum(['running', 'done', 'cancelled', 'interrupted', 'failed'])
export type RunStatus = z.infer<typeof RunStatus>

export const RunSummary = z.object({
  id: z.number().int(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  suite: z.string().nullable(),
  methods: z.array(z.string()),
  status: RunStatus,
  error: z.string().nullable(),
  promptCount: z.number().int()
})
export type RunSummary = z.infer<typeof RunSummary>

/** Per-method aggregate — the `methods[]` entries of `speclab run --json` (DESIGN contract fields first). */
export const MethodSummary = z.object({
  method: z.string(),
  prompts: z.number().int(),
  outputTokens: z.number().int(),
  wallMs: z.number(),
  tokensPerSecond: z.number(),
  /** tokens/s ÷ `ar` tokens/s over the same prompts in the same run; null without an `ar` baseline. */
  speedup: z.number().nullable(),
  sigma: z.number().nullable(),
  eta: z.number().nullable(),
  acceptanceRate: z.number().nullable(),
  meanAcceptedLength: z.number().nullable(),
  targetCalls: z.number().int(),
  draftTokens: z.number().int(),
  acceptedTokens: z.number().int(),
  /** γ per verification round, per prompt. */
  gammaTrajectory: z.array(z.array(z.number())),
  outputs: z.array(z.string()),
  // Beyond the contract: the time split the benchmark and the UI need.
  draftMs: z.number(),
  verifyMs: z.number(),
  overheadMs: z.number(),
  steps: z.number().int(),
  overheadPerStepMs: z.number().nullable()
})
export type MethodSummary = z.infer<typeof MethodSummary>

export const RunReport = z.object({
  runId: z.number().int(),
  config: RunConfig,
  status: RunStatus,
  methods: z.array(MethodSummary)
})
export type RunReport = z.infer<typeof RunReport>

/** IPC / browser-bridge requests. Each channel: request schema → response type. */
export const ApiRequests = {
  'runs:list': z.object({ limit: z.number().int().positive().max(10_000).optional() }),
  'runs:show': z.object({ runId: z.number().int().positive() })
} as const
export type ApiChannel = keyof typeof ApiRequests
export interface ApiResponses {
  'runs:list': RunSummary[]
  'runs:show': RunReport | null
}
export type ApiRequest<C extends ApiChannel> = z.infer<(typeof ApiRequests)[C]>
