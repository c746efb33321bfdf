/** What the preload exposes to the renderer as `window.speclab` (see ./index.ts). */
import type { ApiChannel, ApiRequest, ApiResponses } from '../api/contract'

export interface SpeclabApi {
  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponses[C]>
}

declare global {
  interface Window {
    /** Present in Electron; absent in browser mode (the WebSocket client stands in, see renderer/src/api.ts). */
    speclab?: SpeclabApi
  }
}
