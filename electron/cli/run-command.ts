/** `speclab run`: load the trio, run methods × prompts, store everything, print a summary (or --json). */
import { randomInt } from 'node:crypto'
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { RunReport } from '../api/runs'
import type { TheorySummary } from '../engine/metrics/summary'
import { loadPrompts } from '../experiments/prompts'
import { loadTrio } from '../experiments/models'
import { executeRun } from '../experiments/runner'
import { buildRunRequest, outcomeOf, withLoadedTrio, type BuiltRun } from '../experiments/run-request'
import { assertGgufFile } from '../engine/model/llama-cpp-model'
import { UserInputError } from '../engine/errors'
import { methodHelp } from '../engine/methods/docs'
import { METHOD_IDS } from '../engine/methods/ids'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { formatFixed, methodTable } from './format'
import { describeMachine } from '../experiments/machine-state'
import { describeRunThreads } from '../api/thread-summary'
import { createProgressBar } from './progress'
import { settingOption } from './setting-options'
import type { RunSettingValues } from '../engine/settings/run-settings'

export { createProgressBar }

export const parseInteger = (value: string): number => {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected an integer')
  const n = Number(value)
  // Beyond 2^53 a number is no longer exact (and zod would quote the bound as 9007199254740991).
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('expected an integer of at most 15 digits')
  return n
}

/** An integer option with its bounds in the message ("expected an integer from 1 to 1000000"). */
export const integerIn =
  (min: number, max: number) =>
  (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected an integer')
    const n = Number(value)
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`)
    return n
  }

/** "0.9,0.7,0.5": acceptance rates in [0, 1] (prepare checks the count and the methods). */
export const parseRates = (value: string): number[] => {
  const rates = value.split(',').map((r) => r.trim())
  if (rates.some((r) => r === '' || !Number.isFinite(Number(r)) || Number(r) < 0 || Number(r) > 1))
    throw new InvalidArgumentError('expected comma-separated rates in [0, 1], e.g. 0.9,0.7,0.5')
  return rates.map(Number)
}

/** Said before the run and under its report: such a run measures the engine, and its outputs are not the target's. */
export const syntheticWarning = (rates: readonly number[]): string =>
  `SYNTHETIC ACCEPTANCE ${rates.join(',')}: verification accepted draft position i with probability r_i — the outputs ` +
  `are NOT the target's, and the speedups measure the engine's cost curve, not the models (never compare them with real runs)`

function parseSetting(value: string, previous: Record<string, string | number | boolean>) {
  const match = /^([\w.-]+)=(.*)$/.exec(value)
  if (!match) throw new InvalidArgumentError('expected key=value')
  const raw = match[2]
  const parsed = raw === 'true' ? true : raw === 'false' ? false : raw !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw
  return { ...previous, [match[1]]: parsed }
}

const collect = (value: string, previous: string[]) => [...previous, value]

/** Model and database options shared by `run` and (later) `suite`. */
export function addModelOptions(command: Command): Command {
  return command
    .requiredOption('--target <file>', 'target model M_p (GGUF)')
    .option('--mid <file>', 'mid draft model M_q2 (GGUF, same vocabulary)')
    .option('--draft <file>', 'small draft model M_q1 (GGUF, same vocabulary); repeat with --select-draft', collect, [])
    .addOption(settingOption('threads'))
    .addOption(settingOption('batchThreads'))
    .addOption(settingOption('calibration'))
    .addOption(settingOption('gpuLayers'))
    .addOption(settingOption('contextSize'))
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print one JSON object on stdout; progress stays on stderr')
}

/** The parsed options: the run settings by their catalog types (absent: not given), and the command's own. */
interface RunOptions
  extends Pick<RunSettingValues, 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'gamma' | 'calibration' | 'contextSize'>,
    Partial<Pick<RunSettingValues, 'limit' | 'fullVocabulary' | 'seed' | 'repeats' | 'threads' | 'batchThreads' | 'gpuLayers'>> {
  name?: string
  target: string
  mid?: string
  draft: string[]
  selectDraft?: boolean
  selectWarmup: number
  methods: string
  prompts?: string
  dataset?: string
  syntheticAcceptance?: number[]
  set: Record<string, string | number | boolean>
  llamaServerUrl?: string
  db?: string
  json?: boolean
}

export function runCommand(): Command {
  return addModelOptions(new Command('run').description('decode prompts with one or more methods and store the run'))
    .option('--methods <ids>', `comma-separated method ids (${METHOD_IDS.join(', ')})`, 'ar,sd')
    .option('--name <text>', 'a name for the run, shown by runs and in the app (notes can be added in the app)')
    .option('--prompts <file>', 'JSONL prompts: turns (MT-Bench/Spec-Bench), question (GSM8K), prompt (HumanEval) or text')
    .option('--dataset <id>', 'built-in prompt set: stories, chat, code, math, mixed, copy (default stories)')
    .addOption(settingOption('limit'))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('temperature'))
    .addOption(settingOption('topK'))
    .addOption(settingOption('topP'))
    .addOption(settingOption('fullVocabulary'))
    .addOption(settingOption('seed', { note: 'printed when drawn' }))
    .addOption(settingOption('gamma'))
    .addOption(settingOption('repeats'))
    .option(
      '--synthetic-acceptance <r1,r2,…>',
      'measure the engine, not the models: verification accepts draft position i with probability r_i (the last rate ' +
        'for deeper positions), as llama.cpp --spec-synth-rates; outputs are NOT the target\'s and the run is kept out of ' +
        'speed comparisons (ar and the methods that verify one draft position by position: sd, pearl, sd+ngram, sd-tli, ' +
        'sd-uad and the draft-length policies; not sd-tree)',
      parseRates
    )
    .option(
      '--select-draft',
      'adaptive draft-model selection (004 §5) among several --draft files: profile each on the first prompts, fit ' +
        'acceptance = OLS(prompt length, perplexity under the draft, TF-IDF) per draft (Eq 5, no intercept), then ' +
        'give each prompt the draft with the highest predicted throughput max_γ Eq 1 (= Theorem 2)'
    )
    .option('--select-warmup <r>', 'warm-up prompts for --select-draft (≥ 3, one per feature)', integerIn(3, 1000), 3)
    .addOption(new Option('--set <key=value>', 'method parameter, repeatable (e.g. nlc.minConfidence=0.6)').argParser(parseSetting).default({}))
    .option('--llama-server-url <url>', "the llama-server:* methods use this running server instead of starting one (its /props must serve the run's target); = --set llamaserver.url=URL")
    .addHelpText(
      'after',
      `\nMethods (models, what γ is to each, lossless or not; parameters as --set key=default):\n${methodHelp()}\n\nSampling is exact: the output follows the target's warped distribution ` +
        `(temperature → top-k → top-p, applied identically to draft and target).`
    )
    .action(async (options: RunOptions) => {
      await runAction(options)
    })
}

/** --llama-server-url is shorthand for --set llamaserver.url=URL (the peer methods' shared parameter). */
function withServerUrl(set: RunOptions['set'], url: string | undefined): RunOptions['set'] {
  if (url === undefined) return set
  if ('llamaserver.url' in set && set['llamaserver.url'] !== url) throw new UserInputError('--llama-server-url and --set llamaserver.url disagree')
  return { ...set, 'llamaserver.url': url }
}

/** The run request of `speclab run`: the options as catalog settings, through the one builder (run-request.ts). */
function buildRun(options: RunOptions, seed: number): BuiltRun {
  if (options.draft.length > 1 && !options.selectDraft)
    throw new UserInputError('several --draft files need --select-draft (adaptive draft-model selection)')
  if (options.selectDraft && options.draft.length < 2) throw new UserInputError('--select-draft needs at least two --draft files')
  return buildRunRequest({
    suite: null,
    methods: options.methods.split(',').map((m) => m.trim()).filter(Boolean),
    models: { target: options.target, mid: options.mid, draft: options.draft[0], drafts: options.draft.length > 1 ? options.draft : undefined },
    prompts: { dataset: options.prompts ? undefined : (options.dataset ?? 'stories'), file: options.prompts, limit: options.limit },
    decode: { maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, topP: options.topP, gamma: options.gamma, seed },
    load: {
      fullVocabulary: options.fullVocabulary ?? false,
      contextSize: options.contextSize,
      threads: options.threads,
      batchThreads: options.batchThreads,
      calibration: options.calibration,
      gpuLayers: options.gpuLayers
    },
    repeats: options.repeats,
    params: withServerUrl(options.set, options.llamaServerUrl),
    syntheticAcceptance: options.syntheticAcceptance ?? null,
    draftSelection: options.selectDraft ? { warmupPrompts: options.selectWarmup } : null
  })
}

async function runAction(options: RunOptions): Promise<void> {
  if (options.prompts && options.dataset) throw new UserInputError('give either --prompts or --dataset, not both')
  // The model files first: `--target README.md` is a bad target, not a run that lacks a draft model.
  for (const file of [options.target, options.mid, ...options.draft]) if (file !== undefined) await assertGgufFile(path.resolve(file))
  const seed = options.seed ?? randomInt(2 ** 32)
  const { config, prepared, load } = buildRun(options, seed)
  const prompts = loadPrompts(config.prompts)
  const store = RunStore.open(options.db ?? defaultDatabasePath())
  const trio = await loadTrio(config.models, load)
  const stop = stopOnSignals()
  // Before the bar starts, on a line of its own (the report's first line repeats it).
  if (options.seed === undefined) process.stderr.write(`seed ${seed}\n`)
  if (config.syntheticAcceptance) process.stderr.write(`${syntheticWarning(config.syntheticAcceptance)}\n`)
  const progress = createProgressBar(prompts.length * config.methods.length * config.repeats)
  let report: RunReport
  try {
    report = await executeRun(store, withLoadedTrio(config, outcomeOf(trio)), trio.models, prompts, {
      prepared,
      signal: stop.signal,
      onProgress: progress.update,
      draftCandidates: trio.drafts,
      onRunCreated: (runId) => {
        if (options.name) store.annotateRun(runId, { name: options.name, notes: '' })
      }
    })
  } finally {
    progress.stop()
    stop.dispose()
    await trio.dispose()
    store.close()
  }
  printReport(report, options.json ?? false, { withSeed: true })
  if (report.status === 'cancelled') process.exitCode = stop.exitCode()
}

/**
 * Ctrl-C (SIGINT) and SIGTERM (kill, a CI runner's timeout, systemd) both stop a run the same way: the signal
 * aborts it, the prompt in flight keeps its partial output as `cancelled`, the run is marked cancelled, and the
 * process exits with 128 + the signal's number — 130 after SIGINT, 143 after SIGTERM. A second signal is not
 * caught and ends the process at once (a run left `running` is marked interrupted when the store next opens).
 */
export function stopOnSignals(): { signal: AbortSignal; exitCode(): number; dispose(): void } {
  const abort = new AbortController()
  let received: NodeJS.Signals = 'SIGINT'
  const dispose = () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  function onSignal(signal: NodeJS.Signals) {
    received = signal
    dispose()
    abort.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return { signal: abort.signal, exitCode: () => (received === 'SIGTERM' ? 143 : 130), dispose }
}

/** `withSeed`: the header names the seed (`run` prints it; `show` has its own settings line with it). */
export function printReport(report: RunReport, json: boolean, { withSeed = false } = {}): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report)}\n`)
    return
  }
  const seed = withSeed ? ` · seed ${report.config.seed}` : ''
  process.stdout.write(`run ${report.runId} (${report.status})${seed}\n${methodTable(report.methods)}\n`)
  process.stdout.write(`${reportNotes(report).join('\n')}\n`)
}

/** Under the table: how the intervals were made, the machine's load, acceptance per draft position. */
export function reportNotes(report: RunReport): string[] {
  const notes: string[] = []
  if (report.config.syntheticAcceptance) notes.push(syntheticWarning(report.config.syntheticAcceptance))
  const cells = Math.max(0, ...report.methods.map((m) => m.tokensPerSecondInterval?.cells ?? 0))
  const prompts = Math.max(0, ...report.methods.map((m) => m.prompts))
  notes.push(
    `tok/s and speedup: median of ${cells} timed decodes (${plural(prompts, 'prompt')} × ${plural(report.config.repeats, 'repeat')}) with a 95 % bootstrap interval` +
      (report.methods.some((m) => m.method === 'ar') ? '; speedups paired with ar on the same prompt and repeat' : '; add ar to --methods to measure speedups')
  )
  if (report.machine) notes.push(`machine: ${describeMachine(report.machine)}`)
  notes.push(`threads: ${describeRunThreads(report.config)}`)
  for (const m of report.methods) {
    if (m.acceptanceByPosition.length === 0) continue
    const positions = m.acceptanceByPosition.slice(0, 12).map((p) => `${p.position}: ${formatFixed(p.rate, 2)} (${formatFixed(p.conditionalRate, 2)})`)
    notes.push(`${m.method} acceptance by draft position, rate (conditional) — ${positions.join(' · ')}${m.acceptanceByPosition.length > 12 ? ' …' : ''}`)
  }
  for (const m of report.methods) if (m.theory) notes.push(`${m.method} theory: ${theoryLine(m.theory)}`)
  return notes
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** "α̂ 0.80, c 0.10, verify 0.40 → tokens/call 3.69 (measured 3.00); speedup 2.46× (Thm 3.8), 1.90× with the verify cost (measured 1.40×); best γ 6". */
export function theoryLine(t: TheorySummary): string {
  const x = (v: number | null) => (v === null ? '–' : `${formatFixed(v, 2)}×`)
  const parts = [
    `α̂ ${formatFixed(t.alpha, 2)}, c ${formatFixed(t.c, 3)}, verify ${formatFixed(t.verifyCost, 2)}, γ ${formatFixed(t.gamma, t.gammaIsMean ? 2 : 0)}${t.gammaIsMean ? ' (mean)' : ''}`,
    `tokens/call ${formatFixed(t.tokensPerCall.predicted, 2)} (measured ${formatFixed(t.tokensPerCall.measured, 2)})`,
    `speedup ${x(t.speedup.predicted)} Thm 3.8, ${x(t.speedupWithVerifyCost.predicted)} with the verify cost (measured ${x(t.speedup.measured)})`
  ]
  if (t.optimalGammaWithVerifyCost) parts.push(`best γ ${t.optimalGamma?.gamma} (Thm 3.8), ${t.optimalGammaWithVerifyCost.gamma} with the verify cost`)
  if (t.chen) parts.push(`Chen Thm 3.2 tokens/call ${formatFixed(t.chen.tokensPerCall.predicted, 2)} (α ${formatFixed(t.chen.alpha, 2)}, β ${formatFixed(t.chen.beta, 2)}), Thm 3.4 ${x(t.chen.timeImprovement.predicted)}`)
  if (t.dsbd) parts.push(`DSBD Thm 3.2 layers/iteration ${formatFixed(t.dsbd.layersPerIteration.predicted, 2)} (measured ${formatFixed(t.dsbd.layersPerIteration.measured, 2)}; a lower bound)`)
  return parts.join('; ')
}
