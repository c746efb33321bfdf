/**
 * `speclab runs`, `show <id>`, `diff <a> <b> [c…]`: read the store, print tables or --json. `runs export` / `runs
 * import` move runs between databases (store/run-transfer.ts).
 */
import { Command, Option } from 'commander'
import { MAX_DIFF_RUNS, type RunFilter, type RunReport, type RunStatus } from '../api/runs'
import { diffManyRuns, diffRuns } from '../api/run-diff'
import { buildRunReport } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { renderRunHtml, renderRunMarkdown, runReportDocument } from '../experiments/reports/run-report'
import { AppStore } from '../store/app-store'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { exportRuns, importRuns, type TransferSummary } from '../store/run-transfer'
import { bestSpeedup, formatDiff, formatDiffMany, runsTable, terminalSafe, type RunsRow } from './format'
import { integerIn, parseInteger, printReport } from './run-command'
import { formatWhatIf } from './what-if-format'
import { storedAdvice } from '../experiments/advice-result'
import { adviceText } from './advise-command'

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
  return readOptions(new Command('runs').description('list stored runs, newest first; export and import move runs between databases'))
    // Options after `export` / `import` are theirs: without this, `runs`'s own --db and --json would take them.
    .enablePositionalOptions()
    .addCommand(runsExportCommand())
    .addCommand(runsImportCommand())
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
    .addOption(new Option('--format <format>', 'print the run\'s report as Markdown or self-contained HTML').choices(['md', 'html']))
    .option('--what-if', "only the what-if: other γ, policies and lookup caps priced on the run's recorded rounds (--json: its object)")
    .action((runId: number, options: ReadOptions & { format?: 'md' | 'html'; whatIf?: boolean }) => {
      withStore(options, (store) => {
        const report = reportOf(store, runId)
        if (options.whatIf) {
          process.stdout.write(options.json ? `${JSON.stringify(report.whatIf)}\n` : `${formatWhatIf(report.whatIf)}\n`)
          return
        }
        const results = store.getPromptResults(runId)
        if (options.format) {
          if (options.json) throw new UserInputError('--format and --json print different things: give one')
          const document = runReportDocument(report, store.getRun(runId)!.summary, results)
          process.stdout.write(options.format === 'md' ? `${renderRunMarkdown(document)}\n` : renderRunHtml(document))
          return
        }
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ ...report, results, draftChoices: store.getDraftChoices(runId) })}\n`)
          return
        }
        printReport(report, false)
        const advice = storedAdvice(report)
        if (advice) process.stdout.write(`advice (predicted beside measured; the recommendation recomputed from this run's cells):\n${adviceText(advice)}\n`)
        const origin = store.getRun(runId)!.summary.origin
        if (origin)
          process.stdout.write(`imported ${origin.importedAt ?? ''}: run ${origin.id} of ${terminalSafe(origin.db)}${origin.host ? ` on ${terminalSafe(origin.host)}` : ''}\n`)
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
  return readOptions(
    new Command('diff').description(`compare runs: config differences and metric deltas (two runs: B − A; three to ${MAX_DIFF_RUNS}: side by side, deltas from the first)`)
  )
    .argument('<a>', 'first run id', parseInteger)
    .argument('<b>', 'second run id', parseInteger)
    .argument('[more...]', `further run ids (up to ${MAX_DIFF_RUNS} runs in all)`)
    .action((a: number, b: number, more: string[], options: ReadOptions) => {
      const ids = [a, b, ...more.map(parseInteger)]
      if (ids.length > MAX_DIFF_RUNS) throw new UserInputError(`diff compares at most ${MAX_DIFF_RUNS} runs, got ${ids.length}`)
      if (ids.length > 2 && new Set(ids).size !== ids.length) throw new UserInputError(`a run is named twice: ${ids.join(' ')}`)
      if (ids.length === 2) {
        const diff = withStore(options, (store) => diffRuns(reportOf(store, a), reportOf(store, b)))
        process.stdout.write(options.json ? `${JSON.stringify(diff)}\n` : `${formatDiff(diff)}\n`)
        return
      }
      const diff = withStore(options, (store) => diffManyRuns(ids.map((id) => reportOf(store, id))))
      process.stdout.write(options.json ? `${JSON.stringify(diff)}\n` : `${formatDiffMany(diff)}\n`)
    })
}

interface ExportOptions extends ReadOptions {
  suite?: string
  method?: string
  status?: RunStatus
  limit?: number
  all?: boolean
}

/** `speclab runs export FILE [ids…]`: the chosen runs into a new file (a SpecLab database holding only them). */
function runsExportCommand(): Command {
  return readOptions(new Command('export').description('write runs (by id, or every run the filters match) to a new file for `speclab runs import`'))
    .argument('<file>', 'the file to write (must not exist)')
    .argument('[runIds...]', 'run ids')
    .option('--suite <id>', 'runs of this suite')
    .option('--method <id>', 'runs with this method')
    .addOption(new Option('--status <status>', 'runs with this status').choices(['done', 'cancelled', 'interrupted', 'failed']))
    .option('--limit <n>', 'the newest n runs the filters match', integerIn(1, 1_000_000))
    .option('--all', 'every run of the database')
    .action((file: string, ids: string[], options: ExportOptions) => {
      const source = options.db ?? defaultDatabasePath()
      const summary = withStore(options, (store) => exportRuns(store.database, source, chosenRuns(store, ids.map(parseInteger), options), file))
      printTransfer(summary, options.json, 'exported', 'to')
    })
}

/** Ids as given (in that order), else the runs the filters match, oldest first so ids in the file keep their order. */
function chosenRuns(store: RunStore, ids: number[], options: ExportOptions): number[] {
  const filter: RunFilter = {
    ...(options.suite ? { suite: options.suite } : {}),
    ...(options.method ? { method: options.method } : {}),
    ...(options.status ? { status: options.status } : {}),
    limit: options.limit ?? 10_000
  }
  const filtered = options.suite || options.method || options.status || options.limit || options.all
  if (ids.length > 0 && filtered) throw new UserInputError('name run ids or filters (--suite, --method, --status, --limit, --all), not both')
  if (ids.length > 0) return ids
  if (!filtered) throw new UserInputError('which runs? name run ids, or filters: --suite, --method, --status, --limit, --all')
  // 'running' runs are not written yet: the filter leaves them out unless asked for by id (and then refused).
  const runs = new AppStore(store.database).searchRuns(filter).filter((r) => r.status !== 'running')
  if (runs.length === 0) throw new UserInputError('no runs match these filters')
  return runs.map((r) => r.id).reverse()
}

/** `speclab runs import FILE`: the file's runs into this database, new ids, each run once. */
function runsImportCommand(): Command {
  return new Command('import')
    .description('add the runs of a file made by `speclab runs export` (or any SpecLab database) to this database; runs already here are skipped')
    .argument('<file>', 'the file to read')
    .option('--db <file>', 'SQLite database to import into (default: SPECLAB_DB or the app database)')
    .option('--json', 'print JSON on stdout')
    .action((file: string, options: ReadOptions) => {
      const store = RunStore.open(options.db ?? defaultDatabasePath())
      try {
        printTransfer(importRuns(store.database, file), options.json, 'imported', 'from')
      } finally {
        store.close()
      }
    })
}

function printTransfer(summary: TransferSummary, json: boolean | undefined, verb: 'exported' | 'imported', preposition: 'to' | 'from'): void {
  if (json) return void process.stdout.write(`${JSON.stringify(summary)}\n`)
  const runs = (n: number) => `${n} run${n === 1 ? '' : 's'}`
  const pairs = summary.transferred.map((r) => (verb === 'imported' ? `#${r.from} → #${r.to}` : `#${r.from}`)).join(', ')
  const lines = [`${verb} ${runs(summary.transferred.length)} ${preposition} ${terminalSafe(summary.file)}${pairs ? `: ${pairs}` : ''}`]
  if (summary.skipped.length > 0)
    lines.push(`${runs(summary.skipped.length)} already here, skipped: ${summary.skipped.map((r) => `#${r.from} (here #${r.to})`).join(', ')}`)
  process.stdout.write(`${lines.join('\n')}\n`)
}
