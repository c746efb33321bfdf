/**
 * The soak's connection to browser mode: the contract's RpcClient (what the renderer uses) over the server's
 * WebSocket, with the token and this server's Origin as a browser sends them. Every request is counted: answered,
 * refused as the workload expected (a `expect` pattern matched the error), refused unexpectedly, or never answered
 * within `timeoutMs` — "every request answered" is judged from these counts.
 */
import WebSocket from 'ws'
import type { ApiChannel, ApiRequest, ApiResponse } from '../../electron/api/contract'
import type { HostEvent } from '../../electron/api/events'
import { RpcClient } from '../../electron/api/rpc-client'

export interface RequestCounts {
  sent: number
  answered: number
  /** Refusals the workload asked for (e.g. a workbench run while a chat generates) — answers too. */
  failedAsExpected: number
  failedUnexpectedly: number
  unanswered: number
}

export interface CountedClient {
  /** `expect`: the errors this request may end with, on purpose. Resolves null when it failed (counted), else the answer. */
  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>, expect?: RegExp): Promise<ApiResponse<C> | null>
  onEvent(listener: (event: HostEvent) => void): () => void
  readonly counts: RequestCounts
  /** The first unexpected errors and unanswered channels, for the report. */
  readonly problems: string[]
  close(): void
}

const MAX_PROBLEMS = 20

/** Connects to the URL `npm run serve` prints (http://127.0.0.1:<port>/?token=…). */
export async function connectCounted(serverUrl: URL, timeoutMs: number): Promise<CountedClient> {
  const origin = `http://${serverUrl.host}`
  const ws = new WebSocket(`ws://${serverUrl.host}/api?token=${encodeURIComponent(serverUrl.searchParams.get('token') ?? '')}`, { origin })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  const rpc = new RpcClient((message) => ws.send(JSON.stringify(message)))
  ws.on('message', (data) => rpc.receive(JSON.parse(data.toString())))
  ws.on('close', () => rpc.failAll('the WebSocket closed'))
  const counts: RequestCounts = { sent: 0, answered: 0, failedAsExpected: 0, failedUnexpectedly: 0, unanswered: 0 }
  const problems: string[] = []
  const note = (line: string) => void (problems.length < MAX_PROBLEMS && problems.push(line))

  async function call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>, expect?: RegExp): Promise<ApiResponse<C> | null> {
    counts.sent++
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)))
    const reply = rpc.call(channel, payload).then(
      (result) => ({ ok: true as const, result }),
      (error: Error) => ({ ok: false as const, error: error.message })
    )
    const outcome = await Promise.race([reply, timeout])
    clearTimeout(timer)
    if (outcome === 'timeout') {
      counts.unanswered++
      note(`${channel}: no answer within ${timeoutMs / 1000} s`)
      return null
    }
    counts.answered++
    if (outcome.ok) return outcome.result
    if (expect?.test(outcome.error)) counts.failedAsExpected++
    else {
      counts.failedUnexpectedly++
      note(`${channel}: ${outcome.error}`)
    }
    return null
  }

  return { call, onEvent: (listener) => rpc.onEvent(listener), counts, problems, close: () => ws.close() }
}
