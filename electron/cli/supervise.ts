/**
 * The CLI's commands that load models run in a child process of the CLI itself. A llama.cpp assertion (GGML_ASSERT)
 * aborts its process and no JavaScript can catch it; supervised, the abort takes only the child: the parent prints
 * one line — what the model process was doing and the assertion from its stderr — exits 2, and opens the database
 * once, which marks the run the child left `running` as interrupted (its finished prompts stay stored).
 * Signals: the child has a process group of its own, so Ctrl-C reaches only the parent, which forwards each SIGINT
 * and SIGTERM to it — the child cancels and stores the run as it always did, and a second signal ends it at once. If the parent itself is killed, the child
 * sees its IPC channel close and stops at once, as the unsupervised CLI would have (the run is then recovered as
 * interrupted on the next open).
 */
import { spawn } from 'node:child_process'
import os from 'node:os'
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
  const forwardSigint = () => child.kill('SIGINT')
  const forwardSigterm = () => child.kill('SIGTERM')
  process.on('SIGINT', forwardSigint)
  process.on('SIGTERM', forwardSigterm)
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      process.off('SIGINT', forwardSigint)
      process.off('SIGTERM', forwardSigterm)
      if (signal === null) return resolve(code ?? 1)
      if (!CRASH_SIGNALS.has(signal)) return resolve(128 + (os.constants.signals[signal] ?? 15))
      try {
        afterCrash()
      } catch {
        // the database may be what failed; the crash line below still says what happened
      }
      const reason = witness.reason
      if (process.stderr.isTTY) process.stderr.write('\r\x1b[K\x1b[?25h') // off a half-drawn bar, cursor back
      process.stderr.write(
        `speclab: the model process crashed (${signal})${reason ? `: ${reason}` : ''} — a model file llama.cpp cannot run? ` +
          'Finished prompts are stored; the run is marked interrupted\n'
      )
      resolve(2)
    })
  })
}
