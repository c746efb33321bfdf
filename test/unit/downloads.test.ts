/**
 * Downloads with node-llama-cpp's real downloader against local HTTP servers that misbehave: one that never
 * answers fails after the (shortened) response timeout, one that stalls mid-way likewise, one that answers an error
 * status (404, 500 — also for the parts after a good first answer) fails at once with that status, cancel ends a
 * job in any phase (state cancelled, nothing left in the download folder), and bad URIs are refused with one line.
 */
import { execFile, spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { Socket } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { HostEvent } from '../../electron/api/events'
import { isModelUri, ModelUri, type DownloadState, type ModelEntry } from '../../electron/api/models'
import { handleApiRequest, type ApiService } from '../../electron/api/runs-service'
import { describeDownloadFailure, DownloadManager, isDownloaderError, KEPT_FINISHED_DOWNLOADS } from '../../electron/host/downloads'
import { until } from '../helpers/until'

const DATA = Buffer.alloc(12 << 20, 7) // 12 MiB (ipull writes 5 MiB chunks); the fake library does not read it
type Mode = 'fast' | 'slow' | 'stall' | 'hang' | 'missing' | 'broken' | 'broken-parts' | 'no-range'

let server: http.Server
let base: string
/** The connections that have carried a request and are still open. */
const requested = new Set<Socket>()

beforeAll(async () => {
  server = http.createServer((request, response) => {
    if (!requested.has(request.socket)) {
      requested.add(request.socket)
      request.socket.once('close', () => requested.delete(request.socket))
    }
    const mode = (request.url?.split('/')[1] ?? 'fast') as Mode
    if (mode === 'hang') return // accepts the connection, never answers
    if (mode === 'missing') return void response.writeHead(404, 'Not Found').end()
    if (mode === 'broken') return void response.writeHead(500, 'Internal Server Error').end('boom\n')
    // no-range: announces ranges but answers every request with the whole file and 200 (ipull's InvalidContentLengthError).
    const range = mode === 'no-range' ? null : /bytes=(\d+)-(\d*)/.exec(request.headers.range ?? '')
    // The first request (the file's size) is answered well, the parts fetched in parallel after it are not.
    if (mode === 'broken-parts' && range) return void response.writeHead(500, 'Internal Server Error').end('boom\n')
    const start = range ? Number(range[1]) : 0
    const end = range && range[2] ? Number(range[2]) : DATA.length - 1
    response.writeHead(range ? 206 : 200, {
      'Content-Length': end - start + 1,
      'Accept-Ranges': 'bytes',
      ...(range ? { 'Content-Range': `bytes ${start}-${end}/${DATA.length}` } : {})
    })
    if (request.method === 'HEAD') return void response.end()
    if (mode === 'fast' || mode === 'no-range') return void response.end(DATA.subarray(start, end + 1))
    if (mode === 'stall') return void response.write(DATA.subarray(start, start + 16_384)) // then nothing
    let offset = start
    const timer = setInterval(() => {
      if (offset > end || response.destroyed) return void (clearInterval(timer), response.end())
      response.write(DATA.subarray(offset, Math.min(end + 1, offset + 65_536)))
      offset += 65_536
    }, 20)
    response.on('close', () => clearInterval(timer))
  })
  // An idle keep-alive connection closes soon after its answer, so one still open a moment after the download ended
  // is one the download left with a body unread. (Connections the client opened and never used are not counted: the
  // client closes them after its own keep-alive time, 4 s.)
  server.keepAliveTimeout = 300
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

let dir: string
const managers: DownloadManager[] = []
afterEach(async () => {
  server.closeAllConnections()
  const stopped = Promise.all(managers.splice(0).map((manager) => manager.stopAll()))
  await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 2000))])
})

function setup(responseTimeoutMs = 30_000) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-downloads-'))
  const events: HostEvent[] = []
  const added: string[] = []
  const library = {
    add: async (file: string) => {
      added.push(file)
      return { id: 1, fileName: path.basename(file), sizeBytes: fs.statSync(file).size } as ModelEntry
    }
  }
  const manager = new DownloadManager(dir, library, (event) => events.push(event), undefined, { responseTimeoutMs })
  managers.push(manager)
  const handlers = manager.handlers()
  const state = (id: string) => handlers['models:downloads']({}) as DownloadState[]
  const final = (id: string) => until(() => state(id).find((d) => d.downloadId === id && d.state !== 'downloading'), 20_000)
  return { manager, handlers, events, added, final, state }
}

// Short per-test limits: a cancel that does not end the job must fail here, not wait out vitest's two minutes.
describe('downloads', { timeout: 15_000 }, () => {
  it('downloads a file and hands it to the library', async () => {
    const { handlers, final, added } = setup()
    const started = await handlers['models:download']({ uri: `${base}/fast/model.gguf` })
    expect(started.state).toBe('downloading')
    expect(await final(started.downloadId)).toMatchObject({ state: 'done', fileName: 'model.gguf', totalBytes: DATA.length })
    expect(added).toEqual([path.join(dir, 'model.gguf')])
  })

  it('fails with a clear message when the server never answers', async () => {
    const { handlers, final } = setup(400)
    const t0 = performance.now()
    const started = await handlers['models:download']({ uri: `${base}/hang/model.gguf` })
    const failed = await final(started.downloadId)
    expect(failed.state).toBe('failed')
    expect(failed.error).toMatch(/^no response from 127\.0\.0\.1:\d+ within 0\.4 s/)
    expect(performance.now() - t0).toBeLessThan(5000)
    expect(fs.readdirSync(dir)).toEqual([])
  })

  it('fails when the transfer stalls mid-way', async () => {
    // 2 s: the first bytes must arrive in time even on a loaded 2-core machine, so the stall is what fails it.
    const { handlers, final } = setup(2000)
    const started = await handlers['models:download']({ uri: `${base}/stall/model.gguf` })
    const failed = await final(started.downloadId)
    expect(failed).toMatchObject({ state: 'failed' })
    expect(failed.error).toMatch(/^the download stalled: no data from 127\.0\.0\.1:\d+ for 2 s/)
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.ipull'))).toEqual([])
  })

  it('cancels mid-download: state cancelled, the partial file removed', async () => {
    const { handlers, events } = setup()
    const started = await handlers['models:download']({ uri: `${base}/slow/model.gguf` })
    await until(() => events.find((e) => e.type === 'download:progress' && e.download.downloadedBytes > 0), 20_000)
    await until(() => (fs.readdirSync(dir).includes('model.gguf.ipull') ? true : undefined), 20_000)
    // The reply comes once the job has ended, so the state and the folder are final here.
    expect(await handlers['models:download-cancel']({ downloadId: started.downloadId })).toEqual({ cancelled: true })
    expect((handlers['models:downloads']({}) as DownloadState[])[0].state).toBe('cancelled')
    expect(fs.readdirSync(dir)).toEqual([])
    expect(await handlers['models:download-cancel']({ downloadId: started.downloadId })).toEqual({ cancelled: false })
  })

  it('cancels while the server has not answered yet', async () => {
    const { handlers } = setup()
    const started = await handlers['models:download']({ uri: `${base}/hang/model.gguf` })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const t0 = performance.now()
    expect(await handlers['models:download-cancel']({ downloadId: started.downloadId })).toEqual({ cancelled: true })
    expect(performance.now() - t0).toBeLessThan(1000)
    expect((handlers['models:downloads']({}) as DownloadState[])[0]).toMatchObject({ state: 'cancelled', error: null })
    expect(fs.readdirSync(dir)).toEqual([])
  })

  // The response timeout is long here (8 s): an error status must end the job by itself, long before the watchdog.
  it('a refusal by the server says what failed and what to do instead, at once', async () => {
    const { handlers, final } = setup(8000)
    const t0 = performance.now()
    const started = await handlers['models:download']({ uri: `${base}/missing/model.gguf` })
    const failed = await final(started.downloadId)
    expect(failed.error).toMatch(/^127\.0\.0\.1:\d+ answered 404 Not Found for http:\/\/.*\/missing\/model\.gguf; check the address, or download the file another way \(a browser, curl\) and add it with Add model$/)
    expect(performance.now() - t0).toBeLessThan(3000)
  })

  it('a server error (500) fails the download at once with the status, not after retries and the timeout', async () => {
    const { handlers, final } = setup(8000)
    const t0 = performance.now()
    const started = await handlers['models:download']({ uri: `${base}/broken/model.gguf` })
    const failed = await final(started.downloadId)
    expect(failed.error).toMatch(
      /^127\.0\.0\.1:\d+ answered 500 Internal Server Error for http:\/\/127\.0\.0\.1:\d+\/broken\/model\.gguf; the server failed or is busy; try again later, or download the file another way/
    )
    expect(performance.now() - t0).toBeLessThan(3000)
    expect(fs.readdirSync(dir)).toEqual([])
  })

  // In a process of its own: ipull leaves the rejections of the other failing parts unhandled, which the engine
  // process absorbs (absorbDownloaderRejections) and vitest would report.
  it('a server error on the parts after a good first answer fails the download at once too', async () => {
    const partsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-downloads-'))
    const fixture = path.join(__dirname, '../fixtures/download-once.ts')
    // Asynchronously: the server answering it runs in this process. Exit 0: the stray rejections did not end it.
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', fixture, `${base}/broken-parts/model.gguf`, partsDir, '8000'], { timeout: 20_000 })
    const failed = JSON.parse(stdout) as DownloadState & { ms: number }
    expect(failed.state).toBe('failed')
    expect(failed.error).toMatch(/^127\.0\.0\.1:\d+ answered 500 Internal Server Error for http:\/\/.*\/broken-parts\/model\.gguf; the server failed/)
    expect(failed.ms).toBeLessThan(3000)
    expect(fs.readdirSync(partsDir)).toEqual([])
  })

  it('closes every connection a download opened when it ends: done, cancelled half-way, or failed', async () => {
    /** How many connections that carried a request are still open once none are, or 3 s after the call. */
    const stillOpen = async (from = performance.now()) => {
      while (requested.size > 0 && performance.now() - from < 3000) await new Promise((resolve) => setTimeout(resolve, 50))
      return requested.size
    }
    // Each download's size request is a GET whose body is never read; a cancel leaves it and its parts' open.
    const { handlers, final, events } = setup()
    const done = await handlers['models:download']({ uri: `${base}/fast/done.gguf` })
    expect(await final(done.downloadId)).toMatchObject({ state: 'done' })
    expect(await stillOpen()).toBe(0)
    const cancelled = await handlers['models:download']({ uri: `${base}/slow/cancelled.gguf` })
    await until(() => events.find((e) => e.type === 'download:progress' && e.download.downloadId === cancelled.downloadId && e.download.downloadedBytes > 0), 20_000)
    expect(await handlers['models:download-cancel']({ downloadId: cancelled.downloadId })).toEqual({ cancelled: true })
    expect(await stillOpen()).toBe(0)
    // A server that ignores ranges fails one part and the other parts' bodies are left unread (in a process of its
    // own for the stray rejections, as above; it stays a while after printing its result so its sockets are seen).
    const partsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-downloads-'))
    const fixture = path.join(__dirname, '../fixtures/download-once.ts')
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, `${base}/no-range/model.gguf`, partsDir, '8000', '4000'], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (data: Buffer) => resolve(data.toString()))
        child.once('exit', () => reject(new Error('the fixture ended without a result')))
      })
      expect((JSON.parse(line) as DownloadState).error).toMatch(/^127\.0\.0\.1:\d+ sent 12582912 bytes where \d+ were asked for/)
      expect(await stillOpen()).toBe(0)
    } finally {
      child.kill()
    }
  })

  it('names the server and the cause where the fetch itself failed, never a bare "fetch failed"', () => {
    const refused = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }) })
    expect(describeDownloadFailure(refused, 'example.com')).toBe(
      'could not reach example.com (ECONNREFUSED: connect ECONNREFUSED 10.0.0.1:443); check the address and the network connection, or download the file another way (a browser, curl) and add it with Add model'
    )
    expect(describeDownloadFailure(new TypeError('fetch failed'), 'example.com')).toMatch(/^could not reach example\.com \(no reason given\);/)
    expect(describeDownloadFailure(new Error('disk\nfull'), 'example.com')).toBe('disk full')
    // A part of the wrong length: a server that ignores ranges, or one whose Content-Length is wrong — both named.
    const WrongLength = class InvalidContentLengthError extends Error {}
    expect(describeDownloadFailure(new WrongLength('Expected 5242880 bytes, but got 12582912 bytes. If you on browser…'), 'example.com')).toBe(
      'example.com sent 12582912 bytes where 5242880 were asked for (it ignored a request for part of the file, or announced a wrong length), so it cannot be downloaded here; download the file another way (a browser, curl) and add it with Add model'
    )
    expect(describeDownloadFailure(new WrongLength('odd'), 'example.com')).toMatch(/^example\.com did not send the length asked for \(it ignored/)
    // Only the download library's own errors are taken for its stray rejections.
    class IpullError extends Error {}
    class InvalidContentLengthError extends IpullError {}
    expect(isDownloaderError(new InvalidContentLengthError('x'))).toBe(true)
    expect(isDownloaderError(new TypeError('fetch failed'))).toBe(false)
    expect(isDownloaderError('IpullError')).toBe(false)
  })

  it('keeps the newest finished downloads only, so the list of a long session stays bounded', async () => {
    const refused = async () => Promise.reject(new Error('no such file'))
    const manager = new DownloadManager(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-downloads-')), { add: async () => ({}) as ModelEntry }, () => {}, refused)
    const handlers = manager.handlers()
    const ids: string[] = []
    for (let i = 0; i < KEPT_FINISHED_DOWNLOADS + 5; i++) {
      const started = handlers['models:download']({ uri: `${base}/missing/m${i}.gguf` }) as DownloadState
      ids.push(started.downloadId)
      await until(() => ((handlers['models:downloads']({}) as DownloadState[]).find((d) => d.downloadId === started.downloadId)?.state === 'downloading' ? undefined : true))
    }
    const listed = handlers['models:downloads']({}) as DownloadState[]
    expect(listed.map((d) => d.downloadId)).toEqual(ids.slice(-KEPT_FINISHED_DOWNLOADS))
    expect(listed.every((d) => d.state === 'failed' && d.error === 'no such file')).toBe(true)
  })

  it('refuses bad URIs with one line', async () => {
    const { manager, handlers } = setup()
    for (const uri of ['hf:../..:Q4', 'hf:user/repo/../../etc/x.gguf', 'http://example.com/m.gguf', 'ftp://example.com/m.gguf']) {
      expect(() => handlers['models:download']({ uri })).toThrow(/^cannot download .*: expected hf:<user>\/<repo>:<quant>/)
      // Through the api as the app sends it: the field and what it allows, in plain words on one line.
      const reply = handleApiRequest(manager.handlers() as unknown as ApiService, 'models:download', { uri })
      const error = await reply.then(() => null, (e: Error) => e.message)
      expect(error).toMatch(/^Invalid request for models:download: uri: expected hf:<user>\/<repo>:<quant>, .* or http:\/\/ to localhost$/)
      expect(error).not.toMatch(/\n|✖|→/)
    }
    expect(handlers['models:downloads']({})).toEqual([])
  })
})

describe('model URIs', () => {
  it.each([
    'hf:bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M',
    'hf:user/repo',
    'hf:user.name/repo_1.0',
    'hf:user/repo/sub/model-Q8_0.gguf',
    'hf:user/repo/model.gguf#main',
    'https://example.com/models/m.gguf',
    'http://127.0.0.1:8080/m.gguf',
    'http://localhost/m.gguf',
    'http://[::1]:9000/m.gguf'
  ])('accepts %s', (uri) => {
    expect(isModelUri(uri)).toBe(true)
    expect(ModelUri.safeParse(uri).success).toBe(true)
  })

  it.each([
    'hf:../..:Q4',
    'hf:./repo',
    'hf:user/..',
    'hf:user/repo:../x',
    'hf:user/repo/../../etc/passwd.gguf',
    'hf:user/repo/./m.gguf',
    'hf:user/repo/m.gguf#../x',
    'hf:us er/repo',
    'hf:user',
    'hf:user/repo/m.bin',
    'http://example.com/m.gguf',
    'http://127.0.0.2.example.com/m.gguf',
    'https://example.com/script.sh',
    'file:///etc/m.gguf',
    ''
  ])('refuses %j', (uri) => {
    expect(isModelUri(uri)).toBe(false)
  })
})
