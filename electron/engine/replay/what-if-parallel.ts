/**
 * What if, for a stored run's parallel drafting — PEARL (`pearl`) and the `parallel` option of sd and the draft-model
 * policies (decoders/parallel-drafting.ts; Liu et al., "PEARL: Parallel Speculative Decoding with Adaptive Draft
 * Length", ICLR 2025, §3.2 pre-verify, §3.3 post-verify): the same rounds at another window γ, priced from the
 * run's own rounds as what-if.ts prices a chain method's.
 *
 * Acceptance by chain position. A parallel round tests tokens of one draft CHAIN that may run across rounds: PEARL's
 * pre-verify tests x_1, the next post-verify tests x_2 … x_m and then y_1, drafted after them, and so on while every
 * tested token passes; a rejection, or a bonus token (no look-ahead), starts a new chain. Position c of a chain is
 * drafted from the same context whatever window made it, so
 *   α_c = accepted_c / reached_c
 * counts the tests at chain position c (a token is reached when every token before it in its chain passed). For sd
 * the chain is the round, and α_c is what-if.ts's α_i. A chain grows for as long as its tokens pass, whatever the
 * window, so its far positions are reached by few tests: from the first position with fewer than MIN_CHAIN_TESTS
 * tests on, one α pooled over all of them stands for every position (the chain's tail).
 *
 * Rounds along a prompt. A round starts in state (t, k, c): output position t, k drafted tokens waiting (0: none),
 * the first of them at chain position c. With budget b = --max-tokens − t and the window γ:
 * - (t, 0), PEARL: pre-verify — the draft drafts m = min(γ, b) while the target scores one position; x_1 is tested at
 *   c = 1: passed → (t + 1, m − 1, 2), else → (t + 1, 0).
 * - (t, 0), sd.parallel: the draft drafts w = min(γ, b) alone, then a post-verify of (t, w, 1) in the same round.
 * - (t, k, c), post-verify — the target scores k + 1 positions while the draft drafts m' = min(γ, b − k) after the
 *   waiting tokens; k tokens and then y_1 (when m' > 0) are tested at chain positions c, c + 1, …: all passed → (t + k
 *   + 1, m' − 1, c + k + 1) (m' = 0: a bonus token, → (t + k + 1, 0)); the first failure at a → (t + a + 1, 0).
 * π flows forwards from π(0, 0) = 1 (every move advances t) and is cut at the prompt's recorded output length, as
 * what-if.ts's renewal is. The chains' positions are independent given c: the same approximation as α_i in what-if.ts.
 *
 * Cost. A round that drafts w tokens alone, then o tokens beside a verification of n positions, costs
 *   round = w · c_D + max(o · c_D, c‖_T(n)) + r,   time = λ · Σ_prompts Σ_states π · round
 * c_D: the source's draftMs per drafted token; c‖_T(n): its mean verifyMs of verifications of n positions, timed
 * while the draft ran beside them (made non-decreasing and interpolated as what-if.ts's c_T(k)); r: the mean of each
 * round's totalMs beyond its modeled part; λ: the source's wall time ÷ its recorded rounds so priced. Rounds at
 * index 0 (they also evaluate the prompt) are left out of c_D, c‖_T and r. The source's own timings carry what running
 * both models at once costs on this machine (contention for cores); a sequential run's timings would not, so
 * parallel drafting is priced from parallel rounds only.
 *
 * Support. A row is `supported: false`, with the reason, when more than SUPPORT_SHARE of its rounds verify more
 * positions than any recorded verification did (c‖_T is then taken flat beyond the largest measured). The chain's
 * tail is not a reason: any window reaches it, the run's own included.
 */
import type { StepRecord } from '../decoders/types'
import { fittedCosts, targetCostAt, type CostPoint } from './cost-points'
import type { WhatIfPrediction, WhatIfSource } from './what-if-report'

/** Share of a row's expected rounds verifying more positions than recorded, above which it leaves the run's support. */
export const SUPPORT_SHARE = 0.01
/** Tests a chain position needs for its own α; later positions share the tail's pooled α. */
export const MIN_CHAIN_TESTS = 20

/** The recorded parallel rounds of one prompt, in order. */
type Rounds = readonly StepRecord[]

/** reached_c and accepted_c for c = 1 … (index c − 1), from every prompt's rounds in order. */
export function chainAcceptance(prompts: readonly Rounds[]): { reached: number[]; accepted: number[] } {
  const reached: number[] = []
  const accepted: number[] = []
  for (const rounds of prompts) {
    let chain = 1
    for (const step of rounds) {
      for (let j = 0; j < step.proposed && j <= step.accepted; j++) {
        reached[chain + j - 1] = (reached[chain + j - 1] ?? 0) + 1
        if (j < step.accepted) accepted[chain + j - 1] = (accepted[chain + j - 1] ?? 0) + 1
      }
      const carried = Number(step.decision?.carried ?? 0)
      chain = step.proposed > 0 && step.accepted === step.proposed && carried > 0 ? chain + step.proposed : 1
    }
  }
  return { reached: Array.from(reached, (n) => n ?? 0), accepted: Array.from({ length: reached.length }, (_, i) => accepted[i] ?? 0) }
}

export interface ParallelWindow {
  gamma: number
  /** PEARL's pre-verify after a rejection; false: sd.parallel (the window drafted alone first). */
  preVerify: boolean
  maxTokens: number
}

/** A round's calls: drafted alone first, drafted beside the verification, and the positions it verifies. */
export interface ParallelRoundShape {
  alone: number
  beside: number
  positions: number
}

export interface ParallelRenewal {
  rounds: number
  /** Expected tokens tested per prompt (a tested token is a proposed one). */
  tested: number
  ms: number
  /** Expected rounds that verify more than `recordedPositions` positions. */
  roundsOutside: number
}

/**
 * The header's sums over one prompt of `length` output tokens: rounds, tests and cost(shape) in expectation.
 * `alpha(c)` is the acceptance at chain position c.
 */
export function parallelRenewal(
  length: number,
  window: ParallelWindow,
  alpha: (chain: number) => number,
  cost: (shape: ParallelRoundShape) => number,
  { tailFrom = Infinity, recordedPositions = Infinity }: { tailFrom?: number; recordedPositions?: number } = {}
): ParallelRenewal {
  const { gamma, preVerify, maxTokens } = window
  if (!Number.isInteger(gamma) || gamma < 1) throw new RangeError(`the window γ must be a positive integer, got ${gamma}`)
  // states[t]: (waiting k, chain position c of the first waiting token) → π. Every chain position of the tail (from
  // `tailFrom` on) reads the same α: one state stands for all of them.
  const states = Array.from({ length: length + 1 }, () => new Map<string, { k: number; c: number; p: number }>())
  const add = (t: number, k: number, chain: number, p: number) => {
    const at = states[Math.min(length, t)]!
    const c = Math.min(chain, tailFrom)
    const key = k === 0 ? '0' : `${k}/${c}`
    const into = at.get(key)
    if (into) into.p += p
    else at.set(key, { k, c: k === 0 ? 1 : c, p })
  }
  add(0, 0, 1, 1)
  const result: ParallelRenewal = { rounds: 0, tested: 0, ms: 0, roundsOutside: 0 }
  for (let t = 0; t < length; t++) {
    for (const { k, c, p } of states[t]!.values()) {
      const budget = Math.max(0, maxTokens - t)
      if (budget === 0) continue
      let waiting = k
      let alone = 0
      if (waiting === 0 && preVerify) {
        // Pre-verify: m drafted beside a one-position verification, x_1 tested.
        const m = Math.min(gamma, budget)
        const shape = { alone: 0, beside: m, positions: 1 }
        const pass = alpha(1)
        tally(result, p, shape, 1, cost, recordedPositions)
        add(t + 1, m - 1, 2, p * pass)
        add(t + 1, 0, 1, p * (1 - pass))
        continue
      }
      if (waiting === 0) {
        alone = Math.min(gamma, budget)
        waiting = alone
      }
      const chain = c // 1 where nothing waits (add stores it so)
      const ahead = Math.max(0, Math.min(gamma, budget - waiting))
      const tested = waiting + (ahead > 0 ? 1 : 0)
      const positions = Array.from({ length: tested }, (_, j) => Math.min(chain + j, tailFrom))
      tally(result, p, { alone, beside: ahead, positions: waiting + 1 }, tested, cost, recordedPositions)
      let survive = p
      for (let a = 0; a < tested; a++) {
        const pass = alpha(positions[a]!)
        add(t + a + 1, 0, 1, survive * (1 - pass))
        survive *= pass
      }
      if (ahead > 0) add(t + tested, ahead - 1, chain + tested, survive)
      else add(t + tested + 1, 0, 1, survive)
    }
  }
  return result
}

function tally(into: ParallelRenewal, p: number, shape: ParallelRoundShape, tested: number, cost: (shape: ParallelRoundShape) => number, recordedPositions: number): void {
  into.rounds += p
  into.tested += p * tested
  into.ms += p * cost(shape)
  if (shape.positions > recordedPositions) into.roundsOutside += p
}

/** The source's costs, in the header's terms. */
export interface ParallelCosts {
  draftMsPerToken: number
  roundOverheadMs: number
  /** c‖_T(n) per verified position count n (as `k`), non-decreasing. */
  verifyMs: CostPoint[]
  round(shape: ParallelRoundShape): number
}

const shapeOf = (step: StepRecord): ParallelRoundShape => {
  const beside = Number(step.decision?.overlapCalls ?? step.draftCalls)
  return { alone: Math.max(0, step.draftCalls - beside), beside, positions: Number(step.decision?.positions ?? step.proposed + 1) }
}

/** c‖_T(n) for any n: as targetCostAt prices c_T(k), but flat beyond the largest measured n (those rows are unsupported). */
function verifyAt(points: readonly CostPoint[], n: number): number {
  return points.length === 0 ? 0 : targetCostAt(points, Math.min(n, points.at(-1)!.k)).ms
}

export function parallelCosts(steps: readonly StepRecord[]): ParallelCosts {
  const later = steps.filter((s) => s.index > 0 && s.proposed > 0)
  const calls = later.reduce((n, s) => n + s.draftCalls, 0)
  const draftMsPerToken = calls > 0 ? later.reduce((n, s) => n + s.draftMs, 0) / calls : 0
  const verifyMs = fittedCosts(later.map((step) => ({ k: shapeOf(step).positions, ms: step.verifyMs })))
  const modeled = (shape: ParallelRoundShape) => shape.alone * draftMsPerToken + Math.max(shape.beside * draftMsPerToken, verifyAt(verifyMs, shape.positions))
  const outside = later.map((s) => s.totalMs - modeled(shapeOf(s)))
  const roundOverheadMs = outside.length > 0 ? outside.reduce((a, b) => a + b, 0) / outside.length : 0
  return { draftMsPerToken, roundOverheadMs, verifyMs, round: (shape) => modeled(shape) + roundOverheadMs }
}

/** What predictParallelSource needs of the stored method and run (what-if.ts's WhatIfMethod and WhatIfRun). */
export interface ParallelSourceInput {
  method: string
  /** The source's chain rounds per prompt (request totals left out), with each prompt's output tokens and wall time. */
  prompts: readonly { rounds: Rounds; outputTokens: number; wallMs: number }[]
  tokensPerSecond: number
  /** PEARL (pre-verify after a rejection) or the parallel option of sd / a policy. */
  preVerify: boolean
  /** The run's own window when the source is a fixed one (pearl, sd), else null (a policy's lengths vary). */
  ownGamma: number | null
  maxTokens: number
  gammas: readonly number[]
  arTokensPerSecond: number | null
}

/** The what-if rows of one parallel-drafting source. */
export function predictParallelSource(input: ParallelSourceInput): WhatIfSource {
  const steps = input.prompts.flatMap((p) => p.rounds)
  const { reached, accepted } = chainAcceptance(input.prompts.map((p) => p.rounds))
  const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0)
  const alpha = sum(reached) > 0 ? sum(accepted) / sum(reached) : null
  // Positions 1 … tail − 1 have their own α; from `tail` on one α pooled over the tail's tests.
  const firstSparse = reached.findIndex((n) => n < MIN_CHAIN_TESTS)
  const tail = (firstSparse < 0 ? reached.length : firstSparse) + 1
  const rates = reached.slice(0, tail - 1).map((n, i) => accepted[i]! / n)
  const tailReached = sum(reached.slice(tail - 1))
  const tailAlpha = tailReached > 0 ? sum(accepted.slice(tail - 1)) / tailReached : (rates.at(-1) ?? alpha ?? 0)
  const alphaAt = (c: number) => (c < tail ? rates[c - 1]! : tailAlpha)
  const costs = parallelCosts(steps)
  const knownPositions = costs.verifyMs.at(-1)?.k ?? 0
  const modeled = steps.reduce((n, s) => n + costs.round(shapeOf(s)), 0)
  const wall = input.prompts.reduce((n, p) => n + p.wallMs, 0)
  const timeScale = modeled > 0 ? wall / modeled : 1
  const tokens = input.prompts.reduce((n, p) => n + p.outputTokens, 0)
  const emitted = steps.reduce((n, s) => n + s.emitted, 0)
  const fixed = input.preVerify ? 'pearl' : 'sd'
  const predictions: WhatIfPrediction[] = input.gammas.map((gamma) => {
    const window = { gamma, preVerify: input.preVerify, maxTokens: input.maxTokens }
    let ms = 0
    let rounds = 0
    let tested = 0
    let roundsOutside = 0
    // The renewal depends on the prompt only through its length (most prompts reach --max-tokens).
    const byLength = new Map<number, ParallelRenewal>()
    for (const prompt of input.prompts) {
      let r = byLength.get(prompt.outputTokens)
      if (!r) byLength.set(prompt.outputTokens, (r = parallelRenewal(prompt.outputTokens, window, alphaAt, costs.round, { tailFrom: tail, recordedPositions: knownPositions })))
      ms += timeScale * r.ms
      rounds += r.rounds
      tested += r.tested
      roundsOutside += r.roundsOutside
    }
    const reason =
      rounds > 0 && roundsOutside / rounds > SUPPORT_SHARE ? `it verifies more than ${knownPositions} positions at once, which no recorded verification did` : null
    const tokensPerSecond = ms > 0 ? (tokens * 1000) / ms : 0
    return {
      label: input.preVerify ? `pearl γ = ${gamma}` : `sd parallel γ = ${gamma}`,
      kind: 'fixed',
      method: fixed,
      gamma,
      params: (input.preVerify ? {} : { 'sd.parallel': true }) as Record<string, boolean>,
      value: gamma,
      proposedPerRound: rounds > 0 ? tested / rounds : 0,
      tokensPerRound: rounds > 0 ? tokens / rounds : 0,
      tokensPerSecond,
      speedup: input.arTokensPerSecond ? tokensPerSecond / input.arTokensPerSecond : null,
      own: gamma === input.ownGamma,
      supported: reason === null,
      reason
    }
  })
  const notes = [
    `α_c is read along draft chains that run across rounds (a window drafted beside a verification continues the chain); c‖_T(n) and c_D were timed with both models running at once.`,
    ...(tailReached > 0
      ? [`${tail === 1 ? 'every chain position' : `chain positions ${tail} on`} had fewer than ${MIN_CHAIN_TESTS} tests each: one α pooled over them, ${tailAlpha.toFixed(3)}, stands for all of them.`]
      : [])
  ]
  if (input.ownGamma === null) notes.push(`${input.method}'s windows varied with its policy: the rows are fixed windows of ${fixed === 'pearl' ? 'pearl' : 'sd with --set sd.parallel=true'}, priced from its rounds.`)
  return {
    method: input.method,
    drafter: 'parallel',
    rounds: steps.length,
    maxProposed: steps.reduce((n, s) => Math.max(n, s.proposed), 0),
    acceptance: rates,
    alpha,
    draftMsPerToken: costs.draftMsPerToken,
    roundOverheadMs: costs.roundOverheadMs,
    timeScale,
    measured: {
      tokensPerSecond: input.tokensPerSecond,
      tokensPerRound: steps.length > 0 ? emitted / steps.length : 0,
      speedup: input.arTokensPerSecond ? input.tokensPerSecond / input.arTokensPerSecond : null
    },
    verifyBeside: costs.verifyMs,
    predictions,
    notes
  }
}
