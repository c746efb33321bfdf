/**
 * A trace as JSON, so one recording serves later replays (`speclab advise` records once, replays many candidates,
 * and can replay again with other candidates or another cost curve). Distributions' typed arrays become plain
 * arrays; `version` says which layout a file has.
 */
import type { Distribution } from '../sampling/distribution'
import type { DraftPoint, DraftTrace, PromptTrace, Trace } from './trace'

export const TRACE_VERSION = 1

interface DistributionJson {
  ids: number[]
  probs: number[]
  fullEntropy?: number
}

const distributionToJson = (d: Distribution): DistributionJson => ({
  ids: Array.from(d.ids),
  probs: Array.from(d.probs),
  ...(d.fullEntropy === undefined ? {} : { fullEntropy: d.fullEntropy })
})

const distributionFromJson = (d: DistributionJson): Distribution => ({
  ids: Int32Array.from(d.ids),
  probs: Float64Array.from(d.probs),
  ...(d.fullEntropy === undefined ? {} : { fullEntropy: d.fullEntropy })
})

const pointToJson = (p: DraftPoint) => ({ ...p, distribution: distributionToJson(p.distribution) })
const pointFromJson = (p: ReturnType<typeof pointToJson>): DraftPoint => ({ ...p, distribution: distributionFromJson(p.distribution) })

const draftToJson = (d: DraftTrace) => ({ points: d.points.map(pointToJson), rollouts: d.rollouts.map((r) => r.map(pointToJson)) })
const draftFromJson = (d: ReturnType<typeof draftToJson>): DraftTrace => ({
  points: d.points.map(pointFromJson),
  rollouts: d.rollouts.map((r) => r.map(pointFromJson))
})

const promptToJson = (p: PromptTrace) => ({
  ...p,
  target: p.target.map(distributionToJson),
  drafts: Object.fromEntries(Object.entries(p.drafts).map(([name, d]) => [name, draftToJson(d)]))
})

export function traceToJson(trace: Trace): string {
  return JSON.stringify({ version: TRACE_VERSION, ...trace, prompts: trace.prompts.map(promptToJson) })
}

export function traceFromJson(text: string): Trace {
  const parsed = JSON.parse(text) as Omit<Trace, 'prompts'> & { version: number; prompts: ReturnType<typeof promptToJson>[] }
  if (parsed.version !== TRACE_VERSION) throw new Error(`trace file version ${parsed.version}, this SpecLab reads ${TRACE_VERSION}`)
  const { version: _, prompts, ...rest } = parsed
  return {
    ...rest,
    prompts: prompts.map((p) => ({
      ...p,
      target: p.target.map(distributionFromJson),
      drafts: Object.fromEntries(Object.entries(p.drafts).map(([name, d]) => [name, draftFromJson(d)]))
    }))
  }
}
