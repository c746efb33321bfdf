/**
 * `speclab bench` (`npm run bench`): one run of ar, sd and nlc-draft on the same prompts, printing tokens/s, the
 * ratios sd/ar and sd/nlc-draft, engine overhead per step, and sd's speedup against the physical bound from raw
 * timings measured in the same process. Defaults to the shared inflated target (the compute of a 78M model, so
 * the draft cost ratio is realistic) with stories260K as the draft.
 */
import path from 'node:path'
import { Command } from 'commander'
import type { MethodSummary, RunReport } from '../api/runs'
import { CATALOG } from '../engine/methods/catalog'
import { loadTrio } from '../experiments/models'
import { loadPrompts } from '../experiments/prompts'
import { measureRawTimings, speedupBound, type RawTimings } from '../experiments/raw-timings'
import { executeRun, tokenizePrompts } from '../experiments/runner'
import { buildRunRequest, outcomeOf, withLoadedTrio } from '../experiments/run-request'
import { sharedModelsDirectory } from '../experiments/shared-paths'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { DEFAULT_REPEATS } from '../engine/methods/limits'
import { formatInterval, formatNumber, formatTable, methodTable } from './format'
import { createProgressBar, reportNotes } from './run-command'
import { settingOption } from './setting-options'
import type { RunSettingValues } from '../engine/settings/run-settings'

/** The benchmarks' default pair: the inflated target (a 78M model's compute, realistic cost ratios) and the 260K draft. */
const BENCH_PAIR = { target: 'family/stories-target5M-inflated-78M-f16.gguf', draft: 'stories260K-f32.gguf' } as const

/** --target and --draft with the benchmarks' defaults (bench, peer-bench). */
export function withBenchPair(command: Command): Command {
  return command
    .option('--target <file>', `target GGUF (default: $SPECLAB_MODELS/${BENCH_PAIR.target})`)
    .option('--draft <file>', `draft GGUF (default: $SPECLAB_MODELS/${BENCH_PAIR.draft})`)
}

/** The pair a benchmark runs: the files given, else the defaults in the shared models folder. */
export function benchPair(options: { target?: string; draft?: string }): { target: string; draft: string } {
  const models = sharedModelsDirectory()
  return { target: options.target ?? path.join(models, BENCH_PAIR.target), draft: options.draft ?? path.join(models, BENCH_PAIR.draft) }
}

/** Every draft-length policy of the catalog — `--policies` benchmarks them against sd (γ = --gamma) and ar. */
export const POLICY_METHODS = CATALOG.filter((m) => m.family === 'policy').map((m) => m.id)

/** The parsed options: the run settings by their catalog types, and the command's own. */
interface BenchOptions extends Pick<RunSettingValues, 'gamma' | 'maxTokens' | 'limit' | 'temperature' | 'topK' | 'seed' | 'repeats' | 'calibration'> {
  methods: string
  policies?: boolean
  target?: string
  draft?: string
  db?: string
  json?: boolean
}

export function benchCommand(): Command {
  return withBenchPair(
    new Command('bench')
      .description('measure ar, sd and nlc-draft (or every policy) in one run; hold sd against the physical speedup bound')
      .option('--methods <ids>', 'methods to measure (ar and sd are always included)', 'ar,sd,nlc-draft')
      .option('--policies', `measure every draft-length policy (${POLICY_METHODS.join(', ')}) against sd and ar`)
  )
    .addOption(settingOption('gamma'))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('limit', { default: 4, note: 'of the built-in story prompts' }))
    .addOption(settingOption('temperature', { default: 0 }))
    .addOption(settingOption('topK'))
    .addOption(settingOption('seed', { default: 1 }))
    .addOption(settingOption('repeats', { default: DEFAULT_REPEATS }))
    .addOption(settingOption('calibration'))
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print JSON on stdout')
    .action(benchAction)
}

function benchMethods(options: BenchOptions): string[] {
  const requested = options.policies ? [...POLICY_METHODS] : options.methods.split(',').map((m) => m.trim()).filter(Boolean)
  return [...new Set(['ar', 'sd', ...requested])]
}

async function benchAction(options: BenchOptions): Promise<void> {
  // Methods validated once, before anything loads; threads measured per model and phase (cached), so the decoders
  // and the raw timings of the bound use the same.
  const { config, prepared, load } = buildRunRequest({
    suite: 'bench',
    methods: benchMethods(options),
    models: benchPair(options),
    prompts: { dataset: 'stories', limit: options.limit },
    decode: { maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, seed: options.seed, gamma: options.gamma },
    load: { contextSize: 512, calibration: options.calibration },
    repeats: options.repeats
  })
  const prompts = loadPrompts(config.prompts)
  const store = RunStore.open(options.db ?? defaultDatabasePath())
  const trio = await loadTrio(config.models, load)
  try {
    const { target, draft } = trio.models
    const progress = createProgressBar(prompts.length * config.methods.length * config.repeats)
    let report: RunReport
    try {
      report = await executeRun(store, withLoadedTrio(config, outcomeOf(trio)), trio.models, prompts, {
        prepared,
        onProgress: progress.update
      })
    } finally {
      progress.stop()
    }
    // Raw costs along the first prompt's real `ar` continuation, so they see the contexts the decoders saw.
    process.stderr.write('measuring raw evaluation times…\n')
    const promptTokens = tokenizePrompts(trio.models, prompts.slice(0, 1), config)[0]
    const arOutput = store.getPromptResults(report.runId).find((r) => r.method === 'ar' && r.promptIndex === 0)
    const sequence = [...promptTokens, ...(arOutput?.outputTokens ?? [])]
    const raw = await measureRawTimings(target, draft!, sequence, promptTokens.length, config.gamma, config.sampling.topK)
    const analysis = analyse(report, raw)
    if (options.json) process.stdout.write(`${JSON.stringify({ report, raw, analysis })}\n`)
    else printBench(report, raw, analysis)
  } finally {
    await trio.dispose()
    store.close()
  }
}

interface BenchAnalysis {
  sdOverAr: number | null
  sdOverNlcDraft: number | null
  tokensPerRound: number | null
  meanGamma: number | null
  bound: number | null
  efficiency: number | null
  overheadPerStepMs: number | null
  overheadShareOfStep: number | null
}

function analyse(report: RunReport, raw: RawTimings): BenchAnalysis {
  const byId = (id: string): MethodSummary | undefined => report.methods.find((m) => m.method === id)
  const ar = byId('ar')
  const sd = byId('sd')
  const nlc = byId('nlc-draft')
  const ratio = (a?: MethodSummary, b?: MethodSummary) => (a && b && b.tokensPerSecond > 0 ? a.tokensPerSecond / b.tokensPerSecond : null)
  if (!sd || sd.targetCalls === 0) return { sdOverAr: ratio(sd, ar), sdOverNlcDraft: ratio(sd, nlc), tokensPerRound: null, meanGamma: null, bound: null, efficiency: null, overheadPerStepMs: null, overheadShareOfStep: null }
  const tokensPerRound = sd.outputTokens / sd.targetCalls
  const meanGamma = sd.draftTokens / sd.targetCalls
  const bound = speedupBound(tokensPerRound, meanGamma, raw)
  const sdOverAr = ratio(sd, ar)
  const stepMs = sd.draftMs + sd.verifyMs + sd.overheadMs
  return {
    sdOverAr,
    sdOverNlcDraft: ratio(sd, nlc),
    tokensPerRound,
    meanGamma,
    bound,
    efficiency: sdOverAr !== null ? sdOverAr / bound : null,
    overheadPerStepMs: sd.overheadPerStepMs,
    overheadShareOfStep: stepMs > 0 ? sd.overheadMs / stepMs : null
  }
}

/** Speedups against both baselines measured in this run: ar and constant-γ sd. */
function policyTable(methods: readonly MethodSummary[]): string {
  const sd = methods.find((m) => m.method === 'sd')
  return formatTable(
    ['method', 'tok/s [95% CI]', 'vs ar [95% CI]', 'vs sd (aggregate)', 'accept', 'mean acc', 'σ', 'η'],
    methods.map((m) => [
      m.method,
      formatInterval(m.tokensPerSecondInterval, m.tokensPerSecond, 1),
      m.method === 'ar' ? formatInterval(null, m.speedup, 3, '×') : formatInterval(m.speedupInterval, m.speedup, 3, '×'),
      sd && sd.tokensPerSecond > 0 ? `${formatNumber(m.tokensPerSecond / sd.tokensPerSecond, 3)}×` : '–',
      formatNumber(m.acceptanceRate, 3),
      formatNumber(m.meanAcceptedLength),
      formatNumber(m.sigma, 3),
      formatNumber(m.eta, 3)
    ])
  )
}

function printBench(report: RunReport, raw: RawTimings, a: BenchAnalysis): void {
  const ms = (v: number) => `${formatNumber(v, 2)} ms`
  const out = [
    `bench run ${report.runId}: ${report.config.models.target} ← ${report.config.models.draft}`,
    `γ ${report.config.gamma}, temperature ${report.config.sampling.temperature}, top-k ${report.config.sampling.topK}, ${report.config.maxTokens} tokens × ${report.methods[0]?.prompts ?? 0} prompts, seed ${report.config.seed}`,
    '',
    methodTable(report.methods),
    ...reportNotes(report),
    '',
    policyTable(report.methods),
    '',
    formatTable(
      ['raw timing (mean)', 'value'],
      [
        ['t1 (target, 1 token)', ms(raw.t1Ms)],
        ['t_draft (draft, 1 token)', ms(raw.tDraftMs)],
        [`t_verify(${raw.gamma + 1}) batched`, ms(raw.tVerifyMs)],
        [`t_verify(${raw.gamma + 1}) + top-${report.config.sampling.topK} logits transfer`, ms(raw.tVerifyTopKMs)],
        ['draft cost ratio c = t_draft / t1', formatNumber(raw.tDraftMs / raw.t1Ms, 3)],
        [`batched verify / t1`, formatNumber(raw.tVerifyMs / raw.t1Ms, 2)]
      ]
    ),
    '',
    formatTable(
      ['sd analysis', 'value'],
      [
        ['speedup sd / ar (aggregate)', `${formatNumber(a.sdOverAr, 3)}×`],
        ['speedup sd / ar (median, 95% CI)', formatInterval(report.methods.find((m) => m.method === 'sd')?.speedupInterval, null, 3, '×')],
        ['speedup sd / nlc-draft', `${formatNumber(a.sdOverNlcDraft, 3)}×`],
        ['tokens per round', formatNumber(a.tokensPerRound, 3)],
        ['mean γ per round', formatNumber(a.meanGamma, 3)],
        ['physical bound', `${formatNumber(a.bound, 3)}×`],
        ['engine efficiency = speedup / bound', formatNumber(a.efficiency, 3)],
        ['engine overhead per step', a.overheadPerStepMs === null ? '–' : ms(a.overheadPerStepMs)],
        ['overhead share of a step', a.overheadShareOfStep === null ? '–' : `${formatNumber(a.overheadShareOfStep * 100, 1)} %`]
      ]
    )
  ]
  process.stdout.write(`${out.join('\n')}\n`)
}
