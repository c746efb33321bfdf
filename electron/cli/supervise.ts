/**
 * The CLI's commands that load models run in a child process of the CLI itself. A llama.cpp assertion (GGML_ASSERT)
 * aborts its process and no JavaScript can catch it; supervised, the abort takes only the child: the parent prints
 * one line — what the model process was doing and the assertion from its stderr — exits 2, and opens the database
 * once, which marks the run the child left `running` as interrupted (its finished prompts stay stored).
 * The crash line blames a model only when one was being loaded or evaluated: the child reports what it is doing
 * with llama.cpp (engine/model/model-activity.ts) over the IPC channel, and a death with no model loaded says so.
 * Signals: the child has a process group of its own, so Ctrl-C reaches only the parent, which forwards the first
 * SIGINT or SIGTERM to it — the child cancels and stores the run as it always did. A second signal ends the child at
 * once (SIGKILL: a child stuck in a synchronous read or in native code never sees a forwarded signal), and the run
 * is marked interrupted. If the parent itself is killed, the child sees its IPC channel close and stops at once, as
 * the unsupervised CLI would have (the run is then recovered as interrupted on the next open).
 */
import { spawn } from 'node:child_process'
import os from 'node:os'
import { onModelActivity, type ModelActivity } from '../engine/model/model-activity'
import { CrashWitness } from '../host/crash-witness'
import { TTY_COLUMNS_ENV } from './progress'

/** Set in the child's environment, so it runs the command instead of supervising again. */
export const SUPERVISED_ENV = 'SPECLAB_SUPERVISED'

/** Commands that load GGUF models (the others only read the database). */
const MODEL_COMMANDS = new Set(['run', 'bench', 'ablation', 'dsbd-bench', 'suite', 'ngram-cache', 'peer-bench', 'advise'])

/** Signals that mean the process died rather than stopped: an abort, a crash, the kernel's OOM killer. */
const CRASH_SIGNALS = new Set(['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGKILL', 'SIGTRAP'])

/** In the supervised child: the parent is gone (killed) — stop now rather than run on unseen. */
export function stopWithSupervisor(): void {
  if (process.env[SUPERVISED_ENV] !== '1' || !process.connected) return
  process.channel?.unref() // the channel only watches the parent; it must not keep this process alive
  process.once('disconnect', () => process.exit(137))
  // The supervisor needs to know, should this process die, whether a model was involved.
  onModelActivity((activity) => {
    if (process.connected) process.send?.({ kind: 'model-activity', activity } satisfies ActivityMessage)
  })
}

interface ActivityMessage {
  kind: 'model-activity'
  activity: ModelActivity
}

/** The crash line: what died, while doing what, and — only when a model was involved — the hint to suspect it. */
export function describeCrash(signal: string, reason: string | null, activity: ModelActivity): string {
  const why = reason ? `: ${reason}` : ''
  const after = 'Finished prompts are stored; the run is marked interrupted'
  if (activity.state === 'loading')
    return `the model process crashed (${signal}) while loading ${activity.file}${why} — a model file llama.cpp cannot run? ${after}`
  if (activity.state === 'evaluating') return `the model process crashed (${signal}) while running the models${why} — a model file llama.cpp cannot run? ${after}`
  return `the model process crashed (${signal}) with no model loaded${why}. ${after}`
}

export function shouldSupervise(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  if (env[SUPERVISED_ENV] === '1') return false
  const command = argv.slice(2).find((arg) => !arg.startsWith('-'))
  return command !== undefined && MODEL_COMMANDS.has(command) && !argv.includes('--help') && !argv.includes('-h')
}

/**
 * Runs this same CLI invocation as a child and resolves with the exit code the CLI should end with. `afterCrash`
 * runs once the child died of a crash signal (the CLI opens the database there to mark its run interrupted).
 */
export function superviseSelf(afterCrash: () => void): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    // The child's stderr is a pipe: tell it the terminal's width so it still draws its progress bar (copied through).
    env: { ...process.env, [SUPERVISED_ENV]: '1', ...(process.stderr.isTTY ? { [TTY_COLUMNS_ENV]: String(process.stderr.columns || 80) } : {}) },
    stdio: ['inherit', 'inherit', 'pipe', 'ipc'],
    // Windows gives a detached process no console: there the child stays in the group and Ctrl-C reaches both.
    detached: process.platform !== 'win32'
  })
  child.on('error', (error) => process.stderr.write(`speclab: could not start the model process: ${error.message}\n`))
  const witness = new CrashWitness()
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (chunk: string) => {
    process.stderr.write(chunk)
    witness.stderr(chunk)
  })
  let activity: ModelActivity = { state: 'idle' }
  child.on('message', (message: Partial<ActivityMessage>) => {
    if (message?.kind === 'model-activity' && message.activity) activity = message.activity
  })
  // The first signal is forwarded (the child cancels cleanly); a second one kills the child at once.
  let received: NodeJS.Signals | null = null
  let killed: NodeJS.Signals | null = null
  const onSignal = (signal: NodeJS.Signals) => {
    if (received === null) {
      received = signal
      child.kill(signal)
    } else if (killed === null) {
      killed = signal
      child.kill('SIGKILL')
    }
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      if (signal === null) return resolve(code ?? 1)
      const exitCode = (name: string) => 128 + (os.constants.signals[name as NodeJS.Signals] ?? 15)
      if (!CRASH_SIGNALS.has(signal)) return resolve(exitCode(signal))
      markInterrupted(afterCrash)
      if (process.stderr.isTTY) process.stderr.write('\r\x1b[K\x1b[?25h') // off a half-drawn bar, cursor back
      if (killed !== null) {
        process.stderr.write(`speclab: stopped at once on a second ${killed}; finished prompts are stored, the run is marked interrupted\n`)
        return resolve(exitCode(killed))
      }
      process.stderr.write(`speclab: ${describeCrash(signal, witness.reason, activity)}\n`)
      resolve(2)
    })
  })
}

function markInterrupted(afterCrash: () => void): void {
  try {
    afterCrash()
  } catch {
    // the database may be what failed; the line printed next still says what happened
  }
}
