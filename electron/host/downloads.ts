/**
 * Model downloads by `hf:` URI (or an https URL of a .gguf) with node-llama-cpp's `createModelDownloader`: parallel
 * connections, resumable temporary files, split GGUFs joined. Progress streams to the UI. A finished file goes
 * through the library's checks and is added as a `download`.
 *
 * node-llama-cpp takes no signal while it resolves the URI and asks the server for the file's size, and its
 * downloader retries an unreachable server for minutes, so every phase here is raced against the job's own abort
 * signal: *Cancel* ends the job in any phase (state `cancelled`, the temporary file deleted), and a server that
 * sends nothing for `responseTimeoutMs` (no first byte, or a stall mid-way) fails the job with a clear message.
 * A server that answers with an error status (4xx, 5xx) fails the job at once with that status
 * (refuseServerErrorRetries); network errors are still retried by the downloader. Every connection a job opened is
 * closed when it ends (withDownloadConnections).
 */
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { createModelDownloader, type ModelDownloaderOptions } from 'node-llama-cpp'
import type { HostEvent } from '../api/events'
import { isModelUri, type DownloadState } from '../api/models'
import type { ApiHandlers } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { withDownloadConnections } from './download-connections'
import type { ModelLibrary } from './model-library'

/** The part of node-llama-cpp's ModelDownloader used here (tests substitute a fake). */
export interface Downloader {
  download(options?: { signal?: AbortSignal }): Promise<string>
  /** Stops the transfer and deletes the temporary file (`deleteTempFileOnCancel`). */
  cancel(): Promise<void>
  /** Where the finished file goes; its temporary file is this path + `.ipull`. */
  readonly entrypointFilePath?: string
}
export type CreateDownloader = (options: ModelDownloaderOptions) => Promise<Downloader>

export interface DownloadOptions {
  /**
   * A job fails when the server sends no data for this long: no first byte after the start (name resolution,
   * connection, response headers and all), or a stall mid-way. Default: SPECLAB_DOWNLOAD_TIMEOUT_MS or 30 s.
   */
  responseTimeoutMs?: number
}

const PROGRESS_MS = 200
/** How long cancelling waits for node-llama-cpp to close its connections before the job is reported cancelled. */
const CLOSE_WAIT_MS = 5000
/**
 * Finished downloads kept for the Models screen's list, the newest; older ones are forgotten, so a long session's
 * list (and the engine's memory) stays bounded. Downloads in progress are always kept.
 */
export const KEPT_FINISHED_DOWNLOADS = 20
/** ipull's suffix for a download in progress. */
const TEMP_SUFFIX = '.ipull'

export function defaultResponseTimeoutMs(): number {
  const fromEnv = Number(process.env.SPECLAB_DOWNLOAD_TIMEOUT_MS)
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 30_000
}

/** ipull's fetch-stream base class, the one whose `retryOnServerError` decides whether a status answer is retried. */
const IPULL_FETCH_STREAM = 'download/download-engine/streams/download-engine-fetch-stream/base-download-engine-fetch-stream.js'

/**
 * Makes node-llama-cpp's downloader (ipull) give up on an error status at once, as ipull's own option
 * `retryOnServerError: false` does. By default ipull retries a 5xx or 429 answer up to 150 times with back-off
 * (about 12 minutes), reporting nothing: the user waits for the response watchdog and then reads "no response"
 * from a server that did answer, with 500. A server answering 5xx to a file request is almost always down or
 * misconfigured for longer than anyone waits at a progress bar, and a failed download is restarted with one click,
 * so the status is reported instead. What ipull still retries is what its option leaves alone: network errors
 * (refused, reset, DNS), which are the transient ones; 4xx answers were never retried.
 *
 * node-llama-cpp builds ipull's options itself and forwards no retry settings, so the option is applied through
 * the method ipull reads it in (`retryOnServerError`, protected, meant for overriding), on ipull's class as
 * node-llama-cpp resolves it — the one module instance its downloads use. Returns false, changing nothing, if
 * ipull's layout is not the expected one (downloads then keep ipull's retries and the watchdog's message).
 */
export function refuseServerErrorRetries(): Promise<boolean> {
  refusing ??= (async () => {
    try {
      const fromLlama = createRequire(createRequire(import.meta.url).resolve('node-llama-cpp'))
      const ipullDist = path.dirname(fromLlama.resolve('ipull'))
      const module = (await import(pathToFileURL(path.join(ipullDist, IPULL_FETCH_STREAM)).href)) as { default?: { prototype?: object } }
      const prototype = module.default?.prototype as { retryOnServerError?: unknown } | undefined
      if (typeof prototype?.retryOnServerError !== 'function') return false
      prototype.retryOnServerError = () => false
      return true
    } catch {
      return false
    }
  })()
  return refusing
}
let refusing: Promise<boolean> | undefined

/** Why a job stopped early: the reason its abort signal carries. */
class Stopped extends Error {
  constructor(
    readonly outcome: 'cancelled' | 'failed',
    message: string
  ) {
    super(message)
  }
}

interface Active {
  state: DownloadState
  abort: AbortController
  downloader: Downloader | null
  /** Settles when the job has reached its final state. */
  finished: Promise<void>
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself keeps running). */
function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.())

/** The server a URI talks to, for messages. */
function serverOf(uri: string): string {
  if (uri.startsWith('hf:')) return 'huggingface.co'
  try {
    return new URL(uri).host
  } catch {
    return uri
  }
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))} s`

/** What to do when a server cannot serve the file to the downloader. */
const INSTEAD = 'download the file another way (a browser, curl) and add it with Add model'

/** The names of `error`'s classes, its own first (ipull's errors are told apart by class, not by message). */
function classNames(error: unknown): string[] {
  const names: string[] = []
  for (let proto = error !== null && typeof error === 'object' ? Object.getPrototypeOf(error) : null; proto; proto = Object.getPrototypeOf(proto))
    names.push(proto.constructor?.name ?? '')
  return names
}

/**
 * An error thrown by ipull, node-llama-cpp's download library. Its parallel connections reject promises nobody
 * awaits (one per connection after the first has failed the download), so its errors can also arrive as unhandled
 * rejections — after the download itself has already failed with the first of them.
 */
export function isDownloaderError(error: unknown): boolean {
  return classNames(error).includes('IpullError')
}

/**
 * One line saying why a download failed and what to do instead, for the errors whose own text says neither
 * ("fetch failed", ipull's advice for browsers); other messages are kept as they are.
 */
export function describeDownloadFailure(error: unknown, server: string): string {
  const message = error instanceof Error ? error.message : String(error)
  if (classNames(error).includes('InvalidContentLengthError')) {
    // ipull keeps the two lengths only in its text ("Expected 100 bytes, but got 200 bytes.").
    const lengths = /Expected (\d+) bytes, but got (\w+) bytes/.exec(message)
    const sent = lengths ? `sent ${lengths[2]} bytes where ${lengths[1]} were asked for` : 'did not send the length asked for'
    return `${server} ${sent} (it ignored a request for part of the file, or announced a wrong length), so it cannot be downloaded here; ${INSTEAD}`
  }
  if (classNames(error).includes('StatusCodeError')) {
    const { statusCode, statusText, url } = error as { statusCode?: number; statusText?: string; url?: string }
    const advice =
      statusCode === 401 || statusCode === 403
        ? 'the file needs an access token or is private'
        : statusCode !== undefined && (statusCode >= 500 || statusCode === 429)
          ? 'the server failed or is busy; try again later'
          : 'check the address'
    return `${server} answered ${statusCode} ${statusText ?? ''} for ${url ?? 'the file'}; ${advice}, or ${INSTEAD}`.replace(/ +;/, ';')
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined
  if (error instanceof TypeError && message === 'fetch failed') {
    const why = [cause?.code, cause?.message].filter((part) => typeof part === 'string' && part !== '').join(': ') || 'no reason given'
    return `could not reach ${server} (${why}); check the address and the network connection, or ${INSTEAD}`
  }
  return message.replace(/\s+/g, ' ').trim() || `the download from ${server} failed`
}

/**
 * Keeps the download library's stray rejections (isDownloaderError) from killing the engine process, which Node does
 * by default: each one is a connection of a download that has already failed with its own error. Every other
 * unhandled rejection still ends the process, as without this handler. Installed once, by the engine process.
 */
export function absorbDownloaderRejections(target: NodeJS.Process = process): void {
  if (absorbing.has(target)) return
  absorbing.add(target)
  target.on('unhandledRejection', (reason) => {
    if (!isDownloaderError(reason)) throw reason
  })
}
const absorbing = new WeakSet<NodeJS.Process>()

export class DownloadManager {
  private readonly downloads = new Map<string, Active>()
  private readonly responseTimeoutMs: number

  constructor(
    private readonly directory: string,
    private readonly library: Pick<ModelLibrary, 'add'>,
    private readonly emit: (event: HostEvent) => void,
    private readonly createDownloader: CreateDownloader = createModelDownloader,
    options: DownloadOptions = {}
  ) {
    this.responseTimeoutMs = options.responseTimeoutMs ?? defaultResponseTimeoutMs()
  }

  handlers(): ApiHandlers<'models:download' | 'models:download-cancel' | 'models:downloads'> {
    return {
      'models:download': ({ uri }) => this.start(uri.trim()),
      'models:download-cancel': ({ downloadId }) => this.cancel(downloadId),
      'models:downloads': () => [...this.downloads.values()].map((d) => d.state)
    }
  }

  private start(uri: string): DownloadState {
    if (!isModelUri(uri))
      throw new UserInputError(
        `cannot download ${JSON.stringify(uri)}: expected hf:<user>/<repo>:<quant>, hf:<user>/<repo>/<file>.gguf, ` +
          'an https:// URL of a .gguf file, or http:// to localhost'
      )
    const running = [...this.downloads.values()].find((d) => d.state.uri === uri && d.state.state === 'downloading')
    if (running) throw new UserInputError(`${uri} is already downloading`)
    const active: Active = {
      abort: new AbortController(),
      downloader: null,
      finished: Promise.resolve(),
      state: { downloadId: randomUUID(), uri, state: 'downloading', downloadedBytes: 0, totalBytes: 0, error: null, modelId: null, fileName: null }
    }
    this.downloads.set(active.state.downloadId, active)
    active.finished = withDownloadConnections(() => this.run(active))
    return active.state
  }

  private update(active: Active, patch: Partial<DownloadState>): void {
    active.state = { ...active.state, ...patch }
    this.emit({ type: 'download:progress', download: active.state })
  }

  private async run(active: Active): Promise<void> {
    const { signal } = active.abort
    const timeoutMs = this.responseTimeoutMs
    const server = serverOf(active.state.uri)
    let lastEmit = 0
    let received = 0
    // The watchdog: restarted by every byte that arrives, it fails the job when none come for timeoutMs.
    let watchdog: ReturnType<typeof setTimeout> | undefined
    let watching = true
    const arm = () => {
      if (!watching) return // a late progress report after the job ended must not start a timer again
      clearTimeout(watchdog)
      watchdog = setTimeout(() => {
        const message =
          received === 0
            ? `no response from ${server} within ${seconds(timeoutMs)} (unreachable, or not answering)`
            : `the download stalled: no data from ${server} for ${seconds(timeoutMs)}`
        active.abort.abort(new Stopped('failed', message))
      }, timeoutMs)
    }
    const disarm = () => {
      watching = false
      clearTimeout(watchdog)
    }
    arm()
    let creating: Promise<Downloader> | null = null
    let ownsFile = false
    try {
      await mkdir(this.directory, { recursive: true })
      await refuseServerErrorRetries()
      if (signal.aborted) throw signal.reason
      creating = this.createDownloader({
        modelUri: active.state.uri,
        dirPath: this.directory,
        showCliProgress: false,
        skipExisting: true,
        deleteTempFileOnCancel: true,
        onProgress: ({ downloadedSize, totalSize }) => {
          if (signal.aborted) return
          if (downloadedSize > received) {
            received = downloadedSize
            arm()
          }
          active.state = { ...active.state, downloadedBytes: downloadedSize, totalBytes: totalSize }
          const now = performance.now()
          if (now - lastEmit >= PROGRESS_MS) {
            lastEmit = now
            this.emit({ type: 'download:progress', download: active.state })
          }
        }
      })
      active.downloader = await unlessAborted(creating, signal)
      // A file already there (node-llama-cpp skips a complete one) is the user's to keep, whatever happens next.
      const target = active.downloader.entrypointFilePath
      ownsFile = target !== undefined && !existsSync(target)
      const file = await unlessAborted(active.downloader.download({ signal }), signal)
      // The file is complete: from here on the job ends as done (or failed, if the library refuses the file).
      disarm()
      const entry = await this.library.add(file, 'download', active.state.uri)
      this.update(active, { state: 'done', modelId: entry.id, fileName: entry.fileName, downloadedBytes: entry.sizeBytes, totalBytes: entry.sizeBytes })
      this.emit({ type: 'models:changed' })
    } catch (error) {
      disarm()
      const stopped = signal.aborted ? signal.reason : null
      if (!signal.aborted) active.abort.abort(new Stopped('failed', 'failed'))
      const cancelled = stopped instanceof Stopped && stopped.outcome === 'cancelled'
      await this.cleanUp(active, creating, cancelled && ownsFile)
      if (cancelled) this.update(active, { state: 'cancelled', error: null })
      else {
        const message = stopped instanceof Stopped ? stopped.message : describeDownloadFailure(error, server)
        this.update(active, { state: 'failed', error: message })
      }
    } finally {
      this.forgetOldFinished()
    }
  }

  private forgetOldFinished(): void {
    const finished = [...this.downloads.values()].filter((d) => d.state.state !== 'downloading')
    for (const old of finished.slice(0, Math.max(0, finished.length - KEPT_FINISHED_DOWNLOADS))) this.downloads.delete(old.state.downloadId)
  }

  /**
   * Stops node-llama-cpp's transfer and deletes the temporary file. A downloader still being created when the job
   * stopped is closed whenever it arrives (node-llama-cpp cannot be interrupted while it retries the server). With
   * `removeFile`, a file this job completed just before the cancel is deleted too: cancelled leaves nothing behind.
   */
  private async cleanUp(active: Active, creating: Promise<Downloader> | null, removeFile = false): Promise<void> {
    const close = async (downloader: Downloader) => {
      await downloader.cancel().catch(() => undefined)
      const target = downloader.entrypointFilePath
      if (target === undefined) return
      await rm(target + TEMP_SUFFIX, { force: true }).catch(() => undefined)
      if (removeFile) await rm(target, { force: true }).catch(() => undefined)
    }
    if (active.downloader) await Promise.race([close(active.downloader), sleep(CLOSE_WAIT_MS)])
    else if (creating) void creating.then(close, () => undefined)
  }

  private async cancel(downloadId: string): Promise<{ cancelled: boolean }> {
    const active = this.downloads.get(downloadId)
    if (!active || active.state.state !== 'downloading') return { cancelled: false }
    if (!active.abort.signal.aborted) active.abort.abort(new Stopped('cancelled', 'cancelled'))
    await active.finished
    const final: DownloadState = active.state // narrowed to 'downloading' above; the job has ended since
    return { cancelled: final.state === 'cancelled' }
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.downloads.values()].filter((d) => d.state.state === 'downloading').map((d) => this.cancel(d.state.downloadId)))
  }
}
