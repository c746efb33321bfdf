/**
 * Browser mode's engine host in a child process — what Electron's utilityProcess is to the desktop app
 * (main/host-process.ts). Model work runs in native code: a llama.cpp assertion (GGML_ASSERT) aborts the whole
 * process, and no JavaScript can catch it. So the server forks utility-entry.ts over Node's IPC channel and talks to
 * it with the contract's RpcClient; when the child dies, every call in flight fails with what killed it — "the model
 * process crashed while loading X: <the assertion from its stderr>" — and a fresh child starts, told the reason so
 * the library records it against the file (it is not loaded again unless the user asks). The server keeps
 * answering other clients throughout.
 */
import { fork, type ChildProcess } from 'node:child_process'
import type { HostEvent } from '../api/events'
import { RpcClient } from '../api/rpc-client'
import type { HostOptions } from './host'
import { CrashWitness, RESTART_ON_REQUEST, RestartBudget } from './crash-witness'
import type { RequestHandler } from './rpc-server'

/** Set in the child's environment: utility-entry.ts then serves over the IPC channel. */
export const CHILD_HOST_ENV = 'SPECLAB_CHILD_HOST'

export interface ChildHostOptions {
  /** The utility entry to fork (utility-entry.ts under tsx, or the built host.js). */
  entry: string
  /** Node flags for the child, e.g. ['--import', <tsx>] when the entry is TypeScript. */
  execArgv?: string[]
}

export class ChildHost implements RequestHandler {
  private child: ChildProcess | null = null
  private client: RpcClient | null = null
  private witness = new CrashWitness()
  private readonly budget = new RestartBudget()
  private stopping = false
  private ready: Promise<void> = Promise.resolve()
  /** Why the last engine died, while none runs because the budget was spent: given to the one the next request starts. */
  private unrestarted: string | null = null

  constructor(
    private readonly fork: ChildHostOptions,
    private readonly options: HostOptions,
    private readonly onEvent: (event: HostEvent) => void
  ) {}

  /** Starts the child; resolves once it reports ready, or rejects with why it could not start. */
  start(lastCrash: string | null = null): Promise<void> {
    const child = fork(this.fork.entry, [], {
      execArgv: this.fork.execArgv ?? [],
      env: { ...process.env, [CHILD_HOST_ENV]: '1' },
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      serialization: 'advanced',
      // Its own process group: a Ctrl-C meant for the server reaches the engine only through close().
      detached: process.platform !== 'win32'
    })
    const client = new RpcClient((message) => {
      if (!child.connected) throw new Error('the engine process is not running')
      // A send that fails (the child died mid-request) is the exit's business, never an unhandled 'error'.
      child.send(message, (error) => {
        if (error) console.error(`speclab: the engine process did not take a request (${error.message})`)
      })
    })
    child.on('error', (error) => console.error(`speclab: engine process: ${error.message}`))
    this.child = child
    this.client = client
    const witness = (this.witness = new CrashWitness())
    child.stderr?.setEncoding('utf8')
    child.stderr?.on('data', (chunk: string) => {
      process.stderr.write(chunk)
      witness.stderr(chunk)
    })
    child.on('message', (message) => client.receive(message))
    this.ready = new Promise<void>((resolve, reject) => {
      const off = client.onEvent((event) => {
        if (event.type !== 'host:status') return
        off()
        if (event.state === 'ready') resolve()
        else reject(new Error(event.message ?? 'the engine host did not start'))
      })
      child.once('exit', (code, signal) => reject(new Error(witness.describe(code, signal))))
    })
    client.onEvent((event) => witness.event(event))
    client.onEvent(this.onEvent)
    child.once('exit', (code, signal) => this.onExit(child, code, signal))
    child.send({ kind: 'init', options: { ...this.options, lastCrash } })
    return this.ready
  }

  /** The child's process id (tests, diagnostics); undefined while none runs. */
  get pid(): number | undefined {
    return this.child?.pid
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) return
    const message = this.witness.describe(code, signal)
    const cause = this.witness.cause(code, signal)
    this.client?.failAll(message)
    this.child = null
    this.client = null
    if (this.stopping) return
    const { restart, status } = this.budget.afterDeath(message)
    this.onEvent(status)
    if (restart) this.restart(cause)
    else this.unrestarted = cause
  }

  /** Starts a fresh child; a start that fails is reported (its exit goes through onExit like any other). */
  private restart(cause: string | null): void {
    this.start(cause).catch((error: unknown) => {
      this.onEvent({ type: 'host:status', state: 'failed', message: error instanceof Error ? error.message : String(error) })
    })
  }

  /**
   * Forwards a request (validated again by the child); waits while a restarted child comes up. When the supervisor
   * had stopped restarting a dying engine, the request starts it again rather than failing for ever.
   */
  async request(channel: string, payload: unknown): Promise<unknown> {
    if (!this.child && !this.stopping) {
      const cause = this.unrestarted
      this.unrestarted = null
      this.onEvent(RESTART_ON_REQUEST)
      this.restart(cause)
    }
    const failed = await this.ready.then(
      () => null,
      (error: Error) => error.message
    )
    if (!this.client && this.stopping) throw new Error('the engine process has been stopped')
    if (!this.client) throw new Error(`the engine process is not running${failed ? ` (${failed})` : ''}; the next request starts it again`)
    return this.client.callRaw(channel, payload)
  }

  /** Asks the child to close its database and models, then ends it after `graceMs`. */
  async close(graceMs = 3000): Promise<void> {
    this.stopping = true
    const child = this.child
    if (!child || child.exitCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    if (child.connected) child.send({ kind: 'shutdown' })
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
}
