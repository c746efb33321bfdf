/**
 * Model downloads by `hf:` URI (or an https URL of a .gguf) with node-llama-cpp's `createModelDownloader`: parallel
 * connections, resumable temporary files, split GGUFs joined. Progress streams to the UI; cancel aborts and deletes
 * the temporary file. A finished file goes through the library's checks and is added as a `download`.
 */
import { randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { createModelDownloader, type ModelDownloaderOptions } from 'node-llama-cpp'
import type { DownloadState, HostEvent } from '../api/contract'
import type { ApiHandlers } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import type { ModelLibrary } from './model-library'

/** The part of node-llama-cpp's ModelDownloader used here (tests substitute a fake). */
export interface Downloader {
  download(options?: { signal?: AbortSignal }): Promise<string>
  cancel(): Promise<void>
}
export type CreateDownloader = (options: ModelDownloaderOptions) => Promise<Downloader>

const PROGRESS_MS = 200

interface Active {
  state: DownloadState
  abort: AbortController
  downloader: Downloader | null
}

export class DownloadManager {
  private readonly downloads = new Map<string, Active>()

  constructor(
    private readonly directory: string,
    private readonly library: ModelLibrary,
    private readonly emit: (event: HostEvent) => void,
    private readonly createDownloader: CreateDownloader = createModelDownloader
  ) {}

  handlers(): ApiHandlers<'models:download' | 'models:download-cancel' | 'models:downloads'> {
    return {
      'models:download': ({ uri }) => this.start(uri.trim()),
      'models:download-cancel': ({ downloadId }) => this.cancel(downloadId),
      'models:downloads': () => [...this.downloads.values()].map((d) => d.state)
    }
  }

  private start(uri: string): DownloadState {
    const running = [...this.downloads.values()].find((d) => d.state.uri === uri && d.state.state === 'downloading')
    if (running) throw new UserInputError(`${uri} is already downloading`)
    const active: Active = {
      abort: new AbortController(),
      downloader: null,
      state: { downloadId: randomUUID(), uri, state: 'downloading', downloadedBytes: 0, totalBytes: 0, error: null, modelId: null, fileName: null }
    }
    this.downloads.set(active.state.downloadId, active)
    void this.run(active)
    return active.state
  }

  private update(active: Active, patch: Partial<DownloadState>): void {
    active.state = { ...active.state, ...patch }
    this.emit({ type: 'download:progress', download: active.state })
  }

  private async run(active: Active): Promise<void> {
    let lastEmit = 0
    try {
      await mkdir(this.directory, { recursive: true })
      active.downloader = await this.createDownloader({
        modelUri: active.state.uri,
        dirPath: this.directory,
        showCliProgress: false,
        skipExisting: true,
        deleteTempFileOnCancel: true,
        onProgress: ({ downloadedSize, totalSize }) => {
          active.state = { ...active.state, downloadedBytes: downloadedSize, totalBytes: totalSize }
          const now = performance.now()
          if (now - lastEmit >= PROGRESS_MS) {
            lastEmit = now
            this.emit({ type: 'download:progress', download: active.state })
          }
        }
      })
      if (active.abort.signal.aborted) throw new Error('cancelled')
      const file = await active.downloader.download({ signal: active.abort.signal })
      const entry = await this.library.add(file, 'download', active.state.uri)
      this.update(active, { state: 'done', modelId: entry.id, fileName: entry.fileName, downloadedBytes: entry.sizeBytes, totalBytes: entry.sizeBytes })
      this.emit({ type: 'models:changed' })
    } catch (error) {
      if (active.abort.signal.aborted) this.update(active, { state: 'cancelled', error: null })
      else this.update(active, { state: 'failed', error: error instanceof Error ? error.message : String(error) })
    }
  }

  private async cancel(downloadId: string): Promise<{ cancelled: boolean }> {
    const active = this.downloads.get(downloadId)
    if (!active || active.state.state !== 'downloading') return { cancelled: false }
    active.abort.abort()
    await active.downloader?.cancel().catch(() => undefined)
    return { cancelled: true }
  }

  async stopAll(): Promise<void> {
    for (const active of this.downloads.values()) if (active.state.state === 'downloading') await this.cancel(active.state.downloadId)
  }
}
