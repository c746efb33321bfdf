/**
 * The Advisor screen's job: `speclab advise` started from the app (the workload, the target and candidate drafts,
 * the sampling settings, where the pick will run, a time budget), its progress per stage pushed while it runs, and
 * a stored advice read back for the recommendation card, chart and table.
 */
import { z } from 'zod'
import { settingSchema } from '../engine/settings/run-settings'
import { Id } from './fields'
import { MethodId } from './methods'
import { LoadSettings } from './models'
import { RunStatus } from './runs'
import { DatasetChoice } from './workbench'

/** Where the pick will run: llama-server keeps the candidates llama-server can run (`speclab advise --deploy`). */
export const DEPLOY_TARGETS = ['any', 'speclab', 'llama-server'] as const
export type Deploy = (typeof DEPLOY_TARGETS)[number]

/** The advice's workload: a built-in prompt set, a prompts file, or a chat conversation's messages (its user turns). */
export const AdvisorWorkload = z.union([DatasetChoice, z.object({ kind: z.literal('conversation'), conversationId: Id })])
export type AdvisorWorkload = z.infer<typeof AdvisorWorkload>

export const AdvisorStart = z.object({
  /**
   * Library ids: the target, the candidate drafts and, optionally, a mid model (`speclab advise --mid`: a draft
   * candidate itself, and with each draft the hierarchy hier-chen); the loaded trio's by default.
   */
  models: z.object({ target: Id, drafts: z.array(Id).max(4), mid: Id.nullable().optional() }),
  dataset: AdvisorWorkload,
  limit: settingSchema('limit').nullable(),
  settings: z.object({
    maxTokens: settingSchema('maxTokens'),
    temperature: settingSchema('temperature'),
    topK: settingSchema('topK'),
    topP: settingSchema('topP'),
    seed: settingSchema('seed').nullable()
  }),
  /** The load, when the files are not the loaded trio's (that one is used as loaded). */
  load: LoadSettings,
  repeats: settingSchema('repeats'),
  /** How many of the best predicted candidates are measured beside ar. */
  verify: z.number().int().min(1).max(10),
  deploy: z.enum(DEPLOY_TARGETS),
  /** Seconds the verification run may take (fewer repeats, then fewer candidates); null: no limit. */
  budgetSeconds: z.number().positive().max(86_400).nullable(),
  /** Only these methods of the candidate grid (AppInfo.adviseMethods); absent: all of them. */
  methods: z.array(MethodId).min(1).max(20).optional()
})
export type AdvisorStart = z.infer<typeof AdvisorStart>

/** The stages in the order they run (experiments/advise-run.ts AdviseStage, after the load). */
export const ADVISOR_STAGES = ['loading', 'trace', 'draft-pass', 'replay', 'costs', 'verify'] as const
export const AdvisorStage = z.enum(ADVISOR_STAGES)
export type AdvisorStage = z.infer<typeof AdvisorStage>

/** An advice job as it goes (pushed as `advisor:progress`, and answered by advisor:status). */
export const AdvisorProgress = z.object({
  jobId: z.string(),
  /** The verification run once it exists. */
  runId: Id.nullable(),
  phase: z.union([AdvisorStage, z.literal('finished')]),
  /** The furthest stage begun (where a cancelled or failed job stopped). */
  reached: AdvisorStage,
  message: z.string(),
  /** Trace and draft pass: the prompt being decoded (1-based) of `prompts`, and by which model. */
  prompt: z.number().int().min(0),
  prompts: z.number().int().min(0),
  model: z.string().nullable(),
  /** The verification: the arms measured, their repeats, and finished (prompt, repeat, arm) decodes. */
  arms: z.array(z.string()),
  repeats: z.number().int().min(0),
  estimatedSeconds: z.number().min(0).nullable(),
  cellsDone: z.number().int().min(0),
  cellsTotal: z.number().int().min(0),
  elapsedMs: z.number().min(0),
  status: RunStatus.nullable(),
  error: z.string().nullable()
})
export type AdvisorProgress = z.infer<typeof AdvisorProgress>
