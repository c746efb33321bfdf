/**
 * llama-server cost tables (engine/peers/llama-server-cost-table.ts) cached per llama-server binary + models +
 * threads + measurement, so a repeated advice on the same trio and workload does not start servers to measure them
 * again. One JSON file in the user cache directory, kept like the thread calibrations
 * (thread-calibration-cache.ts): a table is found again only when everything that changes it is the same — the
 * binary (path, size, modification time), each model file's fingerprint, the threads and context, the sampling, the
 * measured shape (K, prefixes, repeats, the prompts' lengths: the costs are taken at the workload's contexts), the
 * CPU and the protocol version. The cache is only a shortcut: an unreadable or corrupt file reads as empty and a
 * failed write costs the next advice a measurement — neither may fail an advice.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import { readCacheEntries, writeCacheEntries } from './json-cache-file'
import type { CostTable } from '../engine/replay/advise'
import { userCacheDir } from '../engine/peers/llama-server-binary'

/** Bump when what measureServerCosts measures changes: older entries are then measured again. */
const PROTOCOL_VERSION = 2 // 2: medians over the repeats (llama-server-cost-table.ts)
const MAX_ENTRIES = 100

const Table = z.object({
  targetMs: z.array(z.number()),
  drafts: z.record(z.string(), z.object({ ms: z.number(), fullEntropyMs: z.number().optional() })),
  prefillMs: z.object({ target: z.number(), drafts: z.record(z.string(), z.number()) }).optional()
})
const Entry = z.object({ costs: Table, usedAt: z.string() })
type Entry = z.infer<typeof Entry>

/** The cache file: SPECLAB_SERVER_COST_CACHE, else llama-server-costs.json in the user cache directory. */
export function serverCostCachePath(): string {
  return process.env.SPECLAB_SERVER_COST_CACHE || path.join(userCacheDir(), 'llama-server-costs.json')
}

/** What the binary is: a rebuild (another mtime or size) measures again. */
function binaryIdentity(binary: string): string {
  try {
    const stat = fs.statSync(binary)
    return `${path.resolve(binary)}:${stat.size}:${stat.mtimeMs}`
  } catch {
    return path.resolve(binary)
  }
}

export interface ServerCostKeyParts {
  binary: string
  /** The target's fingerprint, and each draft's by name. */
  target: string
  drafts: Readonly<Record<string, string>>
  threads: { threads: number; batchThreads: number; draftThreads: number }
  contextSize: number
  /** Everything else the measurement depends on (warp, K, prefixes, repeats, prompt lengths). */
  measurement: unknown
}

export function serverCostKey(parts: ServerCostKeyParts): string {
  const cpus = os.cpus()
  const key = {
    protocol: PROTOCOL_VERSION,
    binary: binaryIdentity(parts.binary),
    target: parts.target,
    drafts: Object.entries(parts.drafts).sort(([a], [b]) => a.localeCompare(b)),
    threads: [parts.threads.threads, parts.threads.batchThreads, parts.threads.draftThreads],
    contextSize: parts.contextSize,
    measurement: parts.measurement,
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    platform: process.platform,
    arch: process.arch
  }
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32)
}

/** The table cached under `key`; null when there is none (or the file cannot be read). */
export function cachedServerCosts(key: string, file = serverCostCachePath()): CostTable | null {
  return readCacheEntries(file, Entry)[key]?.costs ?? null
}

/** Stores `costs` under `key` (temporary file + rename); false when the cache cannot be written. */
export function storeServerCosts(key: string, costs: CostTable, file = serverCostCachePath()): boolean {
  const entries = readCacheEntries(file, Entry)
  entries[key] = { costs, usedAt: new Date().toISOString() }
  return writeCacheEntries(file, entries, MAX_ENTRIES)
}
