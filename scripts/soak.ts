/**
 * `npm run soak`: sustained load on browser mode for a bounded time. Starts `electron/serve.ts` (the engine in its
 * child process, a temporary database) and drives it over its WebSocket api as the renderer does — no browser:
 *   - models: load the trio, chat turns (plain, stopped mid-reply, regenerated, a busy probe refused while one
 *     generates), a Workbench run to the end and one cancelled half-way, a few list requests, unload; again;
 *   - downloads, at the same time, from a local server that fails in every way downloads.ts handles (soak/fault-server.ts):
 *     a good file (then removed again), a short body, ranges ignored, a reset, 404, 500, a stall, a slow one cancelled.
 * Every few seconds it samples the engine process's resident memory and open descriptors (/proc/<pid>, the pid from
 * app:info), the server's, and the database's bytes (+ -wal). At the end: memory and descriptors after the warm-up
 * (soak/flatness.ts), requests sent/answered/refused as meant, how every job ended, rows left `running` in the
 * database (read directly), and PASS/FAIL against the targets (soak/verdict.ts); exit 1 on FAIL.
 * Usage: npm run soak -- [--minutes 10] [--models dir] [--db file] [--out prefix] [--sample-seconds 5]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { Command, InvalidArgumentError } from 'commander'
import type { ApiRequest } from '../electron/api/contract'
import type { HostEvent } from '../electron/api/events'
import type { DownloadState } from '../electron/api/models'
import type { WorkbenchProgress } from '../electron/api/workbench'
import { connectCounted, type CountedClient } from './soak/counted-client'
import { startFaultServer, type FaultMode } from './soak/fault-server'
import { flatness, type Flatness } from './soak/flatness'
import { databaseBytes, descriptorKinds, sampleProcess } from './soak/process-sample'
import { soakFailures, type JobCounts, type SoakOutcome } from './soak/verdict'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

const positive = (value: string) => {
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number')
  return n
}
const options = new Command('soak')
  .description('sustained load on browser mode; samples the engine process and the database, PASS/FAIL against the targets')
  .option('--minutes <n>', 'how long the load runs', positive, 10)
  .option('--models <dir>', 'the shared models (target5M-q8_0 and stories260K-q8_0)', '/work/shared/models')
  .option('--db <file>', 'SQLite database (default: a temporary one, deleted at the end)')
  .option('--out <prefix>', 'writes <prefix>.json (options, samples, summary) and <prefix>.csv (samples)')
  .option('--sample-seconds <n>', 'sampling interval', positive, 5)
  .option('--warmup <fraction>', 'the share of the time cut as warm-up', positive, 0.2)
  .option('--tolerance <percent>', 'largest change of memory / descriptors after the warm-up that counts as flat', positive, 10)
  .parse()
  .opts<{ minutes: number; models: string; db?: string; out?: string; sampleSeconds: number; warmup: number; tolerance: number }>()

/** Threads fixed (no calibration at load), a small context: turns take a fraction of a second. */
const LOAD = { contextSize: 512, gpuLayers: 0, threads: 1, batchThreads: null, fullVocabulary: false } as const
const CHAT = { method: 'sd', maxTokens: 24, temperature: 0.8, topK: 40, topP: 0.95, gamma: 4, seed: null, params: {} } as const
/** A reply long enough to be stopped half-way. */
const LONG_REPLY = 200
const PROMPTS = ['Once upon a time', 'Lily found a red ball in the park', 'Tom and his dog went to the sea', 'The little bird was sad because']
/** The soak's verdict on a request or job that takes longer than this: never answered. */
const ANSWER_TIMEOUT_MS = 120_000
/** Downloads fail after this long without data (SPECLAB_DOWNLOAD_TIMEOUT_MS of the engine): the stall case. */
const DOWNLOAD_TIMEOUT_MS = 3000
/** What each server behaviour must end as: only the good file completes, the slow one is cancelled by the soak. */
const EXPECTED_DOWNLOAD: Record<FaultMode, DownloadState['state']> = {
  ok: 'done',
  'short-body': 'failed',
  'no-range': 'failed',
  reset: 'failed',
  '404': 'failed',
  '500': 'failed',
  stall: 'failed',
  slow: 'cancelled'
}
const BUSY = /the models are busy/

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const MiB = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10

// ── The server ──────────────────────────────────────────────────────────────────────────────────────────────

interface Served {
  child: ChildProcess
  url: URL
  log: string
}

function startServer(db: string, downloads: string, scratch: string): Promise<Served> {
  const log = path.join(scratch, 'serve.log')
  const out = fs.openSync(log, 'a')
  const child = spawn(process.execPath, ['--import', 'tsx', 'electron/serve.ts', '--port', '0', '--db', db, '--download-dir', downloads], {
    cwd: root,
    stdio: ['ignore', 'pipe', out],
    env: {
      ...process.env,
      SPECLAB_DB: '',
      SPECLAB_THREAD_CALIBRATION_CACHE: path.join(scratch, 'thread-calibration.json'),
      SPECLAB_DOWNLOAD_TIMEOUT_MS: String(DOWNLOAD_TIMEOUT_MS)
    }
  })
  return new Promise((resolve, reject) => {
    let stdout = ''
    const timer = setTimeout(() => reject(new Error(`the server did not start in 60 s (see ${log})`)), 60_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /SpecLab browser mode: (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve({ child, url: new URL(match[1]!), log })
      }
    })
    child.once('exit', (code) => reject(new Error(`the server exited with ${code} (see ${log})`)))
  })
}

async function stopServer(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  const code = await exited
  clearTimeout(timer)
  return code
}

// ── What the engine pushes, kept until the workload looks ───────────────────────────────────────────────────

type ChatDone = Extract<HostEvent, { type: 'chat:done' }>

/** Events by generation, job and download id; a waiter is checked on every event, so none is missed by arriving early. */
class EventBook {
  readonly chatDone = new Map<string, ChatDone>()
  readonly chatStreaming = new Set<string>()
  readonly workbench = new Map<string, WorkbenchProgress>()
  readonly downloads = new Map<string, DownloadState>()
  restarts = 0
  private readonly waiters = new Set<() => void>()

  take(event: HostEvent): void {
    if (event.type === 'chat:tokens') this.chatStreaming.add(event.generationId)
    else if (event.type === 'chat:done') this.chatDone.set(event.generationId, event)
    else if (event.type === 'workbench:progress') this.workbench.set(event.progress.jobId, event.progress)
    else if (event.type === 'download:progress') this.downloads.set(event.download.downloadId, event.download)
    else if (event.type === 'host:status' && event.state !== 'ready') this.restarts++
    for (const waiter of this.waiters) waiter()
  }

  /** Resolves with check()'s first defined value, or null after `timeoutMs`. */
  waitFor<T>(check: () => T | undefined, timeoutMs = ANSWER_TIMEOUT_MS): Promise<T | null> {
    const now = check()
    if (now !== undefined) return Promise.resolve(now)
    return new Promise((resolve) => {
      const waiter = () => {
        const value = check()
        if (value === undefined) return
        this.waiters.delete(waiter)
        clearTimeout(timer)
        resolve(value)
      }
      const timer = setTimeout(() => {
        this.waiters.delete(waiter)
        resolve(null)
      }, timeoutMs)
      this.waiters.add(waiter)
    })
  }

  /** Forgets a finished job's events (the book must not grow over the soak). */
  forget(id: string): void {
    this.chatDone.delete(id)
    this.chatStreaming.delete(id)
    this.workbench.delete(id)
    this.downloads.delete(id)
  }
}

const newJobCounts = (): JobCounts => ({ started: 0, endedAsExpected: 0, endedOtherwise: 0, neverEnded: 0 })

interface Tally {
  chat: JobCounts
  workbench: JobCounts
  downloads: JobCounts
  chatKinds: Record<string, number>
  workbenchStatuses: Record<string, number>
  downloadOutcomes: Record<string, Record<string, number>>
  downloadErrors: Record<string, string>
  loads: number
  unloads: number
  /** Jobs that ended otherwise than meant, and why (the first few). */
  surprises: string[]
}

const bump = (record: Record<string, number>, key: string) => void (record[key] = (record[key] ?? 0) + 1)
const surprise = (tally: Tally, line: string) => void (tally.surprises.length < 20 && tally.surprises.push(line))

// ── The model workload: chat, Workbench, load and unload ─────────────────────────────────────────────────────

interface Trio {
  target: number
  draft: number
}

type ChatKind = 'turn' | 'stop' | 'regenerate' | 'busy-probe'
/** One cycle's turns, in order (a cycle starts a new conversation). */
const TURNS: ChatKind[] = ['turn', 'turn', 'stop', 'regenerate', 'turn', 'busy-probe', 'regenerate', 'turn', 'stop', 'turn']

interface Conversation {
  id: number | null
  lastUser: { id: number; text: string } | null
}

async function chatTurn(api: CountedClient, book: EventBook, tally: Tally, trio: Trio, kind: ChatKind, conversation: Conversation, turn: number): Promise<void> {
  const regenerate = kind === 'regenerate' && conversation.lastUser !== null
  const text = regenerate ? conversation.lastUser!.text : PROMPTS[turn % PROMPTS.length]!
  const long = kind === 'stop' || kind === 'busy-probe'
  const request: ApiRequest<'chat:send'> = {
    conversationId: conversation.id,
    text,
    settings: { ...CHAT, maxTokens: long ? LONG_REPLY : CHAT.maxTokens },
    format: 'auto',
    systemPrompt: '',
    ...(regenerate ? { replaceFrom: conversation.lastUser!.id } : {})
  }
  const sent = await api.call('chat:send', request)
  if (!sent) return
  tally.chat.started++
  bump(tally.chatKinds, regenerate ? 'regenerate' : kind)
  conversation.id = sent.conversationId
  conversation.lastUser = { id: sent.userMessage.id, text }
  const id = sent.generationId
  if (long) {
    await book.waitFor(() => (book.chatStreaming.has(id) || book.chatDone.has(id) ? true : undefined))
    if (kind === 'busy-probe') {
      // One job at a time: while the reply generates, another generation and a Workbench run are refused.
      const second = await api.call('chat:send', { ...request, conversationId: sent.conversationId, replaceFrom: undefined }, BUSY)
      const run = await api.call('workbench:start', workbenchRequest(trio, false), BUSY)
      // Accepted only if the reply ended before the probe arrived (an early end of story): then see those jobs through.
      if (second || run) bump(tally.chatKinds, 'probe accepted: the reply had ended')
      if (second) await book.waitFor(() => book.chatDone.get(second.generationId)).then(() => book.forget(second.generationId))
      if (run) await book.waitFor(() => (book.workbench.get(run.jobId)?.phase === 'finished' ? true : undefined)).then(() => book.forget(run.jobId))
    }
    await api.call('chat:stop', { generationId: id })
  }
  const done = await book.waitFor(() => book.chatDone.get(id))
  if (!done) {
    tally.chat.neverEnded++
    surprise(tally, `chat ${kind}: no chat:done within ${ANSWER_TIMEOUT_MS / 1000} s`)
  } else if (done.error !== null || done.message === null) {
    tally.chat.endedOtherwise++
    surprise(tally, `chat ${kind}: ${done.error ?? 'no message'}`)
  } else tally.chat.endedAsExpected++
  book.forget(id)
}

function workbenchRequest(trio: Trio, cancel: boolean): ApiRequest<'workbench:start'> {
  return {
    suite: null,
    methods: ['ar', 'sd'],
    dataset: { kind: 'builtin', id: 'stories' },
    limit: cancel ? 4 : 2,
    models: { target: trio.target, mid: null, draft: trio.draft },
    load: LOAD,
    settings: { maxTokens: cancel ? 64 : 16, temperature: 0, topK: 64, topP: 1, gamma: 4, seed: 1, params: {} },
    repeats: 1
  }
}

async function workbenchRun(api: CountedClient, book: EventBook, tally: Tally, trio: Trio, cancel: boolean): Promise<void> {
  const started = await api.call('workbench:start', workbenchRequest(trio, cancel))
  if (!started) return
  tally.workbench.started++
  const { jobId } = started
  if (cancel) {
    // Half-way: once it decodes (or at once, should it already be over).
    await book.waitFor(() => {
      const p = book.workbench.get(jobId)
      return p && (p.phase === 'finished' || (p.phase === 'running' && p.cellsDone >= 1)) ? true : undefined
    })
    await api.call('workbench:cancel', { jobId })
  }
  const finished = await book.waitFor(() => {
    const p = book.workbench.get(jobId)
    return p?.phase === 'finished' ? p : undefined
  })
  if (!finished) {
    tally.workbench.neverEnded++
    surprise(tally, `workbench${cancel ? ' (cancelled)' : ''}: not finished within ${ANSWER_TIMEOUT_MS / 1000} s`)
  } else {
    bump(tally.workbenchStatuses, `${cancel ? 'cancel → ' : ''}${finished.status}`)
    // A cancel that comes after the last cell finds a finished run: done is then right too.
    const meant = finished.status === (cancel ? 'cancelled' : 'done') || (cancel && finished.status === 'done')
    if (meant) tally.workbench.endedAsExpected++
    else {
      tally.workbench.endedOtherwise++
      surprise(tally, `workbench${cancel ? ' (cancelled)' : ''}: ${finished.status} ${finished.error ?? ''}`)
    }
  }
  book.forget(jobId)
}

/** What the UI asks for around these screens; cheap reads that cross the same transport. */
async function browse(api: CountedClient): Promise<void> {
  await api.call('runs:list', { limit: 50 })
  await api.call('runs:search', { limit: 50 })
  await api.call('chat:conversations', {})
  await api.call('models:list', {})
  await api.call('workbench:status', {})
  await api.call('models:downloads', {})
}

async function modelWorkload(api: CountedClient, book: EventBook, tally: Tally, trio: Trio, until: number): Promise<void> {
  let turn = 0
  while (Date.now() < until) {
    if (await api.call('models:load', { trio: { target: trio.target, mid: null, draft: trio.draft }, settings: LOAD })) tally.loads++
    const conversation: Conversation = { id: null, lastUser: null }
    for (const kind of TURNS) {
      if (Date.now() >= until) break
      await chatTurn(api, book, tally, trio, kind, conversation, turn++)
    }
    if (Date.now() < until) await workbenchRun(api, book, tally, trio, false)
    if (Date.now() < until) await workbenchRun(api, book, tally, trio, true)
    await browse(api)
    if ((await api.call('models:unload', {}))?.unloaded) tally.unloads++
  }
}

// ── Downloads from the misbehaving server ─────────────────────────────────────────────────────────────────────

/** Between downloads: the models' work keeps most of the CPU. */
const DOWNLOAD_PAUSE_MS = 2000
const DOWNLOAD_ORDER: FaultMode[] = ['ok', 'short-body', 'reset', '404', 'slow', 'no-range', '500', 'stall']

async function download(api: CountedClient, book: EventBook, tally: Tally, base: string, mode: FaultMode, directory: string): Promise<void> {
  const started = await api.call('models:download', { uri: `${base}/${mode}/soak-${mode}.gguf` })
  if (!started) return
  tally.downloads.started++
  const id = started.downloadId
  if (mode === 'slow') {
    await book.waitFor(() => ((book.downloads.get(id)?.downloadedBytes ?? 0) > 0 || book.downloads.get(id)?.state !== 'downloading' ? true : undefined), 30_000)
    await api.call('models:download-cancel', { downloadId: id })
  }
  const final = await book.waitFor(() => {
    const state = book.downloads.get(id)
    return state && state.state !== 'downloading' ? state : undefined
  })
  if (!final) {
    tally.downloads.neverEnded++
    surprise(tally, `download ${mode}: no final state within ${ANSWER_TIMEOUT_MS / 1000} s`)
  } else {
    tally.downloadOutcomes[mode] ??= {}
    bump(tally.downloadOutcomes[mode], final.state)
    if (final.error) tally.downloadErrors[mode] ??= final.error
    if (final.state === EXPECTED_DOWNLOAD[mode]) tally.downloads.endedAsExpected++
    else {
      tally.downloads.endedOtherwise++
      surprise(tally, `download ${mode}: ${final.state} ${final.error ?? ''}`)
    }
    // The good file leaves the library and the disk again, so the next one downloads it anew.
    if (final.state === 'done' && final.modelId !== null) {
      await api.call('models:remove', { modelId: final.modelId })
      fs.rmSync(path.join(directory, final.fileName ?? `soak-${mode}.gguf`), { force: true })
    }
  }
  book.forget(id)
}

async function downloadWorkload(api: CountedClient, book: EventBook, tally: Tally, base: string, directory: string, until: number): Promise<void> {
  for (let i = 0; Date.now() < until; i++) {
    await download(api, book, tally, base, DOWNLOAD_ORDER[i % DOWNLOAD_ORDER.length]!, directory)
    await sleep(DOWNLOAD_PAUSE_MS)
  }
}

// ── Samples ─────────────────────────────────────────────────────────────────────────────────────────────────

interface Sample {
  t: number
  enginePid: number | null
  engineRssBytes: number | null
  engineFds: number | null
  serverRssBytes: number | null
  serverFds: number | null
  dbBytes: number
  walBytes: number
  chats: number
  workbenchRuns: number
  downloads: number
  requests: number
}

async function takeSample(api: CountedClient, serverPid: number, db: string, startedAt: number, tally: Tally): Promise<Sample> {
  const info = await api.call('app:info', {})
  const engine = info ? sampleProcess(info.enginePid) : null
  const server = sampleProcess(serverPid)
  const bytes = databaseBytes(db)
  return {
    t: Math.round((Date.now() - startedAt) / 100) / 10,
    enginePid: info?.enginePid ?? null,
    engineRssBytes: engine?.rssBytes ?? null,
    engineFds: engine?.fds ?? null,
    serverRssBytes: server?.rssBytes ?? null,
    serverFds: server?.fds ?? null,
    dbBytes: bytes.db,
    walBytes: bytes.wal,
    chats: tally.chat.started,
    workbenchRuns: tally.workbench.started,
    downloads: tally.downloads.started,
    requests: api.counts.sent
  }
}

const series = (samples: Sample[], key: 'engineRssBytes' | 'engineFds' | 'serverRssBytes' | 'serverFds') =>
  samples.flatMap((s) => (s[key] === null ? [] : [{ t: s.t, value: s[key]! }]))

/** Rows still `running` in the run tables, read straight from the file (not through the engine's view of them). */
function rowsLeftRunning(db: string): { runs: number; promptResults: number; suiteRuns: number } {
  const database = new Database(db, { readonly: true, fileMustExist: true })
  try {
    const count = (table: string) => (database.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE status = 'running'`).get() as { n: number }).n
    return { runs: count('runs'), promptResults: count('prompt_results'), suiteRuns: count('suite_runs') }
  } finally {
    database.close()
  }
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────────────────

const files = {
  target: path.join(options.models, 'family/stories-target5M-q8_0.gguf'),
  draft: path.join(options.models, 'stories260K-q8_0.gguf')
}
for (const file of Object.values(files))
  if (!fs.existsSync(file)) {
    process.stderr.write(`speclab soak: ${file} not found (--models names the shared models directory)\n`)
    process.exit(2)
  }
if (!fs.existsSync(path.join(root, 'out/renderer/index.html'))) {
  process.stderr.write('speclab soak: no built renderer in out/renderer — run `npm run build` first (npm run soak does)\n')
  process.exit(2)
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-soak-'))
const db = path.resolve(options.db ?? path.join(scratch, 'soak.sqlite'))
const downloadDirectory = path.join(scratch, 'downloads')
const faults = await startFaultServer(fs.readFileSync(files.draft))
const served = await startServer(db, downloadDirectory, scratch)
const api = await connectCounted(served.url, ANSWER_TIMEOUT_MS)
const book = new EventBook()
api.onEvent((event) => book.take(event))
const tally: Tally = {
  chat: newJobCounts(),
  workbench: newJobCounts(),
  downloads: newJobCounts(),
  chatKinds: {},
  workbenchStatuses: {},
  downloadOutcomes: {},
  downloadErrors: {},
  loads: 0,
  unloads: 0,
  surprises: []
}

const target = await api.call('models:add', { path: files.target })
const draft = await api.call('models:add', { path: files.draft })
if (!target || !draft) {
  process.stderr.write(`speclab soak: could not add the models: ${api.problems.join('; ')}\n`)
  await stopServer(served.child)
  process.exit(2)
}
const trio: Trio = { target: target.id, draft: draft.id }

const durationS = options.minutes * 60
const startedAt = Date.now()
const until = startedAt + durationS * 1000
process.stderr.write(
  `soak: ${options.minutes} min on ${served.url.host}, database ${db}; sampling every ${options.sampleSeconds} s, warm-up ${options.warmup * 100} %\n`
)

const samples: Sample[] = []
let sampling = true
let firstKinds: Record<string, number> = {}
const sampler = (async () => {
  let lastLine = 0
  while (sampling) {
    const sample = await takeSample(api, served.child.pid!, db, startedAt, tally)
    samples.push(sample)
    if (samples.length === 1 && sample.enginePid !== null) firstKinds = descriptorKinds(sample.enginePid)
    if (sample.t - lastLine >= 30) {
      lastLine = sample.t
      process.stderr.write(
        `  ${sample.t.toFixed(0).padStart(5)} s  engine ${MiB(sample.engineRssBytes ?? 0)} MiB ${sample.engineFds} fds · server ${MiB(sample.serverRssBytes ?? 0)} MiB ${sample.serverFds} fds · ` +
          `db ${MiB(sample.dbBytes + sample.walBytes)} MiB · ${sample.chats} turns, ${sample.workbenchRuns} runs, ${sample.downloads} downloads, ${sample.requests} requests\n`
      )
    }
    const next = startedAt + samples.length * options.sampleSeconds * 1000
    await sleep(Math.max(0, next - Date.now()))
  }
})()

await Promise.all([
  modelWorkload(api, book, tally, trio, until),
  downloadWorkload(api, book, tally, faults.base, downloadDirectory, until)
])
const loadEndedAt = Date.now()
sampling = false
await sampler
// A last sample once everything has settled: what the engine holds at rest after the load.
const settled = await takeSample(api, served.child.pid!, db, startedAt, tally)
const settledInfo = await api.call('app:info', {})
const settledKinds = settledInfo ? descriptorKinds(settledInfo.enginePid) : {}
const pids = new Set(samples.map((s) => s.enginePid).filter((pid) => pid !== null))
const liveRows = rowsLeftRunning(db)
const status = await api.call('workbench:status', {})
api.close()
const exitCode = await stopServer(served.child)
await faults.close()
const closedRows = rowsLeftRunning(db)
const leftInDownloads = fs.existsSync(downloadDirectory) ? fs.readdirSync(downloadDirectory) : []

// ── Summary ─────────────────────────────────────────────────────────────────────────────────────────────────

const judge = { warmupFraction: options.warmup, tolerancePercent: options.tolerance }
const measuredS = Math.max(durationS, (loadEndedAt - startedAt) / 1000)
const engineRss = flatness(series(samples, 'engineRssBytes'), measuredS, judge)
const engineFds = flatness(series(samples, 'engineFds'), measuredS, judge)
const serverRss = flatness(series(samples, 'serverRssBytes'), measuredS, judge)
const serverFds = flatness(series(samples, 'serverFds'), measuredS, judge)
const runsLeftRunning = Math.max(liveRows.runs + liveRows.promptResults + liveRows.suiteRuns, closedRows.runs + closedRows.promptResults + closedRows.suiteRuns)
const outcome: SoakOutcome = {
  tolerancePercent: options.tolerance,
  engineRss,
  engineFds,
  requests: api.counts,
  jobs: { 'chat generations': tally.chat, 'Workbench runs': tally.workbench, downloads: tally.downloads },
  runsLeftRunning,
  engineRestarts: Math.max(book.restarts, pids.size - 1)
}
const failures = soakFailures(outcome)
if (leftInDownloads.length > 0) failures.push(`files left in the download folder: ${leftInDownloads.join(', ')}`)
if (status?.phase !== undefined && status.phase !== 'finished') failures.push(`the Workbench still reports a job ${status.phase}`)
if (exitCode !== 0) failures.push(`the server exited with ${exitCode} on SIGTERM`)

const first = samples[0]
const last = samples.at(-1)
const line = (name: string, f: Flatness, unit: (v: number) => string) =>
  `${name.padEnd(24)} ${unit(f.min)} – ${unit(f.max)}, median ${unit(f.startMedian)} → ${unit(f.endMedian)} (${f.changePercent >= 0 ? '+' : ''}${f.changePercent.toFixed(1)} %), slope ${unit(f.slopePerMinute)}/min${f.flat ? '' : '  NOT FLAT'}`
const mib = (v: number) => `${MiB(v)} MiB`
const count = (v: number) => `${Math.round(v * 10) / 10}`
const report = [
  '',
  `soak: ${((loadEndedAt - startedAt) / 60_000).toFixed(1)} min of load, ${samples.length} samples every ${options.sampleSeconds} s; warm-up cut at ${engineRss.warmupEndS.toFixed(0)} s (${options.warmup * 100} %)`,
  `work: ${tally.chat.started} chat generations ${JSON.stringify(tally.chatKinds)}, ${tally.workbench.started} Workbench runs ${JSON.stringify(tally.workbenchStatuses)}, ${tally.loads} loads, ${tally.unloads} unloads, ${tally.downloads.started} downloads`,
  `downloads by server behaviour: ${JSON.stringify(tally.downloadOutcomes)}`,
  `requests: ${api.counts.sent} sent, ${api.counts.answered} answered (${api.counts.failedAsExpected} refused as meant, ${api.counts.failedUnexpectedly} failed unexpectedly), ${api.counts.unanswered} unanswered`,
  'after the warm-up:',
  `  ${line('engine resident memory', engineRss, mib)}`,
  `  ${line('engine open descriptors', engineFds, count)}`,
  `  ${line('server resident memory', serverRss, mib)}  (not judged)`,
  `  ${line('server open descriptors', serverFds, count)}  (not judged)`,
  `database: ${MiB((first?.dbBytes ?? 0) + (first?.walBytes ?? 0))} MiB at the start → ${MiB((last?.dbBytes ?? 0) + (last?.walBytes ?? 0))} MiB at the end (file ${MiB(last?.dbBytes ?? 0)} + wal ${MiB(last?.walBytes ?? 0)})`,
  `settled: engine ${MiB(settled.engineRssBytes ?? 0)} MiB, ${settled.engineFds} fds once the load stopped`,
  `settled descriptors by kind: ${JSON.stringify(firstKinds)} at the first sample → ${JSON.stringify(settledKinds)}`,
  `rows left 'running': ${JSON.stringify(liveRows)} with the engine up, ${JSON.stringify(closedRows)} after it closed; engine pids seen: ${[...pids].join(', ')}`,
  ...(tally.surprises.length > 0 ? ['jobs that ended otherwise:', ...tally.surprises.map((s) => `  ${s}`)] : []),
  ...(api.problems.length > 0 ? ['requests that failed:', ...api.problems.map((s) => `  ${s}`)] : []),
  failures.length === 0 ? `PASS: memory and descriptors flat within ${options.tolerance} %, every request answered, no run left running` : `FAIL:\n${failures.map((f) => `  - ${f}`).join('\n')}`
]
process.stdout.write(`${report.join('\n')}\n`)

if (options.out) {
  const prefix = path.resolve(options.out)
  fs.mkdirSync(path.dirname(prefix), { recursive: true })
  const summary = { ...outcome, serverRss, serverFds, tally, downloadErrors: tally.downloadErrors, liveRows, closedRows, settled, descriptorKinds: { first: firstKinds, settled: settledKinds }, failures, pass: failures.length === 0 }
  fs.writeFileSync(`${prefix}.json`, `${JSON.stringify({ options: { ...options, db }, startedAt: new Date(startedAt).toISOString(), samples, summary }, null, 2)}\n`)
  const columns = Object.keys(samples[0] ?? settled) as (keyof Sample)[]
  fs.writeFileSync(`${prefix}.csv`, `${[columns.join(','), ...samples.map((s) => columns.map((c) => s[c] ?? '').join(','))].join('\n')}\n`)
  process.stdout.write(`samples: ${prefix}.json, ${prefix}.csv\n`)
}
if (failures.length > 0) process.stdout.write(`server log: ${served.log}\n`)
else fs.rmSync(scratch, { recursive: true, force: true })
process.exit(failures.length === 0 ? 0 : 1)
