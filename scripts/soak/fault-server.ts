/**
 * The soak's local model server, which fails the way real servers do (electron/host/downloads.ts handles each):
 * the path's first segment picks the behaviour, e.g. http://127.0.0.1:<port>/reset/x.gguf.
 *   ok          the file, with ranges (a download that succeeds)
 *   short-body  a Content-Length larger than the body it sends, then the connection closes
 *   no-range    a 12 MiB file (more than one of ipull's parts) whole with 200 where a range was asked for
 *               (ipull's InvalidContentLengthError)
 *   reset       the connection reset mid-body, on every request
 *   404 / 500   an error status
 *   stall       headers and a first chunk, then nothing (the downloader's response timeout fails it)
 *   slow        8 KiB every 100 ms: a transfer long enough to be cancelled half-way
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export const FAULT_MODES = ['ok', 'short-body', 'no-range', 'reset', '404', '500', 'stall', 'slow'] as const
export type FaultMode = (typeof FAULT_MODES)[number]

export interface FaultServer {
  base: string
  /** Requests answered so far, per mode. */
  hits: Record<string, number>
  close(): Promise<void>
}

const SLOW_CHUNK = 8 * 1024

/** Larger than ipull's 5 MiB parts: a small file comes in one request, where an ignored range goes unnoticed. */
const SPLIT_FILE = Buffer.alloc(12 << 20, 7)

/** `model`: what the good server serves (a real GGUF, so the library takes it). */
export async function startFaultServer(model: Buffer): Promise<FaultServer> {
  const hits: Record<string, number> = {}
  const server = http.createServer((request, response) => {
    const mode = (request.url?.split('/')[1] ?? '') as FaultMode
    const file = mode === 'no-range' ? SPLIT_FILE : model
    hits[mode] = (hits[mode] ?? 0) + 1
    if (mode === '404') return void response.writeHead(404, 'Not Found').end('not found\n')
    if (mode === '500') return void response.writeHead(500, 'Internal Server Error').end('boom\n')
    if (!FAULT_MODES.includes(mode)) return void response.writeHead(400).end()
    const range = mode === 'no-range' ? null : /bytes=(\d+)-(\d*)/.exec(request.headers.range ?? '')
    const start = range ? Number(range[1]) : 0
    const end = range && range[2] ? Math.min(Number(range[2]), file.length - 1) : file.length - 1
    const body = file.subarray(start, end + 1)
    response.writeHead(range ? 206 : 200, {
      'Content-Length': mode === 'short-body' ? body.length * 2 : body.length,
      'Content-Type': 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      ...(range ? { 'Content-Range': `bytes ${start}-${end}/${file.length}` } : {})
    })
    if (request.method === 'HEAD') return void response.end()
    if (mode === 'ok' || mode === 'no-range') return void response.end(body)
    if (mode === 'short-body') {
      response.write(body)
      return void response.socket?.end() // fewer bytes than announced, then the connection closes
    }
    if (mode === 'reset') {
      // Half the body, then a TCP reset (RST), not a clean close.
      return void response.write(body.subarray(0, body.length >> 1), () => response.socket?.resetAndDestroy())
    }
    if (mode === 'stall') return void response.write(body.subarray(0, Math.min(body.length, 16 * 1024)))
    let offset = 0
    const timer = setInterval(() => {
      if (offset >= body.length || response.destroyed) return void (clearInterval(timer), response.end())
      response.write(body.subarray(offset, offset + SLOW_CHUNK))
      offset += SLOW_CHUNK
    }, 100)
    response.on('close', () => clearInterval(timer))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}
