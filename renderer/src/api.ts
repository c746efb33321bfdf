/**
 * The renderer's single access point to the engine host, with one shape in both modes:
 * - Electron: the preload's `window.speclab` (IPC through main, which validates and forwards to the host).
 * - Browser mode (`npm run serve`): a WebSocket to the server that opened this page, authenticated with the token
 *   from the page URL (`?token=…`, then removed from the address bar and kept in this origin's localStorage, so a
 *   second tab, a reload or a bookmark of http://127.0.0.1:<port>/ works while that server runs; localStorage is
 *   per origin, port included, so no other local server or site sees it).
 * Pushed events are validated with the contract's `HostEvent` schema before any screen sees them.
 */
import type { ApiChannel, ApiRequest, ApiResponse } from '../../electron/api/contract'
import { HostEvent } from '../../electron/api/events'
import { RpcClient } from '../../electron/api/renderer-kit'

/** 'unauthorized': this page has no valid access token; nothing works until the printed URL is opened. */
export type ConnectionState = 'connecting' | 'open' | 'closed' | 'unauthorized'

export interface Api {
  readonly mode: 'electron' | 'browser'
  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponse<C>>
  onEvent(listener: (event: HostEvent) => void): () => void
  /** Native file dialog (Electron only); browser mode types paths instead. */
  pickFile: ((kind: 'model' | 'dataset' | 'runs') => Promise<string | null>) | null
  /**
   * Where a dropped File lives on disk (Electron only; '' for a file not on disk). Browser mode is null: a page
   * cannot learn a dropped file's path, so it types paths instead.
   */
  pathForFile: ((file: File) => string) | null
  onConnection(listener: (state: ConnectionState, detail: string | null) => void): () => void
}

function electronApi(bridge: NonNullable<Window['speclab']>): Api {
  return {
    mode: 'electron',
    call: (channel, payload) => bridge.call(channel, payload),
    onEvent(listener) {
      return bridge.onEvent((raw) => {
        const parsed = HostEvent.safeParse(raw)
        if (parsed.success) listener(parsed.data)
        else console.error('speclab: malformed event dropped')
      })
    },
    pickFile: (kind) => bridge.pickFile(kind),
    pathForFile: (file) => bridge.pathForFile(file),
    onConnection(listener) {
      listener('open', null)
      return () => {}
    }
  }
}

const TOKEN_KEY = 'speclab.token'
const RECONNECT_MS = 2000

/** The one sentence a page without a valid token shows (and nothing else: no screen works without the server). */
export const NO_TOKEN_MESSAGE =
  'To open SpecLab, open the address that `npm run serve` printed (http://127.0.0.1:<port>/?token=…) — this tab has no valid access token for the server running now.'

/** The token from `?token=` (moved to localStorage so other tabs and reloads of this origin work and the URL stops showing it). */
function takeToken(): string | null {
  const url = new URL(window.location.href)
  const fromUrl = url.searchParams.get('token')
  if (fromUrl) {
    localStorage.setItem(TOKEN_KEY, fromUrl)
    url.searchParams.delete('token')
    history.replaceState(null, '', url.pathname + url.search + url.hash)
    return fromUrl
  }
  return localStorage.getItem(TOKEN_KEY)
}

function browserApi(): Api {
  let token = takeToken()
  let socket: WebSocket | null = null
  let state: ConnectionState = 'connecting'
  let detail: string | null = null
  const queue: string[] = []
  let everOpened = false
  const statusListeners = new Set<(state: ConnectionState, detail: string | null) => void>()
  const setState = (next: ConnectionState, why: string | null) => {
    state = next
    detail = why
    for (const listener of statusListeners) listener(state, detail)
  }
  const client = new RpcClient((message) => {
    const text = JSON.stringify(message)
    if (socket?.readyState === WebSocket.OPEN) socket.send(text)
    else if (state === 'unauthorized') throw new Error(NO_TOKEN_MESSAGE)
    else queue.push(text)
  })
  const connect = () => {
    if (!token) {
      setState('unauthorized', NO_TOKEN_MESSAGE)
      return
    }
    const ws = new WebSocket(`ws://${window.location.host}/api?token=${encodeURIComponent(token)}`)
    socket = ws
    let opened = false
    ws.onopen = () => {
      opened = true
      everOpened = true
      setState('open', null)
      for (const text of queue.splice(0)) ws.send(text)
    }
    ws.onmessage = (event) => {
      try {
        client.receive(JSON.parse(String(event.data)))
      } catch {
        console.error('speclab: unreadable message dropped')
      }
    }
    ws.onclose = () => {
      // This page was served by the server, so a first connection that fails was refused: the token is not this
      // server's (a bookmark or tab from before `npm run serve` restarted with a new token). Retrying cannot help.
      if (!opened && !everOpened) {
        if (localStorage.getItem(TOKEN_KEY) === token) localStorage.removeItem(TOKEN_KEY)
        token = null
        client.failAll(NO_TOKEN_MESSAGE)
        setState('unauthorized', NO_TOKEN_MESSAGE)
        return
      }
      client.failAll('the connection to the SpecLab server was lost')
      setState(
        'closed',
        opened
          ? 'Disconnected from the SpecLab server; reconnecting…'
          : 'Cannot reconnect to the SpecLab server; retrying… (if `npm run serve` was restarted, open the new address it printed)'
      )
      setTimeout(connect, RECONNECT_MS)
    }
  }
  connect()
  return {
    mode: 'browser',
    call: (channel, payload) => client.call(channel, payload),
    onEvent: (listener) => client.onEvent(listener),
    pickFile: null,
    pathForFile: null,
    onConnection(listener) {
      statusListeners.add(listener)
      listener(state, detail)
      return () => statusListeners.delete(listener)
    }
  }
}

export const api: Api = window.speclab ? electronApi(window.speclab) : browserApi()

/**
 * What a screen shows for a failed call: the message without the api's "Invalid request for <channel>: " prefix
 * (the host words the rest for people: "path: a model file must end in .gguf").
 */
export const errorMessage = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).replace(/^Invalid request for [\w:-]+: /, '')
