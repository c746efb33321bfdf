/**
 * Events the engine host pushes to the UI (progress, tokens, state changes). The UI validates every event with
 * `HostEvent` before any screen sees it.
 */
import { z } from 'zod'
import { AdvisorProgress } from './advisor'
import { CpuBuildJob, UiCommand } from './app'
import { ChatMessage, LiveStats, TokenPiece } from './chat'
import { Id } from './fields'
import { DownloadState } from './models'
import { SuiteJobProgress } from './suites'
import { WorkbenchProgress } from './workbench'

export const HostEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('models:changed') }),
  z.object({
    type: z.literal('models:load-progress'),
    role: z.enum(['target', 'mid', 'draft']),
    fileName: z.string(),
    /** Model index within the trio being loaded, and how many there are. */
    index: z.number().int().min(0),
    count: z.number().int().min(1),
    fraction: z.number().min(0).max(1),
    /** Reading the file's weights, or measuring its threads per phase once loaded; absent = loading. */
    stage: z.enum(['loading', 'measuring']).optional()
  }),
  z.object({ type: z.literal('download:progress'), download: DownloadState }),
  z.object({ type: z.literal('native:build-progress'), job: CpuBuildJob }),
  z.object({
    type: z.literal('chat:tokens'),
    generationId: z.string(),
    conversationId: Id,
    tokens: z.array(TokenPiece),
    stats: LiveStats
  }),
  z.object({
    type: z.literal('chat:done'),
    generationId: z.string(),
    conversationId: Id,
    message: ChatMessage.nullable(),
    error: z.string().nullable()
  }),
  z.object({ type: z.literal('workbench:progress'), progress: WorkbenchProgress }),
  z.object({ type: z.literal('suite:progress'), progress: SuiteJobProgress }),
  z.object({ type: z.literal('advisor:progress'), progress: AdvisorProgress }),
  z.object({ type: z.literal('runs:changed') }),
  z.object({ type: z.literal('host:status'), state: z.enum(['ready', 'restarting', 'failed']), message: z.string().nullable() }),
  z.object({ type: z.literal('ui:command'), command: UiCommand })
])
export type HostEvent = z.infer<typeof HostEvent>
