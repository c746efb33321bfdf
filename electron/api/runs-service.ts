/**
 * The api's request handlers, independent of Electron: the IPC handler in main, the browser bridge and tests all
 * go through `handleApiRequest`, which rejects unknown channels and validates every payload with the contract.
 */
import { API, isApiChannel, type ApiChannel, type ApiRequest, type ApiResponse } from './contract'
import type { MethodSummary, RunConfig, RunReport, RunSummary } from './runs'
import { summarizeMethod, type PromptOutcome } from '../engine/metrics/fold'
import { invalidRequestMessage } from './request-errors'
import { findMethod } from '../engine/methods/prepare'
import { theoryFor } from '../engine/theory/measured'
import { whatIfForRun } from '../engine/replay/what-if'

/** One handler per channel; handlers may be sync (SQLite) or async (engine host). */
export type ApiService = ApiHandlers<ApiChannel>
/** Handlers for some channels (the engine host composes the full service from such groups). */
export type ApiHandlers<C extends ApiChannel> = {
  [K in C]: (request: ApiRequest<K>) => ApiResponse<K> | Promise<ApiResponse<K>>
}

/** What the runs channels read from the store (structurally `RunStore` from ../store/run-store). */
export interface RunsStore {
  listRuns(limit?: number): RunSummary[]
  getRun(runId: number): { summary: RunSummary; config: RunConfig } | null
  getOutcomes(runId: number): Map<string, PromptOutcome[]>
}

export function createRunsService(store: RunsStore): ApiHandlers<'runs:list' | 'runs:show'> {
  return {
    'runs:list': (request) => store.listRuns(request.limit),
    'runs:show': (request) => buildRunReport(store, request.runId)
  }
}

/** Config order first, then any method the store has outcomes for that the config does not list. */
export function buildRunReport(store: RunsStore, runId: number): RunReport | null {
  const run = store.getRun(runId)
  if (!run) return null
  const outcomes = store.getOutcomes(runId)
  const ar = outcomes.get('ar') ?? null
  const order = [...new Set<string>([...run.config.methods, ...outcomes.keys()])]
  const methods: MethodSummary[] = []
  for (const method of order) {
    const prompts = outcomes.get(method)
    if (prompts && prompts.length > 0) methods.push(summarizeMethod(method, prompts, ar))
  }
  withTheory(methods, run.config)
  const whatIf = run.config.syntheticAcceptance
    ? null
    : whatIfForRun({
        methods: methods.map((m) => ({ method: m.method, prompts: outcomes.get(m.method) ?? [], tokensPerSecond: m.aggregateTokensPerSecond ?? 0 })),
        maxTokens: run.config.maxTokens,
        gamma: run.config.gamma,
        params: run.config.params
      })
  return { runId, config: run.config, status: run.summary.status, methods, machine: run.summary.machine, whatIf }
}

/** Theory beside measurement (engine/theory/measured.ts) for each method, against the run's own ar. */
export function withTheory(methods: MethodSummary[], config: Pick<RunConfig, 'gamma' | 'params'>): void {
  const ar = methods.find((m) => m.method === 'ar')
  const arMsPerToken = ar && ar.outputTokens > 0 ? ar.wallMs / ar.outputTokens : null
  for (const m of methods)
    m.theory = theoryFor(m, { family: findMethod(m.method)?.family ?? 'peer', gamma: config.gamma, params: config.params, arMsPerToken })
}

/** Validates `channel` and `payload` against the contract, then runs the channel's handler. */
export async function handleApiRequest(
  service: ApiService,
  channel: string,
  payload: unknown
): Promise<ApiResponse<ApiChannel>> {
  if (!isApiChannel(channel)) throw new Error(`Unknown api channel: ${JSON.stringify(channel)}`)
  const parsed = API[channel].request.safeParse(payload)
  if (!parsed.success) throw new Error(invalidRequestMessage(channel, parsed.error))
  const handler = service[channel] as (request: unknown) => ApiResponse<ApiChannel> | Promise<ApiResponse<ApiChannel>>
  return handler(parsed.data)
}

