/** What the preload exposes to the renderer as `window.speclab` (see ./index.ts). */
import type { ApiChannel, ApiRequest, ApiResponse } from '../api/contract'
import type { HostEvent } from '../api/events'

export interface SpeclabApi {
  call<C extends ApiChannel>(channel: C, payload: ApiRequest<C>): Promise<ApiResponse<C>>
  /** Events pushed by the engine host (progress, streamed tokens, menu commands); returns the unsubscribe. */
  onEvent(listener: (event: HostEvent) => void): () => void
  /** A native open dialog for a model (.gguf), a prompt file (.jsonl) or a runs file (speclab runs export); null when cancelled. */
  pickFile(kind: 'model' | 'dataset' | 'runs'): Promise<string | null>
  /** Where a File dropped on the page lives on disk (webUtils.getPathForFile); '' when it is not a file on disk. */
  pathForFile(file: File): string
}

declare global {
  interface Window {
    /** Present in Electron; absent in browser mode (the WebSocket client stands in, see renderer/src/api.ts). */
    speclab?: SpeclabApi
  }
}
