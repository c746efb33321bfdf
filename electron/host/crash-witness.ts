/**
 * What an engine process was doing when it died, for its supervisor (Electron main's HostProcess, browser mode's
 * ChildHost): the tail of its stderr (llama.cpp prints its GGML_ASSERT there before aborting) and the model file it
 * reported loading last. One description for both supervisors: "the model process crashed while loading X: <line>".
 */
import type { HostEvent } from '../api/contract'

/** Lines of stderr kept. */
const TAIL_LINES = 40

/** The line of a dying process's stderr that says why: an assertion, else a fatal error; null when none does. */
export function crashReason(tail: readonly string[]): string | null {
  const lines = tail.map((l) => l.trim()).filter(Boolean)
  const last = (pattern: RegExp) => [...lines].reverse().find((l) => pattern.test(l))
  return last(/GGML_ASSERT|assert/i) ?? last(/fatal|error/i) ?? null
}

export class CrashWitness {
  private tail: string[] = []
  /** The file the process reported loading and has not finished (models:load-progress). */
  private loadingFile: string | null = null

  /** A chunk of the process's stderr. */
  stderr(chunk: string): void {
    this.tail = [...this.tail, ...chunk.split('\n')].slice(-TAIL_LINES)
  }

  /** Every event the process pushes. */
  event(event: HostEvent): void {
    if (event.type === 'models:load-progress') this.loadingFile = event.fraction < 1 || event.index < event.count - 1 ? event.fileName : null
    else if (event.type === 'models:changed') this.loadingFile = null
  }

  /** The assertion or error line, for the next process's `lastCrash`. */
  get reason(): string | null {
    return crashReason(this.tail)
  }

  describe(code: number | null, signal: string | null): string {
    const reason = this.reason
    const how = signal ? `was killed by ${signal}` : `stopped (exit code ${code})`
    if (this.loadingFile) return `the model process crashed while loading ${this.loadingFile}${reason ? `: ${reason}` : ` (it ${how})`}`
    return `the engine process ${how}${reason ? `: ${reason}` : ''}`
  }
}
