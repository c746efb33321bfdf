/** `speclab runs`, `show <id>`, `diff <a> <b>`: read the store, print tables or --json. */
import { Command } from 'commander'
import type { RunReport } from '../api/contract'
import { diffRuns, type RunDiff } from '../api/run-diff'
import { buildRunReport } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { formatNumber, formatTable, methodTable } from './format'
import { parseInteger, printReport } from './run-command'

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
    .option('--limit <n>', 'how many', parseInteger, 50)
    .action((options: ReadOptions & { limit: number }) => {
      const runs = withStore(options, (store) => store.listRuns(options.limit))
      if (options.json) return void process.stdout.write(`${JSON.stringify(runs)}\n`)
      if (runs.length === 0) return void process.stdout.write('no runs yet — try: npm run speclab -- run --target T.gguf --draft D.gguf\n')
      const rows = runs.map((r) => [String(r.id), r.createdAt.replace('T', ' ').slice(0, 19), r.suite ?? '–', r.methods.join(','), r.status, String(r.promptCount)])
      process.stdout.write(`${formatTable(['id', 'created', 'suite', 'methods', 'status', 'results'], rows)}\n`)
    })
}

export function showCommand(): Command {
  return readOptions(new Command('show').description('show one run: config, per-method metrics, outputs'))
    .argument('<runId>', 'run id', parseInteger)
    .action((runId: number, options: ReadOptions) => {
      withStore(options, (store) => {
        const report = reportOf(store, runId)
        const results = store.getPromptResults(runId)
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ ...report, results, draftChoices: store.getDraftChoices(runId) })}\n`)
          return
        }
        printReport(report, false)
        const { config } = report
        process.stdout.write(
          `\ntarget ${config.models.target}\n` +
            (config.models.mid ? `mid    ${config.models.mid}\n` : '') +
            (config.models.draft ? `draft  ${config.models.draft}\n` : '') +
            `seed ${config.seed}  γ ${config.gamma}  temperature ${config.sampling.temperature}  top-k ${config.sampling.topK}  top-p ${config.sampling.topP}  max-tokens ${config.maxTokens}\n\n`
        )
        for (const r of results)
          process.stdout.write(`[${r.method} #${r.promptIndex + 1} ${r.status}] ${r.promptText}\n  → ${r.outputText.replace(/\n/g, ' ').slice(0, 300)}\n`)
        const choices = store.getDraftChoices(runId).filter((c) => c.phase === 'choice')
        if (choices.length > 0)
          process.stdout.write(`\ndraft selection (004 §5):\n${choices.map((c) => `  prompt ${c.promptIndex + 1} → ${c.draftPath}`).join('\n')}\n`)
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

function formatDiff(diff: RunDiff): string {
  const config =
    diff.configDifferences.length === 0
      ? 'configs are identical'
      : formatTable(
          ['setting', `run ${diff.a}`, `run ${diff.b}`],
          diff.configDifferences.map((d) => [d.key, clip(JSON.stringify(d.a) ?? '–'), clip(JSON.stringify(d.b) ?? '–')])
        )
  const metrics = diff.methods.map((m) => {
    const rows = Object.entries(m.metrics).map(([name, v]) => [name, formatNumber(v.a, 3), formatNumber(v.b, 3), signed(v.delta)])
    return `${m.method}${m.inA ? '' : ` (only in run ${diff.b})`}${m.inB ? '' : ` (only in run ${diff.a})`}\n` +
      formatTable(['metric', `run ${diff.a}`, `run ${diff.b}`, 'Δ (b − a)'], rows)
  })
  return [`config differences (run ${diff.a} vs run ${diff.b})`, config, '', ...metrics.flatMap((t) => [t, ''])].join('\n')
}

/** Long values (paths) keep their informative end. */
function clip(text: string, width = 60): string {
  return text.length <= width ? text : `…${text.slice(-(width - 1))}`
}

function signed(value: number | null): string {
  if (value === null) return '–'
  return `${value > 0 ? '+' : ''}${formatNumber(value, 3)}`
}
