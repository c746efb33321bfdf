/**
 * `speclab suite <id>`: run an experiment suite (experiments/suites.ts) — every cell a stored run linked to one suite
 * run — and write its report (HTML with inline SVG charts + Markdown). `speclab report <suiteRunId>` re-renders a
 * report from the database alone; `speclab suites` lists the suites and the stored suite runs.
 *
 * Resume is explicit: `--resume <suiteRunId>` continues that suite run, `--resume` alone the newest unfinished run
 * of the suite; finished cells are kept, not recomputed, and the stored options (models, seed, grid) win. Without
 * --resume every invocation starts a new suite run — a silent resume would mix settings the user just changed.
 */
import path from 'node:path'
import { Command, InvalidArgumentError } from 'commander'
import { UserInputError } from '../engine/errors'
import { renderSuiteReport, writeSuiteReport } from '../experiments/reports/index'
import { datasetOverride, runSuite, suiteRepeats, type PlannedCell, type SuiteProgress, type SuiteRunOptions } from '../experiments/suite-runner'
import { SUITES, requireSuite } from '../experiments/suites'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { SuiteStore } from '../store/suite-store'
import { formatTable } from './format'
import { createProgressLine, formatEta } from './progress'
import { parseInteger, stopOnSignals } from './run-command'
import { settingOption } from './setting-options'
import type { RunSettingValues } from '../engine/settings/run-settings'

/** The parsed options: the run settings by their catalog types (absent: not given), and the command's own. */
interface SuiteOptions extends Partial<Pick<RunSettingValues, 'limit' | 'maxTokens' | 'seed' | 'threads' | 'contextSize' | 'repeats'>> {
  quick?: boolean
  target?: string
  mid?: string
  draft?: string
  dataset?: string
  prompts?: string
  resume?: number | true
  out?: string
  db?: string
  json?: boolean
}

const parseResume = (value: string): number => {
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(Number(value))) throw new InvalidArgumentError('expected a suite run id')
  return Number(value)
}

const reportsDirectory = (options: { out?: string }, db: string) => path.resolve(options.out ?? path.join(path.dirname(path.resolve(db)), 'reports'))

export function suiteCommand(): Command {
  const list = SUITES.map((s) => `  ${s.id.padEnd(17)} ${s.name} (full ${s.estimate.full} per repeat, --quick ${s.estimate.quick})`).join('\n')
  return new Command('suite')
    .description("run an experiment suite that reproduces a paper's tables and figures, store it, write its report")
    .argument('<suite>', `suite id (${SUITES.map((s) => s.id).join(', ')})`)
    .option('--quick', 'the reduced grid on target5M-f32 (seconds; what CI runs)')
    .option('--target <file>', "target M_p (default: the suite's file in $SPECLAB_MODELS, see below)")
    .option('--mid <file>', 'mid draft M_q2 (default: $SPECLAB_MODELS/family/stories-mid1M-f32.gguf)')
    .option('--draft <file>', 'small draft M_q1 (default: $SPECLAB_MODELS/stories260K-f32.gguf)')
    .option('--dataset <id>', "built-in prompt set replacing the suite's datasets: stories, chat, code, math, mixed, copy")
    .option('--prompts <file>', "JSONL prompts replacing the suite's datasets (turns, question, prompt or text per line)")
    .addOption(settingOption('limit', { note: 'per dataset' }))
    .addOption(settingOption('maxTokens', { default: null, note: "default: each cell's; cells that sweep the generation length keep theirs" }))
    .addOption(settingOption('seed', { default: 1, note: 'of every cell' }))
    .addOption(settingOption('threads'))
    .addOption(settingOption('contextSize', { default: 512 }))
    .addOption(settingOption('repeats', { note: `default ${suiteRepeats(false)}, ${suiteRepeats(true)} with --quick` }))
    .option('--resume [suiteRunId]', 'continue a suite run (alone: the newest unfinished one of this suite); finished cells are kept', parseResume)
    .option('--out <dir>', 'where to write the report (default: reports/ beside the database)')
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print one JSON object on stdout (suite run, cells, report files, report model)')
    .addHelpText(
      'after',
      `\nSuites:\n${list}\n\nModels default to the shared family: the speed suites use the inflated target ` +
        `(family/stories-target5M-inflated-78M-f16.gguf), --quick uses family/stories-target5M-f32.gguf (same function, ` +
        `1/14 of the compute); mid family/stories-mid1M-f32.gguf, draft stories260K-f32.gguf.`
    )
    .action(suiteAction)
}

async function suiteAction(id: string, options: SuiteOptions): Promise<void> {
  const suite = requireSuite(id)
  const db = options.db ?? defaultDatabasePath()
  const store = RunStore.open(db)
  // SIGINT and SIGTERM alike: the cell in flight is cancelled with its partial output, the suite run can resume.
  const stop = stopOnSignals()
  const bar = createSuiteProgressBar()
  try {
    let resume: number | undefined
    if (options.resume === true) {
      const unfinished = new SuiteStore(store.database)
        .listSuiteRuns({ suite: suite.id })
        .find((r) => r.status !== 'done' && r.status !== 'running')
      if (!unfinished) throw new UserInputError(`no unfinished suite run of '${suite.id}' to resume`)
      resume = unfinished.id
    } else resume = options.resume
    const dataset = datasetOverride(options)
    const result = await runSuite(
      store,
      {
        suite: suite.id,
        quick: options.quick ?? false,
        models: { target: options.target, mid: options.mid, draft: options.draft },
        datasets: dataset ? [dataset] : undefined,
        limit: options.limit,
        maxTokens: options.maxTokens,
        seed: options.seed,
        threads: options.threads,
        contextSize: options.contextSize,
        repeats: options.repeats,
        resume
      },
      {
        signal: stop.signal,
        onProgress: bar.update,
        onNotice: (message) => bar.log(message),
        onSuiteRunCreated: (suiteRunId) => bar.log(`suite run ${suiteRunId} (${suite.id}${options.quick ? ', --quick' : ''})`)
      }
    )
    bar.stop()
    const rendered = renderSuiteReport(store, result.suiteRunId)
    const files = writeSuiteReport(rendered, reportsDirectory(options, db))
    if (options.json) {
      const cells = new SuiteStore(store.database).cellRuns(result.suiteRunId)
      process.stdout.write(`${JSON.stringify({ ...result, cells, files, report: rendered.report })}\n`)
    } else {
      process.stdout.write(
        `suite run ${result.suiteRunId} (${suite.id}): ${result.status} — ${result.executed.length} cell(s) run` +
          `${result.skipped.length > 0 ? `, ${result.skipped.length} kept from before` : ''}\n` +
          `report: ${files.html}\n        ${files.markdown}\n`
      )
      if (result.status === 'cancelled') process.stdout.write(`resume with: speclab suite ${suite.id} --resume ${result.suiteRunId}\n`)
    }
    if (result.status === 'cancelled') process.exitCode = stop.exitCode()
  } finally {
    bar.stop()
    stop.dispose()
    store.close()
  }
}

/** One bar over the whole suite in token-budget units, with the suite's own ETA (model loading excluded). */
function createSuiteProgressBar() {
  const line = createProgressLine('{bar} {percentage}% | cell {cell}/{cells} {key} | {method} | ETA {eta_text}')
  let started = false
  return {
    update(p: SuiteProgress) {
      if (p.phase === 'loading' || p.unitsTotal === 0) return
      const payload = {
        cell: p.cellIndex,
        cells: p.cellCount,
        key: p.cellKey ?? '',
        method: p.phase === 'scoring' ? 'scoring outputs' : (p.run?.method ?? '-'),
        eta_text: formatEta(p.etaMs)
      }
      if (!started) {
        line.start(p.unitsTotal, payload)
        started = true
      }
      line.update(Math.min(p.unitsDone, p.unitsTotal), payload)
    },
    /** On a line of its own: the bar's line is cleared first and the bar redraws below. */
    log: (message: string) => line.log(message),
    stop() {
      line.stop()
      started = false
    }
  }
}

export function reportCommand(): Command {
  return new Command('report')
    .description('re-render the report of a stored suite run (HTML + Markdown) from the database')
    .argument('<suiteRunId>', 'suite run id (see speclab suites)', parseInteger)
    .option('--out <dir>', 'where to write the report (default: reports/ beside the database)')
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print the file paths and the report model as JSON')
    .action((suiteRunId: number, options: { out?: string; db?: string; json?: boolean }) => {
      const db = options.db ?? defaultDatabasePath()
      const store = RunStore.open(db, { readonly: true })
      try {
        const rendered = renderSuiteReport(store, suiteRunId)
        const files = writeSuiteReport(rendered, reportsDirectory(options, db))
        if (options.json) process.stdout.write(`${JSON.stringify({ suiteRunId, files, report: rendered.report })}\n`)
        else process.stdout.write(`report of suite run ${suiteRunId} (${rendered.report.suite}, ${rendered.report.status}):\n${files.html}\n${files.markdown}\n`)
      } finally {
        store.close()
      }
    })
}

export function suitesCommand(): Command {
  return new Command('suites')
    .description('list the experiment suites and the stored suite runs')
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print JSON on stdout')
    .action((options: { db?: string; json?: boolean }) => {
      const store = RunStore.open(options.db ?? defaultDatabasePath(), { readonly: true })
      try {
        const suites = new SuiteStore(store.database)
        const runs = suites.listSuiteRuns<SuiteRunOptions, PlannedCell[]>({ limit: 200 }).map((r) => ({
          id: r.id,
          suite: r.suite,
          createdAt: r.createdAt,
          status: r.status,
          quick: r.quick,
          cells: r.plan.length,
          finished: suites.finishedCells(r.id).size
        }))
        if (options.json) {
          const definitions = SUITES.map((s) => ({ id: s.id, name: s.name, description: s.description, tables: s.tables, charts: s.charts, estimate: s.estimate }))
          process.stdout.write(`${JSON.stringify({ suites: definitions, runs })}\n`)
          return
        }
        const widest = Math.max(...SUITES.map((s) => s.id.length))
        process.stdout.write(
          `${SUITES.map((s) => `${s.id.padEnd(widest)}  ${s.name}  (full ${s.estimate.full}, --quick ${s.estimate.quick})`).join('\n')}\n\n`
        )
        process.stdout.write(
          runs.length === 0
            ? 'no suite runs yet — try: npm run speclab -- suite smoke --quick\n'
            : `${formatTable(['id', 'suite', 'created', 'status', 'cells'], runs.map((r) => [String(r.id), r.suite + (r.quick ? ' (quick)' : ''), r.createdAt.replace('T', ' ').slice(0, 19), r.status, `${r.finished}/${r.cells}`]))}\n`
        )
      } finally {
        store.close()
      }
    })
}
