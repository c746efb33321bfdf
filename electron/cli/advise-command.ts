/**
 * `speclab advise`: which method, draft model and draft length to deploy on a workload — predicted from one trace
 * (experiments/advise.ts: the target decodes the prompts once, each draft reads them teacher-forced, every candidate
 * is replayed and priced with the measured cost curve), then the best few and `ar` measured by real runs.
 * Nothing is stored: the advice is printed (or one JSON object with --json).
 */
import { randomInt } from 'node:crypto'
import path from 'node:path'
import { Command, InvalidArgumentError } from 'commander'
import { UserInputError } from '../engine/errors'
import { assertGgufFile } from '../engine/model/llama-cpp-model'
import { candidateGrid } from '../engine/replay/candidates'
import type { Verdict } from '../engine/replay/advise'
import { adviseWorkload, type Advice, type ThreadChoice } from '../experiments/advise'
import { setThreads } from '../engine/model/thread-calibration'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'
import { loadTrio } from '../experiments/models'
import { loadPrompts } from '../experiments/prompts'
import { warpOfSettings } from '../experiments/run-request'
import { tokenizePrompts } from '../experiments/runner'
import type { RunSettingValues } from '../engine/settings/run-settings'
import { formatFixed, formatTable } from './format'
import { addModelOptions, integerIn } from './run-command'
import { settingOption } from './setting-options'

interface AdviseOptions
  extends Pick<RunSettingValues, 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'calibration' | 'contextSize'>,
    Partial<Pick<RunSettingValues, 'limit' | 'seed' | 'threads' | 'batchThreads' | 'gpuLayers'>> {
  target: string
  mid?: string
  draft: string[]
  prompts?: string
  dataset?: string
  methods?: string
  verify: number
  batch: number
  tryThreads?: number[]
  json?: boolean
}

/** "1,2": thread counts to compare. */
function parseCounts(value: string): number[] {
  const counts = value.split(',').map((c) => c.trim())
  if (counts.some((c) => !/^\d+$/.test(c) || Number(c) < 1 || Number(c) > 512)) throw new InvalidArgumentError('expected comma-separated thread counts from 1 to 512, e.g. 1,2')
  return [...new Set(counts.map(Number))]
}

/** Loaded llama.cpp models take their phase threads at each evaluation (llama-cpp-model.ts), so plans switch in place. */
const LLAMA_THREADS = (counts: number[]): ThreadChoice => ({
  counts,
  apply: (model, phase) => setThreads(model as LlamaCppModel, phase),
  current: (model) => ({ ...(model as LlamaCppModel).phaseThreads })
})

export function adviseCommand(): Command {
  return addModelOptions(new Command('advise').description('predict the fastest method / draft / draft length on a workload from one trace, then measure the best'))
    .option('--prompts <file>', 'JSONL prompts (as `run`)')
    .option('--dataset <id>', 'built-in prompt set (default stories)')
    .addOption(settingOption('limit'))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('temperature'))
    .addOption(settingOption('topK'))
    .addOption(settingOption('topP'))
    .addOption(settingOption('seed', { note: 'printed when drawn' }))
    .option('--methods <ids>', 'only these methods of the candidate grid (sd, sd-pmin, svip, sd+ngram, pld, ngram-simple)')
    .option('--verify <n>', 'measure the best n predicted candidates and ar by real runs (0 = predict only)', integerIn(0, 50), 3)
    .option('--batch <n>', "tokens per call of the drafts' teacher-forced pass", integerIn(1, 4096), 16)
    .option('--try-threads <counts>', "compare thread plans: each model's costs measured at each count (e.g. 1,2), every candidate priced with its fastest (target single/batch, draft) plan and measured with it", parseCounts)
    .action(async (options: AdviseOptions) => {
      await adviseAction(options)
    })
}

/** A draft's name in the advice: its file name without .gguf (the file itself when two share a name). */
function draftNames(files: readonly string[]): string[] {
  const names = files.map((file) => path.basename(file).replace(/\.gguf$/i, ''))
  return names.map((name, i) => (names.indexOf(name) === i && names.lastIndexOf(name) === i ? name : files[i]))
}

async function adviseAction(options: AdviseOptions): Promise<void> {
  if (options.mid) throw new UserInputError('advise replays two-model methods: leave out --mid')
  if (options.prompts && options.dataset) throw new UserInputError('give either --prompts or --dataset, not both')
  for (const file of [options.target, ...options.draft]) await assertGgufFile(path.resolve(file))
  const seed = options.seed ?? randomInt(2 ** 32)
  const names = draftNames(options.draft)
  const methods = options.methods?.split(',').map((m) => m.trim()).filter(Boolean)
  const grid = candidateGrid(names).filter((c) => !methods || methods.includes(c.method))
  if (grid.length === 0) throw new UserInputError(`no candidate of the grid is among --methods ${options.methods}`)
  const prompts = loadPrompts({ dataset: options.prompts ? undefined : (options.dataset ?? 'stories'), file: options.prompts, limit: options.limit })
  const trio = await loadTrio(
    { target: options.target, draft: options.draft[0], drafts: options.draft.length > 1 ? options.draft : undefined },
    { threads: options.threads, batchThreads: options.batchThreads, calibration: options.calibration, gpuLayers: options.gpuLayers, contextSize: options.contextSize }
  )
  if (options.seed === undefined) process.stderr.write(`seed ${seed}\n`)
  let advice: Advice
  try {
    const promptTokens = tokenizePrompts(trio.models, prompts, { maxTokens: options.maxTokens, contextSize: options.contextSize })
    advice = await adviseWorkload({
      target: trio.models.target,
      drafts: Object.fromEntries(trio.drafts.map((draft, i) => [names[i], draft])),
      prompts: promptTokens,
      warp: warpOfSettings({ maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, topP: options.topP }),
      seed,
      maxTokens: options.maxTokens,
      candidates: grid,
      verifyTop: options.verify,
      batch: options.batch,
      ...(options.tryThreads ? { threads: LLAMA_THREADS(options.tryThreads) } : {}),
      onProgress: (stage, detail) => process.stderr.write(`${stage}${detail ? ` ${detail.model} ${detail.prompt + 1}/${detail.prompts}` : ''}\n`)
    })
  } finally {
    await trio.dispose()
  }
  if (options.json) {
    const { trace, ...rest } = advice
    process.stdout.write(`${JSON.stringify({ seed, prompts: trace.prompts.length, tokens: trace.prompts.reduce((n, p) => n + p.tokens.length, 0), ...rest })}\n`)
    return
  }
  process.stdout.write(`${adviceText(advice, seed)}\n`)
}

const describeCandidate = (v: Verdict): string => {
  const params = Object.entries(v.candidate.params).map(([k, value]) => `${k}=${value}`)
  const gamma = ['sd', 'sd+ngram', 'pld'].includes(v.candidate.method) ? [`γ=${v.candidate.gamma}`] : []
  return [v.candidate.method, ...gamma, ...params].join(' ')
}

export function adviceText(advice: Advice, seed: number): string {
  const measured = new Map(advice.measured.map((m) => [m.candidate, m]))
  const measuredOf = (v: Verdict) => measured.get(v.candidate) ?? advice.measured.find((m) => v.candidate.method === 'ar' && m.candidate.method === 'ar')
  const plans = advice.plans !== undefined
  const rows = advice.verdicts.map((v, i) => [
    String(i + 1),
    describeCandidate(v),
    v.candidate.draft ?? '–',
    ...(plans ? [v.plan ?? '–'] : []),
    formatFixed(v.prediction?.tokensPerSecond, 1),
    v.prediction ? `${formatFixed(v.prediction.speedup, 2)}×` : '–',
    formatFixed(v.prediction?.tokensPerRound, 2),
    v.prediction && v.prediction.proposed > 0 ? formatFixed(v.prediction.accepted / v.prediction.proposed, 2) : '–',
    formatFixed(measuredOf(v)?.tokensPerSecond, 1),
    v.error ?? ''
  ])
  const mode = advice.verdicts[0]?.mode === 'expected' ? 'expected values (sampling)' : 'replayed rounds (greedy)'
  const notes = [
    `seed ${seed} · ${advice.trace.prompts.length} prompts, ${advice.trace.prompts.reduce((n, p) => n + p.tokens.length, 0)} tokens · ${mode}`,
    `target c_T(k) ms${plans ? ` (plan ${advice.verdicts[0]?.plan})` : ''}, k = 1…${advice.costs.targetMs.length}: ${advice.costs.targetMs.map((ms) => formatFixed(ms, 2)).join(' ')}`,
    ...Object.entries(advice.costs.drafts).map(([name, cost]) => `draft ${name}: ${formatFixed(cost.ms, 2)} ms/token${cost.fullEntropyMs !== undefined ? ` (${formatFixed(cost.fullEntropyMs, 2)} with every logit, svip)` : ''}`)
  ]
  return `${formatTable(['#', 'candidate', 'draft', ...(plans ? ['threads'] : []), 'pred tok/s', 'pred speedup', 'tok/round', 'accept', 'measured tok/s', 'not replayable'], rows)}\n${notes.join('\n')}`
}
