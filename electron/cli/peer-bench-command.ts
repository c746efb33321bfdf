/**
 * `speclab peer-bench`: SpecLab's ar, sd, the best draft-length policy measured here, PEARL and sd's
 * parallel option against llama.cpp's own server (AR and draft-model speculative decoding) on the same prompts and
 * models, each at the thread settings it runs best with, interleaved, with 95 % intervals on every ratio
 * (experiments/peer-bench.ts). Prints the table the README quotes; `--json` for the numbers.
 */
import fs from 'node:fs'
import os from 'node:os'
import { Command } from 'commander'
import type { Interval } from '../engine/stats/bootstrap'
import { UserInputError } from '../engine/errors'
import { stopLocalServers } from '../engine/peers/llama-server-process'
import { nativeBackend } from '../engine/model/llama-cpp-model'
import { needsSharedVocabulary } from '../engine/methods/prepare'
import { loadTrio, type LoadedTrio } from '../experiments/models'
import { describeMachine, machineAfter, machineBefore } from '../experiments/machine-state'
import {
  applyThreads,
  best,
  pairedRatio,
  parseArm,
  prepareArms,
  runPeerBench,
  sameOutputs,
  threadsText,
  withCalibratedThreads,
  type ArmResult,
  type ArmThreads,
  type PeerArm
} from '../experiments/peer-bench'
import { loadPrompts } from '../experiments/prompts'
import { measureRawTimings, speedupBound, type RawTimings } from '../experiments/raw-timings'
import { tokenizePrompts } from '../experiments/runner'
import { warpOfSettings } from '../experiments/run-request'
import { draftingThreads, targetThreads } from '../engine/model/thread-plan'
import { formatFixed, formatInterval, formatNumber, formatTable } from './format'
import { createProgressBar } from './progress'
import { settingOption } from './setting-options'
import type { RunSettingValues } from '../engine/settings/run-settings'
import { benchPair, withBenchPair } from './bench-command'

/**
 * The policy `bench --policies` measured best here (README, Performance: sd-pmin 1.47× ar, svip 1.45×); any other
 * arm can be named with --arms.
 */
const BEST_POLICY = 'sd-pmin'

/**
 * ar and sd at one thread, one thread per token with every core for batches, and every core; the policy at the
 * setting sd runs best with here; PEARL and sd.parallel at one core each (draft ‖ target); llama-server's AR and
 * draft SD at one thread and at every core (draft on one, as llama.cpp's docs advise for a tiny draft).
 */
export function defaultArms(cores = Math.max(1, os.availableParallelism?.() ?? os.cpus().length)): string[] {
  const all = String(cores)
  const settings = cores > 1 ? ['1', `1/${all}`, all] : ['1']
  const speclab = [...settings.map((t) => `ar@${t}`), ...settings.map((t) => `sd@${t}`), `${BEST_POLICY}@${settings[1] ?? '1'}`, 'pearl@1/1/1', 'sd+sd.parallel=true@1/1/1']
  const peer = cores > 1 ? ['llama-server:ar@1', `llama-server:ar@${all}`, 'llama-server:draft@1/1/1', `llama-server:draft@${all}/${all}/1`] : ['llama-server:ar@1', 'llama-server:draft@1/1/1']
  return [...speclab, ...peer]
}

/** The parsed options: the run settings by their catalog types, and the command's own. */
interface PeerBenchOptions extends Pick<RunSettingValues, 'gamma' | 'maxTokens' | 'limit' | 'temperature' | 'topK' | 'seed' | 'repeats' | 'contextSize'> {
  arms?: string
  target?: string
  draft?: string
  json?: boolean
  save?: string
}

export function peerBenchCommand(): Command {
  return withBenchPair(
    new Command('peer-bench')
      .description("SpecLab's methods against llama.cpp's own llama-server on the same prompts and models, interleaved, with 95 % intervals")
      .option(
        '--arms <list>',
        'comma-separated arms METHOD[+key=value…]@T[/B[/D]]: T target threads for one token, B for a batch (default T), D the draft\'s (default 1); ' +
          `for llama-server:* these are -t, -tb, -td; @auto = the threads SpecLab measured for these models (its default). Default: ${defaultArms().join(',')}`
      )
  )
    .addOption(settingOption('gamma', { note: 'llama-server: --spec-draft-n-max' }))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('limit', { default: 8, note: 'of the built-in story prompts' }))
    .addOption(settingOption('temperature', { default: 0, note: 'greedy outputs are checked against ar' }))
    .addOption(settingOption('topK'))
    .addOption(settingOption('seed', { default: 1 }))
    .addOption(settingOption('repeats', { default: 5, note: 'of every (prompt, arm); ≥ 5 for the intervals docs/performance.md quotes' }))
    .addOption(settingOption('contextSize', { default: 512, note: 'of every model and server' }))
    .option('--json', 'print JSON on stdout')
    .option('--save <file>', 'also write the JSON report to this file')
    .action(peerBenchAction)
}

/** The threads the trio's calibration chose (its thread plan), as an arm's T/B/D. */
function calibratedArmThreads(trio: LoadedTrio): ArmThreads {
  const target = targetThreads(trio.threadPlan)
  return { threads: target.token.threads, batchThreads: target.batch.threads, draftThreads: draftingThreads(trio.threadPlan)?.token.threads ?? 1 }
}

/** What the report compares: each a ratio of two arms' tok/s, paired per (prompt, repeat). */
interface Comparison {
  name: string
  numerator: string
  denominator: string
  ratio: Interval | null
  /** The target this ratio is held against (e.g. "≥ 0.9×"), if it has one. */
  target?: string
}

interface Efficiency {
  arm: string
  ar: string
  speedup: Interval | null
  bound: number
  efficiency: number | null
  raw: RawTimings
}

async function peerBenchAction(options: PeerBenchOptions): Promise<void> {
  const specs = (options.arms ?? defaultArms().join(',')).split(',').map((s) => s.trim()).filter(Boolean).map(parseArm)
  let arms = prepareArms(specs, options.gamma)
  if (!arms.some((a) => a.spec.method === 'ar' && a.side === 'speclab')) throw new UserInputError('peer-bench needs at least one SpecLab ar arm (the reference of the greedy check)')
  const files = benchPair(options)
  const needsDraft = arms.some((a) => a.method.definition.needs.draft)
  const calibrated = specs.some((spec) => spec.calibrated)
  const trio = await loadTrio(needsDraft ? files : { target: files.target }, {
    // Every arm sets its own threads; an `@auto` arm takes the ones measured at this load (cached per model).
    threads: calibrated ? undefined : 1,
    contextSize: options.contextSize,
    sequences: Math.max(...arms.map((a) => a.method.sessions)),
    sharedVocabulary: arms.some((a) => needsSharedVocabulary(a.method.definition))
  })
  try {
    if (calibrated) arms = prepareArms(withCalibratedThreads(specs, calibratedArmThreads(trio)), options.gamma)
    const prompts = loadPrompts({ dataset: 'stories', limit: options.limit })
    const promptTokens = tokenizePrompts(trio.models, prompts, { maxTokens: options.maxTokens, contextSize: options.contextSize })
    const warp = warpOfSettings(options)
    const machine = machineBefore()
    const progress = createProgressBar(arms.length * prompts.length * options.repeats)
    let results: ArmResult[]
    try {
      results = await runPeerBench(arms, {
        models: trio.models,
        promptTokens,
        maxTokens: options.maxTokens,
        warp,
        seed: options.seed,
        repeats: options.repeats,
        onCell: (p) =>
          progress.update({ promptIndex: p.prompt, promptCount: prompts.length, method: p.label, repeat: p.repeat, repeats: options.repeats, tokens: 0, cellsDone: p.done, cellsTotal: p.total })
      })
    } finally {
      progress.stop()
    }
    const after = machineAfter(machine)
    process.stderr.write('measuring raw evaluation times for the physical bound…\n')
    const efficiencies = await measureEfficiencies(arms, results, trio.models, promptTokens[0]!, options)
    const report = {
      config: { ...options, models: files, arms: arms.map((a) => a.label), prompts: prompts.length },
      machine: after,
      native: await nativeBackend(),
      arms: results.map(({ outputs: _outputs, ...rest }) => rest),
      greedy: options.temperature === 0 ? greedyCheck(results) : null,
      comparisons: comparisons(results),
      efficiencies
    }
    if (options.save) fs.writeFileSync(options.save, `${JSON.stringify(report, null, 1)}\n`)
    if (options.json) process.stdout.write(`${JSON.stringify(report)}\n`)
    else process.stdout.write(`${printable(report, describeMachine(after))}\n`)
  } finally {
    stopLocalServers()
    await trio.dispose()
  }
}

const speclab = (r: ArmResult) => r.side === 'speclab'
const peer = (r: ArmResult) => r.side === 'llama.cpp'
const isAr = (r: ArmResult) => r.method === 'ar' || r.method === 'llama-server:ar'

/** The ratios the issue sets targets for, from whichever arms this run measured. */
function comparisons(results: readonly ArmResult[]): Comparison[] {
  const out: Comparison[] = []
  const add = (name: string, a: ArmResult | null, b: ArmResult | null, target?: string) => {
    if (a && b && a !== b) out.push({ name, numerator: a.label, denominator: b.label, ratio: pairedRatio(a, b), target })
  }
  const bestSpeclab = best(results, speclab)
  const bestPeer = best(results, peer)
  add('best SpecLab / best llama-server', bestSpeclab, bestPeer, '≥ 1.2×')
  add('best SpecLab speculative / best SpecLab ar', best(results, (r) => speclab(r) && !isAr(r)), best(results, (r) => speclab(r) && isAr(r)))
  add('SpecLab sd (best threads) / SpecLab ar (best threads)', best(results, (r) => speclab(r) && r.method === 'sd' && !r.label.includes('parallel')), best(results, (r) => speclab(r) && isAr(r)), '≥ 1.3×')
  add('best llama-server speculative / best llama-server ar', best(results, (r) => peer(r) && !isAr(r)), best(results, (r) => peer(r) && isAr(r)))
  // ar against ar at the same single-token threads (SpecLab's batch threads only touch its prefill).
  for (const ours of results.filter((r) => speclab(r) && isAr(r) && r.threads.batchThreads === r.threads.threads)) {
    const theirs = results.find((r) => peer(r) && isAr(r) && r.threads.threads === ours.threads.threads)
    add(`SpecLab ar / llama-server ar, ${ours.threads.threads} thread${ours.threads.threads > 1 ? 's' : ''}`, ours, theirs ?? null, 'within 10 %')
  }
  return out
}

/** Every arm's repeat-0 outputs against SpecLab's ar (the first ar arm): greedy outputs of lossless methods match. */
function greedyCheck(results: readonly ArmResult[]): { arm: string; same: number; prompts: number; differing: number[] }[] {
  const reference = results.find((r) => speclab(r) && r.method === 'ar')!
  return results.filter((r) => r !== reference).map((r) => {
    const { same, prompts, first } = sameOutputs(r, reference)
    return { arm: r.label, same, prompts, differing: first }
  })
}

/**
 * For every plain `sd` arm: its speedup over the SpecLab ar arm with the same target threads, against the physical
 * bound tokens-per-round × t1 / (γ·t_draft + t_verify(γ+1)) from raw timings taken with that arm's threads.
 */
async function measureEfficiencies(
  arms: readonly PeerArm[],
  results: readonly ArmResult[],
  models: Parameters<typeof applyThreads>[0],
  promptTokens: readonly number[],
  options: PeerBenchOptions
): Promise<Efficiency[]> {
  const out: Efficiency[] = []
  const reference = results.find((r) => speclab(r) && r.method === 'ar')
  if (!models.draft || !reference) return out
  for (const [i, arm] of arms.entries()) {
    const result = results[i]!
    if (arm.spec.method !== 'sd' || arm.spec.params['sd.parallel'] === true || result.tokensPerCall === null) continue
    const ar = results.find((r) => speclab(r) && r.method === 'ar' && r.threads.threads === arm.spec.threads.threads && r.threads.batchThreads === arm.spec.threads.batchThreads)
    if (!ar) continue
    applyThreads(models, arm.spec.threads)
    const sequence = [...promptTokens, ...(reference.outputs[0] ?? [])]
    const raw = await measureRawTimings(models.target as never, models.draft as never, sequence, promptTokens.length, options.gamma, options.topK)
    const cells = result.cells
    const calls = cells.reduce((n, c) => n + c.targetCalls, 0)
    const meanGamma = cells.reduce((n, c) => n + c.proposed, 0) / calls
    const bound = speedupBound(result.tokensPerCall, meanGamma, raw)
    const speedup = pairedRatio(result, ar)
    out.push({ arm: result.label, ar: ar.label, speedup, bound, efficiency: speedup ? speedup.median / bound : null, raw })
  }
  return out
}

function printable(
  report: { config: { maxTokens: number; prompts: number; repeats: number; gamma: number; temperature: number; models: { target: string; draft: string } }; native: { build: string; openmp: boolean | null }; arms: Omit<ArmResult, 'outputs'>[]; greedy: ReturnType<typeof greedyCheck> | null; comparisons: Comparison[]; efficiencies: Efficiency[] },
  machine: string
): string {
  const { config } = report
  const greedy = new Map((report.greedy ?? []).map((g) => [g.arm, g]))
  const lines = [
    `peer-bench: ${config.models.target} ← ${config.models.draft}`,
    `γ ${config.gamma}, temperature ${config.temperature}, ${config.maxTokens} tokens × ${config.prompts} prompts × ${config.repeats} interleaved repeats; ${machine}`,
    `node-llama-cpp binary: ${report.native.build}${report.native.openmp === null ? '' : report.native.openmp ? ' (OpenMP threads)' : ' (no OpenMP: ggml threads per graph; `npm run build:native` builds one with OpenMP)'}`,
    '',
    formatTable(
      ['arm', 'engine', 'threads T/B/D', 'tok/s [95% CI]', 'acceptance', 'tokens/call', 'greedy = ar'],
      report.arms.map((a) => {
        const g = greedy.get(a.label)
        return [
          a.label,
          a.side,
          threadsText(a.threads),
          formatInterval(a.tokensPerSecond, null, 1),
          formatNumber(a.acceptance, 3),
          formatNumber(a.tokensPerCall, 2),
          g ? `${g.same}/${g.prompts}` : 'reference'
        ]
      })
    ),
    '',
    formatTable(
      ['ratio (median of paired cells)', 'arms', 'value [95% CI]', 'target'],
      report.comparisons.map((c) => [c.name, `${c.numerator} / ${c.denominator}`, formatInterval(c.ratio, null, 3, '×'), c.target ?? ''])
    )
  ]
  if (report.efficiencies.length > 0)
    lines.push(
      '',
      formatTable(
        ['engine efficiency', 'speedup [95% CI]', 'bound', 'efficiency', 't1', 't_draft', `t_verify(γ+1)`],
        report.efficiencies.map((e) => [
          `${e.arm} vs ${e.ar}`,
          formatInterval(e.speedup, null, 3, '×'),
          `${formatFixed(e.bound, 3)}×`,
          formatFixed(e.efficiency, 3),
          `${formatFixed(e.raw.t1Ms, 2)} ms`,
          `${formatFixed(e.raw.tDraftMs, 2)} ms`,
          `${formatFixed(e.raw.tVerifyMs, 2)} ms`
        ])
      )
    )
  const differing = (report.greedy ?? []).filter((g) => g.same < g.prompts)
  if (differing.length > 0)
    lines.push('', `greedy outputs that differ from ar (prompt indices): ${differing.map((g) => `${g.arm}: ${g.differing.join(' ')}`).join('; ')}`)
  return lines.join('\n')
}
