/**
 * The workbench: a run started from the app (methods, a prompt set, a trio and its load, decoding settings), its
 * progress pushed while it runs, and the prompt sets it offers.
 */
import { z } from 'zod'
import { settingSchema } from '../engine/settings/run-settings'
import { DecodeSettings } from './decode'
import { Id, Text } from './fields'
import { METHOD_IDS, MethodId } from './methods'
import { LoadSettings, TrioSelection } from './models'
import { RunStatus } from './runs'

/** A prompt set: a built-in one by id, or a JSONL file by path. */
export const DatasetChoice = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('builtin'), id: Text(100).min(1) }),
  z.object({ kind: z.literal('file'), path: Text(4096).min(1) })
])
export type DatasetChoice = z.infer<typeof DatasetChoice>

export const WorkbenchStart = z.object({
  /** A suite id from electron/experiments/suites.ts, recorded with the run; null for an ad-hoc run. */
  suite: Text(100).min(1).nullable(),
  methods: z.array(MethodId).min(1).max(METHOD_IDS.length),
  dataset: DatasetChoice,
  limit: settingSchema('limit').nullable(),
  models: TrioSelection,
  load: LoadSettings,
  settings: DecodeSettings,
  /** Timed repeats per (prompt, method); absent: 3 when ar is compared with another method, else 1. */
  repeats: settingSchema('repeats').optional()
})
export type WorkbenchStart = z.infer<typeof WorkbenchStart>

/** A workbench run as it goes (pushed as `workbench:progress`, and answered by workbench:status). */

export const WorkbenchProgress = z.object({
  jobId: z.string(),
  runId: Id.nullable(),
  phase: z.enum(['loading', 'running', 'finished']),
  message: z.string(),
  promptIndex: z.number().int().min(0),
  promptCount: z.number().int().min(0),
  method: z.string(),
  /** The timed repeat in progress (0-based) of `repeats`. */
  repeat: z.number().int().min(0),
  repeats: z.number().int().min(1),
  /** Tokens of the current (prompt, repeat, method) decode and its budget. */
  tokens: z.number().int().min(0),
  maxTokens: z.number().int().min(0),
  /** Finished (prompt, repeat, method) decodes and their total. */
  cellsDone: z.number().int().min(0),
  cellsTotal: z.number().int().min(0),
  elapsedMs: z.number().min(0),
  status: RunStatus.nullable(),
  error: z.string().nullable()
})
export type WorkbenchProgress = z.infer<typeof WorkbenchProgress>

/** A prompt set the workbench offers (plain type: the host produces it, the UI renders it). */
export interface DatasetInfo {
  kind: 'builtin' | 'file'
  /** Built-in id, or the file path for an imported JSONL. */
  id: string
  label: string
  prompts: number
  categories: string[]
  preview: string[]
}
