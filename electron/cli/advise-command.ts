/**
 * `speclab advise`: which method, draft model and draft length to deploy on a workload — predicted from one trace
 * (experiments/advise.ts: the target decodes the prompts once, each draft reads them teacher-forced, every candidate
 * is replayed and priced with the measured cost curve), then the best few, `ar` and llama-server's default
 * speculation measured in one interleaved run with repeats (experiments/advise-verify.ts), stored as a run of suite
 * 'advise', and the recommendation drawn from those measurements (engine/replay/recommend.ts).
 * A draft of another vocabulary than the target's is a candidate with the cross-vocabulary methods (sd-tli, sd-uad);
 * refused with one line only when --methods leaves it none.
 */
import { randomInt } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import { UserInputError } from '../engine/errors'
import { assertGgufFile } from '../engine/model/llama-cpp-model'
import { candidateGrid } from '../engine/replay/candidates'
import { PROFILE_POSITIONS, type Verdict } from '../engine/replay/advise'
import { workloadProfile } from '../engine/replay/profile'
import { describeInterval, planVerification, type Interval } from '../engine/replay/recommend'
import { crossVocabularyMethods, findMethod } from '../engine/methods/prepare'
import { vocabularyMismatch } from '../engine/model/vocabulary-check'
import { findLlamaServer } from '../engine/peers/llama-server-binary'
import { adviseWorkload, type Advice, type ThreadChoice } from '../experiments/advise'
import { adviceRecord, armMethods, chooseArms, runnerArms, runVerification, servable, type Deploy, type VerifyArm } from '../experiments/advise-verify'
import { adviceResult, type AdviceResult, type CandidateResult, type Recommendation } from '../experiments/advice-result'
import { setThreads } from '../engine/model/thread-calibration'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'
import { loadTrio, type LoadedTrio } from '../experiments/models'
import { loadPrompts, type PromptItem } from '../experiments/prompts'
import { buildRunRequest, outcomeOf, warpOfSettings, withLoadedTrio, type RunRequest } from '../experiments/run-request'
import { tokenizePrompts } from '../experiments/runner'
import type { RunSettingValues } from '../engine/settings/run-settings'
import type { RunReport } from '../api/runs'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { formatFixed, formatTable } from './format'
import { integerIn } from './run-command'
import { createProgressBar } from './progress'
import { settingOption } from './setting-options'

interface AdviseOptions
  extends Pick<RunSettingValues, 'maxTokens' | 'temperature' | 'topK' | 'topP' | 'calibration' | 'contextSize' | 'repeats'>,
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
  deploy: Deploy
  budget?: number
  save?: string
  db?: string
  json?: boolean
}

/** "1,2": thread counts to compare. */
function parseCounts(value: string): number[] {
  const counts = value.split(',').map((c) => c.trim())
  if (counts.some((c) => !/^\d+$/.test(c) || Number(c) < 1 || Number(c) > 512)) throw new InvalidArgumentError('expected comma-separated thread counts from 1 to 512, e.g. 1,2')
  return [...new Set(counts.map(Number))]
}

/** `--draft a.gguf,b.gguf --draft c.gguf`: every file, in order. */
function collectDrafts(value: string, previous: string[]): string[] {
  return [...previous, ...value.split(',').map((file) => file.trim()).filter(Boolean)]
}

function parseBudget(value: string): number {
  const seconds = Number(value)
  if (!Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('expected a positive number of seconds')
  return seconds
}

/** Loaded llama.cpp models take their phase threads at each evaluation (llama-cpp-model.ts), so plans switch in place. */
const LLAMA_THREADS = (counts: number[]): ThreadChoice => ({
  counts,
  apply: (model, phase) => setThreads(model as LlamaCppModel, phase),
  current: (model) => ({ ...(model as LlamaCppModel).phaseThreads })
})

export function adviseCommand(): Command {
  return new Command('advise')
    .description('predict the fastest method / draft / draft length on a workload from one trace, measure the best beside ar with intervals, and recommend one (stored as a run)')
    .requiredOption('--target <file>', 'target model (GGUF)')
    .option('--draft <files>', `candidate draft models (GGUF): comma-separated or repeated; one of another vocabulary than the target's is tried with ${crossVocabularyMethods().join(' and ')} (greedy only)`, collectDrafts, [])
    .option('--mid <file>', 'refused: advise replays two-model methods')
    .option('--prompts <file>', 'JSONL prompts (as `run`)')
    .option('--dataset <id>', 'built-in prompt set (default stories)')
    .addOption(settingOption('limit'))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('temperature'))
    .addOption(settingOption('topK'))
    .addOption(settingOption('topP'))
    .addOption(settingOption('seed', { note: 'printed when drawn' }))
    .addOption(settingOption('repeats', { default: 3, note: 'of the verification run' }))
    .addOption(settingOption('threads'))
    .addOption(settingOption('batchThreads'))
    .addOption(settingOption('calibration'))
    .addOption(settingOption('gpuLayers'))
    .addOption(settingOption('contextSize'))
    .option('--methods <ids>', `only these methods of the candidate grid (${GRID_METHODS.join(', ')})`)
    .option('--verify <n>', 'measure the best n predicted candidates beside ar (0 = predict only, nothing stored)', integerIn(0, 50), 3)
    .option('--budget <seconds>', 'time for the verification run: fewer repeats, then fewer candidates, to fit; refused when nothing fits', parseBudget)
    .addOption(new Option('--deploy <where>', 'where the pick will run: llama-server keeps the candidates llama-server can run').choices(['speclab', 'llama-server', 'any']).default('any'))
    .option('--batch <n>', "tokens per call of the drafts' teacher-forced pass", integerIn(1, 4096), 16)
    .option('--try-threads <counts>', "compare thread plans: each model's costs measured at each count (e.g. 1,2), every candidate priced with its fastest (target single/batch, draft) plan and measured with it", parseCounts)
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print one JSON object on stdout; progress stays on stderr')
    .option('--save <file>', 'also write the JSON object to this file')
    .action(async (options: AdviseOptions) => {
      await adviseAction(options)
    })
}

/** A draft's name in the advice: its file name without .gguf (the file itself when two share a name). */
function draftNames(files: readonly string[]): string[] {
  const names = files.map((file) => path.basename(file).replace(/\.gguf$/i, ''))
  return names.map((name, i) => (names.indexOf(name) === i && names.lastIndexOf(name) === i ? name : files[i]))
}

/** Every method of the grid: a draft of the target's vocabulary, one of another, none. */
const GRID_METHODS = [...new Set([...candidateGrid(['same']), ...candidateGrid(['foreign'], new Set(['foreign']))].map((c) => c.method))]

const methodsOf = (options: AdviseOptions) => options.methods?.split(',').map((m) => m.trim()).filter(Boolean)

/**
 * Before the load: the methods the grid may hold for these drafts, whichever vocabularies they turn out to have;
 * --methods must name one of them.
 */
function possibleMethods(options: AdviseOptions, names: readonly string[]): string[] {
  const methods = methodsOf(options)
  const possible = [...candidateGrid(names), ...candidateGrid(names, new Set(names))].map((c) => c.method).filter((m) => !methods || methods.includes(m))
  if (possible.length === 0) throw new UserInputError(`no candidate of the grid is among --methods ${options.methods}`)
  return [...new Set(possible)]
}

/**
 * The grid the options allow: `foreign` drafts (another vocabulary than the target's) get sd-tli / sd-uad, the rest
 * the id-comparing methods; --methods, and with --deploy llama-server only what llama-server can run. A foreign
 * draft that --methods leaves without a cross-vocabulary method is refused with the vocabulary check's reason.
 */
function gridOf(options: AdviseOptions, names: readonly string[], foreign: ReadonlyMap<string, string>) {
  const methods = methodsOf(options)
  const grid = candidateGrid(names, new Set(foreign.keys())).filter((c) => !methods || methods.includes(c.method))
  for (const [name, reason] of foreign)
    if (!grid.some((c) => c.draft === name))
      throw new UserInputError(`${name} has another vocabulary than the target (${reason}); only ${crossVocabularyMethods().join(' and ')} draft with it, and --methods ${options.methods} leaves neither`)
  if (grid.length === 0) throw new UserInputError(`no candidate of the grid is among --methods ${options.methods}`)
  if (options.deploy !== 'llama-server') return grid
  const served = grid.filter(servable)
  if (served.length === 0) throw new UserInputError(`--deploy llama-server: llama-server runs none of the candidates (${[...new Set(grid.map((c) => c.method))].join(', ')}); it runs sd, sd-pmin and ngram-simple`)
  return served
}

/** The run request of the verification (suite 'advise'): the arms' methods, the workload, the load settings. */
function requestOf(options: AdviseOptions, seed: number, methods: readonly string[], repeats: number): RunRequest {
  return {
    suite: 'advise',
    methods,
    models: { target: options.target, draft: options.draft[0], drafts: options.draft.length > 1 ? options.draft : undefined },
    prompts: { dataset: options.prompts ? undefined : (options.dataset ?? 'stories'), file: options.prompts, limit: options.limit },
    decode: { maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, topP: options.topP, seed },
    load: { contextSize: options.contextSize, threads: options.threads, batchThreads: options.batchThreads, calibration: options.calibration, gpuLayers: options.gpuLayers },
    repeats
  }
}

/** The threads an arm runs with: its thread plan's (--try-threads), else the models' as loaded. */
function threadsFor(trio: LoadedTrio, plans: Advice['plans']) {
  const target = { ...trio.models.target.phaseThreads }
  const draftThreads = trio.drafts[0]?.phaseThreads.threads ?? target.threads
  return (verdict: Verdict | undefined) => {
    const plan = verdict?.plan === undefined ? undefined : plans?.[verdict.plan]
    if (plan) return { threads: plan.target.threads, batchThreads: plan.target.batchThreads, draftThreads: plan.draft }
    return { threads: target.threads, batchThreads: target.batchThreads, draftThreads }
  }
}

/** The arms that fit --budget (ar always), and their repeats; one line and exit 2 when nothing fits. */
function fitBudget(arms: VerifyArm[], options: AdviseOptions): { arms: VerifyArm[]; repeats: number; estimatedSeconds: number } {
  const [ar, ...rest] = arms
  const arMs = ar.predicted?.ms ?? 0
  const plan = planVerification(arMs, rest.map((a) => a.predicted?.ms ?? arMs), options.repeats, options.budget === undefined ? null : options.budget * 1000)
  if (!plan) {
    const once = (arMs + (rest[0]?.predicted?.ms ?? arMs)) / 1000
    throw new UserInputError(`--budget ${options.budget} s is too small: measuring ar and the best candidate once takes about ${once.toFixed(1)} s`)
  }
  return { arms: [ar, ...rest.slice(0, plan.candidates)], repeats: plan.repeats, estimatedSeconds: plan.estimatedMs / 1000 }
}

async function adviseAction(options: AdviseOptions): Promise<void> {
  if (options.mid) throw new UserInputError('advise replays two-model methods: leave out --mid')
  if (options.prompts && options.dataset) throw new UserInputError('give either --prompts or --dataset, not both')
  for (const file of [options.target, ...options.draft]) await assertGgufFile(path.resolve(file))
  const seed = options.seed ?? randomInt(2 ** 32)
  const names = draftNames(options.draft)
  // Every method the grid may hold validates the request and decides the load. The vocabulary check is per draft
  // after the load: a draft of another vocabulary gets the cross-vocabulary methods (gridOf).
  const preliminary = buildRunRequest(requestOf(options, seed, ['ar', ...possibleMethods(options, names)], options.repeats))
  const prompts = loadPrompts(preliminary.config.prompts)
  const store = options.verify > 0 ? RunStore.open(options.db ?? defaultDatabasePath()) : null
  try {
    const trio = await loadTrio(preliminary.config.models, { ...preliminary.load, sharedVocabulary: false })
    let result: AdviceResult
    try {
      const foreign = new Map<string, string>()
      trio.drafts.forEach((draft, i) => {
        const mismatch = vocabularyMismatch(trio.models.target, draft)
        if (mismatch !== null) foreign.set(names[i], mismatch)
      })
      const grid = gridOf(options, names, foreign)
      if (options.seed === undefined) process.stderr.write(`seed ${seed}\n`)
      result = await advise(options, { seed, names, grid, prompts, trio, store })
    } finally {
      await trio.dispose()
    }
    if (options.save) fs.writeFileSync(options.save, `${JSON.stringify(result, null, 2)}\n`)
    process.stdout.write(options.json ? `${JSON.stringify(result)}\n` : `${adviceText(result)}\n`)
  } finally {
    store?.close()
  }
}

interface AdviseContext {
  seed: number
  names: string[]
  grid: ReturnType<typeof candidateGrid>
  prompts: PromptItem[]
  trio: LoadedTrio
  store: RunStore | null
}

async function advise(options: AdviseOptions, { seed, names, grid, prompts, trio, store }: AdviseContext): Promise<AdviceResult> {
  const drafts = Object.fromEntries(trio.drafts.map((draft, i) => [names[i], draft]))
  const draftFiles = Object.fromEntries(names.map((name, i) => [name, path.resolve(options.draft[i])]))
  const promptTokens = tokenizePrompts(trio.models, prompts, { maxTokens: options.maxTokens, contextSize: options.contextSize })
  const advice = await adviseWorkload({
    target: trio.models.target,
    drafts,
    prompts: promptTokens,
    warp: warpOfSettings({ maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, topP: options.topP }),
    seed,
    maxTokens: options.maxTokens,
    candidates: grid,
    verifyTop: 0,
    batch: options.batch,
    ...(options.tryThreads ? { threads: LLAMA_THREADS(options.tryThreads) } : {}),
    onProgress: (stage, detail) => process.stderr.write(`${stage}${detail ? ` ${detail.model} ${detail.prompt + 1}/${detail.prompts}` : ''}\n`)
  })
  const profile = workloadProfile(advice.trace, advice.costs, PROFILE_POSITIONS, advice.roundAcceptance)
  const base = { seed, advice, profile, targetFile: path.resolve(options.target), draftFiles }
  if (options.verify === 0 || !store) return adviceResult({ ...base, arms: [], report: null, verification: null })
  const chosen = chooseArms(advice.verdicts, {
    top: options.verify,
    deploy: options.deploy,
    serverAvailable: findLlamaServer().path !== null,
    severalDrafts: names.length > 1,
    threadsOf: threadsFor(trio, advice.plans)
  })
  const { arms, repeats, estimatedSeconds } = fitBudget(chosen, options)
  const built = buildRunRequest(requestOf(options, seed, armMethods(arms), repeats))
  const config = { ...withLoadedTrio(built.config, outcomeOf(trio)), advice: adviceRecord(advice, profile, draftFiles, arms) }
  process.stderr.write(`verify: ${arms.map((a) => a.label).join(', ')} × ${repeats} repeats (about ${estimatedSeconds.toFixed(0)} s)\n`)
  const progress = createProgressBar(prompts.length * arms.length * repeats)
  let report: RunReport
  try {
    report = await runVerification(store, config, trio.models, prompts, runnerArms(arms, drafts), { prepared: built.prepared, onProgress: progress.update })
  } finally {
    progress.stop()
  }
  const verification = { arms: arms.length, repeats, estimatedSeconds, budgetSeconds: options.budget ?? null }
  return adviceResult({ ...base, arms, report, verification })
}

const describeCandidate = (c: CandidateResult): string => {
  if (c.label !== null) return c.label
  const params = Object.entries(c.params).map(([k, value]) => `${k}=${value}`)
  const gamma = findMethod(c.method)?.gamma ? [`γ=${c.gamma}`] : []
  return [c.method, ...gamma, ...params].join(' ')
}

const intervalText = (i: Interval | null | undefined, digits: number, unit = '') =>
  i ? `${formatFixed(i.median, digits)}${unit} [${formatFixed(i.low, digits)}, ${formatFixed(i.high, digits)}]` : '–'

function recommendationText(r: Recommendation): string[] {
  const lines = [
    r.speculate ? `recommendation: ${r.method}${r.draft ? ` with ${r.draft}` : ''} — ${r.speedup ? describeInterval(r.speedup) : '–'} against ar` : 'recommendation: no speculation (ar)',
    `  why: ${r.reason}`,
    `  speclab:      ${r.speclabCommand}`,
    `  llama-server: ${r.llamaServerCommand ?? `none — ${r.llamaServerNote}`}`,
    ...(r.llamaServerCommand && r.llamaServerNote ? [`                (${r.llamaServerNote})`] : []),
    ...(r.lmStudio ? [`  LM Studio:    ${r.lmStudio}`] : []),
    `  threads: target ${r.threads.threads}/${r.threads.batchThreads}, draft ${r.threads.draftThreads}`,
    `  note: ${r.note}`
  ]
  return lines
}

export function adviceText(result: AdviceResult): string {
  const plans = result.plans !== undefined
  const rows = result.candidates.map((c, i) => [
    String(i + 1),
    describeCandidate(c),
    c.draft ?? '–',
    ...(plans ? [c.plan ?? '–'] : []),
    formatFixed(c.predicted?.tokensPerSecond, 1),
    c.predicted ? `${formatFixed(c.predicted.speedup, 2)}×` : '–',
    intervalText(c.measured?.tokensPerSecond, 1),
    intervalText(c.measured?.speedup, 2, '×'),
    c.error ?? ''
  ])
  const mode = result.mode === 'expected' ? 'expected values (sampling)' : 'replayed rounds (greedy)'
  const profile = result.profile
  const notes = [
    `seed ${result.seed} · ${result.prompts} prompts, ${result.tokens} tokens · ${mode}`,
    `target c_T(k) ms, k = 1…${profile.targetMs.length}: ${profile.targetMs.map((ms) => formatFixed(ms, 2)).join(' ')} (c_T(k)/c_T(1): ${profile.verifyCost.map((v) => formatFixed(v, 2)).join(' ')})`,
    ...Object.entries(profile.drafts).map(([name, d]) => `draft ${name}: ${formatFixed(d.msPerToken, 2)} ms/token (c_D/c_T(1) ${formatFixed(d.relativeCost, 2)}), acceptance per position ${d.acceptance.map((a) => formatFixed(a, 2)).join(' ')}${d.acceptanceFrom === 'rounds' ? ' (another vocabulary: from its replayed sd-tli rounds)' : ''}`),
    ...(result.verification ? [`measured: ${result.verification.arms} arms × ${result.verification.repeats} repeats, interleaved; medians with 95 % intervals, speedups paired with ar`] : [])
  ]
  const stored = result.runId === null ? ['nothing measured (--verify 0): no recommendation'] : [`stored as run ${result.runId} (speclab show ${result.runId})`]
  const table = formatTable(['#', 'candidate', 'draft', ...(plans ? ['threads'] : []), 'pred tok/s', 'pred speedup', 'measured tok/s [95 %]', 'measured speedup [95 %]', 'not replayable'], rows)
  return [table, ...notes, ...(result.recommendation ? recommendationText(result.recommendation) : []), ...stored].join('\n')
}
