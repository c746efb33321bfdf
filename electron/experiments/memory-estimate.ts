/**
 * How much memory a trio will take, before anything loads, with the chosen GPU layers on this machine: node-llama-cpp's
 * GgufInsights read each file's header and tensor table and, on this process's llama.cpp runtime (the one loads
 * use), resolve how many layers go to the GPU (`resolveModelGpuLayersV2`, what LlamaModel.load itself runs) and
 * estimate the weights and the KV cache and compute buffers of a context (llama.cpp's own arithmetic), for the context
 * size and KV sequences the load will use. The files load one after another (target, mid, draft:
 * experiments/models.ts loadTrio), so each file is resolved against the VRAM the earlier ones leave. Shown by the
 * trio check beside the memory this machine has free.
 *
 * The caller validates the files first (engine/model/gguf-validate.ts, through the library's header summary):
 * node-llama-cpp's reader and its simulated loads must only ever see headers our bounded scan passed.
 */
import os from 'node:os'
import path from 'node:path'
import { GgufInsights, InsufficientMemoryError, readGgufFileInfo, type Llama } from 'node-llama-cpp'
import type { LoadSettings, MemoryEstimate } from '../api/models'
import { UserInputError } from '../engine/errors'
import { validateGgufFile } from '../engine/model/gguf-validate'
import { sharedLlama } from '../engine/model/llama-cpp-model'

export type TrioFileRole = MemoryEstimate['files'][number]['role']

/** What the estimate needs of a llama.cpp runtime; tests stand in a GPU. */
export interface GpuRuntime {
  llama: Llama
  gpu: Llama['gpu']
  supportsGpuOffloading: boolean
  /** VRAM node-llama-cpp keeps free when it places layers (Llama.vramPaddingSize). */
  vramPaddingSize: number
  getVramState(): Promise<{ total: number; free: number; unifiedSize: number }>
}

/** This process's runtime, the one models load on (sharedLlama). */
export async function processRuntime(): Promise<GpuRuntime> {
  const llama = await sharedLlama()
  return {
    llama,
    gpu: llama.gpu,
    supportsGpuOffloading: llama.supportsGpuOffloading,
    vramPaddingSize: llama.vramPaddingSize,
    getVramState: () => llama.getVramState()
  }
}

/** The whole estimate runs on every check: past this it gives up with one line rather than hold the screen. */
export const ESTIMATE_BUDGET_MS = 10_000

export interface EstimateOptions {
  runtime?: () => Promise<GpuRuntime>
  /** VRAM the held trio takes: loading another frees it first (host/loaded-models.ts), so the load can use it. */
  reclaimableVramBytes?: number
  budgetMs?: number
}

export async function estimateTrioMemory(
  files: readonly { fileName: string; path: string; role: TrioFileRole }[],
  load: { contextSize: number; sequences: number; gpuLayers: LoadSettings['gpuLayers'] },
  options: EstimateOptions = {}
): Promise<MemoryEstimate> {
  const budgetMs = options.budgetMs ?? ESTIMATE_BUDGET_MS
  const deadline = AbortSignal.timeout(budgetMs)
  const work = estimate(files, load, options, deadline)
  work.catch(() => {}) // after a timeout nobody awaits it any more
  const timeout = new Promise<never>((_, reject) => {
    const fail = () => reject(new Error(`the estimate took longer than ${budgetMs / 1000} s: check again in a moment`))
    if (deadline.aborted) fail()
    else deadline.addEventListener('abort', fail, { once: true })
  })
  return Promise.race([work, timeout])
}

async function estimate(
  files: readonly { fileName: string; path: string; role: TrioFileRole }[],
  load: { contextSize: number; sequences: number; gpuLayers: LoadSettings['gpuLayers'] },
  options: EstimateOptions,
  signal: AbortSignal
): Promise<MemoryEstimate> {
  const runtime = await (options.runtime ?? processRuntime)()
  const infos = await Promise.all(
    files.map(({ path }) => readGgufFileInfo(path, { readTensorInfo: true, logWarnings: false, sourceType: 'filesystem', signal }))
  )
  const vram = runtime.gpu ? await runtime.getVramState() : { total: 0, free: 0, unifiedSize: 0 }
  const vramFree = runtime.gpu ? vram.free + Math.max(0, options.reclaimableVramBytes ?? 0) : 0
  let vramTaken = 0 // by the files before this one
  const perFile: MemoryEstimate['files'] = []
  for (const [index, { fileName, role }] of files.entries()) {
    const insights = await GgufInsights.from(infos[index], runtime.llama)
    const contextSize = Math.min(load.contextSize, insights.trainContextSize ?? load.contextSize)
    // What LlamaModel.load resolves for a context created with its defaults (as engine/model/llama-cpp-model.ts does).
    const flashAttention = insights.flashAttentionSupported ? ('auto' as const) : false
    const left = Math.max(0, vramFree - runtime.vramPaddingSize - vramTaken)
    let gpuLayers: number
    let useMmap: boolean | undefined
    let fitsVram = true
    try {
      ;({ gpuLayers, useMmap } = await insights.configurationResolver.resolveModelGpuLayersV2(load.gpuLayers, {
        getVramState: async () => ({ total: vram.total, free: left }),
        llamaGpu: runtime.gpu,
        llamaSupportsGpuOffloading: runtime.supportsGpuOffloading,
        llamaVramPaddingSize: runtime.vramPaddingSize,
        defaultContextFlashAttention: flashAttention,
        signal
      }))
    } catch (error) {
      if (!(error instanceof InsufficientMemoryError)) throw error
      // Loading refuses this many layers ("Not enough VRAM…"): say what they would take.
      fitsVram = false
      gpuLayers = load.gpuLayers === 'auto' ? 0 : Math.min(load.gpuLayers, insights.totalLayers)
    }
    const weights = await insights.estimateModelResourceRequirementsV2({ gpuLayers, useMmap })
    const context = await insights.estimateContextResourceRequirementsV2({
      contextSize,
      modelGpuLayers: gpuLayers,
      sequences: load.sequences,
      flashAttention,
      useMmap
    })
    const vramBytes = runtime.gpu ? weights.gpuVram + context.gpuVram : 0
    vramTaken += vramBytes
    perFile.push({
      fileName,
      role,
      weightsBytes: weights.cpuRam,
      contextBytes: context.cpuRam,
      contextSize,
      gpuLayers,
      totalLayers: insights.totalLayers,
      vramBytes,
      fitsVram
    })
  }
  return {
    files: perFile,
    totalBytes: perFile.reduce((sum, f) => sum + f.weightsBytes + f.contextBytes, 0),
    freeBytes: os.freemem(),
    sequences: load.sequences,
    gpuLayersSetting: load.gpuLayers,
    gpu: runtime.gpu || null,
    vramTotalBytes: vram.total,
    vramFreeBytes: vramFree,
    totalVramBytes: vramTaken
  }
}

const MIB = 1024 * 1024
/** "57.8 MB", "151 MB", "22.9 GB". */
export const size = (bytes: number): string =>
  bytes >= 1024 * MIB ? `${(bytes / 1024 / MIB).toFixed(1)} GB` : `${(bytes / MIB).toFixed(bytes < 100 * MIB ? 1 : 0)} MB`

/**
 * What the GPU layers will do, then the RAM:
 * "No GPU in this build: all layers run on the CPU. Loading needs about 209 MB of RAM (weights 151 MB + context
 * 57.8 MB at 512 tokens × 4 sequences); 22.9 GB free."
 * "GPU (cuda): target 26/26 layers, draft 6/6 — about 1.2 GB of VRAM; 7.8 GB of 24.0 GB free. Loading needs about …"
 */
export function describeMemory(estimate: MemoryEstimate): string {
  const weights = estimate.files.reduce((sum, f) => sum + f.weightsBytes, 0)
  const context = estimate.files.reduce((sum, f) => sum + f.contextBytes, 0)
  const contextSize = Math.max(...estimate.files.map((f) => f.contextSize))
  const fits = estimate.totalBytes < estimate.freeBytes
  const ram =
    `Loading needs about ${size(estimate.totalBytes)} of RAM (weights ${size(weights)} + context ${size(context)} at ${contextSize} tokens × ` +
    `${estimate.sequences} sequences); ${size(estimate.freeBytes)} free${fits ? '' : ' — not enough: lower the context size or use smaller files'}.`
  return `${describeGpu(estimate)} ${ram}`
}

function describeGpu(estimate: MemoryEstimate): string {
  if (estimate.gpu === null) return 'No GPU in this build: all layers run on the CPU.'
  const gpu = `GPU (${estimate.gpu})`
  const free = `${size(estimate.vramFreeBytes)} of ${size(estimate.vramTotalBytes)} free`
  const onGpu = estimate.files.reduce((sum, f) => sum + f.gpuLayers, 0)
  const refused = estimate.files.some((f) => !f.fitsVram)
  if (onGpu === 0 && !refused)
    return estimate.gpuLayersSetting === 0
      ? `${gpu} unused: GPU layers 0, so all layers run on the CPU (VRAM ${free}).`
      : `${gpu}: no layer fits in the VRAM left, so all layers run on the CPU (VRAM ${free}).`
  const layers = estimate.files.map((f) => `${f.role} ${f.gpuLayers}/${f.totalLayers}`)
  layers[0] += ' layers'
  const partial = estimate.files.some((f) => f.gpuLayers < f.totalLayers) ? ' (the other layers run on the CPU)' : ''
  const fits = !refused && estimate.totalVramBytes <= estimate.vramFreeBytes
  const advice = estimate.gpuLayersSetting === 'auto' ? 'loading may fail' : 'loading fails, lower the GPU layers or use auto'
  return `${gpu}: ${layers.join(', ')}${partial} — about ${size(estimate.totalVramBytes)} of VRAM; ${free}${fits ? '' : ` — not enough: ${advice}`}.`
}

/**
 * Refuses a load that cannot fit, before llama.cpp tries it: weights and contexts that need more RAM than the machine
 * has in all (free RAM is not the limit: weights are memory-mapped and the OS pages them), or a GPU layer count that
 * node-llama-cpp would refuse in the VRAM the earlier files leave ('auto' adapts instead). One line naming the fix.
 */
export function assertTrioFits(estimate: MemoryEstimate, totalRamBytes = os.totalmem()): void {
  if (estimate.totalBytes > totalRamBytes)
    throw new UserInputError(
      `the models do not fit: loading needs about ${size(estimate.totalBytes)} of RAM and this machine has ${size(totalRamBytes)} in all ` +
        `— lower the context size (${Math.max(...estimate.files.map((f) => f.contextSize))} tokens × ${estimate.sequences} sequences) or use smaller files`
    )
  const refused = estimate.files.find((f) => !f.fitsVram)
  if (refused)
    throw new UserInputError(
      `${refused.fileName}: ${estimate.gpuLayersSetting} GPU layers do not fit in the ${size(estimate.vramFreeBytes)} of VRAM free ` +
        `(${estimate.gpu}) — lower the GPU layers or use auto`
    )
}

/**
 * Before a load (experiments/models.ts): the estimate for these files and settings, refusing what cannot fit. An
 * estimate that fails for another reason (an architecture node-llama-cpp cannot estimate) does not block the load.
 */
export async function checkTrioFits(
  files: readonly { file: string; role: TrioFileRole }[],
  load: { contextSize: number; sequences: number; gpuLayers: LoadSettings['gpuLayers'] }
): Promise<MemoryEstimate | null> {
  for (const { file } of files) await validateGgufFile(file)
  let estimate: MemoryEstimate
  try {
    estimate = await estimateTrioMemory(files.map(({ file, role }) => ({ fileName: path.basename(file), path: file, role })), load)
  } catch {
    return null
  }
  assertTrioFits(estimate)
  return estimate
}
