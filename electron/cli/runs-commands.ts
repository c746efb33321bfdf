/** `speclab runs`, `show <id>`, `diff <a> <b>`: read the store, print tables or --json. */
import { Command } from 'commander'
import type { RunReport } from '../api/runs'
import { diffRuns } from '../api/run-diff'
import { buildRunReport } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { bestSpeedup, formatDiff, runsTable, terminalSafe, type RunsRow } from './format'
import { integerIn, parseInteger, printReport } from './run-command'
import { formatWhatIf } from './what-if-format'

interface ReadOptions {
  db?: string
  json?: boolean
}

/** Read-only: listing never writes, so it works on a full disk, and never touches a file that is not SpecLab's. */
function withStore<T>(options: ReadOptions, read: (store: RunStore) => T): T {
  const store = RunStore.open(options.db ?? defaultDatabasePath(), { readonly: true })
  try {
    return read(store)
  } finally {
    store.close()
  }
}

function reportOf(store: RunStore, runId: number): RunReport {
  const report = buildRunReport(store, runId)
  if (!report) throw new UserInputError(`no run with id ${runId}`)
  return report
}

const readOptions = (command: Command) =>
  command.option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)').option('--json', 'print JSON on stdout')

export function runsCommand(): Command {
  return readOptions(new Command('runs').description('list stored runs, newest first'))
    .option('--limit <n>', 'how many (1 to 1000000)', integerIn(1, 1_000_000), 50)
    .action((options: ReadOptions & { limit: number }) => {
      withStore(options, (store) => {
        const runs = store.listRuns(options.limit)
        if (options.json) return void process.stdout.write(`${JSON.stringify(runs)}\n`)
        if (runs.length === 0) return void process.stdout.write('no runs yet — try: npm run speclab -- run --target T.gguf --draft D.gguf\n')
        const rows = runs.map((summary): RunsRow => ({
          summary,
          config: configOf(store, summary.id),
          best: bestSpeedup(store.getPromptResults(summary.id), store.getRepeats(summary.id))
        }))
        process.stdout.write(`${runsTable(rows)}\n`)
      })
    })
}

/** A run's config, or null when it cannot be read (the list still shows the run; `show` says what is wrong). */
function configOf(store: RunStore, runId: number): RunsRow['config'] {
  try {
    return store.getRun(runId)?.config ?? null
  } catch {
    return null
  }
}

export function showCommand(): Command {
  return readOptions(new Command('show').description('show one run: config, per-method metrics, outputs'))
    .argument('<runId>', 'run id', parseInteger)
    .option('--what-if', "only the what-if: other γ, policies and lookup caps priced on the run's recorded rounds (--json: its object)")
    .action((runId: number, options: ReadOptions & { whatIf?: boolean }) => {
      withStore(options, (store) => {
        const report = reportOf(store, runId)
        if (options.whatIf) {
          process.stdout.write(options.json ? `${JSON.stringify(report.whatIf)}\n` : `${formatWhatIf(report.whatIf)}\n`)
          return
        }
        const results = store.getPromptResults(runId)
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ ...report, results, draftChoices: store.getDraftChoices(runId) })}\n`)
          return
        }
        printReport(report, false)
        const { config } = report
        process.stdout.write(
          `\ntarget ${terminalSafe(config.models.target)}\n` +
            (config.models.mid ? `mid    ${terminalSafe(config.models.mid)}\n` : '') +
            (config.models.draft ? `draft  ${terminalSafe(config.models.draft)}\n` : '') +
            `seed ${config.seed}  γ ${config.gamma}  temperature ${config.sampling.temperature}  top-k ${config.sampling.topK}  top-p ${config.sampling.topP}  max-tokens ${config.maxTokens}\n\n`
        )
        for (const r of results)
          process.stdout.write(
            `[${r.method} #${r.promptIndex + 1} ${r.status}] ${terminalSafe(r.promptText, { keepNewlines: true })}\n` +
              `  → ${terminalSafe(r.outputText.replace(/\n/g, ' ').slice(0, 300))}\n`
          )
        const choices = store.getDraftChoices(runId).filter((c) => c.phase === 'choice')
        if (choices.length > 0)
          process.stdout.write(`\ndraft selection (004 §5):\n${choices.map((c) => `  prompt ${c.promptIndex + 1} → ${terminalSafe(c.draftPath)}`).join('\n')}\n`)
      })
    })
}

export function diffCommand(): Command {
  return readOptions(new Command('diff').description('compare two runs: config differences and metric deltas'))
    .argument('<a>', 'first run id', parseInteger)
    .argument('<b>', 'second run id', parseInteger)
    .action((a: number, b: number, options: ReadOptions) => {
      const diff = withStore(options, (store) => diffRuns(reportOf(store, a), reportOf(store, b)))
      process.stdout.write(options.json ? `${JSON.stringify(diff)}\n` : `${formatDiff(diff)}\n`)
    })
}
