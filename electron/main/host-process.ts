/**
 * Electron main's handle on the engine host: forks out/main/host.js as a utilityProcess, hands it one end of a
 * MessageChannelMain with the host options, and talks to it with the contract's RpcClient. Pushed events go to
 * `onEvent`. If the process dies it is restarted (at most three times a minute, then by the next call); calls in
 * flight fail with a clear message.
 */
import { MessageChannelMain, utilityProcess, type MessagePortMain, type UtilityProcess } from 'electron'
import type { HostEvent } from '../api/events'
import { RpcClient } from '../api/rpc-client'
import { CrashWitness, RESTART_ON_REQUEST, RestartBudget } from '../host/crash-witness'
import type { HostOptions } from '../host/host'

export class HostProcess {
  private child: UtilityProcess | null = null
  private port: MessagePortMain | null = null
  private client: RpcClient | null = null
  private readonly budget = new RestartBudget()
  private stopping = false
  private witness = new CrashWitness()
  /** Why the last host died, while none runs because the budget was spent: given to the one the next call starts. */
  private unrestarted: string | null = null

  constructor(
    private readonly entry: string,
    private readonly options: HostOptions,
    private readonly onEvent: (event: HostEvent) => void
  ) {}

  start(lastCrash: string | null = null): void {
    const { port1, port2 } = new MessageChannelMain()
    // stderr is piped (and echoed) so a llama.cpp assertion that kills the host can be reported and recorded.
    const child = utilityProcess.fork(this.entry, [], { serviceName: 'SpecLab engine host', stdio: ['ignore', 'inherit', 'pipe'] })
    const witness = (this.witness = new CrashWitness())
    child.stderr?.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk)
      witness.stderr(chunk.toString('utf8'))
    })
    const client = new RpcClient((message) => port1.postMessage(message))
    client.onEvent((event) => witness.event(event))
    client.onEvent(this.onEvent)
    port1.on('message', (event) => client.receive(event.data))
    port1.start()
    child.postMessage({ kind: 'init', options: { ...this.options, lastCrash } }, [port2])
    child.once('exit', (code) => this.onExit(child, code))
    this.child = child
    this.port = port1
    this.client = client
  }

  private onExit(child: UtilityProcess, code: number): void {
    if (this.child !== child) return
    const message = this.witness.describe(code, null)
    this.client?.failAll(message)
    this.port?.close()
    this.child = null
    this.client = null
    if (this.stopping) return
    const { restart, status } = this.budget.afterDeath(message)
    this.onEvent(status)
    const cause = this.witness.cause(code, null)
    if (!restart) this.unrestarted = cause
    else setTimeout(() => this.start(cause), 500)
  }

  /**
   * Forwards a request the caller has validated. With no host running because the restart budget was spent, the
   * call starts one again (the request waits in the port until the new host reads it).
   */
  call(channel: string, payload: unknown): Promise<unknown> {
    if (!this.client && !this.stopping && this.unrestarted !== null) {
      const cause = this.unrestarted
      this.unrestarted = null
      this.onEvent(RESTART_ON_REQUEST)
      this.start(cause)
    }
    if (!this.client) return Promise.reject(new Error('the engine host is not running; it is being restarted'))
    return this.client.callRaw(channel, payload)
  }

  /** Asks the host to close its database and models, then ends it after `graceMs`. */
  async stop(graceMs = 3000): Promise<void> {
    this.stopping = true
    const child = this.child
    if (!child) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    this.port?.postMessage({ kind: 'shutdown' })
    const timer = setTimeout(() => child.kill(), graceMs)
    await exited
    clearTimeout(timer)
  }
}
