/**
 * The renderer's single access point to the backend. In Electron it is the preload's `window.speclab`; browser mode
 * will slot its WebSocket client in here with the same `call` signature.
 */
import type { ApiChannel, ApiRequest, ApiResponses } from '../../electron/api/contract'

export type Api = NonNullable<Window['speclab']>

function backend(): Api | null {
  return window.speclab ?? null
}

export const api: Api = {
  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponses[C]> {
    const b = backend()
    if (!b) return Promise.reject(new Error('No SpecLab backend: open this page from the SpecLab app.'))
    return b.call(channel, payload)
  }
}
