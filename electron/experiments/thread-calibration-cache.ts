/**
 * Thread calibrations (engine/model/thread-calibration.ts) cached per model file + machine + llama.cpp binary, so a
 * model is measured once, not at every load. One JSON file in the user cache directory; a calibration is found again
 * only when everything that changes what a thread is worth is the same: the file's fingerprint (size, first and last
 * MiB), the CPU (model name, logical cores, platform, architecture), node-llama-cpp's binary (prebuilt or local
 * build, OpenMP or not, llama.cpp release, GPU backend), OMP_WAIT_POLICY and GOMP_SPINCOUNT, libuv's workers and the
 * evaluation path (through the addon or not, on the JS thread or not), the GPU layers the model got, the phases
 * measured and the calibration's protocol version.
 * The cache is only a shortcut: an unreadable, foreign or corrupt file reads as empty (and is replaced at the next
 * write), and a failed write costs only the next load's measurement — neither may fail a load.
 */
import { createHash } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import { readCacheEntries, writeCacheEntries } from './json-cache-file'
import { ModelThreadCalibration } from '../engine/model/thread-calibration'
import { userCacheDir } from '../engine/peers/llama-server-binary'
import type { NativeBackend } from '../engine/model/llama-cpp-model'

/** Bump when what calibrateThreads measures changes: older entries are then measured again. */
const PROTOCOL_VERSION = 4
const MAX_ENTRIES = 200

const CacheEntry = ModelThreadCalibration.extend({ usedAt: z.string() })
type CacheEntry = z.infer<typeof CacheEntry>

export interface CalibrationKeyParts {
  fingerprint: string
  role: ModelThreadCalibration['role']
  gpuLayers: number
  native: NativeBackend
}

/** The cache file: SPECLAB_THREAD_CALIBRATION_CACHE, else thread-calibration.json in the user cache directory. */
export function calibrationCachePath(): string {
  return process.env.SPECLAB_THREAD_CALIBRATION_CACHE || path.join(userCacheDir(), 'thread-calibration.json')
}

/** What must be equal for a cached calibration to hold (see the file comment). */
export function calibrationKey(parts: CalibrationKeyParts): string {
  const cpus = os.cpus()
  const key = {
    protocol: PROTOCOL_VERSION,
    model: parts.fingerprint,
    phases: parts.role === 'draft' ? 'single' : 'single+batch',
    gpuLayers: parts.gpuLayers,
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    platform: process.platform,
    arch: process.arch,
    native: [parts.native.build, parts.native.openmp, parts.native.release, parts.native.gpu],
    ompWaitPolicy: process.env.OMP_WAIT_POLICY ?? null,
    gompSpinCount: process.env.GOMP_SPINCOUNT ?? null,
    // One libuv worker or several changes what an OpenMP thread costs (libuv-workers.ts).
    libuvWorkers: parts.native.libuvWorkers ?? null,
    // The JS work between decodes differs between the two evaluation paths (direct-evaluation.ts).
    directEvaluation: parts.native.directEvaluation ?? true,
    // Evaluations on the JS thread cost no hand-offs and keep one OpenMP master (direct-evaluation.ts).
    jsThreadEvaluation: parts.native.jsThreadEvaluation ?? false,
    // The top-k read costs a fraction of the sampler chain's at a large vocabulary (performance.md, "The top-k read").
    topLogitsRead: parts.native.topLogitsRead ?? false,
    // Small f16 batches on ggml's kernel change what a batch costs (performance.md, "Small batches against f16 weights").
    smallBatchMatmul: parts.native.smallBatchMatmul ?? false
  }
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32)
}


/** The cached calibration for `key` (source 'cached', path as given now), or null. */
export function cachedCalibration(key: string, modelPath: string, file = calibrationCachePath()): ModelThreadCalibration | null {
  const entry = readCacheEntries(file, CacheEntry)[key]
  if (!entry) return null
  const { usedAt: _usedAt, ...calibration } = entry
  return { ...calibration, path: modelPath, source: 'cached' }
}

/**
 * Stores `calibration` under `key` (written to a temporary file and renamed, so a concurrent reader sees the old or
 * the new file, never half of one); the least recently stored entries go beyond MAX_ENTRIES. Returns false when the
 * cache cannot be written (read-only home, full disk): the load goes on with the measured calibration.
 */
export function storeCalibration(key: string, calibration: ModelThreadCalibration, file = calibrationCachePath()): boolean {
  const entries = readCacheEntries(file, CacheEntry)
  entries[key] = { ...calibration, usedAt: new Date().toISOString() }
  return writeCacheEntries(file, entries, MAX_ENTRIES)
}
