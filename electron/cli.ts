/**
 * `speclab` — the command line (DESIGN.md CLI contract; keep names and --json fields stable).
 * From a checkout: `npm run speclab -- <command>`; installed: `npx speclab <command>`.
 */
import path from 'node:path'
import { Command } from 'commander'
import { exitWithError } from './cli/errors'
import { runCommand } from './cli/run-command'
import { diffCommand, runsCommand, showCommand } from './cli/runs-commands'
import { benchCommand } from './cli/bench-command'
import { ablationCommand } from './cli/ablation-command'
import { dsbdBenchCommand } from './cli/dsbd-bench-command'
import { reportCommand, suiteCommand, suitesCommand } from './cli/suite-command'
import { modelsCommand } from './cli/models-command'
import { ngramCacheCommand } from './cli/ngram-cache-command'
import { peerBenchCommand } from './cli/peer-bench-command'
import { adviseCommand } from './cli/advise-command'
import { shouldSupervise, stopWithSupervisor, superviseSelf } from './cli/supervise'
import { defaultDatabasePath } from './store/default-path'
import { RunStore } from './store/run-store'

const program = new Command('speclab')
  .description('SpecLab: speculative decoding of local GGUF models — run, store, compare')
  .showHelpAfterError(false)
  // A command's options belong to the command named last: `runs export F --db D` is export's --db, not runs's.
  .enablePositionalOptions()
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`speclab: ${message.replace(/^error: /, '').trim()}\n`) })

for (const command of [runCommand(), runsCommand(), showCommand(), diffCommand(), benchCommand(), ablationCommand(), dsbdBenchCommand(), suiteCommand(), reportCommand(), suitesCommand(), modelsCommand(), ngramCacheCommand(), peerBenchCommand(), adviseCommand()]) {
  program.addCommand(oneLineErrors(command))
}

/** Usage errors of a command and its subcommands (`runs export`) as one `speclab:` line and exit 2 (errors.ts). */
function oneLineErrors(command: Command): Command {
  for (const sub of command.commands) oneLineErrors(sub)
  return command.exitOverride().configureOutput({
    outputError: (message, write) => write(`speclab: ${message.replace(/^error: /, '').trim()}\n`)
  })
}

// `speclab show 1 | head -1`: the reader has gone, so there is nobody left to tell — end quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  exitWithError(error)
})

if (shouldSupervise(process.argv)) {
  // Model work in a child of this CLI: a llama.cpp abort there is one line here, and the run is marked interrupted.
  process.exitCode = await superviseSelf(() => RunStore.open(databaseOf(process.argv)).close())
} else {
  stopWithSupervisor()
  try {
    await program.parseAsync(process.argv)
  } catch (error) {
    exitOnDatabaseError(error)
    exitWithError(error)
  }
}

/** The database a command line names (--db FILE or --db=FILE), else SPECLAB_DB or the app's. */
function databaseOf(argv: readonly string[]): string {
  const index = argv.indexOf('--db')
  const inline = argv.find((arg) => arg.startsWith('--db='))
  return (index >= 0 ? argv[index + 1] : inline?.slice('--db='.length)) ?? defaultDatabasePath()
}

/**
 * A SQLite failure after the database was opened (a full disk mid-run, an I/O error): one line and exit 1, not an
 * "internal error" with a stack trace — the environment failed, not the input. Opening problems are UserInputErrors
 * already (exit 2).
 */
function exitOnDatabaseError(error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code
  if (!(error instanceof Error) || typeof code !== 'string' || !code.startsWith('SQLITE_')) return
  // The run itself is stored as failed with this error (the store keeps room for that mark): say what to do.
  const advice = code === 'SQLITE_FULL' ? ` — free space on the disk holding ${path.dirname(path.resolve(databaseOf(process.argv)))}` : ''
  process.stderr.write(`speclab: database error: ${error.message}${advice}\n`)
  process.exit(1)
}
