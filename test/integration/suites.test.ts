/**
 * Every experiment suite runs end to end with --quick on the shared models (target5M-f32, mid1M, 260K),
 * its report renders as HTML and Markdown with every table and chart the suite declares, and the report's numbers
 * equal an independent recomputation from the stored rows — plain SQL sums over prompt_results, steps and
 * result_scores here, not the folds the report uses. Re-rendering from a fresh connection gives the same files.
 * Then: a cancelled suite run is marked cancelled and keeps its finished cells; a resume runs only the rest.
 *
 * Models: $SPECLAB_MODELS, default ../shared/models next to the project.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { renderSuiteReport } from '../../electron/experiments/reports/index'
import type { ReportChart, ReportSection, ReportTable, SuiteReport } from '../../electron/experiments/reports/model'
import { runSuite, type PlannedCell } from '../../electron/experiments/suite-runner'
import { loadBuiltinDataset } from '../../electron/experiments/prompts'
import { MODEL_FILES, MODEL_FREE_METHODS, MODEL_FREE_SHORT_KEYS, PEER_LLAMA_METHODS, PEER_SPECLAB_METHODS, SUITES, findSuite } from '../../electron/experiments/suites'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import { loadLlamaModel } from '../../electron/engine/model/llama-cpp-model'
import { RunStore } from '../../electron/store/run-store'
import { SuiteStore } from '../../electron/store/suite-store'

const here = path.dirname(fileURLToPath(import.meta.url))
const MODELS_DIR = path.resolve(process.env.SPECLAB_MODELS ?? path.resolve(here, '../../../shared/models'))
const missing = [MODEL_FILES.target, MODEL_FILES.mid, MODEL_FILES.draft].map((f) => path.join(MODELS_DIR, f)).filter((f) => !fs.existsSync(f))
if (missing.length > 0) console.warn(`\n!!! suite tests SKIPPED: missing ${missing.join(', ')} (set SPECLAB_MODELS) !!!\n`)
const withModels = missing.length === 0 ? describe : describe.skip

// ─── The oracle: raw SQL over the stored rows ─────────────────────────────────────────────────────────────────────

interface Raw {
  tokens: number
  wallMs: number
  proposed: number
  accepted: number
  draftTokens: number
  acceptedDraftTokens: number
  targetCalls: number
  emitted: number
  rounds: number
}

type Where = { category?: string; notCategory?: RegExp; onlyCategory?: RegExp; promptIndex?: number }

function resultsOf(db: Database.Database, runId: number, method: string, where: Where) {
  return (
    db.prepare(`SELECT id, category, prompt_index, output_count, wall_ms FROM prompt_results WHERE run_id = ? AND method = ? AND status = 'done'`).all(runId, method) as {
      id: number
      category: string | null
      prompt_index: number
      output_count: number
      wall_ms: number
    }[]
  ).filter(
    (r) =>
      (where.category === undefined || r.category === where.category) &&
      (where.onlyCategory === undefined || (r.category !== null && where.onlyCategory.test(r.category))) &&
      (where.notCategory === undefined || !(r.category !== null && where.notCategory.test(r.category))) &&
      (where.promptIndex === undefined || r.prompt_index === where.promptIndex)
  )
}

function raw(db: Database.Database, runId: number, method: string, where: Where = {}): Raw {
  const results = resultsOf(db, runId, method, where)
  const out: Raw = { tokens: 0, wallMs: 0, proposed: 0, accepted: 0, draftTokens: 0, acceptedDraftTokens: 0, targetCalls: 0, emitted: 0, rounds: 0 }
  for (const r of results) {
    out.tokens += r.output_count
    out.wallMs += r.wall_ms
    const s = db
      .prepare(
        `SELECT SUM(proposed) p, SUM(accepted) a, SUM(draft_tokens) d, SUM(accepted_draft_tokens) ad, SUM(target_calls) t, SUM(emitted) e,
                SUM(CASE WHEN proposed > 0 THEN 1 ELSE 0 END) rounds FROM steps WHERE result_id = ?`
      )
      .get(r.id) as { p: number | null; a: number | null; d: number | null; ad: number | null; t: number | null; e: number | null; rounds: number | null }
    out.proposed += s.p ?? 0
    out.accepted += s.a ?? 0
    out.draftTokens += s.d ?? 0
    out.acceptedDraftTokens += s.ad ?? 0
    out.targetCalls += s.t ?? 0
    out.emitted += s.e ?? 0
    out.rounds += s.rounds ?? 0
  }
  return out
}

const tps = (r: Raw) => (r.tokens * 1000) / r.wallMs
const speedup = (db: Database.Database, runId: number, method: string, where: Where = {}, baseline = 'ar') =>
  tps(raw(db, runId, method, where)) / tps(raw(db, runId, baseline, where))

/** tok/s of every timed decode, keyed `<prompt>/<repeat>`: result_repeats' rows, or prompt_results' one decode. */
function timedDecodes(db: Database.Database, runId: number, method: string, where: Where = {}): Map<string, number> {
  const out = new Map<string, number>()
  for (const r of resultsOf(db, runId, method, where)) {
    const repeats = db.prepare(`SELECT repeat, wall_ms, output_count FROM result_repeats WHERE result_id = ?`).all(r.id) as { repeat: number; wall_ms: number; output_count: number }[]
    for (const x of repeats.length > 0 ? repeats : [{ repeat: 0, wall_ms: r.wall_ms, output_count: r.output_count }])
      out.set(`${r.prompt_index}/${x.repeat}`, x.wall_ms > 0 ? (x.output_count * 1000) / x.wall_ms : 0)
  }
  return out
}
const medianOf = (values: number[]) => {
  const v = [...values].sort((a, b) => a - b)
  const mid = v.length >> 1
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2
}
/** Speedup of every timed decode over the baseline's (ar's) decode of the same prompt and repeat. */
function pairedSpeedups(db: Database.Database, runId: number, method: string, where: Where = {}, baseline = 'ar'): number[] {
  const base = timedDecodes(db, runId, baseline, where)
  return [...timedDecodes(db, runId, method, where)].flatMap(([key, v]) => (base.get(key) ? [v / base.get(key)!] : []))
}
const sigma = (r: Raw) => 1 - r.acceptedDraftTokens / r.draftTokens
const eta = (r: Raw) => r.targetCalls / r.emitted
function perplexity(db: Database.Database, runId: number, method: string): number {
  const row = db
    .prepare(`SELECT SUM(s.nll) nll, SUM(s.tokens) n FROM result_scores s JOIN prompt_results p ON p.id = s.result_id WHERE p.run_id = ? AND p.method = ?`)
    .get(runId, method) as { nll: number; n: number }
  return Math.exp(row.nll / row.n)
}

// ─── Report accessors ─────────────────────────────────────────────────────────────────────────────────────────────

function section(report: SuiteReport, id: string): ReportSection {
  const found = report.sections.find((s) => s.id === id)
  if (!found) throw new Error(`section ${id} missing`)
  return found
}
function tableOf(report: SuiteReport, sectionId: string, tableId?: string): ReportTable {
  const t = section(report, sectionId).measured.find((m): m is ReportTable => m.kind === 'table' && (tableId === undefined || m.id === tableId))
  if (!t) throw new Error(`table ${tableId ?? sectionId} missing`)
  return t
}
function chartOf(report: SuiteReport, sectionId: string, chartId: string): ReportChart {
  const c = section(report, sectionId).measured.find((m): m is ReportChart => m.kind === 'chart' && m.id === chartId)
  if (!c) throw new Error(`chart ${chartId} missing`)
  return c
}
const rowOf = (t: ReportTable, first: string | number) => {
  const row = t.rows.find((r) => r[0] === first)
  if (!row) throw new Error(`row ${first} missing in ${t.id}`)
  return row
}
const colOf = (t: ReportTable, label: string) => {
  const i = t.columns.findIndex((c) => c.label === label)
  if (i < 0) throw new Error(`column ${label} missing in ${t.id}`)
  return i
}
const seriesY = (c: ReportChart, name: string, x: number | string) => c.series.find((s) => s.name === name)?.points.find((p) => p.x === x)?.y
const close = (actual: unknown, expected: number) => expect(actual as number).toBeCloseTo(expected, 9)
/**
 * A timed report cell (speedup, tok/s): over two or more timed decodes, the median of theirs with a 95 % interval
 * around it; over one, the plain aggregate.
 */
function closeTimed(actual: unknown, decodes: number[], aggregate: number): void {
  if (decodes.length < 2) return close(actual, aggregate)
  expect(actual).toBeTypeOf('object')
  const interval = actual as { median: number; low: number; high: number }
  close(interval.median, medianOf(decodes))
  expect(interval.low).toBeLessThanOrEqual(interval.median)
  expect(interval.high).toBeGreaterThanOrEqual(interval.median)
}
const closeSpeedup = (actual: unknown, db: Database.Database, runId: number, method: string, where: Where = {}, baseline = 'ar') =>
  closeTimed(actual, pairedSpeedups(db, runId, method, where, baseline), speedup(db, runId, method, where, baseline))
/** A method's speedup as every surface shows it: the median of its paired speedups (the aggregate ratio without any). */
const medianSpeedup = (db: Database.Database, runId: number, method: string) => {
  const paired = pairedSpeedups(db, runId, method, {}, 'ar')
  return paired.length > 0 ? medianOf(paired) : speedup(db, runId, method, {}, 'ar')
}
/** A method's tok/s as every surface shows it: the median over its timed decodes (the aggregate without any). */
const medianTps = (db: Database.Database, runId: number, method: string, where: Where = {}) => {
  const decodes = [...timedDecodes(db, runId, method, where).values()]
  return decodes.length > 0 ? medianOf(decodes) : tps(raw(db, runId, method, where))
}
const closeTps = (actual: unknown, db: Database.Database, runId: number, method: string, where: Where = {}) =>
  closeTimed(actual, [...timedDecodes(db, runId, method, where).values()], tps(raw(db, runId, method, where)))

/** Section has something measured: a table with rows or a chart with points. */
const hasData = (s: ReportSection) =>
  s.measured.some((m) => (m.kind === 'table' ? m.rows.length > 0 : m.series.some((series) => series.points.length > 0)))

// ─── Per-suite checks against the oracle ──────────────────────────────────────────────────────────────────────────

type Check = (db: Database.Database, report: SuiteReport, runOf: (key: string) => number, plan: PlannedCell[]) => void

const CHECKS: Record<string, Check> = {
  smoke: (db, report, runOf) => {
    const run = runOf('smoke/stories')
    const summary = tableOf(report, 'summary', 'summary')
    for (const method of ['ar', 'sd', 'svip', 'hsddw', 'dsbd']) {
      const row = rowOf(summary, method)
      const r = raw(db, run, method)
      closeTps(row[colOf(summary, 'tok/s')], db, run, method)
      if (method === 'ar') close(row[colOf(summary, 'speedup')], 1)
      else closeSpeedup(row[colOf(summary, 'speedup')], db, run, method)
      close(row[colOf(summary, 'η')], eta(r))
      if (method === 'ar' || method === 'dsbd') close(row[colOf(summary, 'PPL')], perplexity(db, run, method))
      else expect(row[colOf(summary, 'PPL')]).toBeNull() // only ar and dsbd are scored
      if (method !== 'ar') {
        close(row[colOf(summary, 'σ')], sigma(r))
        close(row[colOf(summary, 'acceptance')], r.accepted / r.proposed)
      }
    }
    close(chartOf(report, 'speedup', 'speedup').series[0].points.find((p) => p.x === 'hsddw')!.y, speedup(db, run, 'hsddw'))
  },

  'hsddw-ablation': (db, report, runOf) => {
    const trio = runOf('table2/mixed/trio')
    const mid = runOf('table2/mixed/mid')
    const t2 = tableOf(report, 'table2', 'table2')
    closeSpeedup(rowOf(t2, 'SD (M_q2 → M_p)')[colOf(t2, 'mixed')], db, mid, 'sd')
    closeSpeedup(rowOf(t2, '+ Pre-verify')[colOf(t2, 'mixed')], db, trio, 'pre-verify')
    closeSpeedup(rowOf(t2, '+ Self-verify')[colOf(t2, 'mixed')], db, trio, 'self-verify')
    closeSpeedup(rowOf(t2, '+ Pre + Self-verify')[colOf(t2, 'mixed')], db, trio, 'pre-self-verify')
    closeSpeedup(rowOf(t2, 'HSDDW')[colOf(t2, 'mixed')], db, trio, 'hsddw')
    const t4 = tableOf(report, 'table4', 'table4')
    for (const [model, run, method] of [
      ['70b-7b  (sd M_q2 → M_p)', mid, 'sd'],
      ['70b-68m (sd M_q1 → M_p)', trio, 'sd'],
      ['Pre+Self-verify', trio, 'pre-self-verify'],
      ['HSDDW', trio, 'hsddw']
    ] as const) {
      const r = raw(db, run, method)
      close(rowOf(t4, model)[colOf(t4, 'σ (%)')], sigma(r))
      close(rowOf(t4, model)[colOf(t4, 'η (%)')], eta(r))
      closeSpeedup(rowOf(t4, model)[colOf(t4, 'speedup')], db, run, method)
    }
    const t3 = tableOf(report, 'table3', 'table3')
    closeSpeedup(rowOf(t3, 'HSDDW')[colOf(t3, 'only Math')], db, trio, 'hsddw', { onlyCategory: /math/i })
    closeSpeedup(rowOf(t3, 'SD (M_q2 → M_p)')[colOf(t3, 'rm Math')], db, mid, 'sd', { notCategory: /math/i })
    const fig7 = chartOf(report, 'fig7', 'fig7')
    close(seriesY(fig7, 'HSDDW', 4), medianTps(db, runOf('fig7/K=4/trio'), 'hsddw'))
    close(seriesY(fig7, 'HSDDW', 10), medianTps(db, trio, 'hsddw'))
    close(seriesY(fig7, 'sd M_q2→M_p (70b-7b)', 4), medianTps(db, runOf('fig7/K=4/mid'), 'sd'))
    // Figure 8: the proposed γ of every round of the chosen prompt, straight from the steps table.
    const fig8 = chartOf(report, 'fig8', 'fig8')
    const promptIndex = 3 // --quick: 4 prompts → the last one
    const windows = (run: number, method: string) =>
      (
        db
          .prepare(
            `SELECT s.proposed FROM steps s JOIN prompt_results p ON p.id = s.result_id
             WHERE p.run_id = ? AND p.method = ? AND p.prompt_index = ? AND s.proposed > 0 ORDER BY s.step_index`
          )
          .all(run, method, promptIndex) as { proposed: number }[]
      ).map((r) => r.proposed)
    expect(fig8.series.find((s) => s.name === 'HSDDW (70b-7b-68m)')!.points.map((p) => p.y)).toEqual(windows(trio, 'hsddw'))
    expect(fig8.series.find((s) => s.name === 'sd M_q2→M_p (70b-7b)')!.points.map((p) => p.y)).toEqual(windows(mid, 'sd'))
    // Figure 6: as many accepted / rejected entropies as the steps say.
    const entropyTable = tableOf(report, 'fig6', 'fig6-means')
    const r = raw(db, trio, 'sd')
    const rejected = (db.prepare(`SELECT COUNT(*) n FROM steps s JOIN prompt_results p ON p.id = s.result_id WHERE p.run_id = ? AND p.method = 'sd' AND s.accepted < s.proposed`).get(trio) as { n: number }).n
    expect(rowOf(entropyTable, '70b-68m analogue: sd M_q1 → M_p')[1]).toBe(r.accepted)
    expect(rowOf(entropyTable, '70b-68m analogue: sd M_q1 → M_p')[3]).toBe(rejected)
  },

  svip: (db, report, runOf) => {
    const base = runOf('table1/mixed/base')
    const h = runOf('table1/mixed/h=0.3')
    const t1 = tableOf(report, 'table1', 'table1-mixed')
    for (const category of ['story', 'chat', 'code', 'math']) {
      closeSpeedup(rowOf(t1, 'Const. (γ = 5)')[colOf(t1, category)], db, base, 'sd', { category })
      closeSpeedup(rowOf(t1, 'Heuristics (HF)')[colOf(t1, category)], db, base, 'sd-heuristic', { category })
      closeSpeedup(rowOf(t1, 'SVIP h = 0.3')[colOf(t1, category)], db, h, 'svip', { category })
    }
    closeSpeedup(rowOf(t1, 'SVIP h = 0.3')[colOf(t1, 'all prompts')], db, h, 'svip')
    const t2 = tableOf(report, 'table2', 'table2')
    for (const L of [8, 16]) closeSpeedup(rowOf(t2, 'SVIP h = 0.3')[colOf(t2, String(L))], db, runOf(`table2/L=${L}`), 'svip')
    const acceptance = chartOf(report, 'fig5', 'fig5-mixed-acceptance')
    const r = raw(db, h, 'svip', { category: 'code' })
    close(seriesY(acceptance, 'SVIP h = 0.3', 'code'), r.accepted / r.proposed)
    const draft = chartOf(report, 'fig5', 'fig5-mixed-draft')
    const c = raw(db, base, 'sd', { category: 'math' })
    close(seriesY(draft, 'Const. (γ = 5)', 'math'), c.proposed / c.rounds)
  },

  'adaptive-window': (db, report, runOf) => {
    const fig3 = chartOf(report, 'fig3', 'fig3-code-throughput')
    const run = runOf('fig3/code/g=4')
    for (const [name, method] of [
      ['sd (constant γ)', 'sd'],
      ['analytic (Eq 1)', 'adaptive-analytic'],
      ['FSM', 'adaptive-fsm'],
      ['cache FSM', 'adaptive-cache-fsm'],
      ['Q-learning', 'adaptive-rl']
    ])
      close(seriesY(fig3, name, 4), medianTps(db, run, method))
    const acc = chartOf(report, 'fig3', 'fig3-code-acceptance')
    const rl = raw(db, run, 'adaptive-rl')
    close(seriesY(acc, 'Q-learning', 4), rl.accepted / rl.proposed)
    const t12 = tableOf(report, 'table12', 'table12-code')
    for (const h of [5, 7]) closeTps(rowOf(t12, h)[colOf(t12, 'γmax 5')], db, runOf(`table12/code/history=${h}/g=5`), 'adaptive-analytic')
    const sel = tableOf(report, 'selection', 'selection-code')
    closeSpeedup(rowOf(sel, 'adaptive selection (004 §5)')[colOf(sel, 'speedup')], db, runOf('select/code/auto'), 'sd')
    close(
      rowOf(sel, 'adaptive selection (004 §5)')[colOf(sel, 'vs fixed M_q1 (%)')],
      medianSpeedup(db, runOf('select/code/auto'), 'sd') / medianSpeedup(db, runOf('select/code/q1'), 'sd') - 1
    )
    const choices = db.prepare(`SELECT COUNT(*) n FROM draft_choices WHERE run_id = ? AND phase = 'choice'`).get(runOf('select/code/auto')) as { n: number }
    expect(choices.n).toBe(3)
  },

  'hierarchy-theory': (db, report, runOf, plan) => {
    // α, β: the levels JSON of every hier-chen step, summed in SQL.
    let alpha = 0
    let alphaN = 0
    let beta = 0
    let betaN = 0
    for (const cell of plan.filter((c) => c.key.startsWith('chen/'))) {
      const rows = db
        .prepare(`SELECT s.levels FROM steps s JOIN prompt_results p ON p.id = s.result_id WHERE p.run_id = ? AND p.method = 'hier-chen' AND p.status = 'done'`)
        .all(runOf(cell.key)) as { levels: string }[]
      for (const { levels } of rows) {
        const l = JSON.parse(levels)
        alpha += l.alpha.sum
        alphaN += l.alpha.positions
        beta += l.beta.sum
        betaN += l.beta.positions
      }
    }
    const inputs = tableOf(report, 'inputs', 'inputs')
    close(rowOf(inputs, 'α = E[Σ min(p, q2)]  (M_q2 vs M_p)')[1], alpha / alphaN)
    close(rowOf(inputs, 'β = E[Σ min(p, q1)]  (M_q1 vs M_p)')[1], beta / betaN)
    const tokens = chartOf(report, 'fig1-tokens', 'fig1-tokens')
    const chen = raw(db, runOf('chen/m=2/n=2'), 'hier-chen')
    close(seriesY(tokens, 'measured, m = 2', 2), chen.tokens / chen.targetCalls)
    const sd = raw(db, runOf('sd/m=2'), 'sd')
    close(seriesY(tokens, 'measured, m = 2', 0), sd.tokens / sd.targetCalls)
    close(seriesY(chartOf(report, 'fig1-speedup', 'fig1-speedup'), 'measured, m = 2', 1), speedup(db, runOf('chen/m=2/n=1'), 'hier-chen'))
    expect(chartOf(report, 'fig1-beta', 'fig1-beta').marker!.x).toBeCloseTo(beta / betaN, 9)
  },

  dsbd: (db, report, runOf) => {
    const points = tableOf(report, 'fig4-6', 'points')
    const dsbdRow = points.rows.find((r) => r[0] === 'dsbd' && r[2] === 3)!
    const run = runOf('dsbd/g=2/ws=3/t=0.9')
    closeTps(dsbdRow[colOf(points, 'tok/s')], db, run, 'dsbd')
    close(dsbdRow[colOf(points, 'PPL')], perplexity(db, run, 'dsbd'))
    const figure = chartOf(report, 'fig4-6', 'fig4-6')
    const beam2 = figure.series.find((s) => s.name === 'beam sampling W = 1…')!.points.find((p) => p.label === 'W=2')!
    close(beam2.x, medianTps(db, runOf('beam/W=2'), 'beam'))
    close(beam2.y, perplexity(db, runOf('beam/W=2'), 'beam'))
    const t1 = tableOf(report, 'table1', 'table1')
    for (const [name, method] of [
      ['Multinomial (ar)', 'ar'],
      ['SpecDecode (sd)', 'sd'],
      ['DSBD (dsbd-1beam)', 'dsbd-1beam']
    ]) {
      close(rowOf(t1, name)[colOf(t1, 'PPL')], perplexity(db, runOf('table1'), method))
      closeTps(rowOf(t1, name)[colOf(t1, 'tokens/s')], db, runOf('table1'), method)
    }
  },

  'model-free': (db, report, runOf, plan) => {
    // Rows are (method, settings): the defaults cell's, then the short-keys cell's.
    const rowBy = (t: ReportTable, method: string, settings: string, category?: string) => {
      const offset = category === undefined ? 0 : 1
      const row = t.rows.find((r) => (category === undefined || r[0] === category) && r[offset] === method && String(r[offset + 1]).startsWith(settings))
      if (!row) throw new Error(`row ${category ?? ''} ${method} ${settings} missing in ${t.id}`)
      return row
    }
    const quickCopy = plan.find((c) => c.key === 'defaults/copy')!
    const categories = [...new Set(loadBuiltinDataset('copy').slice(0, quickCopy.promptCount).map((p) => p.category!))]
    expect(categories.length).toBeGreaterThanOrEqual(2)
    const defaults = runOf('defaults/copy')
    const short = runOf('short-keys/copy')
    const speedups = tableOf(report, 'speedup', 'speedup-copy')
    expect(speedups.columns.map((c) => c.label)).toEqual(['method', 'settings', ...categories, 'all prompts'])
    // Every method of both cells, every category: a number.
    expect(speedups.rows).toHaveLength(plan.filter((c) => c.dataset.id === 'copy').reduce((n, c) => n + c.methods.length - 1, 0))
    for (const row of speedups.rows) for (const value of row.slice(2)) expect(value, String(row[0])).not.toBeNull()
    for (const category of categories) {
      for (const method of MODEL_FREE_METHODS.filter((m) => m !== 'ar'))
        closeSpeedup(rowBy(speedups, method, 'defaults')[colOf(speedups, category)], db, defaults, method, { category })
      closeSpeedup(rowBy(speedups, 'ngram-simple', 'short keys')[colOf(speedups, category)], db, short, 'ngram-simple', { category })
      closeSpeedup(rowBy(speedups, 'ngram-mod', 'short keys')[colOf(speedups, category)], db, short, 'ngram-mod', { category })
    }
    closeSpeedup(rowBy(speedups, 'pld', 'defaults')[colOf(speedups, 'all prompts')], db, defaults, 'pld')
    // The short-keys cell ran with the short keys, and says so.
    expect(String(rowBy(speedups, 'ngram-simple', 'short keys')[1])).toBe(`short keys: n ${MODEL_FREE_SHORT_KEYS['ngramsimple.n']}, m ${MODEL_FREE_SHORT_KEYS['ngramsimple.m']}`)
    expect(String(rowBy(speedups, 'ngram-mod', 'defaults')[1])).toBe('defaults: n 24, nMax 64, nMin 48')

    const detail = tableOf(report, 'categories', 'categories-copy')
    for (const category of categories) {
      closeTps(rowBy(detail, 'ar', 'baseline', category)[colOf(detail, 'tok/s')], db, defaults, 'ar', { category })
      for (const [run, method, settings] of [
        [defaults, 'pld', 'defaults'],
        [defaults, 'sd', 'defaults'],
        [defaults, 'ngram-map-k', 'defaults'],
        [short, 'ngram-map-k4v', 'short keys']
      ] as const) {
        const row = rowBy(detail, method, settings, category)
        const r = raw(db, run, method, { category })
        if (r.proposed > 0) close(row[colOf(detail, 'acceptance')], r.accepted / r.proposed)
        else expect(row[colOf(detail, 'acceptance')]).toBeNull()
        if (r.rounds > 0) close(row[colOf(detail, 'mean accepted')], r.accepted / r.rounds)
        closeTps(row[colOf(detail, 'tok/s')], db, run, method, { category })
        closeSpeedup(row[colOf(detail, 'speedup')], db, run, method, { category })
      }
      // sd and pld draft in every category of copy: acceptance and accepted length are numbers there.
      expect(rowBy(detail, 'sd', 'defaults', category)[colOf(detail, 'acceptance')]).toBeTypeOf('number')
      expect(rowBy(detail, 'pld', 'defaults', category)[colOf(detail, 'mean accepted')]).toBeTypeOf('number')
    }

    // Which method wins where: one row per category plus all prompts, the fastest is the row with the top speedup.
    const winners = tableOf(report, 'winners', 'winners-copy')
    expect(winners.rows.map((r) => r[0])).toEqual([...categories, 'all prompts'])
    const median = (v: unknown) => (typeof v === 'number' ? v : (v as { median: number }).median)
    for (const row of winners.rows) {
      const column = colOf(speedups, String(row[0]))
      const top = Math.max(...speedups.rows.map((r) => median(r[column])))
      close(median(row[colOf(winners, 'speedup')]), top)
      expect(String(row[colOf(winners, 'fastest without a draft model')])).not.toMatch(/^(sd|sd\+ngram) /)
      expect(row[colOf(winners, 'vs ar')]).toMatch(/^(faster|slower|tie \(interval spans 1\)|no interval \(one timing\))$/)
    }
    // The Spec-Bench stand-in of --quick has its tables too.
    expect(tableOf(report, 'speedup', 'speedup-mixed').rows.length).toBeGreaterThan(0)
    expect(chartOf(report, 'speedup-chart', 'speedup-chart-copy').series.map((s) => s.name)).toEqual(MODEL_FREE_METHODS.filter((m) => m !== 'ar'))
  },

  peer: (db, report, runOf) => {
    const run = runOf('peer/stories')
    const methods = [...PEER_SPECLAB_METHODS, ...PEER_LLAMA_METHODS]
    const summary = tableOf(report, 'summary', 'summary')
    expect(summary.rows.map((r) => r[0])).toEqual(methods)
    for (const method of methods) {
      const row = rowOf(summary, method)
      expect(row[colOf(summary, 'engine')]).toBe(method.startsWith('llama-server:') ? 'llama.cpp' : 'SpecLab')
      closeTps(row[colOf(summary, 'tok/s')], db, run, method)
      if (method === 'ar') close(row[colOf(summary, 'speedup vs ar')], 1)
      else closeSpeedup(row[colOf(summary, 'speedup vs ar')], db, run, method)
    }
    // Ratios between engines, paired per (prompt, repeat) like every speedup.
    const ratios = tableOf(report, 'ratios', 'ratios')
    for (const [a, b] of [['sd', 'llama-server:draft'], ['pearl', 'llama-server:draft'], ['ar', 'llama-server:ar'], ['llama-server:draft', 'llama-server:ar']])
      closeSpeedup(rowOf(ratios, `${a} / ${b}`)[1], db, run, a, {}, b)
    const fastest = String(ratios.rows.at(-1)![0])
    const match = /^fastest SpecLab \((\S+)\) \/ fastest llama-server \((llama-server:\S+)\)$/.exec(fastest)
    expect(match).not.toBeNull()
    closeSpeedup(ratios.rows.at(-1)![1], db, run, match![1]!, {}, match![2]!)
    // The greedy table says, per method, how many outputs equal ar's: the stored texts decide.
    const greedy = tableOf(report, 'greedy', 'greedy')
    const texts = (method: string) =>
      new Map(resultsOf(db, run, method, {}).map((r) => [r.prompt_index, (db.prepare('SELECT output_text FROM prompt_results WHERE id = ?').get(r.id) as { output_text: string }).output_text]))
    const ar = texts('ar')
    for (const method of methods.filter((m) => m !== 'ar')) {
      const mine = texts(method)
      const same = [...mine].filter(([prompt, text]) => text === ar.get(prompt)).length
      expect(rowOf(greedy, method).slice(1, 3)).toEqual([same, mine.size])
    }
    expect(chartOf(report, 'throughput', 'throughput').series[0]!.points.map((p) => p.x)).toEqual(methods)
  }
}

/**
 * The peer suite runs llama-server: without a build (npm run build:llama-server) its test is skipped with a banner,
 * unless SPECLAB_REQUIRE_LLAMA_SERVER=1 (CI builds it first), where it runs and fails.
 */
function itUnlessPeerMissing(suite: string): typeof it | typeof it.skip {
  if (suite !== 'peer' || process.env.SPECLAB_REQUIRE_LLAMA_SERVER === '1') return it
  const found = findLlamaServer()
  if (found.path !== null) return it
  console.warn(`\n${'!'.repeat(100)}\n!! SKIPPING the peer suite in test/integration/suites.test.ts: ${found.reason}\n${'!'.repeat(100)}\n`)
  return it.skip
}

withModels('experiment suites (--quick, shared models)', () => {
  let dir: string
  let db: string
  let store: RunStore

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-suites-'))
    process.env.SPECLAB_THREAD_CALIBRATION_CACHE = path.join(dir, 'thread-calibration.json') // not the user's
    db = path.join(dir, 'runs.sqlite')
    store = RunStore.open(db)
  })
  afterAll(() => {
    store?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('every suite has a report check here', () => {
    expect(SUITES.map((s) => s.id).sort()).toEqual(Object.keys(CHECKS).sort())
  })

  for (const suite of SUITES)
    itUnlessPeerMissing(suite.id)(`${suite.id}: runs end to end, its report has every table and chart, and its numbers are the stored rows'`, async () => {
      const result = await runSuite(store, { suite: suite.id, quick: true })
      expect(result.status).toBe('done')
      expect(result.skipped).toEqual([])
      const suites = new SuiteStore(store.database)
      const row = suites.getSuiteRun<unknown, PlannedCell[]>(result.suiteRunId)!
      expect(row.status).toBe('done')
      expect(result.executed).toEqual(row.plan.map((c) => c.key))
      const finished = suites.finishedCells(result.suiteRunId)
      const runOf = (key: string) => {
        const id = finished.get(key)
        if (id === undefined) throw new Error(`cell ${key} has no finished run`)
        return id
      }

      const { report, html, markdown } = renderSuiteReport(store, result.suiteRunId)
      expect(report.missingCells).toEqual([])
      for (const artifact of [...suite.tables, ...suite.charts]) {
        const s = section(report, artifact.id)
        expect(hasData(s), `${suite.id} section ${artifact.id} has data`).toBe(true)
        expect(html).toContain(`data-section="${artifact.id}"`)
        expect(markdown).toContain(`<a id="section-${artifact.id}"></a>`)
      }
      for (const id of suite.charts.map((c) => c.id))
        expect(section(report, id).measured.some((m) => m.kind === 'chart'), `${id} has a chart`).toBe(true)
      const charts = report.sections.flatMap((s) => s.measured).filter((m) => m.kind === 'chart').length
      expect(html.match(/<svg /g)?.length).toBe(charts)
      expect(html).not.toMatch(/<script|src="http|href="http/)
      if (suite.paper) expect(html).toContain(`../shared/papers/${suite.paper.file}`)

      CHECKS[suite.id](store.database, report, runOf, row.plan)

      // Nothing is cached from the live run: a fresh connection renders the same report.
      const again = RunStore.open(db)
      try {
        const rerendered = renderSuiteReport(again, result.suiteRunId)
        expect(rerendered.html).toBe(html)
        expect(rerendered.markdown).toBe(markdown)
      } finally {
        again.close()
      }
    })

  it('model-free: its per-category tables render in Markdown and HTML with numbers in every cell', () => {
    const [latest] = new SuiteStore(store.database).listSuiteRuns({ suite: 'model-free' })
    expect(latest, 'the model-free suite ran above').toBeDefined()
    const { markdown, html } = renderSuiteReport(store, latest.id)
    for (const id of ['speedup-copy', 'categories-copy', 'winners-copy', 'speedup-mixed', 'categories-mixed', 'winners-mixed']) {
      expect(html).toContain(`<table id="${id}"`)
      expect(markdown).toContain(`<a id="${id}"></a>`)
    }
    // The per-category table in Markdown: a row per (category, method), speedups and tok/s printed as numbers.
    const block = markdown.slice(markdown.indexOf('<a id="categories-copy"></a>'), markdown.indexOf('<a id="categories-mixed"></a>'))
    const rows = block.split('\n').filter((line) => line.startsWith('| summarise | '))
    expect(rows.length).toBe(MODEL_FREE_METHODS.length + 5) // ar, the defaults' 8, the short keys' 5
    for (const row of rows) expect(row).toMatch(/\| \d+\.\d \| \d+\.\d\d×( \[[\d.]+–[\d.]+×\])? \|$/) // tok/s | speedup
    expect(rows.find((r) => r.startsWith('| summarise | pld |'))).toMatch(/\| 0\.\d{3}|1\.000 \|/) // an acceptance
    expect(markdown).not.toMatch(/NaN|undefined/)
    expect(html).not.toMatch(/NaN|undefined/)
  })

  it('copy: every prompt fits the stories models\' 512-token context with 128 new tokens (their tokenizer)', async () => {
    const target = await loadLlamaModel(path.join(MODELS_DIR, MODEL_FILES.target), { threads: 1, contextSize: 512 })
    try {
      expect(target.context.contextSize).toBe(512)
      for (const prompt of loadBuiltinDataset('copy')) {
        const tokens = 1 + target.tokenize(prompt.text).length // BOS, as the runner counts
        expect(tokens + 128, prompt.id!).toBeLessThanOrEqual(512)
        expect(tokens, prompt.id!).toBeGreaterThanOrEqual(100) // a passage, not a one-liner
      }
    } finally {
      await target.dispose()
    }
  })

  it('a cancelled suite run is marked cancelled; --resume runs only the unfinished cells', async () => {
    const suite = findSuite('hierarchy-theory')!
    const abort = new AbortController()
    const first = await runSuite(
      store,
      { suite: suite.id, quick: true },
      {
        signal: abort.signal,
        // Cancel in the middle of the second cell.
        onProgress: (p) => {
          if (p.cellIndex === 2 && (p.run?.tokens ?? 0) > 0) abort.abort()
        }
      }
    )
    expect(first.status).toBe('cancelled')
    const suites = new SuiteStore(store.database)
    expect(suites.getSuiteRun(first.suiteRunId)!.status).toBe('cancelled')
    const cells = suites.cellRuns(first.suiteRunId)
    expect(cells.map((c) => c.status)).toEqual(['done', 'cancelled'])
    const firstCellRun = cells[0].runId
    const partial = renderSuiteReport(store, first.suiteRunId).report
    expect(partial.missingCells).toEqual(['chen/m=2/n=2', 'sd/m=2'])

    const started: string[] = []
    const resumed = await runSuite(store, { suite: suite.id, quick: true, resume: first.suiteRunId }, { onCellStart: (cell) => started.push(cell.key) })
    expect(resumed.suiteRunId).toBe(first.suiteRunId)
    expect(resumed.status).toBe('done')
    expect(resumed.skipped).toEqual(['chen/m=2/n=1'])
    expect(started).toEqual(['chen/m=2/n=2', 'sd/m=2'])
    const finished = suites.finishedCells(first.suiteRunId)
    expect(finished.get('chen/m=2/n=1')).toBe(firstCellRun) // kept, not recomputed
    expect(suites.getSuiteRun(first.suiteRunId)!.status).toBe('done')
    expect(renderSuiteReport(store, first.suiteRunId).report.missingCells).toEqual([])
    // Resuming a finished suite run executes nothing.
    const nothing = await runSuite(store, { suite: suite.id, quick: true, resume: first.suiteRunId }, { onCellStart: (cell) => started.push(cell.key) })
    expect(nothing.executed).toEqual([])
    expect(started).toHaveLength(2)
  })
})
