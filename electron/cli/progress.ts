/**
 * Progress bars on stderr (cli-progress) that never mix with what else is printed: nothing at all when stderr is
 * not a terminal (CI logs, tests, pipes), messages through `log` on a line of their own, no NaN/Infinity ETA, and
 * the bar's line wiped before the caller prints its report.
 */
import cliProgress from 'cli-progress'
import type { RunProgress } from '../experiments/runner'

/**
 * The terminal's width, set by a parent whose stderr is a terminal for a child whose stderr is a pipe the parent
 * copies to it (the supervised CLI, supervise.ts): the child then draws its bar as if on that terminal.
 */
export const TTY_COLUMNS_ENV = 'SPECLAB_TTY_COLUMNS'

export interface TerminalStream {
  readonly isTTY?: boolean
  readonly columns?: number
  write(text: string): boolean
}

const SAVE_CURSOR = '\x1b7'
const RESTORE_CURSOR = '\x1b8'
const CLEAR_LINE = '\r\x1b[K'

/**
 * stderr as cli-progress sees it. Its cursor save/restore pair is dropped: once anything else wrote a line during the
 * bar (a notice, a library's log) the saved position is no longer the bar's line, and restoring it on stop left the
 * bar's tail on screen under the report ("overhead ms/step0s"). Without it, stop clears the line the bar is on.
 */
export function progressStream(stream: TerminalStream = process.stderr, env: NodeJS.ProcessEnv = process.env): TerminalStream {
  const inherited = Number(env[TTY_COLUMNS_ENV])
  const columns = Number.isInteger(inherited) && inherited > 0 ? inherited : undefined
  const isTTY = stream.isTTY === true || columns !== undefined
  return {
    isTTY,
    get columns() {
      return stream.columns || columns
    },
    write: (text: string) => (text === SAVE_CURSOR || text === RESTORE_CURSOR ? true : stream.write(text))
  }
}

/** "–" until there is an estimate (no finished unit yet, NaN, Infinity), else "45s", "3m07s", "2h05m". */
export function formatEta(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '–'
  const s = Math.round(ms / 1000)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/** Remaining time from the pace so far: null before the first unit is done. */
export function estimateRemainingMs(elapsedMs: number, done: number, total: number): number | null {
  if (done <= 0 || elapsedMs <= 0) return null
  return (elapsedMs / done) * Math.max(0, total - done)
}

export interface ProgressLine {
  readonly started: boolean
  start(total: number, payload: Record<string, unknown>): void
  update(value: number, payload: Record<string, unknown>): void
  /** A message on a line of its own; the bar redraws below it. */
  log(message: string): void
  /** Stops and wipes the bar's line (idempotent). */
  stop(): void
}

export function createProgressLine(format: string, output: TerminalStream = progressStream()): ProgressLine {
  const bar = new cliProgress.SingleBar(
    {
      stream: output as unknown as NodeJS.WritableStream,
      format,
      hideCursor: true,
      clearOnComplete: true,
      // Trimmed to the terminal's width instead of switching the terminal's line wrapping off (long log lines wrap).
      linewrap: true,
      // Redrawn every frame: a line written by someone else (a log, llama.cpp) does not hide it until it changes.
      forceRedraw: true
    },
    cliProgress.Presets.shades_classic
  )
  let started = false
  return {
    get started() {
      return started
    },
    start(total, payload) {
      // Not a terminal: cli-progress draws nothing and never starts its timer.
      bar.start(total, 0, payload)
      started = output.isTTY === true
    },
    update(value, payload) {
      if (started) bar.update(value, payload)
    },
    log(message) {
      output.write(`${started ? CLEAR_LINE : ''}${message}\n`)
    },
    stop() {
      if (!started) return
      started = false
      bar.stop()
      output.write(CLEAR_LINE)
    }
  }
}

/** `run`'s bar: cells are (prompt, repeat, method) decodes; the ETA comes from the pace of the finished cells. */
export function createProgressBar(cells: number, output: TerminalStream = progressStream(), now: () => number = Date.now) {
  const line = createProgressLine('{bar} {percentage}% | cell {cell}/{cells} | prompt {prompt} {method} | {tokens} tokens | ETA {eta_text}', output)
  const startedAt = now()
  line.start(cells, { cell: 0, cells, prompt: '-', method: '-', tokens: 0, eta_text: formatEta(null) })
  return {
    update: (p: RunProgress) =>
      line.update(p.cellsDone, {
        cell: Math.min(p.cellsDone + 1, p.cellsTotal),
        cells: p.cellsTotal,
        prompt: `${p.promptIndex + 1}/${p.promptCount}${p.repeats > 1 ? ` repeat ${p.repeat + 1}/${p.repeats}` : ''}`,
        method: p.method,
        tokens: p.tokens,
        eta_text: formatEta(estimateRemainingMs(now() - startedAt, p.cellsDone, p.cellsTotal))
      }),
    log: (message: string) => line.log(message),
    stop: () => line.stop()
  }
}
