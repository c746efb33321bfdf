/**
 * The workload's profile: the three numbers speculation's speedup is made of, read from the trace and the cost
 * table — so that an advice which says "speculation does not pay" can say why.
 *
 * - acceptance per draft position j (per draft model): the chance that the j-th drafted token of a round is
 *   accepted given the ones before it were. At output position i the acceptance is α_i = 1[argmax q_i = token_i]
 *   under greedy decoding and the overlap Σ min(p_i, q_i) under sampling; a round starting at i reaches position j
 *   with probability Π_{t<j} α_{i+t}, so position j's acceptance is E_i[Π_{t≤j} α] / E_i[Π_{t<j} α], over every
 *   start i of every prompt. Teacher-forced: after accepted tokens the draft's context IS the target's. A draft of
 *   another vocabulary has no teacher-forced points (replay/trace.ts TracedModel.foreign): its acceptance is read
 *   from the replayed rounds of its sd-tli candidate instead (replay/round-acceptance.ts, `acceptanceFrom: 'rounds'`).
 * - verification cost c_T(k)/c_T(1): what scoring k tokens in one target call costs in single-token calls.
 * - draft cost c_D/c_T(1): a drafted token in target single-token calls.
 */
import { isGreedy } from '../sampling/warp'
import type { CostTable } from './advise'
import { overlap } from './expected'
import type { Trace } from './trace'

export interface DraftProfile {
  /** acceptance[j − 1]: position j's conditional acceptance; null where no round reaches it. */
  acceptance: (number | null)[]
  /** 'trace': teacher-forced on the trace; 'rounds': from replayed cross-vocabulary rounds (a foreign draft). */
  acceptanceFrom?: 'trace' | 'rounds'
  /** ms per drafted token, and the same in target single-token calls. */
  msPerToken: number | null
  relativeCost: number | null
}

export interface WorkloadProfile {
  /** c_T(k), k = 1 … K, ms. */
  targetMs: number[]
  /** c_T(k)/c_T(1), k = 1 … K. */
  verifyCost: number[]
  /** CostTable.decodeOutsideMs: what each decode paid outside its rounds and its prompt's processing, ms. */
  decodeOutsideMs?: number
  drafts: Record<string, DraftProfile>
}

/** α_i of every output position of every prompt for one draft (greedy: 0/1; sampling: the overlap). */
function acceptances(trace: Trace, draft: string): number[][] {
  const greedy = isGreedy(trace.warp)
  return trace.prompts.map((prompt) => {
    const points = prompt.drafts[draft]?.points ?? []
    return points.map((point, i) => (greedy ? (point.argmax === prompt.tokens[i] ? 1 : 0) : overlap(prompt.target[i], point.distribution)))
  })
}

/** Position j's conditional acceptance for j = 1 … positions (null where no round reaches j). */
export function acceptancePerPosition(alphas: readonly (readonly number[])[], positions: number): (number | null)[] {
  // Over the starts whose round can draft position j: reached sums Π_{t<j−1} α (the round got to j), accepted Π_{t<j} α.
  const reached = new Array<number>(positions).fill(0)
  const accepted = new Array<number>(positions).fill(0)
  for (const alpha of alphas)
    for (let start = 0; start < alpha.length; start++) {
      let product = 1
      for (let j = 0; j < positions && start + j < alpha.length; j++) {
        reached[j] += product
        product *= alpha[start + j]
        accepted[j] += product
      }
    }
  return reached.map((n, j) => (n > 0 ? accepted[j] / n : null))
}

/** `fromRounds`: each foreign draft's acceptance per position from replayed rounds (replay/advise.ts roundAcceptanceByDraft). */
export function workloadProfile(trace: Trace, costs: CostTable, positions = 8, fromRounds: Readonly<Record<string, (number | null)[]>> = {}): WorkloadProfile {
  const single = costs.targetMs[0]
  const ratio = (ms: number | undefined) => (ms === undefined || !(single > 0) ? null : ms / single)
  const drafts: Record<string, DraftProfile> = {}
  for (const [name, model] of Object.entries(trace.drafts)) {
    const ms = costs.drafts[name]?.ms
    const acceptance = model.foreign
      ? Array.from({ length: positions }, (_, j) => fromRounds[name]?.[j] ?? null)
      : acceptancePerPosition(acceptances(trace, name), positions)
    drafts[name] = { acceptance, acceptanceFrom: model.foreign ? 'rounds' : 'trace', msPerToken: ms ?? null, relativeCost: ratio(ms) }
  }
  const outside = costs.decodeOutsideMs === undefined ? {} : { decodeOutsideMs: costs.decodeOutsideMs }
  return { targetMs: [...costs.targetMs], verifyCost: costs.targetMs.map((ms) => (single > 0 ? ms / single : 0)), ...outside, drafts }
}
