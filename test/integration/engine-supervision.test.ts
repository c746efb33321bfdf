/**
 * The engine process and its supervisor (electron/host/child-host.ts) under faults that need no model: a server
 * that announces byte ranges but ignores them fails each download with its own message while the engine process
 * lives on (its download library rejects promises nobody awaits, which Node would otherwise turn into the process's
 * death); and an engine that keeps dying is restarted three times a minute, then left stopped with a message
 * saying so, and started again by the next request.
 */
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DownloadState } from '../../electron/api/models'
import type { HostEvent } from '../../electron/api/events'
import { ChildHost } from '../../electron/host/child-host'
import { until } from '../helpers/until'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
let dir: string
let server: http.Server
let base: string

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-supervision-'))
  // Says it serves ranges, then answers every request with the whole (announced) file: 200, a few bytes, nothing.
  server = http.createServer((request, response) => {
    response.writeHead(200, { 'Content-Length': 10_000_000, 'Accept-Ranges': 'bytes' })
    if (request.method === 'HEAD') return void response.end()
    response.write(Buffer.alloc(100, 1))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  fs.rmSync(dir, { recursive: true, force: true })
})

describe('downloads in the engine process', () => {
  let host: ChildHost
  const events: HostEvent[] = []
  beforeAll(async () => {
    host = new ChildHost(
      { entry: path.join(root, 'electron/host/utility-entry.ts'), execArgv: ['--import', import.meta.resolve('tsx')] },
      { databasePath: path.join(dir, 'app.sqlite'), nativeBinding: null, downloadDirectory: path.join(dir, 'downloads'), version: 'test', mode: 'browser' },
      (event) => events.push(event)
    )
    await host.start()
  }, 60_000)
  afterAll(() => host?.close())

  it('a server that ignores byte ranges fails each download with its own error; the engine process lives on', async () => {
    const pid = host.pid
    const downloads = async () => (await host.request('models:downloads', {})) as DownloadState[]
    for (let i = 0; i < 4; i++) {
      const started = (await host.request('models:download', { uri: `${base}/m${i}.gguf` })) as DownloadState
      let final: DownloadState | undefined
      for (const deadline = Date.now() + 20_000; !final && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50)))
        final = (await downloads()).find((d) => d.downloadId === started.downloadId && d.state !== 'downloading')
      expect(final?.state).toBe('failed')
      expect(final?.error).toMatch(/^127\.0\.0\.1:\d+ sent \d+ bytes where \d+ were asked for \(it ignored a request for part of the file, or announced a wrong length\), .*; download the file another way .* Add model$/)
    }
    // The connections that failed after each download had ended must not have taken the process down with them.
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(host.pid).toBe(pid)
    expect(events.filter((e) => e.type === 'host:status' && e.state !== 'ready')).toEqual([])
    expect((await downloads()).map((d) => d.state)).toEqual(['failed', 'failed', 'failed', 'failed'])
  }, 90_000)
})

/** A stand-in engine: ready at once, answers every request with its pid. Killing it is what a crash does. */
const FAKE_ENGINE = `
process.on('message', (message) => {
  if (message.kind === 'init') process.send({ kind: 'event', event: { type: 'host:status', state: 'ready', message: null } })
  else if (message.kind === 'request') process.send({ kind: 'response', id: message.id, ok: true, result: { pid: process.pid } })
  else if (message.kind === 'shutdown') process.exit(0)
})
`

describe('the supervisor', () => {
  it('restarts a dying engine three times a minute, then says it stopped restarting; the next request starts it again', async () => {
    const entry = path.join(dir, 'fake-engine.cjs')
    fs.writeFileSync(entry, FAKE_ENGINE)
    const events: HostEvent[] = []
    const host = new ChildHost({ entry }, { databasePath: path.join(dir, 'fake.sqlite'), nativeBinding: null, downloadDirectory: dir, version: 'test', mode: 'browser' }, (event) => events.push(event))
    await host.start()
    try {
      const statuses = () => events.filter((e): e is Extract<HostEvent, { type: 'host:status' }> => e.type === 'host:status' && e.state !== 'ready')
      for (let death = 1; death <= 4; death++) {
        const pid = await until(() => host.pid)
        await host.request('app:info', {}) // answered: this engine is up
        process.kill(pid, 'SIGKILL')
        await until(() => (statuses().length === death ? true : undefined), 20_000)
      }
      expect(statuses().map((s) => s.state)).toEqual(['restarting', 'restarting', 'restarting', 'failed'])
      expect(statuses()[3].message).toMatch(/killed by SIGKILL — it stopped 4 times within 60 s, so it was not restarted; the next request starts it again$/)
      expect(host.pid).toBeUndefined()
      // Asking is enough to recover: a new engine answers, never "being restarted" for ever.
      const answer = (await host.request('app:info', {})) as { pid: number }
      expect(answer.pid).toBe(host.pid)
      expect(events.at(-1)).toMatchObject({ type: 'host:status', state: 'ready' })
    } finally {
      await host.close()
    }
  }, 60_000)
})
