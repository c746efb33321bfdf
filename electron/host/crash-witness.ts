/**
 * What an engine process was doing when it died, for its supervisor (Electron main's HostProcess, browser mode's
 * ChildHost): the tail of its stderr (llama.cpp prints its GGML_ASSERT there before aborting) and the model file it
 * reported loading last. One description for both supervisors: "the model process crashed while loading X: <line>".
 */
import type { HostEvent } from '../api/events'

/** Lines of stderr kept. */
const TAIL_LINES = 40

/**
 * `tail` plus the lines of `chunk`, the last TAIL_LINES kept: the last entry is the line still being written (the
 * next chunk continues it), ANSI sequences go, and a carriage return keeps only what follows it (a redrawn line).
 */
export function appendLines(tail: readonly string[], chunk: string): string[] {
  const clean = chunk.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
  const [first, ...rest] = clean.split('\n')
  const lines = [...tail.slice(0, -1), (tail.at(-1) ?? '') + first, ...rest].map((line) => line.slice(line.lastIndexOf('\r') + 1))
  return lines.slice(-TAIL_LINES)
}

/** The line of a dying process's stderr that says why: an assertion, else a fatal error; null when none does. */
export function crashReason(tail: readonly string[]): string | null {
  const lines = tail.map((l) => l.trim()).filter(Boolean)
  const last = (pattern: RegExp) => [...lines].reverse().find((l) => pattern.test(l))
  return last(/GGML_ASSERT|assert/i) ?? last(/fatal|error/i) ?? null
}

export class CrashWitness {
  private tail: string[] = []
  /**
   * The file the process reported loading last (models:load-progress), until the load ends (models:changed) — the
   * context is created after the file is read, and that is loading too.
   */
  private loadingFile: string | null = null

  /** A chunk of the process's stderr (a line may arrive in pieces; progress-bar redraws and colours are dropped). */
  stderr(chunk: string): void {
    this.tail = appendLines(this.tail, chunk)
  }

  /** Every event the process pushes. */
  event(event: HostEvent): void {
    if (event.type === 'models:load-progress') this.loadingFile = event.fileName
    else if (event.type === 'models:changed') this.loadingFile = null
  }

  /** The assertion or error line, if the process printed one. */
  get reason(): string | null {
    return crashReason(this.tail)
  }

  /** Why it died in a few words, for the next process's `lastCrash` (recorded against the file it was loading). */
  cause(code: number | null, signal: string | null): string {
    return this.reason ?? (signal ? `killed by ${signal}` : `exit code ${code}`)
  }

  describe(code: number | null, signal: string | null): string {
    const reason = this.reason
    const how = signal ? `was killed by ${signal}` : `stopped (exit code ${code})`
    if (this.loadingFile) return `the model process crashed while loading ${this.loadingFile}${reason ? `: ${reason}` : ` (it ${how})`}`
    return `the engine process ${how}${reason ? `: ${reason}` : ''}`
  }
}

/**
 * How often a dead engine is restarted on its own: at most three times a minute. Past that the supervisor stops
 * restarting it (a crash loop would only repeat) and says so; the next request starts it again, so one request is
 * all it takes to recover once the cause is gone.
 */
export class RestartBudget {
  private restarts: number[] = []

  constructor(
    private readonly max = 3,
    private readonly windowMs = 60_000
  ) {}

  /**
   * One more death: the status event to show (restarting, or failed when the budget is spent) and whether to start
   * a new engine now.
   */
  afterDeath(message: string): { restart: boolean; status: Extract<HostEvent, { type: 'host:status' }> } {
    const now = Date.now()
    this.restarts = [...this.restarts.filter((t) => now - t < this.windowMs), now]
    if (this.restarts.length > this.max)
      return {
        restart: false,
        status: {
          type: 'host:status',
          state: 'failed',
          message: `${message} — it stopped ${this.restarts.length} times within ${this.windowMs / 1000} s, so it was not restarted; the next request starts it again`
        }
      }
    return { restart: true, status: { type: 'host:status', state: 'restarting', message: `${message}; restarting it` } }
  }
}

/** The status a supervisor shows when a request starts the engine it had given up on. */
export const RESTART_ON_REQUEST: Extract<HostEvent, { type: 'host:status' }> = {
  type: 'host:status',
  state: 'restarting',
  message: 'starting the engine process again'
}
