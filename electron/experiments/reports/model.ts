/**
 * The report model: what a suite report says, as plain data — tables and chart series computed from the stored
 * step records (reports/data.ts), beside the paper's published numbers (reports/papers.ts). Renderers turn it into
 * Markdown (render-markdown.ts) and self-contained HTML with inline SVG charts (render-html.ts); tests read it
 * directly. Numbers stay numbers here; columns say how to print them.
 */

export type ColumnFormat = 'text' | 'number' | 'integer' | 'speedup' | 'percent' | 'ratio'

export interface TableColumn {
  label: string
  format: ColumnFormat
  /** Decimals for number / percent / speedup (default 2). */
  digits?: number
}

/** A timed measurement: the median over (prompt, repeat) with its 95 % bootstrap interval (printed "1.23× [1.10–1.31]"). */
export interface IntervalValue {
  median: number
  low: number
  high: number
}

export type TableValue = string | number | boolean | null | IntervalValue

export interface ReportTable {
  kind: 'table'
  id: string
  title: string
  columns: TableColumn[]
  rows: TableValue[][]
  caption?: string
}

export interface ChartPoint {
  x: number | string
  y: number
  /** Shown next to a point or in its tooltip (e.g. the grid coordinates). */
  label?: string
}

export interface ChartSeries {
  name: string
  points: ChartPoint[]
  /** line: joined points; points: markers only; line+points; step: a step line whose points are the left edges of
   * equal bins (histograms); bar: grouped bars; dashed: a dashed line. */
  style: 'line' | 'points' | 'line+points' | 'step' | 'bar' | 'dashed'
  /** Palette index, to draw related series (points and their front) in one colour; default: the series index. */
  color?: number
}

export interface ChartAxis {
  label: string
  /** linear: numbers; band: categories (bars); the x axis of a bar chart is always band. */
  type: 'linear' | 'band'
  /** Categories in order (band axes). */
  categories?: string[]
  /** Start the axis at zero (default for y). */
  zero?: boolean
  /** Only whole-number ticks (rounds, window sizes). */
  integer?: boolean
}

export interface ReportChart {
  kind: 'chart'
  id: string
  title: string
  x: ChartAxis
  y: ChartAxis
  series: ChartSeries[]
  /** A vertical marker (e.g. the measured β). */
  marker?: { x: number; label: string }
  /** A horizontal reference line (e.g. speedup 1 = ar). */
  reference?: { y: number; label: string }
  caption?: string
}

/** The paper's side of a section: its numbers (when printed) or what it says, with line citations. */
export interface PaperReference {
  /** File under ../shared/papers. */
  file: string
  /** Line numbers in that file, e.g. "157–165". */
  lines: string
  /** The paper's models and hardware for these numbers. */
  setup: string
  table?: ReportTable
  /** What the paper reports in words (figures without printed numbers), each with its lines. */
  statements: string[]
}

export interface ReportSection {
  /** The artifact id of suites.ts (`table2`, `fig7`, …). */
  id: string
  title: string
  /** What was measured here: tables and charts from the stored steps. */
  measured: (ReportTable | ReportChart)[]
  paper: PaperReference | null
  notes: string[]
}

export interface SuiteReport {
  suite: string
  suiteRunId: number
  title: string
  description: string
  status: string
  createdAt: string
  finishedAt: string | null
  quick: boolean
  /** Setup of the measurements: models, sampling, grid size, machine — label and value. */
  setup: [string, string][]
  sections: ReportSection[]
  /** Planned cells without a finished run (a cancelled or interrupted suite run). */
  missingCells: string[]
  notes: string[]
}
