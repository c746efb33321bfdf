/**
 * One builder for the step record (types.ts StepRecord), so a decoder names only the fields its round sets.
 * Every other field takes its neutral value: no draft (proposed, accepted, draftTokens, acceptedDraftTokens = 0,
 * draftEntropies = []), no correction or bonus (false), no policy (threshold, decision = null), no calls and no
 * time (targetCalls, draftCalls, draftMs = 0); `levels` only when given. The record's keys keep StepRecord's order.
 */
import type { StepRecord } from './types'

/**
 * `decision[REQUEST_TOTALS] = true`: the record sums a whole request of a peer engine (llama-server reports totals,
 * not rounds). Its verification rounds are its target calls, and it has no acceptance per draft position.
 */
export const REQUEST_TOTALS = 'requestTotals'

export const isRequestTotals = (step: Pick<StepRecord, 'decision'>): boolean => step.decision?.[REQUEST_TOTALS] === true

/** What every round must say — which round, whose, what it emitted, how long it took; the rest defaults. */
export type StepFields = Pick<StepRecord, 'index' | 'stage' | 'emitted' | 'verifyMs' | 'totalMs'> &
  Partial<Omit<StepRecord, 'index' | 'stage' | 'emitted' | 'verifyMs' | 'totalMs'>>

export function stepRecord(fields: StepFields): StepRecord {
  const record: StepRecord = {
    index: fields.index,
    stage: fields.stage,
    proposed: fields.proposed ?? 0,
    accepted: fields.accepted ?? 0,
    resampled: fields.resampled ?? false,
    bonus: fields.bonus ?? false,
    emitted: fields.emitted,
    draftTokens: fields.draftTokens ?? 0,
    acceptedDraftTokens: fields.acceptedDraftTokens ?? 0,
    draftEntropies: fields.draftEntropies ?? [],
    threshold: fields.threshold ?? null,
    decision: fields.decision ?? null,
    targetCalls: fields.targetCalls ?? 0,
    draftCalls: fields.draftCalls ?? 0,
    draftMs: fields.draftMs ?? 0,
    verifyMs: fields.verifyMs,
    totalMs: fields.totalMs
  }
  if (fields.levels !== undefined) record.levels = fields.levels
  return record
}
