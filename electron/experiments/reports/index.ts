/**
 * Suite reports: stored data → report model (one builder per suite, reports/suites/) → Markdown and self-contained
 * HTML. `buildSuiteReport` reads only the database, so `speclab report <id>` (and the app) re-render a report at
 * any time, for finished, cancelled or interrupted suite runs alike (missing cells are listed, not invented).
 */
import fs from 'node:fs'
import path from 'node:path'
import type { RunStore } from '../../store/run-store'
import { requireSuite, type SuiteDefinition } from '../suites'
import { setupRows } from './common'
import { loadSuiteData, type SuiteData } from './data'
import type { ReportSection, SuiteReport } from './model'
import { renderHtml } from './render-html'
import { renderMarkdown } from './render-markdown'
import { adaptiveWindowReport } from './suites/adaptive-window'
import { dsbdReport } from './suites/dsbd'
import { hierarchyTheoryReport } from './suites/hierarchy-theory'
import { hsddwAblationReport } from './suites/hsddw-ablation'
import { modelFreeReport } from './suites/model-free'
import { peerReport } from './suites/peer'
import { smokeReport } from './suites/smoke'
import { svipReport } from './suites/svip'

type Builder = (data: SuiteData) => { sections: ReportSection[]; notes: string[] }

const BUILDERS: Record<string, Builder> = {
  smoke: smokeReport,
  'hsddw-ablation': hsddwAblationReport,
  svip: svipReport,
  'adaptive-window': adaptiveWindowReport,
  'hierarchy-theory': hierarchyTheoryReport,
  dsbd: dsbdReport,
  'model-free': modelFreeReport,
  peer: peerReport
}

export function buildReportFromData(data: SuiteData, suite: SuiteDefinition = requireSuite(data.suiteRun.suite)): SuiteReport {
  const builder = BUILDERS[suite.id]
  if (!builder) throw new Error(`suite ${suite.id} has no report builder`)
  const { sections, notes } = builder(data)
  const run = data.suiteRun
  return {
    suite: suite.id,
    suiteRunId: run.id,
    title: suite.name,
    description: suite.description,
    status: run.status,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt,
    quick: run.quick,
    setup: setupRows(data, suite),
    sections,
    missingCells: data.missing,
    notes: [...(run.error ? [`error: ${run.error}`] : []), ...notes]
  }
}

export function buildSuiteReport(store: RunStore, suiteRunId: number): SuiteReport {
  return buildReportFromData(loadSuiteData(store, suiteRunId))
}

export interface RenderedReport {
  report: SuiteReport
  html: string
  markdown: string
}

export function renderSuiteReport(store: RunStore, suiteRunId: number): RenderedReport {
  const report = buildSuiteReport(store, suiteRunId)
  return { report, html: renderHtml(report), markdown: renderMarkdown(report) }
}

/** Writes `<suite>-<suiteRunId>.html` and `.md` into `dir` (created if needed); returns their paths. */
export function writeSuiteReport(rendered: RenderedReport, dir: string): { html: string; markdown: string } {
  fs.mkdirSync(dir, { recursive: true })
  const base = path.join(path.resolve(dir), `${rendered.report.suite}-${rendered.report.suiteRunId}`)
  fs.writeFileSync(`${base}.html`, rendered.html)
  fs.writeFileSync(`${base}.md`, rendered.markdown)
  return { html: `${base}.html`, markdown: `${base}.md` }
}

export { renderHtml, renderMarkdown }
export type { SuiteReport }
