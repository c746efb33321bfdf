/**
 * `speclab ablation`: the shape of HSDDW's ablation (../shared/papers/hsddw-hierarchical-sd-dynamic-window.txt
 * §4.3 Table 2: speedup of SD, +Pre-verify, +Self-verify, Pre+Self, HSDDW) and analysis (§4.4 Table 4: σ, η and
 * speedup of 70b-7b, 70b-68m, Pre+Self-verify, HSDDW) on the shared trio, plus per-level acceptance (α: M_q2 vs
 * M_p, β: M_q1 vs M_p, from the steps' `levels`) and Leviathan's / Chen's closed forms next to what was measured.
 *
 * Paper ↔ here: 70b = target M_p (default the inflated stories-target5M, the compute of a 78M model, so cost ratios
 * are realistic), 7b = mid M_q2 (stories-mid1M), 68m = small draft M_q1 (stories260K).
 *
 * Two stored runs, one process, the same loaded models and prompts (a run has one config and one --draft, so a
 * method cannot use the mid model as its draft inside the trio run):
 *   run A (the trio): ar, sd (M_q1 → M_p: "70b-68m"), self-verify, pre-verify, pre-self-verify, hsddw, hier-chen
 *   run B (mid as the draft): ar, sd (M_q2 → M_p: "70b-7b", Table 2's SD row and Table 4's first row)
 * Each run measures its own `ar`, and every speedup is against the `ar` of its own run (prompt-major order, as
 * `speclab run`). Every method uses the same window K = --gamma (self-verify via selfverify.maxDraft = K, the
 * pre-verify methods' M_q2 window pre.window = K). self-verify is skipped with a note when it is not registered.
 * The analysis (Tables 2 and 4, per level, theory) is experiments/reports/hsddw-analysis.ts, which the
 * `hsddw-ablation` suite report shares.
 */
import path from 'node:path'
import { Command } from 'commander'
import type { RunReport } from '../api/runs'
import type { DecoderModels } from '../engine/decoders/types'
import { loadTrio } from '../experiments/models'
import { loadPrompts } from '../experiments/prompts'
import { executeRun } from '../experiments/runner'
import { buildRunRequest, outcomeOf, withLoadedTrio, type BuiltRun } from '../experiments/run-request'
import { analyseAblation, collectAblationRows, type AblationResult } from '../experiments/reports/hsddw-analysis'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { sharedModelsDirectory } from '../experiments/shared-paths'
import { formatNumber, formatTable } from './format'
import { createProgressBar } from './run-command'
import { settingOption } from './setting-options'
import type { RunSettingValues } from '../engine/settings/run-settings'

/** The parsed options: the run settings by their catalog types, and the command's own. */
interface AblationOptions extends Pick<RunSettingValues, 'gamma' | 'maxTokens' | 'limit' | 'temperature' | 'topK' | 'seed'> {
  target?: string
  mid?: string
  draft?: string
  dataset: string
  chen: boolean
  db?: string
  json?: boolean
}

export function ablationCommand(): Command {
  return new Command('ablation')
    .description("HSDDW's ablation on the shared trio: Table 2 (speedup) and Table 4 (σ, η) shapes, per-level α/β, theory")
    .option('--target <file>', 'target M_p (default: $SPECLAB_MODELS/family/stories-target5M-inflated-78M-f16.gguf)')
    .option('--mid <file>', 'mid draft M_q2 (default: $SPECLAB_MODELS/family/stories-mid1M-f32.gguf)')
    .option('--draft <file>', 'small draft M_q1 (default: $SPECLAB_MODELS/stories260K-f32.gguf)')
    .addOption(settingOption('gamma', { default: 10, note: 'the window K of every method (HSDDW App. A.1 uses 10)' }))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('limit', { default: 4 }))
    .option('--dataset <id>', 'built-in prompt set', 'stories')
    .addOption(settingOption('temperature', { default: 0 }))
    .addOption(settingOption('topK'))
    .addOption(settingOption('seed', { default: 1 }))
    .option('--no-chen', "leave out hier-chen (Chen's Algorithm 2, chen.m/chen.n defaults)")
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print JSON on stdout')
    .action(ablationAction)
}

async function ablationAction(options: AblationOptions): Promise<void> {
  const models = sharedModelsDirectory()
  const paths = {
    target: path.resolve(options.target ?? path.join(models, 'family/stories-target5M-inflated-78M-f16.gguf')),
    mid: path.resolve(options.mid ?? path.join(models, 'family/stories-mid1M-f32.gguf')),
    draft: path.resolve(options.draft ?? path.join(models, 'stories260K-f32.gguf'))
  }
  const K = options.gamma
  const notes: string[] = []
  const trioMethods = ['ar', 'sd', 'self-verify', 'pre-verify', 'pre-self-verify', 'hsddw']
  if (options.chen) trioMethods.push('hier-chen')
  const base = {
    suite: 'ablation',
    prompts: { dataset: options.dataset, limit: options.limit },
    decode: { maxTokens: options.maxTokens, temperature: options.temperature, topK: options.topK, seed: options.seed, gamma: K },
    // Threads per model and phase measured at load (cached); the runs record them.
    load: { contextSize: 512 }
  }
  // Both runs' methods and parameters are validated before anything loads.
  const runA = buildRunRequest({ ...base, methods: trioMethods, models: paths, params: { 'selfverify.maxDraft': K, 'pre.window': K } })
  // Run B has neither self-verify nor pre-verify: their parameters are not its business (a run refuses them).
  const runB = buildRunRequest({ ...base, methods: ['ar', 'sd'], models: { target: paths.target, draft: paths.mid } })
  const configA = runA.config
  const prompts = loadPrompts(configA.prompts)
  const store = RunStore.open(options.db ?? defaultDatabasePath())
  const trio = await loadTrio(configA.models, { ...runA.load, sharedVocabulary: runA.load.sharedVocabulary || runB.load.sharedVocabulary })
  try {
    // Each run records the files it used: their fingerprints and their part of the thread plan.
    const runOne = async ({ config, prepared }: BuiltRun, decoderModels: DecoderModels, files: string[]) => {
      const progress = createProgressBar(prompts.length * config.methods.length)
      try {
        return await executeRun(store, withLoadedTrio(config, outcomeOf(trio, new Set(files))), decoderModels, prompts, {
          prepared,
          onProgress: progress.update
        })
      } finally {
        progress.stop()
      }
    }
    const { target, mid, draft } = trio.models
    const reportA = await runOne(runA, { target, mid, draft }, [paths.target, paths.mid, paths.draft])
    const reportB = await runOne(runB, { target, draft: mid }, [paths.target, paths.mid])
    const stepsOf = (runId: number) => {
      const outcomes = store.getOutcomes(runId)
      return (method: string) => (outcomes.get(method) ?? []).flatMap((o) => o.steps)
    }
    const rows = collectAblationRows({ report: reportA, steps: stepsOf(reportA.runId) }, { report: reportB, steps: stepsOf(reportB.runId) })
    const result = analyseAblation(rows, reportA, K)
    if (options.json)
      process.stdout.write(`${JSON.stringify({ runs: { trio: reportA.runId, midAsDraft: reportB.runId }, paths, gamma: K, ...result, notes })}\n`)
    else printAblation(reportA, reportB, paths, K, result, notes)
  } finally {
    await trio.dispose()
    store.close()
  }
}

const arSpeed = (report: RunReport): string =>
  formatNumber(report.methods.find((m) => m.method === 'ar')?.tokensPerSecond ?? null, 1)

function printAblation(
  reportA: RunReport,
  reportB: RunReport,
  paths: { target: string; mid: string; draft: string },
  K: number,
  r: AblationResult,
  notes: string[]
): void {
  const x = (v: number | null) => (v === null ? '–' : `${formatNumber(v)}×`)
  const pct = (v: number | null) => (v === null ? '–' : formatNumber(v * 100, 2))
  const check = (b: boolean) => (b ? '✓' : '')
  const num = (v: number | null | undefined, d = 3) => formatNumber(v ?? null, d)
  const { sampling, maxTokens } = reportA.config
  const out = [
    `ablation runs ${reportA.runId} (trio) and ${reportB.runId} (mid as draft)`,
    `M_p ${paths.target}`,
    `M_q2 ${paths.mid}`,
    `M_q1 ${paths.draft}`,
    `K = ${K}, temperature ${sampling.temperature}, top-k ${sampling.topK}, ${maxTokens} tokens × ${reportA.methods[0]?.prompts ?? 0} prompts; speedup vs ar of the same run`,
    `ar: ${arSpeed(reportA)} tok/s (trio run), ${arSpeed(reportB)} tok/s (mid-as-draft run)`,
    '',
    'Table 2 (shape): speedup',
    formatTable(
      ['', 'Pre-verify', 'Self-verify', 'HSDDW', 'method', 'speedup'],
      r.table2.map((t) => [t.row, check(t.preVerify), check(t.selfVerify), check(t.hsddw), t.method ?? '(skipped)', x(t.speedup)])
    ),
    '',
    'Table 4 (shape): redundancy σ and target utilisation η (percent)',
    formatTable(
      ['model', 'σ (%)', 'η (%)', 'speedup'],
      r.table4.map((t) => [t.model, pct(t.sigma), pct(t.eta), x(t.speedup)])
    ),
    '',
    'Per level: α = E[Σ min(p, q2)], β = E[Σ min(p, q1)] at the positions M_p examined (greedy: argmax agreement)',
    formatTable(
      ['method', 'tok/s', 'acc →p', 'α', 'β', 'acc q1→q2', 'tok/target call', 'q1 calls/tok', 'q2 calls/tok'],
      r.levels.map((l) => [
        l.method,
        formatNumber(l.tokensPerSecond, 1),
        num(l.acceptance),
        num(l.alpha),
        num(l.beta),
        num(l.acceptanceQ1ByQ2),
        num(l.tokensPerTargetCall),
        num(l.q1CallsPerToken),
        num(l.q2CallsPerToken)
      ])
    )
  ]
  if (r.theory.length > 0)
    out.push(
      '',
      'Theory (i.i.d. acceptances; Thm 3.4 also omits the growth of M_p\'s cost with the batch and all overhead) vs measured',
      formatTable(
        ['method', 'quantity', 'measured', 'theory', 'inputs'],
        r.theory.map((t) => [t.method, t.quantity, num(t.measured), num(t.predicted), t.inputs])
      )
    )
  for (const note of notes) out.push('', `note: ${note}`)
  process.stdout.write(`${out.join('\n')}\n`)
}
