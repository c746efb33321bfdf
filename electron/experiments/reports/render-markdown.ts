/**
 * SuiteReport → Markdown (GitHub-flavoured tables). Charts become their data tables (x, then one column per series)
 * with a pointer to the HTML report for the drawing; the paper's side follows each measured block under its own
 * heading, with its models, hardware and line numbers.
 */
import { formatAxisNumber, formatValue } from './format'
import type { PaperReference, ReportChart, ReportSection, ReportTable, SuiteReport } from './model'

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ')

export function renderMarkdown(report: SuiteReport): string {
  const out: string[] = [
    `# ${report.title}`,
    '',
    `Suite \`${report.suite}\`, suite run ${report.suiteRunId}${report.quick ? ' (--quick grid)' : ''}: **${report.status}**, started ${report.createdAt}` +
      `${report.finishedAt ? `, finished ${report.finishedAt}` : ''}.`,
    '',
    report.description,
    '',
    '## Setup of these measurements',
    '',
    '| | |',
    '|---|---|',
    ...report.setup.map(([k, v]) => `| ${cell(k)} | ${cell(v)} |`),
    ''
  ]
  if (report.missingCells.length > 0)
    out.push(
      `**${report.missingCells.length} planned cell(s) have no finished run** (resume with \`speclab suite ${report.suite} --resume ${report.suiteRunId}\`): ${report.missingCells.join(', ')}`,
      ''
    )
  for (const note of report.notes) out.push(`- ${note}`)
  if (report.notes.length > 0) out.push('')
  for (const section of report.sections) out.push(...renderSection(section))
  out.push(
    '---',
    `Generated from the stored step records (\`speclab report ${report.suiteRunId}\` re-renders it). Paper numbers are copied from ../shared/papers with their line numbers and were measured on the papers' models and hardware, not here.`,
    ''
  )
  return out.join('\n')
}

function renderSection(section: ReportSection): string[] {
  const out = [`## ${section.title}`, `<a id="section-${section.id}"></a>`, '', '### Measured here', '']
  if (section.measured.length === 0) out.push('_No finished cell feeds this section._', '')
  for (const item of section.measured) out.push(...(item.kind === 'table' ? markdownTable(item) : chartData(item)))
  out.push(...paperBlock(section.paper))
  for (const note of section.notes) out.push(`> ${note}`, '>')
  if (section.notes.length > 0) out.pop()
  out.push('')
  return out
}

export function markdownTable(table: ReportTable): string[] {
  const align = table.columns.map((c) => (c.format === 'text' ? '---' : '---:'))
  return [
    `**${table.title}** <a id="${table.id}"></a>`,
    '',
    `| ${table.columns.map((c) => cell(c.label)).join(' | ')} |`,
    `|${align.join('|')}|`,
    ...table.rows.map((row) => `| ${row.map((v, i) => cell(formatValue(v, table.columns[i])) || ' ').join(' | ')} |`),
    ...(table.caption ? ['', `_${table.caption}_`] : []),
    ''
  ]
}

/** A chart as its data: one row per x value, one column per series (points with labels get them in brackets). */
function chartData(chart: ReportChart): string[] {
  const xs = chart.x.type === 'band'
    ? (chart.x.categories ?? [...new Set(chart.series.flatMap((s) => s.points.map((p) => String(p.x))))])
    : [...new Set(chart.series.flatMap((s) => s.points.map((p) => Number(p.x))))].sort((a, b) => a - b)
  const value = (series: ReportChart['series'][number], x: number | string) => {
    const found = series.points.filter((p) => String(p.x) === String(x))
    return found.map((p) => `${formatAxisNumber(p.y)}${p.label ? ` (${p.label})` : ''}`).join('; ')
  }
  return [
    `**${chart.title}** <a id="${chart.id}"></a> — chart in the HTML report; its data (${chart.y.label} by ${chart.x.label}):`,
    '',
    `| ${cell(chart.x.label)} | ${chart.series.map((s) => cell(s.name)).join(' | ')} |`,
    `|---|${chart.series.map(() => '---:').join('|')}|`,
    ...xs.map((x) => `| ${typeof x === 'number' ? formatAxisNumber(x) : cell(x)} | ${chart.series.map((s) => cell(value(s, x)) || '–').join(' | ')} |`),
    ...(chart.reference ? ['', `_Reference line: ${chart.reference.label}._`] : []),
    ...(chart.caption ? ['', `_${chart.caption}_`] : []),
    ''
  ]
}

function paperBlock(paper: PaperReference | null): string[] {
  if (!paper) return ['_No paper counterpart._', '']
  const source = paper.file ? ` — ../shared/papers/${paper.file}, lines ${paper.lines}` : ''
  const out = [`### The paper (its numbers, not ours)${source}`, '', `_Setup:_ ${paper.setup}`, '']
  if (paper.table) out.push(...markdownTable(paper.table))
  for (const s of paper.statements) out.push(`- ${s}`)
  if (paper.statements.length > 0) out.push('')
  return out
}
