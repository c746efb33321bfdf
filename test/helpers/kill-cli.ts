/**
 * SIGKILL for a CLI process whose model work runs in a supervised child (electron/cli/supervise.ts): kills the CLI
 * the way a user's `kill -9` does and waits until its worker, which stops when its parent is gone, has ended too —
 * only then is the run's row what a later open finds.
 */
import { execFileSync, type ChildProcess } from 'node:child_process'
import { isProcessAlive } from '../../electron/store/owner'
import { until } from './until'

export async function killCli(cli: ChildProcess): Promise<void> {
  const workers = execFileSync('pgrep', ['-P', String(cli.pid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number)
  cli.kill('SIGKILL')
  await new Promise((resolve) => cli.once('exit', resolve))
  await until(() => (workers.some(isProcessAlive) ? undefined : true))
}
