/**
 * The client half of the api transport, free of Node and Electron: Electron main uses it towards the engine host
 * (over a MessagePort) and the renderer's browser mode towards the server (over a WebSocket). Every message that
 * arrives is validated with the contract's envelope schemas (and pushed events with `HostEvent`) before use.
 */
import type { ApiChannel, ApiRequest, ApiResponse } from './contract'
import type { HostEvent } from './events'
import { EventMessage, ResponseMessage, type RequestMessage } from './transport'

interface Pending {
  resolve(value: unknown): void
  reject(error: Error): void
}

export class RpcClient {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly listeners = new Set<(event: HostEvent) => void>()

  constructor(private readonly send: (message: RequestMessage) => void) {}

  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponse<C>> {
    return this.callRaw(channel, payload) as Promise<ApiResponse<C>>
  }

  /** For forwarding layers (Electron main) that validated `channel` and `payload` themselves. */
  callRaw(channel: string, payload: unknown): Promise<unknown> {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      try {
        this.send({ kind: 'request', id, channel, payload })
      } catch (error) {
        this.pending.delete(id)
        reject(error instanceof Error ? error : new Error(String(error)))
      }
    })
  }

  onEvent(listener: (event: HostEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Feed every message that arrives; malformed ones are dropped (and reported once to the console). */
  receive(raw: unknown): void {
    const kind = (raw as { kind?: unknown } | null)?.kind
    if (kind === 'response') {
      const parsed = ResponseMessage.safeParse(raw)
      if (!parsed.success) return void console.error('speclab: malformed api response dropped')
      const pending = this.pending.get(parsed.data.id)
      if (!pending) return
      this.pending.delete(parsed.data.id)
      if (parsed.data.ok) pending.resolve(parsed.data.result)
      else pending.reject(new Error(parsed.data.error ?? 'request failed'))
    } else if (kind === 'event') {
      const parsed = EventMessage.safeParse(raw)
      if (!parsed.success) return void console.error('speclab: malformed api event dropped')
      for (const listener of this.listeners) listener(parsed.data.event)
    }
  }

  /** The transport is gone: every request in flight fails with `reason`. */
  failAll(reason: string): void {
    for (const pending of this.pending.values()) pending.reject(new Error(reason))
    this.pending.clear()
  }

  get inFlight(): number {
    return this.pending.size
  }
}
