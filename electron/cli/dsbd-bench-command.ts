/**
 * `speclab dsbd-bench`: the shape of DSBD's Figures 4–6 and Table 1
 * (../shared/papers/dsbd-dynamic-width-speculative-beam.txt §4.2–4.3) on the shared models, in one process:
 *   - `beam` with W = 1…4 (W = 1 is multinomial sampling) — the beam-sampling curve;
 *   - `dsbd` with several (γ, W_S, t) settings (W_min = 1 as in §4.2) and one fixed width — the DSBD points;
 *   - Table 1 (one KV sequence): multinomial (`beam` W = 1), `sd` (speculative decoding), `dsbd-1beam`.
 * For each: output perplexity under the target (exp of minus the mean raw log-probability of the generated tokens,
 * token-weighted over the prompts; the paper's effectiveness axis for OPT/Spider), tokens/s, speedup vs `beam` of the
 * same width (W = round(W̄) for dynamic widths), W̄, σ, η, layers per iteration next to Theorem 3.2 with the measured
 * β̄ (theory/dsbd.ts), KV sequences kept between steps / peak, and the target positions evaluated per position asked
 * for (one sequence per tree path: node-llama-cpp has no tree masks). A timing note measures what that costs: one
 * batched decode of N sequences vs N decodes, and a KV copy between sequences.
 *
 * Paper ↔ here: Llama-2-13B / OPT-13B → the inflated stories-target5M (the compute of a 78M model, so cost ratios are
 * realistic; its quality is target5M's — use --target …/stories-target5M-f32.gguf for the same outputs faster),
 * Llama-68M → stories260K; SQuAD/Spider → the built-in story prompts; warping top-k 10, top-p 0.8 (§4.1). The runs
 * are not stored (several settings of one method do not fit one stored run); --json prints everything. The schedule
 * is the runner's (experiments/runner.ts runInterleaved): an untimed warm-up per configuration, then prompt-major
 * order (every configuration on a prompt before the next prompt) with one PRNG stream per prompt.
 */
import path from 'node:path'
import { Command } from 'commander'
import { RAW_WARP, openSessions } from '../engine/decoders/session-pool'
import type { DecodeEvent, StepRecord } from '../engine/decoders/types'
import { MAX_SEQUENCES, prepare, type PreparedMethod } from '../engine/methods/prepare'
import { UserInputError } from '../engine/errors'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'
import type { ModelSession } from '../engine/model/types'
import { beamWidthTotals, eta, foldSteps, sigma, tokensPerSecond, type BeamTotals } from '../engine/metrics/fold'
import type { WarpConfig } from '../engine/sampling/warp'
import { dsbdExpectedSteps } from '../engine/theory/dsbd'
import { loadTrio } from '../experiments/models'
import { loadPrompts } from '../experiments/prompts'
import { runInterleaved, tokenizePrompts } from '../experiments/runner'
import { warpOfSettings } from '../experiments/run-request'
import { sharedModelsDirectory } from '../experiments/shared-paths'
import { formatNumber, formatTable } from './format'
import { settingOption, settingParser } from './setting-options'

interface DsbdBenchOptions {
  target?: string
  draft?: string
  widths: string
  dsbd: string
  fixed: string
  oneBeam: string
  sdGamma: number
  maxTokens: number
  limit: number
  temperature: number
  topK: number
  topP: number
  seed: number
  contextSize: number
  json?: boolean
}

interface Configuration {
  label: string
  group: 'beam' | 'dsbd' | 'table1'
  method: string
  gamma: number
  /** Validated once, before loading (UserInputError naming the key). */
  prepared: PreparedMethod
  /** Beam width compared against: W for beam, the fixed width, else round(W̄). */
  width: number | null
  t: number | null
}

export function dsbdBenchCommand(): Command {
  return new Command('dsbd-bench')
    .description("DSBD vs beam sampling on the shared models: PPL and tokens/s (the shape of DSBD's Figures 4–6 and Table 1)")
    .option('--target <file>', 'target GGUF (default: $SPECLAB_MODELS/family/stories-target5M-inflated-78M-f16.gguf)')
    .option('--draft <file>', 'draft GGUF (default: $SPECLAB_MODELS/stories260K-f32.gguf)')
    .option('--widths <list>', 'beam widths W of the beam-sampling curve', '1,2,3,4')
    .option('--dsbd <list>', 'dynamic-width DSBD settings γ:W_S:t (W_min = 1)', '2:2:0.9,2:4:0.7,2:4:0.9,3:4:0.9,3:6:0.7,3:6:0.9')
    .option('--fixed <list>', 'fixed-width DSBD settings γ:W_S:W_L (lossless vs beam of width W_L)', '3:4:2')
    .option('--one-beam <list>', 'dsbd-1beam settings γ:W_S:t (Table 1)', '3:4:0.9')
    .option('--sd-gamma <g>', 'γ of speculative decoding in Table 1', settingParser('gamma'), 3)
    .addOption(settingOption('maxTokens', { default: 48 }))
    .addOption(settingOption('limit', { default: 3, note: 'of the built-in story prompts' }))
    .addOption(settingOption('temperature'))
    .addOption(settingOption('topK', { default: 10, note: 'paper §4.1: 10' }))
    .addOption(settingOption('topP', { default: 0.8, note: 'paper §4.1: 0.8' }))
    .addOption(settingOption('seed', { default: 1 }))
    .addOption(settingOption('contextSize', { default: 512 }))
    .option('--json', 'print JSON on stdout')
    .action(dsbdBenchAction)
}

function parseSettings(list: string, option: string): number[][] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const parts = s.split(':').map(Number)
      if (parts.length !== 3 || parts.some((x) => !Number.isFinite(x)))
        throw new UserInputError(`${option}: expected γ:W_S:x items, got ${JSON.stringify(s)}`)
      return parts
    })
}

type Setting = Omit<Configuration, 'prepared'> & { params: Record<string, number> }

function configurations(options: DsbdBenchOptions): Configuration[] {
  const configs: Setting[] = []
  for (const w of options.widths.split(',').map((x) => x.trim()).filter(Boolean)) {
    const width = Number(w)
    if (!Number.isInteger(width) || width < 1) throw new UserInputError(`--widths: ${w} is not a positive integer`)
    configs.push({ label: `beam W=${width}`, group: 'beam', method: 'beam', gamma: 1, params: { 'beam.width': width }, width, t: null })
  }
  for (const [gamma, ws, t] of parseSettings(options.dsbd, '--dsbd'))
    configs.push({ label: `dsbd γ=${gamma} W_S=${ws} t=${t}`, group: 'dsbd', method: 'dsbd', gamma, params: { 'dsbd.ws': ws, 'dsbd.t': t }, width: null, t })
  for (const [gamma, ws, width] of parseSettings(options.fixed, '--fixed'))
    configs.push({ label: `dsbd γ=${gamma} W_S=${ws} W_L=${width}`, group: 'dsbd', method: 'dsbd', gamma, params: { 'dsbd.ws': ws, 'dsbd.fixedWidth': width }, width, t: null })
  configs.push({ label: `sd γ=${options.sdGamma}`, group: 'table1', method: 'sd', gamma: options.sdGamma, params: {}, width: 1, t: null })
  for (const [gamma, ws, t] of parseSettings(options.oneBeam, '--one-beam'))
    configs.push({ label: `dsbd-1beam γ=${gamma} W_S=${ws} t=${t}`, group: 'table1', method: 'dsbd-1beam', gamma, params: { 'dsbd.ws': ws, 'dsbd.t': t }, width: null, t })
  return configs.map(({ params, ...c }) => ({ ...c, prepared: prepare(c.method, { gamma: c.gamma, params }) }))
}

interface Row {
  config: Configuration
  outputTokens: number
  wallMs: number
  tokensPerSecond: number
  perplexity: number
  steps: StepRecord[]
  beams: BeamTotals
  sigma: number | null
  eta: number | null
  targetCalls: number
  /** Theorem 3.2 with the measured β̄ and the setting's t, γ (dynamic DSBD only). */
  predictedLayersPerIteration: number | null
  speedupVsBeam: number | null
  comparedWidth: number | null
  pareto: boolean
  outputs: string[]
}

interface TimingNote {
  t1Ms: number
  batched: { sequences: number; ids: string; batchedMs: number; sequentialMs: number }[]
  pathMs: { tokens: number; ms: number }[]
  /** Two sequences in one decode, 4 + 1 tokens (llama.cpp splits unequal lengths into micro-batches). */
  unequalPathsMs: number
  copyMs: number
  copyDecodeOverheadMs: number
}

async function dsbdBenchAction(options: DsbdBenchOptions): Promise<void> {
  const configs = configurations(options)
  const models = sharedModelsDirectory()
  const targetPath = path.resolve(options.target ?? path.join(models, 'family/stories-target5M-inflated-78M-f16.gguf'))
  const draftPath = path.resolve(options.draft ?? path.join(models, 'stories260K-f32.gguf'))
  const warp: WarpConfig = warpOfSettings(options)
  const sequences = Math.min(MAX_SEQUENCES, Math.max(9, ...configs.map((c) => c.prepared.sessions)))
  const prompts = loadPrompts({ dataset: 'stories', limit: options.limit })
  const trio = await loadTrio({ target: targetPath, draft: draftPath }, { contextSize: options.contextSize, sequences })
  const { target, draft } = trio.models
  try {
    const promptTokens = tokenizePrompts(trio.models, prompts, { maxTokens: options.maxTokens, contextSize: options.contextSize })
    const arms = configs.map((config, index) => ({ label: config.label, method: config.prepared, config, index }))
    const collected = configs.map(() => ({ tokens: 0, wallMs: 0, logProb: 0, steps: [] as StepRecord[], outputs: [] as string[] }))
    const cells = prompts.length * configs.length
    let done = 0
    process.stderr.write(`warming up ${configs.length} configurations…\n`)
    // The runner's schedule: untimed warm-up, prompt-major order, one PRNG stream per prompt.
    await runInterleaved(arms, { models: { target, draft }, promptTokens, maxTokens: options.maxTokens, warp, seed: options.seed }, {
      cell: async ({ config, index: c }, { promptIndex: p }, decode) => {
        const prompt = promptTokens[p]
        const events: DecodeEvent[] = []
        const started = performance.now()
        await decode((e) => events.push(e), { tokens: [], provenance: '', stopReason: 'max-tokens' })
        const wallMs = performance.now() - started
        const tokens = events.flatMap((e) => (e.type === 'token' ? [e.token] : []))
        const steps = events.flatMap((e) => (e.type === 'step' ? [e.record] : []))
        const logProbs = (await target.logProbabilities([...prompt, ...tokens])).slice(prompt.length - 1)
        const into = collected[c]
        into.tokens += tokens.length
        into.wallMs += wallMs
        into.logProb += logProbs.reduce((a, b) => a + b, 0)
        into.steps.push(...steps)
        into.outputs.push(target.detokenize(tokens))
        done += 1
        process.stderr.write(`\r${done}/${cells} ${config.label.padEnd(32)} prompt ${p + 1}: ${formatNumber(tokensPerSecond(tokens.length, wallMs), 1)} tok/s   `)
      }
    })
    process.stderr.write('\nmeasuring decode costs…\n')
    const timing = await measureTiming(target, promptTokens[0])
    const rows = analyse(configs, collected)
    const result = { target: targetPath, draft: draftPath, warp, maxTokens: options.maxTokens, prompts: prompts.length, sequences, rows, timing }
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`)
    else printBench(result)
  } finally {
    await trio.dispose()
  }
}

function analyse(
  configs: readonly Configuration[],
  collected: readonly { tokens: number; wallMs: number; logProb: number; steps: StepRecord[]; outputs: string[] }[]
): Row[] {
  const rows: Row[] = configs.map((config, c) => {
    const data = collected[c]
    const totals = foldSteps(data.steps)
    const beams = beamWidthTotals(data.steps)
    const predicted =
      config.method !== 'beam' && config.t !== null && beams.meanBeta !== null
        ? dsbdExpectedSteps(config.t, beams.meanBeta, config.gamma)
        : null
    return {
      config,
      outputTokens: data.tokens,
      wallMs: data.wallMs,
      tokensPerSecond: tokensPerSecond(data.tokens, data.wallMs),
      perplexity: data.tokens > 0 ? Math.exp(-data.logProb / data.tokens) : NaN,
      steps: data.steps,
      beams,
      sigma: sigma(totals),
      eta: eta(totals),
      targetCalls: totals.targetCalls,
      predictedLayersPerIteration: predicted,
      speedupVsBeam: null,
      comparedWidth: null,
      pareto: false,
      outputs: data.outputs
    }
  })
  const beamRows = new Map(rows.filter((r) => r.config.method === 'beam').map((r) => [r.config.width!, r]))
  const widths = [...beamRows.keys()]
  for (const row of rows) {
    if (row.config.method === 'beam') continue
    const wanted = row.config.width ?? (row.beams.meanWidth !== null ? Math.round(row.beams.meanWidth) : null)
    if (wanted === null || widths.length === 0) continue
    const closest = widths.reduce((a, b) => (Math.abs(b - wanted) < Math.abs(a - wanted) ? b : a))
    const base = beamRows.get(closest)!
    row.comparedWidth = closest
    row.speedupVsBeam = base.tokensPerSecond > 0 ? row.tokensPerSecond / base.tokensPerSecond : null
  }
  // Pareto fronts (lower PPL, higher tok/s) within the beam curve and within the dsbd points.
  for (const group of ['beam', 'dsbd'] as const) {
    const members = rows.filter((r) => r.config.group === group)
    for (const r of members)
      r.pareto = !members.some(
        (o) => o !== r && o.perplexity <= r.perplexity && o.tokensPerSecond >= r.tokensPerSecond && (o.perplexity < r.perplexity || o.tokensPerSecond > r.tokensPerSecond)
      )
  }
  return rows
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

/**
 * What one sequence per path costs on this machine: batched vs sequential decodes (consecutive sequence ids, as the
 * pool opens them, and scattered ids, which llama.cpp cannot put into one micro-batch), path length, KV copy.
 */
async function measureTiming(target: LlamaCppModel, prompt: number[]): Promise<TimingNote> {
  const sessions: ModelSession[] = await openSessions(target, RAW_WARP, 8)
  try {
    await sessions[0].append(prompt, prompt.length - 1)
    for (const s of sessions.slice(1)) await s.copyFrom?.(sessions[0], prompt.length)
    const base = prompt.length
    const reset = () => Promise.all(sessions.map((s) => s.truncate(base)))
    await reset()
    const time = async (run: () => Promise<unknown>, repeats = 5) => {
      const samples: number[] = []
      for (let i = 0; i < repeats; i++) {
        await reset()
        const started = performance.now()
        await run()
        samples.push(performance.now() - started)
      }
      return median(samples)
    }
    const t1Ms = await time(() => sessions[0].append([300], 0))
    const batched: TimingNote['batched'] = []
    const together = (group: ModelSession[]) => () => Promise.all(group.map((s, i) => s.append([300 + i], 0)))
    const oneByOne = (group: ModelSession[]) => async () => {
      for (const [i, s] of group.entries()) await s.append([300 + i], 0)
    }
    for (const n of [2, 4, 8]) {
      const group = sessions.slice(0, n)
      batched.push({ sequences: n, ids: 'consecutive', batchedMs: await time(together(group)), sequentialMs: await time(oneByOne(group)) })
    }
    const scattered = sessions.filter((_, i) => i % 2 === 0)
    if (scattered.length === 4)
      batched.push({ sequences: 4, ids: 'every other', batchedMs: await time(together(scattered)), sequentialMs: await time(oneByOne(scattered)) })
    const pathMs = []
    for (const tokens of [2, 4]) pathMs.push({ tokens, ms: await time(() => sessions[0].append(Array.from({ length: tokens }, (_, i) => 300 + i), 0)) })
    const twoPaths = await time(() => Promise.all([sessions[0].append([300, 301, 302, 303], 0), sessions[1].append([304], 0)]))
    // A copy: its own call, plus the buffer copy llama.cpp performs at the next decode.
    const copies: number[] = []
    const after: number[] = []
    for (let i = 0; i < 5; i++) {
      await reset()
      const started = performance.now()
      await sessions[1].copyFrom?.(sessions[0], base)
      copies.push(performance.now() - started)
      const decodeStarted = performance.now()
      await sessions[0].append([300], 0)
      after.push(performance.now() - decodeStarted)
    }
    return { t1Ms, batched, pathMs, unequalPathsMs: twoPaths, copyMs: median(copies), copyDecodeOverheadMs: Math.max(0, median(after) - t1Ms) }
  } finally {
    for (const s of sessions) await s.dispose()
  }
}

function printBench(r: {
  target: string
  draft: string
  warp: WarpConfig
  maxTokens: number
  prompts: number
  sequences: number
  rows: Row[]
  timing: TimingNote
}): void {
  const n = (v: number | null | undefined, d = 2) => formatNumber(v ?? null, d)
  const x = (v: number | null) => (v === null ? '–' : `${formatNumber(v, 2)}×`)
  const table = (rows: Row[]) =>
    formatTable(
      ['configuration', 'PPL', 'tok/s', 'vs beam', 'W̄', 'layers/it', 'Thm 3.2', 'σ', 'η', 'KV seq kept/peak', 'eval/asked', 'front'],
      rows.map((row) => [
        row.config.label,
        n(row.perplexity, 3),
        n(row.tokensPerSecond, 1),
        row.comparedWidth === null ? '–' : `${x(row.speedupVsBeam)} (W=${row.comparedWidth})`,
        n(row.beams.meanWidth),
        row.config.method === 'beam' ? '1' : n(row.beams.layersPerStep),
        n(row.predictedLayersPerIteration),
        n(row.sigma, 3),
        n(row.eta, 3),
        `${n(row.beams.meanLiveSequences, 1)}/${row.beams.peakSequences}`,
        row.beams.requested > 0 ? n(row.beams.evaluated / row.beams.requested) : '–',
        row.pareto ? '*' : ''
      ])
    )
  const t = r.timing
  const out = [
    `dsbd-bench: ${r.target} ← ${r.draft}`,
    `${r.prompts} story prompts × ${r.maxTokens} tokens, temperature ${r.warp.temperature}, top-k ${r.warp.topK}, top-p ${r.warp.topP}; ${r.sequences} context sequences per model`,
    '',
    'Figures 4–6 (shape): beam sampling (W = 1 is multinomial) vs DSBD; PPL under the target, lower is better',
    table(r.rows.filter((row) => row.config.group !== 'table1')),
    '',
    'Table 1 (shape): one KV sequence kept between steps',
    table(r.rows.filter((row) => row.config.group === 'table1' || (row.config.method === 'beam' && row.config.width === 1))),
    '',
    'vs beam: tok/s ÷ beam of width W = the fixed W_L, else round(W̄). layers/it: beam layers per iteration (Thm 3.2:',
    '(1 − m^{γ+1})/(1 − m), m = min(t, β̄) with the measured β̄ = mean P(≥ W_min accepted); a lower bound since a layer',
    'passes w.p. P(≥ W_L) ≥ t when W_L > W_min). KV seq: target sequences kept between steps (mean) / peak in a step.',
    'eval/asked: target positions evaluated per position whose distribution was needed (prompt prefill, forks and ancestors',
    'shared by several tree paths are evaluated once per sequence). front: on the Pareto front of its group (beam / dsbd).',
    '',
    'Timing note (one sequence per tree path; node-llama-cpp has no tree attention masks):',
    formatTable(
      ['cost on the target', 'ms'],
      [
        ['1 token, 1 sequence', n(t.t1Ms)],
        ...t.batched.flatMap((b) => [
          [`${b.sequences} sequences (${b.ids} ids) × 1 token, one batched decode`, n(b.batchedMs)],
          [`${b.sequences} sequences (${b.ids} ids) × 1 token, ${b.sequences} decodes`, n(b.sequentialMs)]
        ]),
        ...t.pathMs.map((p) => [`${p.tokens} tokens, 1 sequence (a tree path)`, n(p.ms)]),
        ['2 sequences, 4 + 1 tokens, one batched decode', n(t.unequalPathsMs)],
        ['KV copy between sequences (call)', n(t.copyMs, 3)],
        ['KV copy (buffer copy in the next decode)', n(t.copyDecodeOverheadMs)]
      ]
    )
  ]
  process.stdout.write(`${out.join('\n')}\n`)
}
