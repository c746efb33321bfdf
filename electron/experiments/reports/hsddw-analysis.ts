/**
 * HSDDW's ablation (../shared/papers/hsddw-hierarchical-sd-dynamic-window.txt §4.3 Table 2, §4.4 Table 4) from two
 * stored runs on the same prompts — shared by `speclab ablation` (cli/ablation-command.ts) and the
 * `hsddw-ablation` suite report:
 *   run A (the trio): ar, sd (M_q1 → M_p: "70b-68m"), self-verify, pre-verify, pre-self-verify, hsddw[, hier-chen]
 *   run B (mid as the draft): ar, sd (M_q2 → M_p: "70b-7b", Table 2's SD row and Table 4's first row)
 * Every speedup is against the `ar` of its own run. Per level: α (M_q2 vs M_p) and β (M_q1 vs M_p) from the steps'
 * `levels`, and Leviathan's / Chen's closed forms next to what was measured.
 */
import type { MethodSummary, RunReport } from '../../api/runs'
import { prepare } from '../../engine/methods/prepare'
import type { StepRecord } from '../../engine/decoders/types'
import { foldLevels, levelRates, type LevelRates, type LevelTotals } from '../../engine/metrics/levels'
import { chenExpectedTokens, chenTimeImprovement } from '../../engine/theory/chen'
import { expectedTokens } from '../../engine/theory/leviathan'
import { speedupCell, throughputCell } from './common'
import type { IntervalValue } from './model'

/** One stored run of the ablation: its report and the steps of each method. */
export interface AblationRun {
  report: RunReport
  steps(method: string): readonly StepRecord[]
}

export interface AblationRow {
  label: string
  run: 'A' | 'B'
  summary: MethodSummary
  levels: LevelTotals | null
  rates: LevelRates | null
  /** Leviathan α̂ = accepted / (accepted + rejections) for two-model rows (Eq 2 of the on-the-fly paper). */
  alphaHat: number | null
}

/** A report cell of a timed value: the median with its 95 % interval when the run timed more than one (prompt, repeat), else the plain number. */
export type TimedCell = IntervalValue | number | null

export interface AblationResult {
  /** `speedup`: the run report's aggregate; `speedupCell`: what the report tables print (reports/common.ts speedupCell). */
  table2: { row: string; preVerify: boolean; selfVerify: boolean; hsddw: boolean; method: string | null; speedup: number | null; speedupCell: TimedCell }[]
  table4: { model: string; method: string; sigma: number | null; eta: number | null; speedup: number | null; speedupCell: TimedCell }[]
  levels: ({ method: string; tokensPerSecond: number; tokensPerSecondCell: TimedCell; acceptance: number | null; meanAcceptedLength: number | null } & Partial<LevelRates>)[]
  /** `measuredCell` (timed quantities only): what the report table prints in place of `measured`. */
  theory: { method: string; quantity: string; measured: number | null; measuredCell?: TimedCell; predicted: number | null; inputs: string }[]
}

export const ABLATION_LABELS: Record<string, string> = {
  'B:sd': 'sd  M_q2→M_p  ("70b-7b")',
  'A:sd': 'sd  M_q1→M_p  ("70b-68m")',
  'A:self-verify': 'self-verify  M_q1→M_p',
  'A:pre-verify': 'pre-verify',
  'A:pre-self-verify': 'pre-self-verify',
  'A:hsddw': 'hsddw',
  'A:hier-chen': 'hier-chen'
}

/** Rows keyed `A:<method>` / `B:<method>` (ar left out): summaries, per-level folds and α̂. */
export function collectAblationRows(runA: AblationRun, runB: AblationRun | null): Map<string, AblationRow> {
  const rows = new Map<string, AblationRow>()
  for (const [run, data] of [['A', runA], ['B', runB]] as const) {
    if (!data) continue
    for (const summary of data.report.methods) {
      if (summary.method === 'ar') continue
      const steps = data.steps(summary.method)
      const levels = foldLevels(steps)
      let accepted = 0
      let rejections = 0
      for (const s of steps) {
        accepted += s.accepted
        if (s.resampled) rejections += 1
      }
      const key = `${run}:${summary.method}`
      rows.set(key, {
        label: ABLATION_LABELS[key] ?? key,
        run,
        summary,
        levels,
        rates: levels ? levelRates(levels) : null,
        alphaHat: accepted + rejections > 0 ? accepted / (accepted + rejections) : null
      })
    }
  }
  return rows
}

const fmt = (v: number, digits = 3) => (Number.isInteger(v) ? String(v) : v.toFixed(digits))

export function analyseAblation(rows: Map<string, AblationRow>, reportA: RunReport, K: number): AblationResult {
  const speedup = (key: string) => rows.get(key)?.summary.speedup ?? null
  const shown = (key: string) => speedupCell(rows.get(key)?.summary)
  const table2 = [
    { row: 'SD (M_q2 → M_p)', preVerify: false, selfVerify: false, hsddw: false, key: 'B:sd' },
    { row: '+ Pre-verify', preVerify: true, selfVerify: false, hsddw: false, key: 'A:pre-verify' },
    { row: '+ Self-verify', preVerify: false, selfVerify: true, hsddw: false, key: 'A:self-verify' },
    { row: '+ Pre + Self-verify', preVerify: true, selfVerify: true, hsddw: false, key: 'A:pre-self-verify' },
    { row: 'HSDDW', preVerify: false, selfVerify: false, hsddw: true, key: 'A:hsddw' }
  ].map(({ key, ...rest }) => ({ ...rest, method: rows.has(key) ? key.slice(2) : null, speedup: speedup(key), speedupCell: shown(key) }))

  const table4 = [
    ['70b-7b  (sd M_q2 → M_p)', 'B:sd'],
    ['70b-68m (sd M_q1 → M_p)', 'A:sd'],
    ['Pre+Self-verify', 'A:pre-self-verify'],
    ['HSDDW', 'A:hsddw']
  ].map(([model, key]) => {
    const s = rows.get(key)?.summary
    return { model, method: key.slice(2), sigma: s?.sigma ?? null, eta: s?.eta ?? null, speedup: s?.speedup ?? null, speedupCell: speedupCell(s) }
  })

  const levels = [...rows.values()].map((r) => ({
    method: r.label,
    tokensPerSecond: r.summary.tokensPerSecond,
    tokensPerSecondCell: throughputCell(r.summary),
    acceptance: r.rates?.acceptanceByP ?? r.alphaHat,
    meanAcceptedLength: r.summary.meanAcceptedLength,
    ...(r.rates ?? {})
  }))

  // Theory next to measurement. Per-call costs: t_p = ar's time per token in the same run; t_q, t_s = mean forward
  // call times of M_q2 / M_q1 inside hier-chen (Chen Definition 3.3: c = t_q/t_p, c_s = t_s/t_q).
  const theory: AblationResult['theory'] = []
  for (const key of ['B:sd', 'A:sd']) {
    const r = rows.get(key)
    if (!r || r.alphaHat === null) continue
    theory.push({
      method: r.label,
      quantity: 'tokens per target call (Leviathan)',
      measured: r.summary.targetCalls > 0 ? r.summary.outputTokens / r.summary.targetCalls : null,
      predicted: expectedTokens(r.alphaHat, K),
      inputs: `α̂ = ${fmt(r.alphaHat)} (accepted / examined), γ = ${K}`
    })
  }
  const chen = rows.get('A:hier-chen')
  const arA = reportA.methods.find((m) => m.method === 'ar')
  if (chen?.levels && chen.rates?.alpha != null && chen.rates.beta != null) {
    // The run's resolved chen.m / chen.n (runs stored before resolved params were recorded: the catalog's defaults).
    const resolved = { ...prepare('hier-chen', { gamma: K, params: {} }).params, ...reportA.config.params }
    const m = Number(resolved['chen.m'])
    const n = Number(resolved['chen.n'])
    const alpha = chen.rates.alpha
    const beta = chen.rates.beta
    theory.push({
      method: 'hier-chen',
      quantity: 'tokens per target call (Chen Thm 3.2)',
      measured: chen.rates.tokensPerTargetCall,
      predicted: chenExpectedTokens(alpha, beta, m, n),
      inputs: `α = ${fmt(alpha)}, β = ${fmt(beta)} (expected acceptance), m = ${m}, n = ${n}`
    })
    const tp = arA && arA.outputTokens > 0 ? arA.wallMs / arA.outputTokens : null
    const tq = chen.levels.q2.calls > 0 ? chen.levels.q2.ms / chen.levels.q2.calls : null
    const ts = chen.levels.q1.calls > 0 ? chen.levels.q1.ms / chen.levels.q1.calls : null
    if (tp && tq && ts) {
      const c = tq / tp
      const cs = ts / tq
      theory.push({
        method: 'hier-chen',
        quantity: 'speedup (Chen Thm 3.4)',
        measured: chen.summary.speedup,
        measuredCell: speedupCell(chen.summary),
        predicted: chenTimeImprovement(alpha, beta, m, n, c, cs),
        inputs: `c = ${fmt(c)}, c_s = ${fmt(cs)} (measured call times)`
      })
    }
  }
  return { table2, table4, levels, theory }
}
