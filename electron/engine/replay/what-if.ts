/**
 * What if: the replay's question asked of a stored run. From the recorded rounds of one drafting method (its
 * "source": a draft-model chain method, or a model-free lookup) the other draft lengths, length policies and lookup
 * caps are priced on the same prompts, the same machine and the same load, without running a model.
 *
 * Acceptance. Per draft position i the conditional acceptance α_i = P(token i accepted | tokens 1 … i − 1 were),
 * estimated from the rounds that proposed at least i tokens (metrics/positions.ts: accepted_i / reached_i). A round
 * drafting γ tokens then accepts A tokens with
 *   P(A ≥ i) = Π_{j ≤ i} α_j,   E[A + 1] = Σ_{i=0}^{γ} Π_{j ≤ i} α_j
 * — Leviathan et al. 2023, Eq. 1, E = (1 − α^{γ+1}) / (1 − α), with one α per position instead of one for all
 * (replay/expected.ts). Policies and lookup caps are priced by cutting each recorded round where the other rule
 * would have cut it: a round that proposed k and accepted a, cut at k' ≤ k, accepts min(a, k') (verification is
 * sequential, so tokens 1 … k' are judged alike whatever follows them). Each configuration is a law of rounds
 * (tokens proposed, accepted).
 *
 * Rounds along a prompt. The rounds form a renewal process over the prompt's L output tokens, π(0) = 1,
 *   π(t + A + 1) += π(t) · P(A)   (replay/expected.ts's header)
 * with each round's proposal cut at the --max-tokens budget as the decoder cuts it; E[rounds] = Σ_t π(t).
 *
 * Cost (replay/predict.ts, priced here from the run's own step timings instead of a separate measurement):
 *   round(k) = k · c_D + c_T(k + 1) + o,   time = λ · Σ_prompts Σ_t π(t) · E[round(k_t)]
 * c_T(k): mean verifyMs of the run's single-call rounds scoring k positions (ar's steps give k = 1; every draft
 * method's and lookup's rounds their k), made non-decreasing (replay/isotonic.ts, each k weighted by its rounds), interpolated linearly between
 * measured k and extended along the last slope beyond them; c_D: the source's draftMs per drafted token; o: the
 * source's mean time per round outside the target's verification and the drafting; λ = the source's wall time
 * (Σ each prompt's median) ÷ Σ round(k) over its recorded rounds: the step timings price rounds against each other,
 * the wall clock sets the scale (prefill and time between rounds ride on it; on a loaded machine Σ of a run's step
 * timings was seen to exceed its wall time). Rounds at index 0 (they also evaluate the prompt) are left out of c_T,
 * c_D and o.
 *   tokens/s = Σ L / time,   speedup = tokens/s ÷ ar's tokens/s in the same run (Σ tokens ÷ Σ each prompt's median
 *   wall time: the run's `aggregateTokensPerSecond`, which is what the run's own configuration is compared with).
 *
 * Support. A prediction is `supported: false`, with the reason, when it needs what the run never recorded: a draft
 * position beyond the longest proposal (α̂ pooled is assumed there), a position no round reached, a round the run's
 * own policy ended before the predicted rule would have (what followed was never drafted), or c_T(k) beyond the
 * largest k measured. Without `ar` speedups are null (nothing to price them against).
 */
import type { StepRecord } from '../decoders/types'
import { isRequestTotals } from '../decoders/step-record'
import type { PromptOutcome } from '../metrics/fold'
import { acceptanceByPosition, pooledAlpha } from '../metrics/positions'
import { findMethod, prepare } from '../methods/prepare'
import { fittedCosts, targetCostAt, type CostPoint } from './cost-points'
import { predictParallelSource } from './what-if-parallel'
import type { WhatIfPrediction, WhatIfReport, WhatIfSource } from './what-if-report'

export { WhatIfPrediction, WhatIfReport, WhatIfSource } from './what-if-report'

/** The fixed draft lengths every draft-model source is priced at. */
export const WHAT_IF_GAMMAS = [1, 2, 3, 4, 5, 6, 7, 8] as const
/** Lookup caps priced for every lookup source. */
export const WHAT_IF_CAPS = [1, 2, 3, 4, 5, 6, 7, 8] as const
/** SVIP's threshold grid (SVIP §3.1: h chosen from {0.2, 0.3, 0.4, 0.5}). */
export const SVIP_H_GRID = [0.2, 0.3, 0.4, 0.5] as const

/** One kind of round in a configuration's law: draft tokens proposed, of them accepted, and its probability. */
export interface RoundOutcome {
  proposed: number
  accepted: number
  weight: number
}

/** A stored method's outcomes with the two measures of the run the prediction is compared with. */
export interface WhatIfMethod {
  method: string
  prompts: readonly PromptOutcome[]
  /** Σ tokens ÷ Σ each prompt's median wall time (MethodSummary.aggregateTokensPerSecond). */
  tokensPerSecond: number
}

export interface WhatIfRun {
  methods: readonly WhatIfMethod[]
  maxTokens: number
  gamma: number
  params: Readonly<Record<string, number | string | boolean>>
}

// ── acceptance and the round law ──

/** The chain rounds of a method (a peer's per-request totals are not rounds). */
const roundsOf = (prompts: readonly PromptOutcome[]): StepRecord[] => prompts.flatMap((p) => p.steps.filter((s) => !isRequestTotals(s)))

/** α_i per position i = 1 … positions from the recorded rounds (null where no round reached i). */
export function conditionalAcceptance(steps: readonly Pick<StepRecord, 'proposed' | 'accepted'>[]): (number | null)[] {
  return acceptanceByPosition(steps).map((p) => p.conditionalRate)
}

/** P(A = a), a = 0 … γ, of a γ-token round with conditional rates α_1 … α_γ. */
export function fixedLengthLaw(rates: readonly number[]): RoundOutcome[] {
  const law: RoundOutcome[] = []
  let survive = 1
  rates.forEach((alpha, i) => {
    law.push({ proposed: rates.length, accepted: i, weight: survive * (1 - alpha) })
    survive *= alpha
  })
  law.push({ proposed: rates.length, accepted: rates.length, weight: survive })
  return law
}

/** The recorded rounds, each cut at `cut(step)` tokens, as a law (equal weight per round). */
export function cutLaw(steps: readonly StepRecord[], cut: (step: StepRecord) => number): RoundOutcome[] {
  const merged = new Map<string, RoundOutcome>()
  for (const step of steps) {
    const proposed = Math.min(step.proposed, cut(step))
    const accepted = Math.min(step.accepted, proposed)
    const key = `${proposed}/${accepted}`
    const into = merged.get(key) ?? { proposed, accepted, weight: 0 }
    into.weight += 1 / steps.length
    merged.set(key, into)
  }
  return [...merged.values()]
}

export interface RenewalResult {
  rounds: number
  proposed: number
  ms: number
}

/** The renewal sums of the header over one prompt of `length` output tokens; `cost(k)` prices a k-token round. */
export function renewal(length: number, maxTokens: number, law: readonly RoundOutcome[], cost: (proposed: number) => number): RenewalResult {
  const start = new Float64Array(length + 1)
  start[0] = 1
  const result = { rounds: 0, proposed: 0, ms: 0 }
  for (let t = 0; t < length; t++) {
    const visit = start[t]
    if (visit === 0) continue
    const room = Math.max(0, maxTokens - t)
    for (const outcome of law) {
      const proposed = Math.min(outcome.proposed, room)
      const accepted = Math.min(outcome.accepted, proposed)
      const w = visit * outcome.weight
      result.rounds += w
      result.proposed += w * proposed
      result.ms += w * cost(proposed)
      start[Math.min(length, t + accepted + 1)] += w
    }
  }
  return result
}

// ── costs ──

/** c_T(k) from single-call rounds past each prompt's first (which also evaluates the prompt). */
export function measuredTargetCost(steps: readonly StepRecord[]): CostPoint[] {
  const alone = steps.filter((step) => step.index > 0 && step.targetCalls === 1 && !isRequestTotals(step))
  return fittedCosts(alone.map((step) => ({ k: step.proposed + 1, ms: step.verifyMs })))
}

interface SourceCosts {
  draftMsPerToken: number
  roundOverheadMs: number
  round: (proposed: number) => number
}

function sourceCosts(steps: readonly StepRecord[], curve: readonly CostPoint[]): SourceCosts {
  const later = steps.filter((s) => s.index > 0)
  const drafted = later.reduce((n, s) => n + s.draftTokens, 0)
  const draftMsPerToken = drafted > 0 ? later.reduce((n, s) => n + s.draftMs, 0) / drafted : 0
  const outside = later.map((s) => s.totalMs - s.verifyMs - s.draftTokens * draftMsPerToken)
  const roundOverheadMs = outside.length > 0 ? outside.reduce((a, b) => a + b, 0) / outside.length : 0
  const round = (proposed: number) => proposed * draftMsPerToken + targetCostAt(curve, proposed + 1).ms + roundOverheadMs
  return { draftMsPerToken, roundOverheadMs, round }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** The prompt's wall time: the median of its repeats. */
const wallOf = (prompt: PromptOutcome): number => median((prompt.repeats ?? [{ wallMs: prompt.wallMs }]).map((r) => r.wallMs))

// ── one source ──

type Cut = { label: string; kind: 'svip' | 'cap' | 'as-run'; value: number | null; method: string; gamma: number | null; params: Record<string, number | boolean>; own: boolean; cut: (step: StepRecord) => number; reason: string | null }

/** What the prompt's budget left a round: the tokens before it in its prompt, against --max-tokens. */
function budgetLeft(prompts: readonly PromptOutcome[], maxTokens: number): Map<StepRecord, number> {
  const left = new Map<StepRecord, number>()
  for (const prompt of prompts) {
    let t = 0
    for (const step of prompt.steps) {
      left.set(step, maxTokens - t)
      t += step.emitted
    }
  }
  return left
}

/** SVIP's stop (√(c·H_j) > h after token j) on a recorded round: the tokens it would have proposed, or null if it would not have stopped. */
function svipStop(step: StepRecord, h: number, c: number): number | null {
  const at = step.draftEntropies.findIndex((entropy) => Math.sqrt(c * Math.max(0, entropy)) > h)
  return at < 0 ? null : at + 1
}

function svipCuts(source: string, steps: readonly StepRecord[], prompts: readonly PromptOutcome[], run: WhatIfRun, maxProposed: number): Cut[] {
  const recorded = steps.filter((s) => s.proposed > 0)
  if (recorded.length === 0 || recorded.some((s) => s.draftEntropies.length !== s.proposed)) return []
  // The entropy the steps hold: the whole-vocabulary one where the source's policy asked for it, else the warped q's.
  const full = recorded.some((s) => s.decision?.entropySource === 'full')
  const c = Number(source === 'svip' ? run.params['svip.c'] : prepare('svip', { gamma: run.gamma, params: {} }).params['svip.c'])
  const left = budgetLeft(prompts, run.maxTokens)
  const grid = new Set<number>(SVIP_H_GRID)
  const ownH = source === 'svip' ? Number(run.params['svip.h']) : null
  if (ownH !== null) grid.add(ownH)
  return [...grid]
    .sort((a, b) => a - b)
    .map((h) => {
      // A round that ended before the rule would have stopped, not for the budget nor at the cap: its next tokens were never drafted.
      const censored = recorded.filter((s) => svipStop(s, h, c) === null && s.proposed < maxProposed && (left.get(s) ?? 0) > s.proposed).length
      return {
        label: `svip h = ${h}`,
        kind: 'svip' as const,
        value: h,
        method: 'svip',
        gamma: null,
        params: { 'svip.h': h, 'svip.c': c, 'svip.maxDraft': source === 'svip' ? Number(run.params['svip.maxDraft']) : maxProposed, 'svip.warpedEntropy': !full },
        // The recorded stops are SVIP's own at its h: cutting there again reproduces the run.
        own: h === ownH,
        cut: (s: StepRecord) => svipStop(s, h, c) ?? s.proposed,
        reason: censored > 0 ? `${censored} of ${recorded.length} rounds were ended by ${source}'s own rule before h = ${h} would have stopped them: what followed was never drafted` : null
      }
    })
}

/** The catalog key of a lookup's cap, where it has one that --set can change. */
const LOOKUP_CAP: Record<string, string> = { pld: 'pld.k', 'ngram-simple': 'ngramsimple.m' }

function lookupCuts(source: string, maxProposed: number, run: WhatIfRun): Cut[] {
  const key = LOOKUP_CAP[source]
  const ownCap = key ? Number(run.params[key]) : null
  return WHAT_IF_CAPS.map((cap) => ({
    label: `${source} cap ${cap}`,
    kind: 'cap' as const,
    value: cap,
    method: source,
    gamma: null,
    params: key ? { [key]: cap } : {},
    own: cap === ownCap,
    cut: () => cap,
    reason: cap > maxProposed ? `no round proposed more than ${maxProposed} tokens: what a longer lookup finds was never recorded` : null
  }))
}

function fixedRows(rates: readonly (number | null)[], alpha: number | null, maxProposed: number, ownGamma: number | null): { gamma: number; law: RoundOutcome[]; reason: string | null; own: boolean }[] {
  return WHAT_IF_GAMMAS.map((gamma) => {
    const unreached = rates.slice(0, gamma).findIndex((r) => r === null)
    const filled = Array.from({ length: gamma }, (_, i) => rates[i] ?? alpha ?? 0)
    const reason =
      gamma > maxProposed
        ? `positions ${maxProposed + 1}–${gamma} were never proposed in this run (α̂ = ${(alpha ?? 0).toFixed(3)} assumed there)`
        : unreached >= 0
          ? `no round reached position ${unreached + 1} (α̂ assumed there)`
          : null
    return { gamma, law: fixedLengthLaw(filled), reason, own: gamma === ownGamma }
  })
}

function predictSource(method: WhatIfMethod, kind: Exclude<Drafter, 'parallel'>, run: WhatIfRun, curve: readonly CostPoint[], arTps: number | null): WhatIfSource {
  const steps = roundsOf(method.prompts)
  const rates = conditionalAcceptance(steps)
  const alpha = pooledAlpha(acceptanceByPosition(steps))
  const maxProposed = steps.reduce((n, s) => Math.max(n, s.proposed), 0)
  const costs = sourceCosts(steps, curve)
  const maxK = curve.at(-1)?.k ?? 1
  // The steps' timings price one round against another; the wall clock sets the scale (Σ of a run's step timings
  // can exceed its wall time on a loaded machine, and the prompt's prefill rides on the scale too).
  const modeled = steps.reduce((n, s) => n + costs.round(s.proposed), 0)
  const wall = method.prompts.reduce((n, p) => n + wallOf(p), 0)
  const timeScale = modeled > 0 ? wall / modeled : 1
  const price = (law: readonly RoundOutcome[]) => {
    let tokens = 0
    let ms = 0
    let rounds = 0
    let proposed = 0
    method.prompts.forEach((prompt) => {
      const r = renewal(prompt.outputTokens, run.maxTokens, law, costs.round)
      tokens += prompt.outputTokens
      ms += timeScale * r.ms
      rounds += r.rounds
      proposed += r.proposed
    })
    const tokensPerSecond = ms > 0 ? (tokens * 1000) / ms : 0
    return { tokensPerSecond, tokensPerRound: rounds > 0 ? tokens / rounds : 0, proposedPerRound: rounds > 0 ? proposed / rounds : 0 }
  }
  const costReason = (law: readonly RoundOutcome[]) => {
    const k = law.reduce((n, o) => (o.weight > 0 ? Math.max(n, o.proposed + 1) : n), 1)
    return targetCostAt(curve, k).extrapolated ? `c_T(${k}) was never measured in this run (verifications scored at most ${maxK} positions)` : null
  }
  const row = (r: Omit<WhatIfPrediction, 'proposedPerRound' | 'tokensPerRound' | 'tokensPerSecond' | 'speedup' | 'supported'>, law: RoundOutcome[]): WhatIfPrediction => {
    const priced = price(law)
    const reason = r.reason ?? costReason(law)
    return { ...r, ...priced, speedup: arTps ? priced.tokensPerSecond / arTps : null, supported: reason === null, reason }
  }

  const predictions: WhatIfPrediction[] = []
  const notes: string[] = []
  const isSd = method.method === 'sd'
  if (kind === 'draft-model') {
    for (const f of fixedRows(rates, alpha, maxProposed, isSd ? run.gamma : null))
      predictions.push(row({ label: `sd γ = ${f.gamma}`, kind: 'fixed', method: 'sd', gamma: f.gamma, params: {}, value: f.gamma, own: f.own, reason: f.reason }, f.law))
    if (!isSd) notes.push(`α_i is read from ${method.method}'s rounds: the positions its policy kept drafting, so fixed-γ predictions lean on those.`)
  }
  const cuts = kind === 'lookup' ? lookupCuts(method.method, maxProposed, run) : svipCuts(method.method, steps, method.prompts, run, maxProposed)
  if (kind === 'draft-model' && cuts.length === 0) notes.push('the rounds hold no per-token draft entropies, so entropy thresholds cannot be priced')
  const ownCut = cuts.some((c) => c.own) || (isSd && run.gamma <= WHAT_IF_GAMMAS.at(-1)!)
  if (!ownCut) cuts.push({ label: `${method.method} as run`, kind: 'as-run', value: null, method: method.method, gamma: null, params: {}, own: true, cut: (s) => s.proposed, reason: null })
  for (const c of cuts) predictions.push(row({ label: c.label, kind: c.kind, method: c.method, gamma: c.gamma, params: c.params, value: c.value, own: c.own, reason: c.reason }, cutLaw(steps, c.cut)))

  const emitted = steps.reduce((n, s) => n + s.emitted, 0)
  return {
    method: method.method,
    drafter: kind,
    rounds: steps.length,
    maxProposed,
    acceptance: rates,
    alpha,
    draftMsPerToken: costs.draftMsPerToken,
    roundOverheadMs: costs.roundOverheadMs,
    timeScale,
    measured: { tokensPerSecond: method.tokensPerSecond, tokensPerRound: steps.length > 0 ? emitted / steps.length : 0, speedup: arTps ? method.tokensPerSecond / arTps : null },
    predictions,
    notes
  }
}

type Drafter = WhatIfSource['drafter']

/**
 * Which drafter a stored method's rounds describe: a draft-model chain, a lookup, parallel drafting (PEARL, or sd and
 * the policies with `parallel`: draft and target overlap, so its rounds do not cost draft + verify), or none (null).
 */
export function drafterOf(method: string, params: WhatIfRun['params']): Drafter | null {
  const definition = findMethod(method)
  if (!definition) return null
  if (definition.family === 'lookup') return 'lookup'
  if (definition.id === 'pearl') return 'parallel'
  const chain = definition.id === 'sd' || definition.family === 'policy'
  if (!chain) return null
  return params[`${definition.namespace}.parallel`] === true ? 'parallel' : 'draft-model'
}

/** The what-if of a stored run: one source per drafting method it has rounds of; null when it has none. */
export function whatIfForRun(run: WhatIfRun): WhatIfReport | null {
  const sources = run.methods.flatMap((method) => {
    const drafter = drafterOf(method.method, run.params)
    return drafter !== null && roundsOf(method.prompts).some((s) => s.proposed > 0) ? [{ method, drafter }] : []
  })
  const ar = run.methods.find((m) => m.method === 'ar')
  const sequential = sources.filter((s) => s.drafter !== 'parallel').map((s) => s.method)
  // c_T(k) from calls made alone; a parallel source's verifications ran beside its draft (what-if-parallel.ts).
  const curve = measuredTargetCost([...(ar ? [ar] : []), ...sequential].flatMap((m) => roundsOf(m.prompts)))
  const priced = curve.length > 0 ? sources : sources.filter((s) => s.drafter === 'parallel')
  if (priced.length === 0) return null
  const arTps = ar && ar.tokensPerSecond > 0 ? ar.tokensPerSecond : null
  const notes: string[] = []
  if (arTps === null) notes.push('no ar in this run: speedups are not priced (tokens/s are)')
  return {
    arTokensPerSecond: arTps,
    targetCost: curve,
    sources: priced.map(({ method, drafter }) => (drafter === 'parallel' ? parallelSource(method, run, arTps) : predictSource(method, drafter, run, curve, arTps))),
    notes
  }
}

/** A parallel-drafting source's rows (what-if-parallel.ts): pearl, or sd's parallel option, at every WHAT_IF_GAMMAS window. */
function parallelSource(method: WhatIfMethod, run: WhatIfRun, arTps: number | null): WhatIfSource {
  const preVerify = method.method === 'pearl'
  const fixedWindow = preVerify || method.method === 'sd'
  return predictParallelSource({
    method: method.method,
    prompts: method.prompts.map((p) => ({ rounds: p.steps.filter((s) => !isRequestTotals(s)), outputTokens: p.outputTokens, wallMs: wallOf(p) })),
    tokensPerSecond: method.tokensPerSecond,
    preVerify,
    ownGamma: fixedWindow ? run.gamma : null,
    maxTokens: run.maxTokens,
    gammas: WHAT_IF_GAMMAS,
    arTokensPerSecond: arTps
  })
}
