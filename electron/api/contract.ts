/**
 * The api's channels, shared by Electron IPC, the browser bridge and the CLI: each channel declared once, with the
 * zod schema its request must pass and the type it answers. The payload schemas and response types live in the
 * domain modules beside this one (runs, models, chat, decode, workbench, suites, app, methods); pushed events in
 * events.ts, the envelopes that carry both in transport.ts.
 */
import { z } from 'zod'
import type { AppInfo, NativeBackendInfo } from './app'
import { AdvisorStart, type AdvisorProgress } from './advisor'
import {
  ConversationExportFormat,
  GenerationSettings,
  PromptFormat,
  type ChatMessage,
  type Conversation,
  type ConversationExport,
  type ConversationSummary
} from './chat'
import { Id, Text } from './fields'
import {
  LoadSettings,
  ModelFilePath,
  ModelUri,
  TrioSelection,
  type CatalogTrio,
  type DownloadState,
  type LoadedTrio,
  type ModelEntry,
  type ModelInspection,
  type ModelLibrary,
  type TrioCheck
} from './models'
import {
  RunFilter,
  type PerplexityPoint,
  type RunDetails,
  type RunDiffDetails,
  type RunExport,
  type RunListItem,
  type RunReport,
  type RunReportFiles,
  type RunsDiffDetails,
  type RunsFile,
  type RunsImport,
  type RunSummary,
  type StepRow,
  MAX_DIFF_RUNS,
  UPLOAD_CHUNK_CHARS
} from './runs'
import { SuiteStart, type SuiteJobProgress, type SuiteReportFiles, type SuiteRunInfo } from './suites'
import { WorkbenchStart, type DatasetInfo, type WorkbenchProgress } from './workbench'
import type { StoredAdvice } from './advice'

declare const responseType: unique symbol
/** Phantom marker carrying a channel's response type; it has no runtime content. */
export interface Returns<Response> {
  readonly [responseType]: Response
}
/** `returns<T>()`: the response type of a channel (type-level only). */
export const returns = <Response>(): Returns<Response> => ({}) as Returns<Response>

/** One api channel: the zod schema its payload must pass, and (as a phantom type) what it answers. */
export interface ApiChannelSpec<Request extends z.ZodType = z.ZodType, Response = unknown> {
  readonly request: Request
  readonly response: Returns<Response>
}
const channel = <Request extends z.ZodType, Response>(
  request: Request,
  response: Returns<Response>
): ApiChannelSpec<Request, Response> => ({ request, response })

/**
 * IPC / browser-bridge channels. Request schemas have no defaults or transforms, so what a caller sends is exactly
 * what a handler receives: the engine host validates every request, and Electron main again before it forwards.
 * Responses are plain types the host produces and the UI renders.
 */
export const API = {
  'runs:list': channel(z.object({ limit: z.number().int().positive().max(10_000).optional() }), returns<RunSummary[]>()),
  'runs:show': channel(z.object({ runId: z.number().int().positive() }), returns<RunReport | null>()),

  'app:info': channel(z.object({}), returns<AppInfo>()),
  /** Privileged: only Electron main's File → Open database calls it (see PRIVILEGED_CHANNELS). */
  'app:open-database': channel(z.object({ path: Text(4096).min(1) }), returns<AppInfo>()),
  /** The llama.cpp binary in use and SpecLab's OpenMP CPU build (as AppInfo.native, asked again). */
  'app:native-backend': channel(z.object({}), returns<NativeBackendInfo>()),
  /** Builds node-llama-cpp's CPU backend with OpenMP (~6 minutes; progress as `native:build-progress`). */
  'app:build-cpu-backend': channel(z.object({}), returns<NativeBackendInfo>()),
  'app:cancel-cpu-build': channel(z.object({}), returns<{ cancelled: boolean }>()),

  'models:list': channel(z.object({}), returns<ModelLibrary>()),
  'models:add': channel(z.object({ path: ModelFilePath }), returns<ModelEntry>()),
  'models:remove': channel(z.object({ modelId: Id }), returns<{ removed: boolean }>()),
  'models:inspect': channel(z.object({ modelId: Id }), returns<ModelInspection>()),
  /** settings: the load about to be made, for the memory estimate (context size; 4 KV sequences). */
  'models:check-trio': channel(TrioSelection.extend({ settings: LoadSettings.optional() }), returns<TrioCheck>()),
  /** retryFailed: load files whose last load killed the engine process anyway (the user chose "Try again"). */
  'models:load': channel(z.object({ trio: TrioSelection, settings: LoadSettings, retryFailed: z.boolean().optional() }), returns<LoadedTrio>()),
  'models:unload': channel(z.object({}), returns<{ unloaded: boolean }>()),
  /** Measures the loaded trio's threads per model and phase again (the cache is replaced) and applies them. */
  'models:calibrate': channel(z.object({}), returns<LoadedTrio>()),
  'models:catalog': channel(z.object({}), returns<CatalogTrio[]>()),
  'models:download': channel(z.object({ uri: ModelUri }), returns<DownloadState>()),
  'models:download-cancel': channel(z.object({ downloadId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'models:downloads': channel(z.object({}), returns<DownloadState[]>()),

  /** query: only conversations whose name or a shown message contains it (taken literally). */
  'chat:conversations': channel(z.object({ query: Text(200).optional() }), returns<ConversationSummary[]>()),
  'chat:conversation': channel(z.object({ conversationId: Id }), returns<Conversation | null>()),
  'chat:delete-conversation': channel(z.object({ conversationId: Id }), returns<{ deleted: boolean }>()),
  'chat:rename-conversation': channel(
    z.object({ conversationId: Id, title: Text(200).refine((t) => t.trim().length > 0, 'a conversation needs a name') }),
    returns<ConversationSummary>()
  ),
  /** The conversation as shown, as a file to save (Markdown, or JSON with every reply's alternatives). */
  'chat:export': channel(z.object({ conversationId: Id, format: ConversationExportFormat }), returns<ConversationExport>()),
  /** Shows this reply instead of the other alternatives to its user message (only for the conversation's last reply). */
  'chat:select-alternative': channel(z.object({ messageId: Id }), returns<ChatMessage>()),
  'chat:send': channel(
    z.object({
      conversationId: Id.nullable(),
      text: Text(100_000).refine((t) => t.trim().length > 0, 'the message is empty'),
      settings: GenerationSettings,
      format: PromptFormat,
      systemPrompt: Text(20_000),
      /**
       * Edit and regenerate: this user message of the conversation and every message after it are replaced by the
       * text sent (its own text again to regenerate the reply), once the generation has started.
       */
      replaceFrom: Id.optional(),
      /**
       * Regenerate: this user message (the conversation's last) is asked again; its earlier replies are kept as
       * alternatives and `text` must be its own text.
       */
      regenerate: Id.optional()
    }).refine((r) => r.replaceFrom === undefined || r.regenerate === undefined, 'edit (replaceFrom) or regenerate, not both'),
    returns<{ conversationId: number; generationId: string; userMessage: ChatMessage }>()
  ),
  'chat:stop': channel(z.object({ generationId: Text(100).min(1) }), returns<{ stopped: boolean }>()),
  /** Measures a reply's speedup over ar on its own prompt tokens (the trio that generated it must be loaded). */
  'chat:baseline': channel(z.object({ messageId: Id }), returns<ChatMessage>()),

  'workbench:datasets': channel(z.object({}), returns<DatasetInfo[]>()),
  'workbench:import-dataset': channel(z.object({ path: Text(4096).min(1) }), returns<DatasetInfo>()),
  'workbench:start': channel(WorkbenchStart, returns<{ jobId: string }>()),
  'workbench:cancel': channel(z.object({ jobId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'workbench:status': channel(z.object({}), returns<WorkbenchProgress | null>()),

  'suites:start': channel(SuiteStart, returns<{ jobId: string }>()),
  'suites:cancel': channel(z.object({ jobId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'suites:status': channel(z.object({}), returns<SuiteJobProgress | null>()),
  'suites:runs': channel(z.object({ limit: z.number().int().positive().max(1000).optional() }), returns<SuiteRunInfo[]>()),
  'suites:report': channel(z.object({ suiteRunId: Id }), returns<SuiteReportFiles>()),

  /** Starts `speclab advise` on library models (the loaded trio's are lent); progress is pushed as advisor:progress. */
  'advisor:start': channel(AdvisorStart, returns<{ jobId: string }>()),
  'advisor:cancel': channel(z.object({ jobId: Text(100).min(1) }), returns<{ cancelled: boolean }>()),
  'advisor:status': channel(z.object({}), returns<AdvisorProgress | null>()),
  /** A stored advice run (suite 'advise'): its recommendation, every candidate predicted and measured, the profile. */
  'advisor:advice': channel(z.object({ runId: Id }), returns<StoredAdvice>()),

  'runs:search': channel(RunFilter, returns<RunListItem[]>()),
  'runs:details': channel(z.object({ runId: Id }), returns<RunDetails | null>()),
  'runs:steps': channel(z.object({ resultId: Id }), returns<StepRow[]>()),
  'runs:delete': channel(z.object({ runId: Id }), returns<{ deleted: boolean }>()),
  /** Names a run and keeps notes on it (empty text clears them). */
  'runs:annotate': channel(z.object({ runId: Id, name: Text(200), notes: Text(20_000) }), returns<RunSummary>()),
  'runs:export': channel(z.object({ runId: Id, format: z.enum(['csv', 'json']) }), returns<RunExport>()),
  'runs:diff': channel(z.object({ a: Id, b: Id }), returns<RunDiffDetails>()),
  'runs:perplexity': channel(z.object({ runId: Id }), returns<PerplexityPoint[]>()),
  /** The run's report as Markdown and self-contained HTML (what `speclab show RUN --format md|html` prints). */
  'runs:report': channel(z.object({ runId: Id }), returns<RunReportFiles>()),
  /** Three to eight runs side by side; two runs go through runs:diff. */
  'runs:diff-many': channel(z.object({ runIds: z.array(Id).min(3).max(MAX_DIFF_RUNS) }), returns<RunsDiffDetails>()),
  /** The chosen runs as one file for another database (`speclab runs export`). */
  'runs:export-runs': channel(z.object({ runIds: z.array(Id).min(1).max(10_000) }), returns<RunsFile>()),
  /** Adds the runs of a file on this computer (the desktop app's open dialog; `speclab runs import`). */
  'runs:import': channel(z.object({ path: Text(4096).min(1) }), returns<RunsImport>()),
  /**
   * Browser mode's upload of a runs file, in chunks in order (index 0, 1, …) under one id; the last chunk imports
   * it and answers what the import did (null before).
   */
  'runs:import-upload': channel(
    z.object({
      uploadId: Text(100).min(1),
      fileName: Text(500).min(1),
      index: z.number().int().min(0),
      last: z.boolean(),
      data: z.string().max(UPLOAD_CHUNK_CHARS).regex(/^[A-Za-z0-9+/]*={0,2}$/, 'not base64')
    }),
    returns<{ received: number; imported: RunsImport | null }>()
  )
} as const satisfies Record<string, ApiChannelSpec>

export type ApiChannel = keyof typeof API
export type ApiRequest<C extends ApiChannel> = z.infer<(typeof API)[C]['request']>
export type ApiResponse<C extends ApiChannel> = (typeof API)[C]['response'][typeof responseType]

/** A known api channel name (own keys of `API` only, so 'toString' or '__proto__' are not channels). */
export function isApiChannel(name: unknown): name is ApiChannel {
  return typeof name === 'string' && Object.hasOwn(API, name)
}

/** Derived views of `API`, for callers that index by channel: each channel's request schema, and response type. */
export const ApiRequests = Object.fromEntries(Object.entries(API).map(([name, spec]) => [name, spec.request])) as {
  readonly [C in ApiChannel]: (typeof API)[C]['request']
}
export type ApiResponses = { [C in ApiChannel]: ApiResponse<C> }

/**
 * Channels only Electron main may call (its menu acts on the user's choice in a native dialog). The preload
 * bridge and the browser server refuse them, so a page cannot point the app at an arbitrary file.
 */
export const PRIVILEGED_CHANNELS: ReadonlySet<ApiChannel> = new Set<ApiChannel>(['app:open-database'])
