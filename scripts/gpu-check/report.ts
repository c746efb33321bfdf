/**
 * The GPU check's report: what ran (machine, binary, offload, build times), every arm's tok/s with its 95 % interval,
 * each arm's speed over SpecLab's `ar` paired per (prompt, repeat), SpecLab over llama-server for the jobs both ran,
 * and the greedy check (every lossless arm's repeat-0 outputs equal `ar`'s, or leave them only at a numerical tie of
 * the target: divergence.ts). Pure: entry.ts measures, this writes JSON and Markdown from the numbers.
 */
import { median, type Interval } from '../../electron/engine/stats/bootstrap'
import { pairedRatio, sameOutputs, type ArmResult } from '../../electron/experiments/peer-bench'
import type { AdvicePlan } from './advice'
import type { Divergence } from './divergence'
import type { TokenSplit } from './token-split'

export interface GreedyRow {
  arm: string
  same: number
  prompts: number
  differing: number[]
  /** The first difference of each differing prompt, weighed (divergence.ts); empty until weighed. */
  divergences: Divergence[]
}

export interface ModelOffload {
  role: 'target' | 'draft'
  file: string
  gpuLayers: number
  totalLayers: number
}

export interface EngineRow {
  speclab: string
  llamaServer: string
  ratio: Interval | null
}

export interface GpuCheckReport {
  /** ISO time the measurement ended. */
  date: string
  mode: 'cuda' | 'cpu'
  machine: { description: string; cpus: number; cpuModel: string; gpus: string[] }
  native: { build: string; gpu: string; release: string; openmp: boolean | null; jsThreadEvaluation?: boolean; topLogitsRead?: boolean }
  /** Seconds of each build step run.sh timed (configure, build, …). */
  buildSeconds: Record<string, number>
  models: ModelOffload[]
  config: { prompts: number; maxTokens: number; repeats: number; gamma: number; temperature: number; contextSize: number; seed: number }
  arms: { label: string; side: string; method: string; tokensPerSecond: Interval | null; acceptance: number | null; tokensPerCall: number | null; overAr: Interval | null }[]
  greedy: GreedyRow[]
  /** SpecLab's arm over llama-server's doing the same job, paired per (prompt, repeat). */
  engines: EngineRow[]
  /** Where a SpecLab `ar` token's time goes beside llama-server's token (token-split.ts); why not, where it failed. */
  tokenSplit: TokenSplit | { error: string }
  /** With `--advise`: the advisor's prediction beside the measurement (advice.ts); why not, where it failed. */
  advice?: AdviceReport | { error: string }
  /** Every arm's outputs equal ar's or leave them only at a numerical tie, and (cuda) every model is fully offloaded. */
  passed: boolean
  problems: string[]
}

/** An advised arm: what the advisor predicted, what the bench measured (tok/s and × ar, paired). */
export interface AdviceRow {
  label: string
  predicted: { tokensPerSecond: number; speedup: number }
  measured: Interval | null
  overAr: Interval | null
}

export interface AdviceReport extends AdvicePlan {
  rows: AdviceRow[]
  /** ar predicted beside measured. */
  arMeasured: Interval | null
  /** llama-server's default speculation, measured. */
  serverDefaultMeasured: Interval | null
  /** The advisor's first choice (the fastest predicted) over llama-server's default, paired per (prompt, repeat). */
  firstOverDefault: Interval | null
  /** The advised arm measured fastest (median tok/s), and its ratio over llama-server's default. */
  best: { label: string; overDefault: Interval | null } | null
  /** Median |predicted − measured| / measured over the advised arms and ar. */
  medianError: number | null
}

/** The advisor's plan beside the bench's results for its arms. */
export function adviceReport(plan: AdvicePlan, results: readonly ArmResult[]): AdviceReport {
  const reference = referenceArm(results)
  const byLabel = new Map(results.map((r) => [r.label, r]))
  const rows: AdviceRow[] = plan.advised.map((a) => {
    const result = byLabel.get(a.label)
    return { label: a.label, predicted: a.predicted, measured: result?.tokensPerSecond ?? null, overAr: result ? pairedRatio(result, reference) : null }
  })
  const serverDefault = byLabel.get(plan.serverDefault)
  const first = byLabel.get(plan.advised[0]?.label ?? '')
  const measuredBest = rows.filter((r) => r.measured).sort((a, b) => b.measured!.median - a.measured!.median)[0]
  const bestResult = measuredBest ? byLabel.get(measuredBest.label) : undefined
  const errors = [...rows.map((r) => [r.predicted.tokensPerSecond, r.measured] as const), [plan.ar.tokensPerSecond, reference.tokensPerSecond] as const]
    .filter(([, measured]) => measured && measured.median > 0)
    .map(([predicted, measured]) => Math.abs(predicted - measured!.median) / measured!.median)
  return {
    ...plan,
    rows,
    arMeasured: reference.tokensPerSecond,
    serverDefaultMeasured: serverDefault?.tokensPerSecond ?? null,
    firstOverDefault: first && serverDefault ? pairedRatio(first, serverDefault) : null,
    best: measuredBest && bestResult ? { label: measuredBest.label, overDefault: serverDefault ? pairedRatio(bestResult, serverDefault) : null } : null,
    medianError: errors.length > 0 ? median(errors) : null
  }
}

/** SpecLab's `ar` arm: the reference of the greedy check and of every ratio. */
export function referenceArm(results: readonly ArmResult[]): ArmResult {
  const ar = results.find((r) => r.side === 'speclab' && r.method === 'ar')
  if (!ar) throw new Error('the GPU check needs a SpecLab ar arm')
  return ar
}

/** Every other arm's repeat-0 outputs against ar's (greedy decoding: lossless methods give the same tokens). */
export function greedyRows(results: readonly ArmResult[]): GreedyRow[] {
  const reference = referenceArm(results)
  return results.filter((r) => r !== reference).map((r) => {
    const { same, prompts, first } = sameOutputs(r, reference)
    return { arm: r.label, same, prompts, differing: first, divergences: [] }
  })
}

/** Prompts whose output differs from ar's other than at a numerical tie of the target (divergence.ts). */
export function realDifferences(row: GreedyRow): number[] {
  return row.differing.filter((prompt) => !row.divergences.some((d) => d.prompt === prompt && d.tie))
}

/**
 * What fails the check: an output that differs from ar's other than at a numerical tie, a model not wholly on the GPU
 * in CUDA mode.
 */
export function problemsOf(greedy: readonly GreedyRow[], models: readonly ModelOffload[], mode: GpuCheckReport['mode']): string[] {
  const problems = greedy
    .map((g) => ({ arm: g.arm, real: realDifferences(g) }))
    .filter((g) => g.real.length > 0)
    .map((g) => `${g.arm}: greedy output differs from ar, not at a numerical tie, on prompts ${g.real.join(', ')}`)
  if (mode === 'cuda')
    for (const m of models) if (m.gpuLayers < m.totalLayers) problems.push(`${m.role} ${m.file}: ${m.gpuLayers} of ${m.totalLayers} layers on the GPU`)
  return problems
}

export function armRows(results: readonly ArmResult[]): GpuCheckReport['arms'] {
  const reference = referenceArm(results)
  return results.map((r) => ({
    label: r.label,
    side: r.side,
    method: r.method,
    tokensPerSecond: r.tokensPerSecond,
    acceptance: r.acceptance,
    tokensPerCall: r.tokensPerCall,
    overAr: r === reference ? null : pairedRatio(r, reference)
  }))
}

/** The jobs both engines do: SpecLab's method and the llama-server arm that runs the same decoding. */
const SAME_JOB: readonly (readonly [string, string])[] = [
  ['ar', 'llama-server:ar'],
  ['sd', 'llama-server:draft']
]

/** SpecLab over llama-server for each job both engines ran: the GPU check's answer to "as fast as llama.cpp?". */
export function engineRows(results: readonly ArmResult[]): EngineRow[] {
  const rows: EngineRow[] = []
  for (const [ours, theirs] of SAME_JOB) {
    const speclab = results.find((r) => r.side === 'speclab' && r.method === ours)
    const peer = results.find((r) => r.side !== 'speclab' && r.method === theirs)
    if (speclab && peer) rows.push({ speclab: speclab.label, llamaServer: peer.label, ratio: pairedRatio(speclab, peer) })
  }
  return rows
}

const fixed = (value: number | null | undefined, digits: number) => (value === null || value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits))

function interval(value: Interval | null, digits: number, unit = ''): string {
  if (!value) return '–'
  return `${fixed(value.median, digits)}${unit} [${fixed(value.low, digits)}–${fixed(value.high, digits)}]`
}

function greedyCell(row: GreedyRow): string {
  const ties = row.differing.length - realDifferences(row).length
  return `${row.same}/${row.prompts}${ties > 0 ? `, ${ties} at ties` : ''}`
}

/** One line per weighed divergence: where, which tokens, the gaps (nats) under ar's history and chunked ones, the noise. */
function divergenceLines(greedy: readonly GreedyRow[]): string[] {
  const gap = (g: number | null) => (g === null ? 'outside top-64' : g.toFixed(4))
  return greedy.flatMap((row) =>
    row.divergences.map(
      (d) =>
        `- ${row.arm}, prompt ${d.prompt}, token ${d.position}: ar ${d.ar}, arm ${d.arm}; gap ${gap(d.gap)} under ar's evaluation, ` +
        `${d.gapChunked.map(gap).join(', ')} in chunks of 2…; the prompt's noise ${d.noise.toFixed(4)} → ${d.tie ? 'numerical tie' : 'real difference'}`
    )
  )
}

/** The advisor's section: each advised arm predicted beside measured, and the picks over llama-server's default. */
function adviceLines(advice: GpuCheckReport['advice'], temperature: number): string[] {
  if (!advice) return []
  const heading = ['## The setup advisor on this machine', '']
  if ('error' in advice) return [...heading, `Not run: ${advice.error}`]
  const c = advice.costs
  return [
    ...heading,
    `One ${temperature > 0 ? `sampled trace (temperature ${temperature}; expected rounds)` : 'greedy trace (the rounds replayed)'} of the same prompts, this machine's costs (c_T(1…${c.targetMs.length}) ${c.targetMs.map((ms) => ms.toFixed(3)).join(' ')} ms; ` +
      `c_D ${c.draftMs.toFixed(3)} ms; s ${fixed(c.roundScale, 3)}, s‖ ${fixed(c.overlapScale, 3)}; each decode ${fixed(c.decodeOutsideMs ?? null, 2)} ms outside its rounds and prompt), ${advice.candidates} candidates replayed and priced in ` +
      `${advice.seconds.toFixed(0)} s; its best ${advice.rows.length} and llama-server's default speculation measured in the bench above:`,
    '',
    '| arm | predicted tok/s | measured tok/s [95% CI] | predicted × ar | measured × ar [95% CI] |',
    '|---|---|---|---|---|',
    ...advice.rows.map((r) => `| ${r.label} | ${r.predicted.tokensPerSecond.toFixed(1)} | ${interval(r.measured, 1)} | ${r.predicted.speedup.toFixed(3)}× | ${interval(r.overAr, 3, '×')} |`),
    `| ar | ${advice.ar.tokensPerSecond.toFixed(1)} | ${interval(advice.arMeasured, 1)} | – | – |`,
    `| ${advice.serverDefault} (llama-server's default: \`-md D --spec-type draft-simple\`, n_max 3, p_min 0) | – | ${interval(advice.serverDefaultMeasured, 1)} | – | – |`,
    '',
    `- median |predicted − measured| / measured (advised arms and ar): ${advice.medianError === null ? '–' : `${(100 * advice.medianError).toFixed(1)} %`}`,
    `- the advisor's first choice over llama-server's default: ${interval(advice.firstOverDefault, 3, '×')}`,
    `- the advised arm measured fastest${advice.best ? ` (${advice.best.label})` : ''} over llama-server's default: ${interval(advice.best?.overDefault ?? null, 3, '×')}`
  ]
}

/** The token split's section (token-split.ts defines every term). */
function tokenSplitLines(split: GpuCheckReport['tokenSplit']): string[] {
  const heading = ['## Where an `ar` token\'s time goes', '']
  if ('error' in split) return [...heading, `Not measured: ${split.error}`]
  const ms = (value: Interval | null) => interval(value, 3)
  return [
    ...heading,
    `${split.tokens} greedy tokens of SpecLab's target session, one evaluation each (${split.direct} through the addon path), medians per token [95% CI]:`,
    '',
    '| part | ms per token |',
    '|---|---|',
    `| SpecLab's step (\`append\` of one token) | ${ms(split.stepMs)} |`,
    `| – awaited \`decodeBatch\` (hand-off, \`llama_decode\` and synchronize, hand-back) | ${ms(split.decodeMs)} |`,
    `| – awaited \`sampleToken\` (hand-off, the logits' top 64, hand-back) | ${ms(split.readMs)} |`,
    `| – the rest: SpecLab's JS and node-llama-cpp's synchronous calls | ${ms(split.engineMs)} |`,
    `| the same read again (one asynchronous call with nothing to wait for; not in the step) | ${ms(split.rereadMs)} |`,
    `| llama-server's own time per generated token (predicted_ms / (predicted_n − 1), HTTP excluded) | ${ms(split.serverMs)} |`
  ]
}

export function reportMarkdown(report: GpuCheckReport): string {
  const { config } = report
  const greedy = new Map(report.greedy.map((g) => [g.arm, g]))
  const lines = [
    `# SpecLab GPU check — ${report.passed ? 'PASSED' : 'FAILED'}`,
    '',
    `- date: ${report.date}`,
    `- mode: ${report.mode}; llama.cpp ${report.native.release}, node-llama-cpp ${report.native.build} ${report.native.gpu}` +
      `${report.native.openmp === null ? '' : report.native.openmp ? ' (OpenMP)' : ' (no OpenMP)'}` +
      `${report.native.jsThreadEvaluation ? '; evaluations alone on the JS thread (SpecLab\'s addon patch)' : ''}` +
      `${report.native.topLogitsRead ? '; the one-pass top-k read' : ''}`,
    `- machine: ${report.machine.cpuModel}, ${report.machine.description}`,
    `- GPUs: ${report.machine.gpus.length > 0 ? report.machine.gpus.join(', ') : 'none'}`,
    `- build: ${Object.entries(report.buildSeconds).map(([step, s]) => `${step} ${s.toFixed(0)} s`).join(', ') || 'not timed'}`,
    `- models: ${report.models.map((m) => `${m.role} ${m.file} (${m.gpuLayers}/${m.totalLayers} layers on the GPU)`).join('; ')}`,
    `- workload: ${config.prompts} story prompts × ${config.maxTokens} tokens × ${config.repeats} interleaved repeats, γ ${config.gamma}, ` +
      `temperature ${config.temperature}, context ${config.contextSize}, seed ${config.seed}` +
      (config.temperature > 0 ? ' — sampled: no greedy check; the advisor predicts expected values' : ''),
    '',
    '| arm | engine | tok/s [95% CI] | × ar [95% CI] | acceptance | tokens/call | greedy = ar |',
    '|---|---|---|---|---|---|---|',
    ...report.arms.map((a) => {
      const g = greedy.get(a.label)
      // Sampled outputs are not compared (no greedy check above temperature 0).
      const check = config.temperature > 0 ? '–' : g ? greedyCell(g) : 'reference'
      return `| ${a.label} | ${a.side} | ${interval(a.tokensPerSecond, 1)} | ${interval(a.overAr, 3, '×')} | ${fixed(a.acceptance, 3)} | ${fixed(a.tokensPerCall, 2)} | ${check} |`
    }),
    '',
    'tok/s: median over (prompt, repeat) cells with its 95 % hierarchical bootstrap interval; × ar: median of the ratios of cells decoded next to each other.'
  ]
  if (report.engines.length > 0)
    lines.push('', '| SpecLab | llama-server | SpecLab / llama-server [95% CI] |', '|---|---|---|', ...report.engines.map((e) => `| ${e.speclab} | ${e.llamaServer} | ${interval(e.ratio, 3, '×')} |`))
  lines.push('', ...tokenSplitLines(report.tokenSplit))
  const advice = adviceLines(report.advice, config.temperature)
  if (advice.length > 0) lines.push('', ...advice)
  const divergences = divergenceLines(report.greedy)
  if (divergences.length > 0)
    lines.push(
      '',
      '## Where outputs leave ar\'s',
      '',
      'The target\'s gap ln p(ar\'s token) − ln p(the arm\'s) at the first difference, with the tokens before it evaluated as ar did and in ' +
        'chunks of 2 … γ + 1; a numerical tie when ar\'s evaluation prefers its token by no more than the noise: the largest change of the top-two ' +
        'gap at any position of the prompt between those evaluations (scripts/gpu-check/divergence.ts).',
      '',
      ...divergences
    )
  if (report.problems.length > 0) lines.push('', '## Problems', '', ...report.problems.map((p) => `- ${p}`))
  return `${lines.join('\n')}\n`
}
