/**
 * How much memory a trio will take, before anything loads: node-llama-cpp's GgufInsights read each file's header
 * and tensor table (weights) and estimate the KV cache and compute buffers of a context (llama.cpp's own
 * arithmetic), for the context size and KV sequences the load will use, everything on the CPU. Shown by the trio
 * check beside the memory this machine has free.
 */
import os from 'node:os'
import { GgufInsights, readGgufFileInfo } from 'node-llama-cpp'
import type { MemoryEstimate } from '../api/contract'

export async function estimateTrioMemory(
  files: readonly { fileName: string; path: string }[],
  load: { contextSize: number; sequences: number }
): Promise<MemoryEstimate> {
  const perFile = await Promise.all(
    files.map(async ({ fileName, path }) => {
      const info = await readGgufFileInfo(path, { readTensorInfo: true, logWarnings: false, sourceType: 'filesystem' })
      const insights = await GgufInsights.from(info)
      const contextSize = Math.min(load.contextSize, insights.trainContextSize ?? load.contextSize)
      const weights = await insights.estimateModelResourceRequirementsV2({ gpuLayers: 0 })
      const context = await insights.estimateContextResourceRequirementsV2({ contextSize, modelGpuLayers: 0, sequences: load.sequences })
      return { fileName, weightsBytes: weights.cpuRam, contextBytes: context.cpuRam, contextSize }
    })
  )
  return {
    files: perFile,
    totalBytes: perFile.reduce((sum, f) => sum + f.weightsBytes + f.contextBytes, 0),
    freeBytes: os.freemem(),
    sequences: load.sequences
  }
}

const MIB = 1024 * 1024
/** "57.8 MB", "151 MB", "22.9 GB". */
export const size = (bytes: number): string =>
  bytes >= 1024 * MIB ? `${(bytes / 1024 / MIB).toFixed(1)} GB` : `${(bytes / MIB).toFixed(bytes < 100 * MIB ? 1 : 0)} MB`

/** "Loading needs about 209 MB (weights 151 MB + context 57.8 MB at 512 tokens × 4 sequences); 22.9 GB free." */
export function describeMemory(estimate: MemoryEstimate): string {
  const weights = estimate.files.reduce((sum, f) => sum + f.weightsBytes, 0)
  const context = estimate.files.reduce((sum, f) => sum + f.contextBytes, 0)
  const contextSize = Math.max(...estimate.files.map((f) => f.contextSize))
  const fits = estimate.totalBytes < estimate.freeBytes
  return (
    `Loading needs about ${size(estimate.totalBytes)} (weights ${size(weights)} + context ${size(context)} at ${contextSize} tokens × ` +
    `${estimate.sequences} sequences); ${size(estimate.freeBytes)} free${fits ? '' : ' — not enough: lower the context size or use smaller files'}.`
  )
}
