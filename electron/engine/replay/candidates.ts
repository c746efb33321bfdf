/**
 * The configurations an advisor replays by default, and how long a trace's rollouts must be for them.
 *
 * The grid, per traced draft model: `sd` at γ = 1 … 8; `sd-pmin` at its llama.cpp defaults and at p_min ∈ {0.3, 0.5}
 * (n_max 8); `svip` at the paper's grid h ∈ {0.2, 0.3, 0.4, 0.5} (SVIP §3.1; cap 40); `sd+ngram` at γ = 3, 5; `pearl`
 * at γ = 2 … 8 (PEARL_GAMMAS: its rounds overlap the draft with the verification, which pays where the hardware runs
 * the two at once — a GPU, or spare cores; γ = 1 would commit one token per round, as ar); and,
 * without a draft, `pld` (γ = 3, 5) and `ngram-simple` (llama.cpp's defaults and n = 3, m = 8). With a mid
 * model (`--mid`), Chen's hierarchy `hier-chen` over HIER_CHEN_SHAPES for each other draft.
 * A draft of ANOTHER vocabulary (`foreign`) gets only the methods that map between vocabularies: `sd-tli` and `sd-uad`
 * at γ ∈ {1, 2, 4, 6} (their defaults otherwise). Each of these replays with the live draft (replay/replay.ts), so
 * the grid stays small; a foreign pair's acceptance is usually low, where short drafts win.
 *
 * Rollouts: a round's draft is at most the method's cap long, so after a divergence at most cap − 1 further draft
 * tokens are ever read (replay/draft-trace.ts); `rolloutLengthFor` is the largest cap − 1 over the candidates.
 */
import { prepare } from '../methods/prepare'
import type { Candidate } from './replay'

/** The longest draft one round of `candidate` can make; null when its method has no cap (sd-heuristic without maxDraft). */
export function maxDraftLength(candidate: Candidate): number | null {
  if (candidate.draft === null) return 0 // a lookup drafts no model tokens: no rollout is read
  const { gamma, params } = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params })
  switch (candidate.method) {
    case 'sd-tli':
    case 'sd-uad':
      return 0 // replayed with the live draft (replay/replay.ts): no recorded rollout is read
    case 'hier-chen':
      return 0 // its guesses after a divergence are answered with a filler (replay/replay.ts HIERARCHY_REPLAYABLE)
    case 'sd':
    case 'sd+ngram':
    case 'pearl':
      return gamma
    case 'sd-pmin':
      return Number(params['pmin.max'])
    case 'svip':
      return Number(params['svip.maxDraft'])
    case 'sd-heuristic':
      return Number(params['heuristic.maxDraft']) > 0 ? Number(params['heuristic.maxDraft']) : null
    default:
      return null
  }
}

/** Rollout length covering every candidate; `fallback` for candidates without a known cap. */
export function rolloutLengthFor(candidates: readonly Candidate[], fallback = 16): number {
  return Math.max(0, ...candidates.map((c) => (maxDraftLength(c) ?? fallback) - 1))
}

/** PEARL's windows in the grid: γ = 1 makes every round a pre-verify that commits one token. */
export const PEARL_GAMMAS = [2, 3, 4, 5, 6, 7, 8] as const

/** γ of the cross-vocabulary candidates (sd-tli, sd-uad) of a foreign draft. */
export const CROSS_VOCABULARY_GAMMAS = [1, 2, 4, 6] as const

/**
 * Chen's hierarchy (hier-chen) as the grid tries it, (m, n): m mid-model guesses per target call, each after n
 * small-model guesses — the paper's default (2, 2) and the shapes around it; n = 0 would be sd with the mid model,
 * which the grid has already. Always with `chen.residual=true`: the advisor recommends lossless configurations only.
 */
export const HIER_CHEN_SHAPES: readonly (readonly [m: number, n: number])[] = [
  [1, 1],
  [1, 2],
  [1, 3],
  [2, 1],
  [2, 2],
  [3, 1]
]

/** hier-chen's parameters at shape (m, n) as the advisor runs it: with the exact residual correction (lossless). */
export const hierChenParams = ({ m, n }: { m: number; n: number }) => ({ 'chen.m': m, 'chen.n': n, 'chen.residual': true })

/**
 * `foreign`: the drafts whose vocabulary is not the target's (model/vocabulary-check.ts). `mid`: one of `drafts`
 * that is also the mid model M_q2 of the hierarchies (`--mid`): with it every other draft of the target's vocabulary
 * gets `hier-chen` over HIER_CHEN_SHAPES with that draft as M_q1 (the mid model's own two-model candidates come from
 * its place among the drafts).
 */
export function candidateGrid(drafts: readonly string[], foreign: ReadonlySet<string> = new Set(), mid: string | null = null): Candidate[] {
  const grid: Candidate[] = []
  for (const draft of drafts) {
    if (foreign.has(draft)) {
      for (const method of ['sd-tli', 'sd-uad']) for (const gamma of CROSS_VOCABULARY_GAMMAS) grid.push({ method, gamma, params: {}, draft })
      continue
    }
    for (let gamma = 1; gamma <= 8; gamma++) grid.push({ method: 'sd', gamma, params: {}, draft })
    grid.push({ method: 'sd-pmin', gamma: 5, params: {}, draft })
    for (const p of [0.3, 0.5]) grid.push({ method: 'sd-pmin', gamma: 5, params: { 'pmin.p': p, 'pmin.max': 8 }, draft })
    for (const h of [0.2, 0.3, 0.4, 0.5]) grid.push({ method: 'svip', gamma: 5, params: { 'svip.h': h }, draft })
    for (const gamma of [3, 5]) grid.push({ method: 'sd+ngram', gamma, params: {}, draft })
    for (const gamma of PEARL_GAMMAS) grid.push({ method: 'pearl', gamma, params: {}, draft })
  }
  if (mid !== null && !foreign.has(mid))
    for (const small of drafts.filter((d) => d !== mid && !foreign.has(d)))
      for (const [m, n] of HIER_CHEN_SHAPES) grid.push({ method: 'hier-chen', gamma: 1, params: hierChenParams({ m, n }), draft: small, mid })
  for (const gamma of [3, 5]) grid.push({ method: 'pld', gamma, params: {}, draft: null })
  grid.push({ method: 'ngram-simple', gamma: 5, params: {}, draft: null })
  grid.push({ method: 'ngram-simple', gamma: 5, params: { 'ngramsimple.n': 3, 'ngramsimple.m': 8 }, draft: null })
  return grid
}
