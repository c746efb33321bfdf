/**
 * Sandboxed preload (built to CommonJS): exposes exactly one function, `window.speclab.call(channel, payload)`,
 * typed by the api contract. Main validates channel and payload again; nothing else of Electron reaches the page.
 */
import { contextBridge, ipcRenderer } from 'electron'
import type { ApiChannel, ApiRequest, ApiResponses } from '../api/contract'

const API_CHANNEL = 'speclab:api' // also in ../main/index.ts

const api = {
  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponses[C]> {
    return ipcRenderer.invoke(API_CHANNEL, channel, payload) as Promise<ApiResponses[C]>
  }
}

contextBridge.exposeInMainWorld('speclab', api)
