/**
 * The GPU check's measurement, bundled by pack.ts into one .mjs with node-llama-cpp's JavaScript and run by run.sh
 * on the machine under test after it built node-llama-cpp's addon and llama-server there:
 *
 *   node gpu-check.mjs --target T.gguf --draft D.gguf --out DIR [--mode cuda|cpu] [--repeats 3] [--arms …]
 *
 * Loads the target and the draft (every layer on the GPU in cuda mode: `--gpu-layers` clamps to the model's layer
 * count, and the report fails a model that did not go there wholly), runs the arms interleaved with peer-bench's
 * runner (experiments/peer-bench.ts) — with `--advise`, the setup advisor's best predicted configurations and llama-server's
 * default speculation too (advice.ts) —, splits an `ar` token's time beside llama-server's (token-split.ts) and writes
 * report.json and report.md (report.ts). Exit 0 when every greedy
 * output equals `ar`'s or leaves it only at a numerical tie of the target (divergence.ts), and every model is
 * offloaded as asked; 1 otherwise, 2 on bad arguments. `--temperature t > 0` samples instead (the advisor then gives
 * expected values, and there is no greedy check: only the offload can fail). No database: the store (better-sqlite3, a native addon) is
 * never imported, so the bundle needs only node-llama-cpp's own addon.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { UserInputError } from '../../electron/engine/errors'
import { stopLocalServers } from '../../electron/engine/peers/llama-server-process'
import { nativeBackend, sharedLlama } from '../../electron/engine/model/llama-cpp-model'
import { needsSharedVocabulary } from '../../electron/engine/methods/prepare'
import { loadTrio } from '../../electron/experiments/models'
import { describeMachine, machineAfter, machineBefore } from '../../electron/experiments/machine-state'
import { applyThreads, parseArm, prepareArms, runPeerBench, type ArmResult, type ArmSpec } from '../../electron/experiments/peer-bench'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import type { LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import type { LanguageModel } from '../../electron/engine/model/types'
import { loadPrompts } from '../../electron/experiments/prompts'
import { tokenizePrompts } from '../../electron/experiments/runner'
import { warpOfSettings } from '../../electron/experiments/run-request'
import { firstDifference, historiesOf, noiseOf, weighDivergence, type Divergence } from './divergence'
import type { Distribution } from '../../electron/engine/sampling/distribution'
import { measureTokenSplit } from './token-split'
import { adviceReport, armRows, engineRows, greedyRows, problemsOf, referenceArm, reportMarkdown, type GpuCheckReport, type GreedyRow, type ModelOffload } from './report'
import { planAdvice, type AdvicePlan } from './advice'

/**
 * The arms: SpecLab's ar, sd, svip and PEARL, and llama-server's AR and draft speculative decoding (the same jobs as
 * SpecLab's ar and sd, so the report can say how the engines compare). On the GPU the CPU threads only feed the device,
 * so every arm gets the same few; on the CPU the target batches on every core, the draft on one.
 */
export function defaultArms(mode: 'cuda' | 'cpu', cores: number): string[] {
  const t = mode === 'cuda' ? String(Math.min(4, cores)) : '1'
  const b = mode === 'cuda' ? t : String(cores)
  // llama-server's arms run at SpecLab's threads, so the engine rows compare the engines and not thread counts.
  return [`ar@${t}/${b}`, `sd@${t}/${b}`, `svip@${t}/${b}`, `pearl@${t}/${b}/1`, `llama-server:ar@${t}/${b}`, `llama-server:draft@${t}/${b}/1`]
}

const usage =
  'usage: gpu-check.mjs --target T.gguf --draft D.gguf --out DIR [--mode cuda|cpu] [--repeats N] [--prompts N] [--max-tokens N] [--arms A,B,…] [--advise] [--temperature t] [--build-seconds step=s,…]'

/** The advisor's arms measured with `--advise`: its best predicted SpecLab configurations (advice.ts). */
const ADVISED_ARMS = 3

function positiveInteger(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < 1) throw new UserInputError(`--${name} must be a positive integer (got '${text}')`)
  return value
}

/** --temperature: 0 (greedy, the default: the greedy check runs) or above (every arm samples; no greedy check). */
function temperatureOf(text: string | undefined): number {
  if (text === undefined) return 0
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value) || value < 0) throw new UserInputError(`--temperature must be a number ≥ 0 (got '${text}')`)
  return value
}

function parseBuildSeconds(text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {}
  for (const part of (text ?? '').split(',').filter(Boolean)) {
    const [step, seconds] = part.split('=')
    if (step && Number.isFinite(Number(seconds))) out[step] = Number(seconds)
  }
  return out
}

/**
 * The greedy check's rows with the first difference of every differing prompt weighed (divergence.ts); each prompt's
 * histories are evaluated once. A weighing that fails leaves the rows unweighed (every difference then counts) and
 * says why.
 */
async function weighedGreedyRows(results: ArmResult[], target: LanguageModel, promptTokens: number[][], maxChunk: number): Promise<GreedyRow[]> {
  const rows = greedyRows(results)
  const reference = referenceArm(results)
  const perPrompt = new Map<number, { histories: Distribution[][]; noise: number }>()
  try {
    const weighed: GreedyRow[] = []
    for (const row of rows) {
      const arm = results.find((r) => r.label === row.arm)!
      const divergences: Divergence[] = []
      for (const prompt of row.differing) {
        const output = reference.outputs[prompt] ?? []
        const armOutput = arm.outputs[prompt] ?? []
        const position = firstDifference(output, armOutput)
        if (position === null) continue
        let known = perPrompt.get(prompt)
        if (!known) {
          const histories = await historiesOf(target, promptTokens[prompt]!, output, maxChunk)
          known = { histories, noise: noiseOf(histories, output) }
          perPrompt.set(prompt, known)
        }
        divergences.push({ prompt, ...weighDivergence(known.histories, output, position, armOutput[position]!, known.noise) })
      }
      weighed.push({ ...row, divergences })
    }
    return weighed
  } catch (error) {
    process.stderr.write(`gpu-check: could not weigh the greedy differences (${(error as Error).message}); every difference counts\n`)
    return rows
  }
}

/**
 * Where an `ar` token's time goes (token-split.ts), at the threads of SpecLab's `ar` arm, beside the llama-server its
 * `llama-server:ar` arm ran. A failure is reported, not fatal: the split explains the figures, it is not the check.
 */
async function tokenSplitOf(models: Parameters<typeof applyThreads>[0], specs: readonly ArmSpec[], promptTokens: number[][], maxTokens: number): Promise<GpuCheckReport['tokenSplit']> {
  const ar = specs.find((s) => s.method === 'ar')
  if (!ar) return { error: 'no SpecLab ar arm' }
  try {
    applyThreads(models, ar.threads)
    const target = models.target as LlamaCppModel
    const binary = findLlamaServer()
    const server =
      binary.path === null
        ? null
        : { binary: binary.path, target: target.info.path, draft: null, threads: ar.threads.threads, batchThreads: ar.threads.batchThreads, draftThreads: ar.threads.draftThreads, contextSize: target.context.contextSize, speculative: [] }
    return await measureTokenSplit(target, promptTokens, maxTokens, server)
  } catch (error) {
    return { error: (error as Error).message }
  }
}

/**
 * `--advise`: the advisor's plan at the `ar` arm's threads and the check's arms with its arms after them (advice.ts);
 * why not, where it failed (the check goes on without them).
 */
async function withAdvisedArms(
  specs: ArmSpec[],
  models: Parameters<typeof applyThreads>[0],
  draftName: string,
  promptTokens: number[][],
  config: { maxTokens: number; temperature: number; seed: number }
): Promise<{ plan: AdvicePlan; specs: ArmSpec[] } | { error: string }> {
  const ar = specs.find((s) => s.method === 'ar')
  if (!ar) return { error: 'no SpecLab ar arm to take the threads from' }
  try {
    const warp = warpOfSettings({ temperature: config.temperature })
    const advice = await planAdvice({ models, draftName, promptTokens, maxTokens: config.maxTokens, warp, seed: config.seed, threads: ar.threads, top: ADVISED_ARMS })
    const labels = new Set(specs.map((s) => s.label))
    return { plan: advice.plan, specs: [...specs, ...advice.specs.filter((s) => !labels.has(s.label))] }
  } catch (error) {
    return { error: (error as Error).message }
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      target: { type: 'string' },
      draft: { type: 'string' },
      out: { type: 'string' },
      mode: { type: 'string', default: 'cuda' },
      repeats: { type: 'string' },
      prompts: { type: 'string' },
      'max-tokens': { type: 'string' },
      arms: { type: 'string' },
      advise: { type: 'boolean', default: false },
      temperature: { type: 'string' },
      'build-seconds': { type: 'string' }
    }
  })
  if (!values.target || !values.draft || !values.out) throw new UserInputError(usage)
  if (values.mode !== 'cuda' && values.mode !== 'cpu') throw new UserInputError(`--mode is cuda or cpu (got '${values.mode}')`)
  const mode = values.mode
  const cores = Math.max(1, os.availableParallelism?.() ?? os.cpus().length)
  const config = {
    prompts: positiveInteger('prompts', values.prompts, 4),
    maxTokens: positiveInteger('max-tokens', values['max-tokens'], 128),
    repeats: positiveInteger('repeats', values.repeats, 3),
    gamma: 4,
    temperature: temperatureOf(values.temperature),
    contextSize: 512,
    seed: 1
  }
  let specs = (values.arms ? values.arms.split(',') : defaultArms(mode, cores)).map((s) => s.trim()).filter(Boolean).map(parseArm)
  let arms = prepareArms(specs, config.gamma)
  // llama-server offloads every layer of both models in cuda mode, as SpecLab's own load does (llama.cpp's env names).
  if (mode === 'cuda') {
    process.env.LLAMA_ARG_N_GPU_LAYERS ??= 'all'
    process.env.LLAMA_ARG_N_GPU_LAYERS_DRAFT ??= 'all'
  }
  const gpuLayers = mode === 'cuda' ? 100_000 : 0
  const trio = await loadTrio(
    { target: values.target, draft: values.draft },
    {
      threads: 1,
      contextSize: config.contextSize,
      sequences: Math.max(...arms.map((a) => a.method.sessions)),
      gpuLayers,
      sharedVocabulary: arms.some((a) => needsSharedVocabulary(a.method.definition))
    }
  )
  try {
    const llama = await sharedLlama()
    const native = await nativeBackend()
    if (mode === 'cuda' && native.gpu !== 'cuda') throw new Error(`node-llama-cpp loaded a ${native.gpu} binary, not the CUDA build`)
    const models: ModelOffload[] = [
      { role: 'target', file: path.basename(values.target), gpuLayers: trio.models.target.model.gpuLayers, totalLayers: trio.models.target.model.fileInsights.totalLayers },
      { role: 'draft', file: path.basename(values.draft), gpuLayers: trio.models.draft!.model.gpuLayers, totalLayers: trio.models.draft!.model.fileInsights.totalLayers }
    ]
    const prompts = loadPrompts({ dataset: 'stories', limit: config.prompts })
    const promptTokens = tokenizePrompts(trio.models, prompts, config)
    const advised = values.advise ? await withAdvisedArms(specs, trio.models, path.basename(values.draft), promptTokens, config) : undefined
    if (advised && 'specs' in advised) {
      specs = advised.specs
      arms = prepareArms(specs, config.gamma)
    }
    const plan = advised && 'specs' in advised ? advised.plan : advised
    const before = machineBefore()
    const results = await runPeerBench(arms, {
      models: trio.models,
      promptTokens,
      maxTokens: config.maxTokens,
      warp: warpOfSettings({ temperature: config.temperature }),
      seed: config.seed,
      repeats: config.repeats,
      onCell: (p) => process.stderr.write(`\r${p.done}/${p.total} ${p.label} prompt ${p.prompt + 1} repeat ${p.repeat + 1}        `)
    })
    process.stderr.write('\n')
    const machine = machineAfter(before)
    // Sampled outputs differ from ar's by design: the greedy check runs at temperature 0 only.
    const greedy = config.temperature === 0 ? await weighedGreedyRows(results, trio.models.target, promptTokens, config.gamma + 1) : []
    const tokenSplit = await tokenSplitOf(trio.models, specs, promptTokens, config.maxTokens)
    const problems = problemsOf(greedy, models, mode)
    const report: GpuCheckReport = {
      date: new Date().toISOString(),
      mode,
      machine: { description: describeMachine(machine), cpus: cores, cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown', gpus: await llama.getGpuDeviceNames() },
      native,
      buildSeconds: parseBuildSeconds(values['build-seconds']),
      models,
      config: { ...config, prompts: prompts.length },
      arms: armRows(results),
      greedy,
      engines: engineRows(results),
      tokenSplit,
      ...(plan === undefined ? {} : { advice: 'error' in plan ? plan : adviceReport(plan, results) }),
      passed: problems.length === 0,
      problems
    }
    fs.mkdirSync(values.out, { recursive: true })
    fs.writeFileSync(path.join(values.out, 'report.json'), `${JSON.stringify(report, null, 1)}\n`)
    const markdown = reportMarkdown(report)
    fs.writeFileSync(path.join(values.out, 'report.md'), markdown)
    process.stdout.write(markdown)
    return report.passed ? 0 : 1
  } finally {
    stopLocalServers()
    await trio.dispose()
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`gpu-check: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(error instanceof UserInputError ? 2 : 1)
  }
)
