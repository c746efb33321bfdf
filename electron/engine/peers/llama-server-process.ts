/**
 * llama.cpp's `llama-server` as a peer engine: a server process SpecLab starts on 127.0.0.1 with a run's models,
 * threads and context (or one the user already runs, `--llama-server-url`), and the two calls the peer methods make —
 * `/completion` with a token prompt, and `/props` to check what a given server serves.
 *
 * Servers started here are pooled by their command line: the prompts and repeats of a run reuse one server (its
 * start-up is not timed), and every one is stopped when this process exits. On POSIX the server runs under a small
 * `sh` watchdog that stops it when this process dies, even by SIGKILL, so a killed run leaves no server behind.
 * A server that fails to start (a model it refuses, a crash) costs one clear error, never this process.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { basename } from 'node:path'
import { UserInputError } from '../errors'
import { inheritedOpenMpSettings } from '../model/llama-cpp-model'

/** What a local server is started with; equal specs share one server. */
export interface LocalServerSpec {
  binary: string
  target: string
  draft: string | null
  threads: number
  batchThreads: number
  draftThreads: number
  contextSize: number
  /** The speculative arguments (`--spec-type …`), from the method. */
  speculative: readonly string[]
}

/** One answer of `/completion` (llama.cpp tools/server: server-task.cpp and server_slot_stats::to_json). */
export interface Completion {
  tokens: number[]
  stopType: string
  timings: {
    promptN: number
    promptMs: number
    predictedN: number
    predictedMs: number
    predictedPerSecond: number
    draftN: number | null
    draftAccepted: number | null
  }
}

export interface CompletionRequest {
  prompt: readonly number[]
  nPredict: number
  temperature: number
  topK: number
  topP: number
  seed: number
  /**
   * Reuse the slot's cached prefix (`cache_prompt`); default false, so each prompt is timed from scratch. The cost
   * measurement (llama-server-cost-table.ts) sets it to time k tokens after a cached prefix.
   */
  cachePrompt?: boolean
}

const START_TIMEOUT_MS = 120_000
const STDERR_LINES = 40

export interface PeerServer {
  /** Where it listens, e.g. http://127.0.0.1:41234. */
  readonly url: string
  complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion>
}

/** The command line of a local server (threads and context as the run's; one slot; no web UI). */
export function serverArguments(spec: LocalServerSpec, port: number): string[] {
  const args = ['-m', spec.target, '--host', '127.0.0.1', '--port', String(port)]
  args.push('-t', String(spec.threads), '-tb', String(spec.batchThreads), '-c', String(spec.contextSize), '-np', '1', '--no-webui')
  args.push(...draftArguments(spec), ...spec.speculative)
  return args
}

/** The draft model and its threads (`-md D -td N -tbd N`); none without a draft. */
export function draftArguments(spec: Pick<LocalServerSpec, 'draft' | 'draftThreads'>): string[] {
  return spec.draft ? ['-md', spec.draft, '-td', String(spec.draftThreads), '-tbd', String(spec.draftThreads)] : []
}

/**
 * The arguments that decide how a server decodes — models, threads, speculation — without the ones that only say
 * where it listens: the command line a user deploys a configuration with, from the same pieces as serverArguments.
 */
export function deploymentArguments(spec: Omit<LocalServerSpec, 'binary' | 'contextSize'>): string[] {
  return ['-m', spec.target, '-t', String(spec.threads), '-tb', String(spec.batchThreads), ...draftArguments(spec), ...spec.speculative]
}

/** A free TCP port on 127.0.0.1 (the kernel's choice; released just before the server binds it). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      const port = typeof address === 'object' && address ? address.port : 0
      probe.close(() => resolve(port))
    })
  })
}

/**
 * POSIX: `sh` starts the server in the background and polls this process; when it is gone (exit, crash, SIGKILL)
 * or sh is told to stop, the server is stopped too.
 */
const WATCHDOG = 'parent=$1; shift; "$@" & child=$!; trap \'kill $child 2>/dev/null; exit 0\' TERM INT HUP; ' +
  'while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1 & wait $!; done; kill $child 2>/dev/null; wait $child'

function spawnServer(binary: string, args: readonly string[]): ChildProcess {
  // The server runs as the user would run it: without the OpenMP settings SpecLab chose for its own runtime.
  const env = { ...process.env }
  for (const [name, value] of Object.entries(inheritedOpenMpSettings)) if (value === undefined) delete env[name]
  if (process.platform === 'win32') return spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'], windowsHide: true, env })
  return spawn('sh', ['-c', WATCHDOG, 'speclab-llama-server', String(process.pid), binary, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env })
}

class LocalServer implements PeerServer {
  private readonly stderr: string[] = []
  private exited: string | null = null

  constructor(
    readonly url: string,
    private readonly child: ChildProcess
  ) {
    child.stderr?.setEncoding('utf8')
    child.stderr?.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.trim()) this.stderr.push(line.trim())
      this.stderr.splice(0, Math.max(0, this.stderr.length - STDERR_LINES))
    })
    child.on('exit', (code, signal) => {
      this.exited = signal ? `signal ${signal}` : `code ${code}`
    })
    child.on('error', (error) => {
      this.exited = error.message
    })
  }

  /** Why the server stopped, with its last error lines. */
  private failure(): string {
    return `llama-server exited (${this.exited})${this.lastErrors()}`
  }

  /** ": " and the server's last error lines (else its last two lines); empty when it wrote nothing. */
  private lastErrors(): string {
    const errors = this.stderr.filter((line) => /error|failed|invalid|unable|cannot/i.test(line)).slice(-3)
    const last = (errors.length > 0 ? errors : this.stderr.slice(-2)).join(' | ')
    return last ? `: ${last}` : ''
  }

  async ready(): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS
    for (;;) {
      if (this.exited !== null) throw new UserInputError(this.failure())
      try {
        const response = await fetch(`${this.url}/health`)
        if (response.ok) return
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) {
        this.stop()
        throw new UserInputError(`llama-server did not become ready within ${START_TIMEOUT_MS / 1000} s`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  complete(request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
    return postCompletion(this.url, request, signal).catch(async (error: unknown) => {
      if (signal?.aborted) throw error
      // A server that died drops its connections before its exit reaches us: the watchdog (POSIX) notices within a
      // second, so a refused or reset connection waits that long for the reason.
      const connectionLost = isConnectionFailure(error)
      if (connectionLost) await this.exitWithin(EXIT_NOTICE_MS)
      if (this.exited !== null) throw new UserInputError(this.failure())
      if (connectionLost) throw new UserInputError(`llama-server at ${this.url} stopped answering (${connectionFailureCause(error)})${this.lastErrors()}`)
      throw error
    })
  }

  private async exitWithin(ms: number): Promise<void> {
    const deadline = Date.now() + ms
    while (this.exited === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  }

  stop(): void {
    if (this.exited === null) this.child.kill('SIGTERM')
  }
}

/** How long a failed connection waits for the server's exit to be noticed (the watchdog polls once a second). */
const EXIT_NOTICE_MS = 1500

/** fetch's own failure (refused, reset, closed): a TypeError with the socket's error as its cause. */
function isConnectionFailure(error: unknown): error is TypeError {
  return error instanceof TypeError && /fetch failed/.test(error.message)
}

function connectionFailureCause(error: TypeError): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  return cause?.code ?? cause?.message ?? error.message
}

const pool = new Map<string, Promise<LocalServer>>()
let exitHookInstalled = false

/** The pooled server for `spec`, started (and waited for) on first use. */
export function localServer(spec: LocalServerSpec): Promise<PeerServer> {
  const key = JSON.stringify(spec)
  let server = pool.get(key)
  if (!server) {
    if (!exitHookInstalled) {
      // Synchronous kill on exit; the watchdog covers the deaths no hook sees.
      process.once('exit', () => {
        for (const started of startedServers) started.stop()
      })
      exitHookInstalled = true
    }
    server = (async () => {
      const port = await freePort()
      const started = new LocalServer(`http://127.0.0.1:${port}`, spawnServer(spec.binary, serverArguments(spec, port)))
      startedServers.add(started)
      await started.ready()
      return started
    })()
    pool.set(key, server)
    server.catch(() => pool.delete(key))
  }
  return server
}

const startedServers = new Set<LocalServer>()

/** Stops the pooled server of `spec`, if one was started (one that failed to start is gone already). */
export async function stopLocalServer(spec: LocalServerSpec): Promise<void> {
  const key = JSON.stringify(spec)
  const server = pool.get(key)
  if (!server) return
  pool.delete(key)
  const started = await server.catch(() => null)
  if (started) {
    started.stop()
    startedServers.delete(started)
  }
}

/** Stops every server started here (tests; the exit hook does it for runs). */
export function stopLocalServers(): void {
  pool.clear()
  for (const started of startedServers) started.stop()
  startedServers.clear()
}

/** A server the user runs (`--llama-server-url`), after `/props` showed it serves `target` with its tokenizer. */
export async function remoteServer(url: string, target: { path: string; tokenize(text: string): number[] }): Promise<PeerServer> {
  const base = url.replace(/\/+$/, '')
  let props: { model_path?: unknown }
  try {
    const response = await fetch(`${base}/props`)
    if (!response.ok) throw new Error(`HTTP ${response.status}`)
    props = (await response.json()) as { model_path?: unknown }
  } catch (error) {
    throw new UserInputError(`--llama-server-url ${url}: no llama-server answers /props (${(error as Error).message})`)
  }
  const served = typeof props.model_path === 'string' ? basename(props.model_path) : null
  if (served !== basename(target.path)) {
    throw new UserInputError(`--llama-server-url ${url} serves ${served ?? 'an unknown model'}, not the run's target ${basename(target.path)}: refusing to compare different models`)
  }
  const probe = 'Once upon a time, a little girl found 3 red apples.'
  const theirs = await tokenizeOn(base, probe)
  if (JSON.stringify(theirs) !== JSON.stringify(target.tokenize(probe))) {
    throw new UserInputError(`--llama-server-url ${url} serves a ${served} whose tokenizer differs from the run's target: refusing to compare different models`)
  }
  return { url: base, complete: (request, signal) => postCompletion(base, request, signal) }
}

async function tokenizeOn(base: string, content: string): Promise<number[]> {
  const response = await fetch(`${base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content }) })
  if (!response.ok) throw new UserInputError(`llama-server at ${base}: /tokenize answered HTTP ${response.status}`)
  return ((await response.json()) as { tokens: number[] }).tokens
}

/**
 * One `/completion`: the prompt as token ids (BOS included, as every SpecLab sequence), no prompt cache (each prompt
 * is timed from scratch, as SpecLab's own methods are), and the run's sampling as the server's whole sampler chain
 * (top-k → top-p → temperature; min-p and penalties off). Temperature 0 is llama.cpp's greedy.
 */
async function postCompletion(base: string, request: CompletionRequest, signal?: AbortSignal): Promise<Completion> {
  const body = {
    prompt: request.prompt,
    n_predict: request.nPredict,
    cache_prompt: request.cachePrompt ?? false,
    return_tokens: true,
    stream: false,
    temperature: request.temperature,
    top_k: request.topK,
    top_p: request.topP,
    min_p: 0,
    repeat_penalty: 1,
    samplers: ['top_k', 'top_p', 'temperature'],
    seed: request.seed
  }
  const response = await fetch(`${base}/completion`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal })
  const json = (await response.json()) as Record<string, unknown>
  if (!response.ok) {
    const message = (json.error as { message?: string } | undefined)?.message ?? `HTTP ${response.status}`
    throw new UserInputError(`llama-server refused the prompt: ${message}`)
  }
  const timings = (json.timings ?? {}) as Record<string, number | undefined>
  return {
    tokens: (json.tokens as number[] | undefined) ?? [],
    stopType: String(json.stop_type ?? ''),
    timings: {
      promptN: timings.prompt_n ?? 0,
      promptMs: timings.prompt_ms ?? 0,
      predictedN: timings.predicted_n ?? 0,
      predictedMs: timings.predicted_ms ?? 0,
      predictedPerSecond: timings.predicted_per_second ?? 0,
      draftN: timings.draft_n ?? null,
      draftAccepted: timings.draft_n_accepted ?? null
    }
  }
}
