/**
 * Sandboxed preload (built to CommonJS): exposes `window.speclab` — `call(channel, payload)` typed by the api
 * contract, `onEvent(listener)` for events the engine host pushes (progress, tokens), and `pickFile(kind)` for a
 * native open dialog, and `pathForFile(file)`: where a File dropped on the page lives (Electron's
 * webUtils.getPathForFile; File.path is gone), '' for a file that is not on disk. Main validates channel and payload
 * again; nothing else of Electron reaches the page.
 */
import { contextBridge, ipcRenderer, webUtils, type IpcRendererEvent } from 'electron'
import type { ApiChannel, ApiRequest, ApiResponse } from '../api/contract'
import type { HostEvent } from '../api/events'
import type { SpeclabApi } from './index.d'

// Channel names, also in ../main/index.ts.
const API_CHANNEL = 'speclab:api'
const EVENT_CHANNEL = 'speclab:event'
const PICK_CHANNEL = 'speclab:pick-file'

type Reply = { ok: true; result: unknown } | { ok: false; error: string }

const api: SpeclabApi = {
  async call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponse<C>> {
    const reply = (await ipcRenderer.invoke(API_CHANNEL, channel, payload)) as Reply
    if (!reply.ok) throw new Error(reply.error)
    return reply.result as ApiResponse<C>
  },
  onEvent(listener: (event: HostEvent) => void): () => void {
    // The page never sees Electron's event object, only the payload (the renderer validates it).
    const handler = (_event: IpcRendererEvent, payload: HostEvent) => listener(payload)
    ipcRenderer.on(EVENT_CHANNEL, handler)
    return () => void ipcRenderer.removeListener(EVENT_CHANNEL, handler)
  },
  pickFile(kind: 'model' | 'dataset' | 'runs'): Promise<string | null> {
    return ipcRenderer.invoke(PICK_CHANNEL, kind) as Promise<string | null>
  },
  pathForFile(file: File): string {
    // Only a path: the page adds it through models:add like a typed one, and the host checks the file.
    return webUtils.getPathForFile(file)
  }
}

contextBridge.exposeInMainWorld('speclab', api)
