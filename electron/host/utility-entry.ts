/**
 * Entry of the Electron utilityProcess that runs the engine host (built to out/main/host.js). It never imports
 * electron: `process.parentPort` is what Electron adds to a utility process's `process`. Main sends one `init`
 * message carrying the host options and a MessagePort; requests, responses and pushed events then flow over that
 * port, validated on each side. `{kind: 'shutdown'}` (or main going away) closes the host and ends the process.
 */
import { z } from 'zod'
import type { HostEvent } from '../api/events'
import { EngineHost, HostOptions } from './host'
import { CHILD_HOST_ENV } from './child-host'
import { absorbDownloaderRejections } from './downloads'
import { serveRequests } from './rpc-server'

export interface PortLike {
  on(event: 'message', listener: (event: { data: unknown }) => void): unknown
  on(event: 'close', listener: () => void): unknown
  postMessage(message: unknown): void
  start(): void
  close(): void
}
export interface ParentPortLike {
  once(event: 'message', listener: (event: { data: unknown; ports: PortLike[] }) => void): unknown
}

export const InitMessage = z.object({ kind: z.literal('init'), options: HostOptions })

export function runUtilityHost(parentPort: ParentPortLike, exit: (code: number) => void = (code) => process.exit(code)): void {
  parentPort.once('message', ({ data, ports }) => {
    const port = ports[0]
    const init = InitMessage.safeParse(data)
    if (!port || !init.success) {
      console.error('speclab host: expected an init message with a port')
      exit(1)
      return
    }
    const emit = (event: HostEvent) => port.postMessage({ kind: 'event', event })
    let host: EngineHost | null = null
    let failure: string | null = null
    try {
      host = EngineHost.open(init.data.options, emit)
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error)
    }
    const handler = host ?? { request: () => Promise.reject(new Error(failure ?? 'the engine host did not start')) }
    const serve = serveRequests(handler, (message) => port.postMessage(message), { trusted: true })
    let closing = false
    const shutdown = async () => {
      if (closing) return
      closing = true
      await host?.close().catch((error: unknown) => console.error('speclab host: close failed', error))
      port.close()
      exit(0)
    }
    port.on('message', ({ data: message }) => {
      if ((message as { kind?: unknown } | null)?.kind === 'shutdown') void shutdown()
      else serve(message)
    })
    port.on('close', () => void shutdown())
    port.start()
    emit({ type: 'host:status', state: host ? 'ready' : 'failed', message: failure })
  })
}

/**
 * The same host over Node's child_process IPC channel (browser mode, host/child-host.ts): the channel itself plays
 * the MessagePort — the first message is `init`, then requests and events; the parent going away closes the host.
 */
export function nodeIpcParentPort(child: NodeJS.Process = process): ParentPortLike {
  const port: PortLike = {
    on: (event: 'message' | 'close', listener: (event: { data: unknown }) => void) =>
      event === 'message' ? child.on('message', (data) => listener({ data })) : child.on('disconnect', () => listener({ data: null })),
    postMessage: (message) => void child.send?.(message),
    start: () => {},
    close: () => child.connected && child.disconnect?.()
  }
  return { once: (_event, listener) => child.once('message', (data) => listener({ data, ports: [port] })) }
}

const parentPort = (process as NodeJS.Process & { parentPort?: ParentPortLike }).parentPort
const viaNodeIpc = !parentPort && process.env[CHILD_HOST_ENV] === '1' && process.send !== undefined
// A failing download must end as that download's error, never as the engine's death (models unloaded, jobs lost).
if (parentPort || viaNodeIpc) absorbDownloaderRejections()
if (parentPort) runUtilityHost(parentPort)
else if (viaNodeIpc) runUtilityHost(nodeIpcParentPort())
