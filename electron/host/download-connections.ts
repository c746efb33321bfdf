/**
 * Every HTTP connection a download opened is closed when the download ends, whatever the download library does.
 *
 * node-llama-cpp's downloader (ipull) fetches with the global `fetch` and leaves some responses open with unread
 * bodies: the GET that asks for the file's size (its body is never read, on every download), the other parts of a
 * download when one part fails (a server that ignores `Range`), and the size request of a download cancelled while
 * it runs. Each such connection stays open for as long as the server keeps it (measured in one process, sockets of
 * both ends: 20 more after three failed downloads from a server that ignores ranges, 7 after three cancelled slow
 * ones), so a long session's engine gathers open descriptors.
 *
 * `withDownloadConnections(work)` runs a download's calls in an async scope (AsyncLocalStorage, which follows
 * promises and timers into the library); `fetch`, wrapped once per process, gives every call made in that scope an
 * abort signal of its own. When the scope closes, every call is aborted, which makes undici close its connection:
 * a response's body fails with an `AbortError`, which ends that part of the download quietly (ipull's
 * `fetchChunks`), and a request still waiting for its answer (a server that never answers) fails likewise. A call
 * made in the scope after it closed (the library retries a failed request, its size request up to 150 times) gets
 * a promise that never settles: no connection, no timer, nothing left to retry, and nothing holds it once its
 * caller is gone. Calls outside a scope (the llama-server peer's requests, anything else in the process) pass
 * through unchanged.
 */
import { AsyncLocalStorage } from 'node:async_hooks'

/** The fetches of one download. */
class ConnectionScope {
  private readonly calls = new Set<AbortController>()
  private closed = false

  /** A signal for one call, or null once the scope has closed. */
  signalForCall(): AbortSignal | null {
    if (this.closed) return null
    const controller = new AbortController()
    this.calls.add(controller)
    return controller.signal
  }

  close(): void {
    this.closed = true
    for (const controller of this.calls) controller.abort()
    this.calls.clear()
  }
}

const scopes = new AsyncLocalStorage<ConnectionScope>()

/** Wraps the global `fetch` once: calls inside a scope get a signal of their own, the others pass through. */
function wrapGlobalFetch(): void {
  if (wrapped) return
  wrapped = true
  const original = globalThis.fetch
  globalThis.fetch = function scopedFetch(input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> {
    const scope = scopes.getStore()
    if (!scope) return original(input, init)
    const own = scope.signalForCall()
    if (!own) return new Promise<Response>(() => {}) // the download has ended: nothing more is fetched for it
    return original(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, own]) : own })
  }
}
let wrapped = false

/**
 * Runs `work` (a download job: resolving its URI, the transfer, and the clean-up after a failure or cancel) and
 * closes every connection it opened once it has settled.
 */
export async function withDownloadConnections<T>(work: () => Promise<T>): Promise<T> {
  wrapGlobalFetch()
  const scope = new ConnectionScope()
  try {
    return await scopes.run(scope, work)
  } finally {
    scope.close()
  }
}
