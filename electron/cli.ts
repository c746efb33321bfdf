/**
 * `speclab` — the command line (DESIGN.md CLI contract; keep names and --json fields stable).
 * From a checkout: `npm run speclab -- <command>`; installed: `npx speclab <command>`.
 */
import { Command } from 'commander'
import { exitWithError } from './cli/errors'
import { runCommand } from './cli/run-command'
import { diffCommand, runsCommand, showCommand } from './cli/runs-commands'
import { benchCommand } from './cli/bench-command'
import { ablationCommand } from './cli/ablation-command'
import { dsbdBenchCommand } from './cli/dsbd-bench-command'
import { reportCommand, suiteCommand, suitesCommand } from './cli/suite-command'

const program = new Command('speclab')
  .description('SpecLab: speculative decoding of local GGUF models — run, store, compare')
  .showHelpAfterError(false)
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`speclab: ${message.replace(/^error: /, '').trim()}\n`) })

for (const command of [runCommand(), runsCommand(), showCommand(), diffCommand(), benchCommand(), ablationCommand(), dsbdBenchCommand(), suiteCommand(), reportCommand(), suitesCommand()]) {
  program.addCommand(command.exitOverride().configureOutput({
    outputError: (message, write) => write(`speclab: ${message.replace(/^error: /, '').trim()}\n`)
  }))
}

try {
  await program.parseAsync(process.argv)
} catch (error) {
  exitWithError(error)
}
