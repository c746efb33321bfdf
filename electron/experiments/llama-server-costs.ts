/**
 * llama-server's cost table for one trio at one arm's threads (engine/peers/llama-server-cost-table.ts), from the
 * cache (llama-server-cost-cache.ts) or measured on servers started for it by the peer methods' own launcher
 * (peers/llama-server-process.ts): one running the target alone at the arm's `-t`/`-tb`, and one per draft running
 * that draft as its only model at the arm's draft threads. The servers are stopped once measured, so none holds a
 * model or a core while the verification runs.
 */
import type { ServerCosts } from '../api/advice'
import type { CostTable } from '../engine/replay/advise'
import { cuts, withDefaults, type CurveMeasurement } from '../engine/replay/cost-curve'
import { measureServerCosts } from '../engine/peers/llama-server-cost-table'
import { localServer, stopLocalServer, type LocalServerSpec, type PeerServer } from '../engine/peers/llama-server-process'
import { cachedServerCosts, serverCostKey, storeServerCosts } from './llama-server-cost-cache'
import type { ArmThreads } from './peer-bench'

export interface ServerCostRequest {
  binary: string
  target: { file: string; fingerprint: string }
  /** The drafts the llama-server arms use, by name. */
  drafts: Readonly<Record<string, { file: string; fingerprint: string }>>
  threads: ArmThreads
  contextSize: number
  /** replay/cost-curve.ts's measurement of the workload (experiments/advise.ts measurementOf). */
  measurement: CurveMeasurement
  prompts: readonly (readonly number[])[]
  /** The cache file (default: llama-server-cost-cache.ts serverCostCachePath). */
  cacheFile?: string
  /** Stops the measurement (the advice was cancelled). */
  signal?: AbortSignal
}

export interface MeasuredServerCosts {
  costs: CostTable
  source: ServerCosts['source']
}

/** What the measurement depends on besides the models and threads: the cache key's part. */
function shapeOf(request: ServerCostRequest) {
  const m = withDefaults(request.measurement)
  return { warp: m.warp, maxPositions: m.maxPositions, repeats: m.repeats, prefixes: cuts(m, m.maxPositions), prompts: request.prompts.map((p) => p.length) }
}

function specsOf(request: ServerCostRequest): { target: LocalServerSpec; drafts: Record<string, LocalServerSpec> } {
  const base = { binary: request.binary, draft: null, contextSize: request.contextSize, speculative: [] }
  const { threads, batchThreads, draftThreads } = request.threads
  return {
    target: { ...base, target: request.target.file, threads, batchThreads, draftThreads: threads },
    drafts: Object.fromEntries(Object.entries(request.drafts).map(([name, d]) => [name, { ...base, target: d.file, threads: draftThreads, batchThreads: draftThreads, draftThreads }]))
  }
}

export async function llamaServerCosts(request: ServerCostRequest): Promise<MeasuredServerCosts> {
  const key = serverCostKey({
    binary: request.binary,
    target: request.target.fingerprint,
    drafts: Object.fromEntries(Object.entries(request.drafts).map(([name, d]) => [name, d.fingerprint])),
    threads: request.threads,
    contextSize: request.contextSize,
    measurement: shapeOf(request)
  })
  const cached = cachedServerCosts(key, request.cacheFile)
  if (cached) return { costs: cached, source: 'cached' }
  const specs = specsOf(request)
  try {
    const target = await localServer(specs.target)
    const drafts: Record<string, PeerServer> = {}
    for (const [name, spec] of Object.entries(specs.drafts)) drafts[name] = await localServer(spec)
    const costs = await measureServerCosts({ target, drafts, measurement: request.measurement, prompts: request.prompts, signal: request.signal })
    storeServerCosts(key, costs, request.cacheFile)
    return { costs, source: 'measured' }
  } finally {
    for (const spec of [specs.target, ...Object.values(specs.drafts)]) await stopLocalServer(spec)
  }
}
