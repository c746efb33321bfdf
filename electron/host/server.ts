/**
 * Browser mode: a Node HTTP server on 127.0.0.1 that serves the built renderer (out/renderer) and the api over a
 * WebSocket at /api. The socket requires the random token printed with the URL and an Origin of this very server,
 * and every HTTP request must name this server in its Host header (no DNS rebinding). Requests go through the same
 * validated contract as Electron IPC; privileged channels (File → Open database) are refused here.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import http from 'node:http'
import type { Duplex } from 'node:stream'
import path from 'node:path'
import { WebSocketServer, type WebSocket } from 'ws'
import type { HostEvent } from '../api/events'
import { serveRequests, type RequestHandler } from './rpc-server'

export interface BrowserServerOptions {
  host: RequestHandler
  /** Subscribes to the host's pushed events; returns the unsubscribe function. */
  subscribe(listener: (event: HostEvent) => void): () => void
  rendererDirectory: string
  /** 0 = a random free port. */
  port: number
  /** Defaults to 32 random bytes. */
  token?: string
}

export interface BrowserServer {
  url: string
  port: number
  token: string
  close(): Promise<void>
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2'
}

const MAX_MESSAGE_BYTES = 1 << 20

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n${reason}\n`)
}

export async function startBrowserServer(options: BrowserServerOptions): Promise<BrowserServer> {
  const token = options.token ?? randomBytes(32).toString('base64url')
  const root = path.resolve(options.rendererDirectory)
  let port = 0
  const hosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`])
  const origins = () => new Set([`http://127.0.0.1:${port}`, `http://localhost:${port}`])
  const csp = () =>
    [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data: blob:",
      `connect-src 'self' ws://127.0.0.1:${port} ws://localhost:${port}`,
      "object-src 'none'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
      "form-action 'none'"
    ].join('; ')

  const server = http.createServer((request, response) => {
    void (async () => {
      if (!hosts().has(request.headers.host ?? '')) {
        response.writeHead(421, { 'Content-Type': 'text/plain' }).end('wrong host\n')
        return
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        response.writeHead(405, { Allow: 'GET, HEAD' }).end()
        return
      }
      let pathname: string
      try {
        pathname = decodeURIComponent(new URL(request.url ?? '/', 'http://127.0.0.1').pathname)
      } catch {
        response.writeHead(400).end()
        return
      }
      const file = path.resolve(root, `.${pathname.endsWith('/') ? `${pathname}index.html` : pathname}`)
      if (file !== root && !file.startsWith(`${root}${path.sep}`)) {
        response.writeHead(403).end()
        return
      }
      try {
        if (!(await stat(file)).isFile()) throw new Error('not a file')
        const body = await readFile(file)
        response.writeHead(200, {
          'Content-Type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream',
          'Content-Security-Policy': csp(),
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Cache-Control': 'no-store'
        })
        response.end(request.method === 'HEAD' ? undefined : body)
      } catch {
        response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n')
      }
    })()
  })

  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES })
  server.on('upgrade', (request, socket, head) => {
    let url: URL
    try {
      url = new URL(request.url ?? '/', 'http://127.0.0.1')
    } catch {
      return refuseUpgrade(socket, 400, 'Bad Request')
    }
    if (url.pathname !== '/api') return refuseUpgrade(socket, 404, 'Not Found')
    if (!hosts().has(request.headers.host ?? '')) return refuseUpgrade(socket, 421, 'Misdirected Request')
    if (!origins().has(request.headers.origin ?? '')) return refuseUpgrade(socket, 403, 'Forbidden origin')
    if (!sameSecret(url.searchParams.get('token') ?? '', token)) return refuseUpgrade(socket, 401, 'Unauthorized')
    sockets.handleUpgrade(request, socket, head, (ws) => sockets.emit('connection', ws, request))
  })

  sockets.on('connection', (ws: WebSocket) => {
    const send = (message: unknown) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message))
    }
    const unsubscribe = options.subscribe((event) => send({ kind: 'event', event }))
    const serve = serveRequests(options.host, send, { trusted: false })
    ws.on('message', (data, isBinary) => {
      if (isBinary) return
      let message: unknown
      try {
        message = JSON.parse(data.toString())
      } catch {
        return
      }
      serve(message)
    })
    ws.on('close', unsubscribe)
    ws.on('error', unsubscribe)
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, '127.0.0.1', () => resolve())
  })
  port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    close: async () => {
      for (const client of sockets.clients) client.terminate()
      sockets.close()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
