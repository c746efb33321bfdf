/**
 * Suites without models: the suite registry (unique cell keys, valid methods and parameters, presets the Workbench
 * can apply), the suite store (links, finished cells, interrupted suite runs, scores), prompt selection per category,
 * and the report renderers (SVG charts, number formats, Pareto fronts).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { METHOD_IDS } from '../../electron/api/methods'
import { RunConfig, type MethodSummary } from '../../electron/api/runs'
import { findMethod, prepareRun } from '../../electron/engine/methods/prepare'
import { speedupCell, throughputCell } from '../../electron/experiments/reports/common'
import { formatValue } from '../../electron/experiments/reports/format'
import type { ReportChart } from '../../electron/experiments/reports/model'
import { renderHtml } from '../../electron/experiments/reports/render-html'
import { renderMarkdown } from '../../electron/experiments/reports/render-markdown'
import { paretoFront } from '../../electron/experiments/reports/suites/dsbd'
import { renderChartSvg } from '../../electron/experiments/reports/svg-chart'
import { BUILTIN_DATASETS, firstPerCategory, loadPrompts } from '../../electron/experiments/prompts'
import { datasetOverride } from '../../electron/experiments/suite-runner'
import { MODEL_FREE_METHODS, MODEL_FREE_SHORT_KEYS, SUITES, findSuite, requireSuite } from '../../electron/experiments/suites'
import { RunStore } from '../../electron/store/run-store'
import { SuiteStore } from '../../electron/store/suite-store'

const baseConfig = {
  suite: 'x',
  models: { target: '/t.gguf', mid: '/m.gguf', draft: '/d.gguf' },
  prompts: { dataset: 'stories' },
  maxTokens: 8,
  sampling: { temperature: 0, topK: 64, topP: 1, fullVocabulary: false },
  seed: 1,
  gamma: 4,
  params: {},
  threads: 1,
  contextSize: 512
}

describe('suite registry', () => {
  for (const suite of SUITES)
    for (const quick of [true, false])
      it(`${suite.id}${quick ? ' --quick' : ''}: unique cell keys, registered methods, valid parameters`, () => {
        const cells = suite.cells({ quick, datasets: suite.datasets(quick) })
        expect(cells.length).toBeGreaterThan(0)
        expect(new Set(cells.map((c) => c.key)).size).toBe(cells.length)
        for (const cell of cells) {
          for (const method of cell.methods) expect(findMethod(method), `${cell.key}: ${method}`).toBeDefined()
          // Preparing validates the cell's parameters against the cell's own methods.
          expect(() => prepareRun(cell.methods, { gamma: cell.gamma, params: cell.params ?? {} }), cell.key).not.toThrow()
          expect(() => RunConfig.parse({ ...baseConfig, methods: cell.methods, gamma: cell.gamma, maxTokens: cell.maxTokens, params: cell.params ?? {} })).not.toThrow()
          if (cell.dataset.builtin) expect(BUILTIN_DATASETS).toContain(cell.dataset.builtin)
        }
        if (quick) expect(cells.every((c) => c.maxTokens <= 16)).toBe(true)
      })

  it('svip: the heuristic baseline, the constant one and SVIP are all capped at 40 (SVIP §3.1), preset included', () => {
    const suite = requireSuite('svip')
    const runs = [true, false].flatMap((quick) => suite.cells({ quick, datasets: suite.datasets(quick) }))
    const all = [...runs, { key: 'preset', methods: suite.preset.methods, gamma: suite.preset.gamma ?? 5, params: suite.preset.params }]
    const seen = new Set<string>()
    for (const cell of all) {
      const resolved = prepareRun(cell.methods, { gamma: cell.gamma, params: cell.params ?? {} }).params
      for (const method of cell.methods) {
        seen.add(method)
        if (method === 'sd-heuristic') expect(resolved['heuristic.maxDraft'], cell.key).toBe(40)
        // The authors' code restarts the heuristic at every prompt (HF's heuristic_transient).
        if (method === 'sd-heuristic') expect(resolved['heuristic.transient'], cell.key).toBe(true)
        if (method === 'svip') expect(resolved['svip.maxDraft'], cell.key).toBe(40)
        if (method === 'sd') expect(cell.gamma, cell.key).toBeLessThanOrEqual(40)
      }
    }
    expect([...seen].sort()).toEqual(['ar', 'sd', 'sd-heuristic', 'svip'])
  })

  it('model-free: every method at its defaults and the n-gram methods with short keys, on copy and Spec-Bench, greedy', () => {
    const suite = requireSuite('model-free')
    expect(MODEL_FREE_METHODS).toEqual(
      expect.arrayContaining(['ar', 'sd', 'pld', 'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod', 'nlc-lookup', 'sd+ngram'])
    )
    for (const method of MODEL_FREE_METHODS) expect(METHOD_IDS).toContain(method)
    expect(suite.datasets(false).map((d) => d.builtin ?? d.shared)).toEqual(['copy', 'spec_bench.jsonl'])
    expect(suite.datasets(false)[1].perCategory).toBe(2)
    // --quick needs no shared dataset file (CI): built-in sets only.
    expect(suite.datasets(true).every((d) => d.builtin !== undefined)).toBe(true)
    for (const quick of [true, false]) {
      const cells = suite.cells({ quick, datasets: suite.datasets(quick) })
      expect(cells.map((c) => c.key)).toEqual(suite.datasets(quick).flatMap((d) => [`defaults/${d.id}`, `short-keys/${d.id}`]))
      for (const cell of cells) {
        expect(cell.sampling.temperature, cell.key).toBe(0)
        expect(cell.gamma).toBe(5)
        expect(cell.methods[0]).toBe('ar')
        const resolved = prepareRun(cell.methods, { gamma: cell.gamma, params: cell.params ?? {} }).params
        if (cell.key.startsWith('defaults/')) {
          expect(cell.methods).toEqual([...MODEL_FREE_METHODS])
          expect(cell.params ?? {}).toEqual({})
          expect(resolved).toMatchObject({ 'ngramsimple.n': 12, 'ngramsimple.m': 48, 'ngrammod.n': 24, 'ngrammod.nMin': 48, 'pld.k': 5 })
        } else {
          expect(cell.methods).toEqual(['ar', 'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod', 'sd+ngram'])
          expect(resolved).toMatchObject(MODEL_FREE_SHORT_KEYS)
          expect(resolved).toMatchObject({ 'ngramsimple.n': 3, 'ngramsimple.m': 8, 'ngrammod.n': 4, 'ngrammod.nMin': 2 })
        }
      }
    }
    expect(suite.preset).toMatchObject({ dataset: 'copy', temperature: 0, gamma: 5, methods: [...MODEL_FREE_METHODS] })
    expect(suite.description).toMatch(/n = 3/)
  })

  it('presets are what the Workbench can apply: built-in datasets and known methods', () => {
    for (const suite of SUITES) {
      expect(BUILTIN_DATASETS).toContain(suite.preset.dataset)
      for (const m of suite.preset.methods) expect(METHOD_IDS).toContain(m)
      expect(suite.tables.length + suite.charts.length).toBeGreaterThan(0)
    }
    expect(findSuite('smoke')?.name).toMatch(/Smoke/)
    expect(() => requireSuite('nope')).toThrow(/unknown suite 'nope'/)
  })

  it('--dataset / --prompts replace the datasets; both at once is an error', () => {
    expect(datasetOverride({ dataset: 'math' })).toEqual({ id: 'math', label: 'math', builtin: 'math' })
    expect(datasetOverride({ prompts: '/data/gsm8k_test.jsonl' })).toMatchObject({ id: 'gsm8k_test', file: '/data/gsm8k_test.jsonl' })
    expect(() => datasetOverride({ dataset: 'math', prompts: 'x.jsonl' })).toThrow(/either/)
  })

  it('per-category selection keeps file order and the first N of each category', () => {
    const prompts = [
      { id: '1', category: 'a', text: '1' },
      { id: '2', category: 'b', text: '2' },
      { id: '3', category: 'a', text: '3' },
      { id: '4', category: 'a', text: '4' },
      { id: '5', category: null, text: '5' }
    ]
    expect(firstPerCategory(prompts, 2).map((p) => p.id)).toEqual(['1', '2', '3', '5'])
    expect(loadPrompts({ dataset: 'mixed', perCategory: 1 }).map((p) => p.category)).toEqual(['story', 'chat', 'code', 'math'])
  })
})

describe('SuiteStore', () => {
  let dir: string
  let store: RunStore
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-suite-store-'))
    store = RunStore.open(path.join(dir, 'runs.sqlite'))
  })
  afterEach(() => {
    store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const config = RunConfig.parse({ ...baseConfig, methods: ['ar'] })

  it('links runs to cells; the latest done run of a cell is its finished run', () => {
    const suites = new SuiteStore(store.database)
    const id = suites.createSuiteRun({ suite: 'smoke', quick: true, options: { a: 1 }, plan: [{ key: 'c1' }, { key: 'c2' }] })
    const cancelled = store.createRun(config)
    suites.linkRun(cancelled, id, 'c1')
    store.finishRun(cancelled, 'cancelled')
    expect(suites.finishedCells(id).size).toBe(0)
    const done = store.createRun(config)
    suites.linkRun(done, id, 'c1')
    store.finishRun(done, 'done')
    expect([...suites.finishedCells(id)]).toEqual([['c1', done]])
    expect(suites.cellRuns(id).map((c) => [c.cellKey, c.status])).toEqual([['c1', 'cancelled'], ['c1', 'done']])
    suites.finishSuiteRun(id, 'cancelled')
    const row = suites.getSuiteRun<{ a: number }, { key: string }[]>(id)!
    expect(row).toMatchObject({ suite: 'smoke', quick: true, status: 'cancelled', options: { a: 1 } })
    expect(row.plan).toHaveLength(2)
    expect(suites.listSuiteRuns({ suite: 'smoke' }).map((r) => r.id)).toEqual([id])
    expect(suites.listSuiteRuns({ suite: 'svip' })).toEqual([])

    const resultId = store.startPromptResult({ runId: done, method: 'ar', promptIndex: 0, promptId: null, category: null, promptText: 'x', seedStream: 0 })
    suites.addScore({ resultId, scorer: '/t.gguf', nll: 3.5, tokens: 7 })
    expect(suites.scoresOfRun(done).get(resultId)).toEqual({ resultId, scorer: '/t.gguf', nll: 3.5, tokens: 7 })
  })

  it('a suite run left running by a dead process is interrupted on the next open; one of this process is not', () => {
    const suites = new SuiteStore(store.database)
    const mine = suites.createSuiteRun({ suite: 'smoke', quick: true, options: {}, plan: [] })
    const orphan = suites.createSuiteRun({ suite: 'smoke', quick: true, options: {}, plan: [] })
    store.database.prepare(`UPDATE suite_runs SET owner_pid = 2147483646 WHERE id = ?`).run(orphan)
    const reopened = new SuiteStore(store.database)
    expect(reopened.getSuiteRun(orphan)!.status).toBe('interrupted')
    expect(reopened.getSuiteRun(mine)!.status).toBe('running')
    suites.finishSuiteRun(mine, 'done')
  })
})

describe('report rendering', () => {
  const chart: ReportChart = {
    kind: 'chart',
    id: 'c',
    title: 'A <chart> & co',
    x: { label: 'K', type: 'linear', integer: true },
    y: { label: 'tok/s', type: 'linear' },
    series: [
      { name: 'sd', style: 'line+points', points: [{ x: 2, y: 10 }, { x: 4, y: 12 }] },
      { name: 'hist', style: 'step', points: [{ x: 0, y: 0.5 }, { x: 1, y: 0.5 }] }
    ],
    reference: { y: 1, label: 'ar = 1' },
    marker: { x: 3, label: 'β' }
  }

  it('SVG charts are self-contained, escaped and draw every series', () => {
    const svg = renderChartSvg(chart)
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(svg).toContain('A &lt;chart&gt; &amp; co')
    expect(svg.match(/<path /g)).toHaveLength(2)
    expect(svg.match(/<circle /g)!.length).toBeGreaterThanOrEqual(2)
    expect(svg).toContain('ar = 1')
    expect(svg).not.toMatch(/NaN|undefined/)
    const bars = renderChartSvg({ ...chart, x: { label: 'm', type: 'band', categories: ['a', 'b'] }, series: [{ name: 's', style: 'bar', points: [{ x: 'a', y: 1 }, { x: 'b', y: 2 }] }] })
    expect(bars.match(/<rect [^>]*><title>/g)).toHaveLength(2) // the bars (the legend swatch has no title)
    expect(renderChartSvg({ ...chart, series: [] })).toContain('no measured data')
  })

  it('formats numbers one way for Markdown and HTML', () => {
    expect(formatValue(1.23456, { label: '', format: 'speedup' })).toBe('1.23×')
    expect(formatValue(0.3987, { label: '', format: 'percent' })).toBe('39.87')
    expect(formatValue(0.5, { label: '', format: 'ratio' })).toBe('0.500')
    expect(formatValue(null, { label: '', format: 'number' })).toBe('–')
    expect(formatValue(true, { label: '', format: 'text' })).toBe('✓')
    expect(formatValue(4.6, { label: '', format: 'integer' })).toBe('5')
  })

  it('prints a timed value as its median with the 95 % interval, a degenerate one as the median alone', () => {
    const iv = { median: 1.23456, low: 1.1, high: 1.314 }
    expect(formatValue(iv, { label: '', format: 'speedup' })).toBe('1.23× [1.10–1.31×]')
    expect(formatValue({ median: 123.45, low: 110, high: 131.04 }, { label: '', format: 'number', digits: 1 })).toBe('123.5 [110.0–131.0]')
    expect(formatValue({ median: 2, low: 2, high: 2 }, { label: '', format: 'speedup' })).toBe('2.00×')
  })

  it('speedup / tokens/s cells carry the interval only when more than one (prompt, repeat) was timed', () => {
    const interval = (median: number, cells: number) => ({ median, low: median - 0.1, high: median + 0.1, cells, prompts: cells, repeats: 1 })
    const m = (method: string, cells: number) =>
      ({ method, speedup: 1.5, tokensPerSecond: 40, speedupInterval: interval(1.4, cells), tokensPerSecondInterval: interval(41, cells) }) as unknown as MethodSummary
    expect(speedupCell(m('sd', 3))).toEqual(interval(1.4, 3))
    expect(throughputCell(m('sd', 3))).toEqual(interval(41, 3))
    expect(speedupCell(m('sd', 1))).toBe(1.5)
    expect(throughputCell(m('sd', 1))).toBe(40)
    expect(speedupCell(m('ar', 3))).toBe(1.5) // ar against itself: the plain 1×
    expect(speedupCell({ ...m('sd', 3), speedupInterval: null })).toBe(1.5)
    expect(speedupCell(null)).toBeNull()
    expect(throughputCell(undefined)).toBeNull()
  })

  it('HTML and Markdown put the measured side and the paper side in every section', () => {
    const report = {
      suite: 'smoke',
      suiteRunId: 3,
      title: 'T',
      description: 'D',
      status: 'cancelled',
      createdAt: 'now',
      finishedAt: null,
      quick: true,
      setup: [['seed', '1']] as [string, string][],
      sections: [
        {
          id: 's1',
          title: 'Section',
          measured: [chart, { kind: 'table' as const, id: 't', title: 'Tab', columns: [{ label: 'a|b', format: 'speedup' as const }], rows: [[2]] }],
          paper: { file: 'p.txt', lines: '1–2', setup: 'GPUs', statements: ['said'] },
          notes: ['n']
        }
      ],
      missingCells: ['c2'],
      notes: []
    }
    const html = renderHtml(report)
    expect(html).toContain('data-section="s1"')
    expect(html).toContain('<table id="t"')
    expect(html).toContain('2.00×')
    expect(html).toContain('../shared/papers/p.txt, lines 1–2')
    expect(html).toContain('--resume 3')
    const md = renderMarkdown(report)
    expect(md).toContain('| a\\|b |')
    expect(md).toContain('| 2.00× |')
    expect(md).toContain('### The paper (its numbers, not ours) — ../shared/papers/p.txt, lines 1–2')
    expect(md).toContain('| 2 | 10 | – |')
  })

  it('the Pareto front keeps the points no faster point beats on perplexity', () => {
    const points = [
      { x: 10, y: 2 },
      { x: 20, y: 1.5 },
      { x: 15, y: 1.4 },
      { x: 30, y: 3 },
      { x: 25, y: 1.6 }
    ]
    expect(paretoFront(points)).toEqual([{ x: 15, y: 1.4 }, { x: 20, y: 1.5 }, { x: 25, y: 1.6 }, { x: 30, y: 3 }])
  })
})
