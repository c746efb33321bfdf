/** `speclab run`: load the trio, run methods × prompts, store everything, print a summary (or --json). */
import { randomInt } from 'node:crypto'
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import cliProgress from 'cli-progress'
import { RunConfig, type RunReport } from '../api/contract'
import { loadPrompts } from '../experiments/prompts'
import { loadTrio } from '../experiments/models'
import { executeRun, prepareConfig, type RunProgress } from '../experiments/runner'
import { defaultThreads } from '../engine/model/llama-cpp-model'
import { UserInputError } from '../engine/errors'
import { methodHelp } from '../engine/methods/docs'
import type { PreparedRun } from '../engine/methods/prepare'
import { METHOD_IDS } from '../engine/methods/ids'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { methodTable } from './format'

export const parseInteger = (value: string): number => {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected an integer')
  return Number(value)
}
export const parseNumber = (value: string): number => {
  const n = Number(value)
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('expected a number')
  return n
}

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
    .option('--threads <n>', 'CPU threads per model (default: 1 on ≤ 2 cores, else llama.cpp default)', parseInteger)
    .option('--context-size <n>', 'context size per sequence (capped by the model)', parseInteger, 2048)
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print one JSON object on stdout; progress stays on stderr')
}

interface RunOptions {
  target: string
  mid?: string
  draft: string[]
  selectDraft?: boolean
  selectWarmup: number
  methods: string
  prompts?: string
  dataset?: string
  limit?: number
  maxTokens: number
  temperature: number
  topK: number
  topP: number
  fullVocabulary?: boolean
  seed?: number
  gamma: number
  set: Record<string, string | number | boolean>
  threads?: number
  contextSize: number
  db?: string
  json?: boolean
}

export function runCommand(): Command {
  return addModelOptions(new Command('run').description('decode prompts with one or more methods and store the run'))
    .option('--methods <ids>', `comma-separated method ids (${METHOD_IDS.join(', ')})`, 'ar,sd')
    .option('--prompts <file>', 'JSONL prompts: turns (MT-Bench/Spec-Bench), question (GSM8K), prompt (HumanEval) or text')
    .option('--dataset <id>', 'built-in prompt set: stories, chat, code, math, mixed (default stories)')
    .option('--limit <n>', 'use the first N prompts', parseInteger)
    .option('--max-tokens <n>', 'tokens to generate per prompt', parseInteger, 128)
    .option('--temperature <t>', 'sampling temperature; 0 = greedy (argmax verify/correct)', parseNumber, 1)
    .option('--top-k <k>', 'top-k warping for draft and target alike (0 = whole vocabulary)', parseInteger, 64)
    .option('--top-p <p>', 'nucleus warping after top-k (1 = off)', parseNumber, 1)
    .option('--full-vocabulary', 'transfer all logits from llama.cpp instead of the top-k (slower, exact for any warp)')
    .option('--seed <s>', 'PRNG seed (default: random, printed and recorded)', parseInteger)
    .option('--gamma <g>', 'draft length γ for fixed-window methods (the cap of adaptive ones)', parseInteger, 5)
    .option(
      '--select-draft',
      'adaptive draft-model selection (004 §5) among several --draft files: profile each on the first prompts, fit ' +
        'acceptance = OLS(prompt length, perplexity under the draft, TF-IDF) per draft (Eq 5, no intercept), then ' +
        'give each prompt the draft with the highest predicted throughput max_γ Eq 1 (= Theorem 2)'
    )
    .option('--select-warmup <r>', 'warm-up prompts for --select-draft (≥ 3, one per feature)', parseInteger, 3)
    .addOption(new Option('--set <key=value>', 'method parameter, repeatable (e.g. nlc.minConfidence=0.6)').argParser(parseSetting).default({}))
    .addHelpText(
      'after',
      `\nMethods (models, what γ is to each, lossless or not; parameters as --set key=default):\n${methodHelp()}\n\nSampling is exact: the output follows the target's warped distribution ` +
        `(temperature → top-k → top-p, applied identically to draft and target).`
    )
    .action(async (options: RunOptions) => {
      await runAction(options)
    })
}

/** The run record keeps absolute paths so `show` and `diff` mean the same file from any directory. */
const absolute = (file: string | undefined) => (file === undefined ? undefined : path.resolve(file))

function buildConfig(options: RunOptions, seed: number): { config: RunConfig; prepared: PreparedRun } {
  const methods = options.methods.split(',').map((m) => m.trim()).filter(Boolean)
  if (options.draft.length > 1 && !options.selectDraft)
    throw new UserInputError('several --draft files need --select-draft (adaptive draft-model selection)')
  if (options.selectDraft && options.draft.length < 2) throw new UserInputError('--select-draft needs at least two --draft files')
  // Methods, models and parameters first: one line naming what is wrong, and params resolved before the schema.
  const { config: resolved, prepared } = prepareConfig({
    methods: methods as RunConfig['methods'],
    models: { target: options.target, mid: options.mid, draft: options.draft[0] },
    gamma: options.gamma,
    params: options.set
  })
  const config = RunConfig.parse({
    suite: null,
    methods,
    models: {
      target: absolute(options.target),
      mid: absolute(options.mid),
      draft: absolute(options.draft[0]),
      drafts: options.draft.length > 1 ? options.draft.map((d) => path.resolve(d)) : undefined
    },
    prompts: { dataset: options.prompts ? undefined : (options.dataset ?? 'stories'), file: absolute(options.prompts), limit: options.limit },
    maxTokens: options.maxTokens,
    sampling: {
      temperature: options.temperature,
      topK: options.topK,
      topP: options.topP,
      fullVocabulary: options.fullVocabulary ?? false
    },
    seed,
    gamma: options.gamma,
    params: resolved.params,
    threads: options.threads ?? defaultThreads() ?? 4,
    contextSize: options.contextSize,
    draftSelection: options.selectDraft ? { warmupPrompts: options.selectWarmup } : null
  })
  return { config, prepared }
}

async function runAction(options: RunOptions): Promise<void> {
  if (options.prompts && options.dataset) throw new UserInputError('give either --prompts or --dataset, not both')
  const seed = options.seed ?? randomInt(2 ** 32)
  const { config, prepared } = buildConfig(options, seed)
  const prompts = loadPrompts(config.prompts)
  const store = RunStore.open(options.db ?? defaultDatabasePath())
  const trio = await loadTrio(config.models, {
    threads: config.threads,
    contextSize: config.contextSize,
    fullVocabulary: config.sampling.fullVocabulary,
    // Beam methods keep one KV sequence per beam / tree path (4 unless a method asks for more).
    sequences: prepared.sessions
  })
  const abort = new AbortController()
  const onSigint = () => abort.abort()
  process.once('SIGINT', onSigint)
  const progress = createProgressBar(prompts.length * config.methods.length)
  if (options.seed === undefined) process.stderr.write(`seed ${seed}\n`)
  let report: RunReport
  try {
    const effective = { ...config, contextSize: trio.models.target.context.contextSize, modelFingerprints: trio.fingerprints }
    report = await executeRun(store, effective, trio.models, prompts, {
      prepared,
      signal: abort.signal,
      onProgress: progress.update,
      draftCandidates: trio.drafts
    })
  } finally {
    progress.stop()
    process.off('SIGINT', onSigint)
    await trio.dispose()
    store.close()
  }
  printReport(report, options.json ?? false)
  if (report.status === 'cancelled') process.exitCode = 130
}

export function printReport(report: RunReport, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report)}\n`)
    return
  }
  process.stdout.write(`run ${report.runId} (${report.status})\n${methodTable(report.methods)}\n`)
  if (!report.methods.some((m) => m.method === 'ar')) process.stdout.write('(add ar to --methods to measure speedups)\n')
}

/** A cli-progress bar on stderr; silent when stderr is not a terminal (CI logs stay clean). */
export function createProgressBar(cells: number) {
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: '{bar} {percentage}% | cell {cell}/{cells} | prompt {prompt} {method} | {tokens} tokens | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true
    },
    cliProgress.Presets.shades_classic
  )
  bar.start(cells, 0, { cell: 0, cells, prompt: '-', method: '-', tokens: 0 })
  return {
    update: (p: RunProgress) =>
      bar.update(p.cellsDone, {
        cell: Math.min(p.cellsDone + 1, p.cellsTotal),
        cells: p.cellsTotal,
        prompt: `${p.promptIndex + 1}/${p.promptCount}`,
        method: p.method,
        tokens: p.tokens
      }),
    stop: () => bar.stop()
  }
}
