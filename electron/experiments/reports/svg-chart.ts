/**
 * ReportChart → an inline SVG string (no script, no external resource), so an HTML report is one self-contained
 * file that opens anywhere. Scales, "nice" domains and tick values come from d3-scale and paths from d3-shape:
 * both are small, dependency-light, maintained parts of d3 that only compute numbers and path strings (no DOM), so
 * they run the same in Node, the CLI and the app — the alternative was to re-derive tick steps and step/line
 * paths by hand.
 */
import { scaleBand, scaleLinear, type ScaleBand, type ScaleLinear } from 'd3-scale'
import { curveLinear, curveStepAfter, line } from 'd3-shape'
import { escapeXml, formatAxisNumber } from './format'
import type { ReportChart } from './model'

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac']

export interface ChartSize {
  width: number
  height: number
}

const MARGIN = { top: 14, right: 16, bottom: 46, left: 60 }
const LEGEND_WIDTH = 170

export function seriesColor(index: number): string {
  return PALETTE[index % PALETTE.length]
}

export function renderChartSvg(chart: ReportChart, size: ChartSize = { width: 700, height: 330 }): string {
  const plotWidth = size.width - MARGIN.left - MARGIN.right - LEGEND_WIDTH
  const plotHeight = size.height - MARGIN.top - MARGIN.bottom
  const parts: string[] = []
  const allPoints = chart.series.flatMap((s) => s.points)
  const open = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size.width} ${size.height}" width="${size.width}" height="${size.height}" role="img" aria-label="${escapeXml(chart.title)}" font-family="system-ui, sans-serif" font-size="11">`
  if (allPoints.length === 0) {
    return `${open}<text x="${size.width / 2}" y="${size.height / 2}" text-anchor="middle" fill="#666">no measured data</text></svg>`
  }

  // y: linear, from zero unless told otherwise.
  const ys = allPoints.map((p) => p.y).filter(Number.isFinite)
  if (chart.reference) ys.push(chart.reference.y)
  const yMin = Math.min(...ys)
  const yMax = Math.max(...ys)
  const zero = chart.y.zero ?? true
  const y = scaleLinear()
    .domain([zero ? Math.min(0, yMin) : yMin, yMax === yMin ? yMax + (yMax === 0 ? 1 : Math.abs(yMax) * 0.1) : yMax])
    .nice()
    .range([plotHeight, 0])

  // x: band (categories) or linear.
  const band = chart.x.type === 'band'
  const categories = chart.x.categories ?? [...new Set(allPoints.map((p) => String(p.x)))]
  const xBand: ScaleBand<string> = scaleBand<string>().domain(categories).range([0, plotWidth]).padding(0.2)
  let xLinear: ScaleLinear<number, number> = scaleLinear().range([0, plotWidth])
  if (!band) {
    const xs = allPoints.map((p) => Number(p.x)).filter(Number.isFinite)
    if (chart.marker) xs.push(chart.marker.x)
    const xMin = Math.min(...xs)
    const xMax = Math.max(...xs)
    xLinear = scaleLinear()
      .domain(chart.x.zero ? [Math.min(0, xMin), xMax] : xMin === xMax ? [xMin - 1, xMax + 1] : [xMin, xMax])
      .nice()
      .range([0, plotWidth])
  }
  const xOf = (value: number | string): number =>
    band ? (xBand(String(value)) ?? 0) + xBand.bandwidth() / 2 : xLinear(Number(value))

  parts.push(open, `<g transform="translate(${MARGIN.left},${MARGIN.top})">`)
  // Grid and y axis.
  for (const tick of y.ticks(6).filter((t) => !chart.y.integer || Number.isInteger(t))) {
    const ty = y(tick)
    parts.push(
      `<line x1="0" x2="${plotWidth}" y1="${ty}" y2="${ty}" stroke="#e5e5e5"/>`,
      `<text x="-6" y="${ty}" dy="0.32em" text-anchor="end" fill="#444">${escapeXml(formatAxisNumber(tick))}</text>`
    )
  }
  // x axis.
  parts.push(`<line x1="0" x2="${plotWidth}" y1="${plotHeight}" y2="${plotHeight}" stroke="#888"/>`)
  if (band) {
    const step = Math.max(1, Math.ceil(categories.length / 14))
    categories.forEach((c, i) => {
      if (i % step !== 0) return
      parts.push(
        `<text x="${xOf(c)}" y="${plotHeight + 14}" text-anchor="middle" fill="#444">${escapeXml(c.length > 14 ? `${c.slice(0, 13)}…` : c)}</text>`
      )
    })
  } else {
    for (const tick of xLinear.ticks(8).filter((t) => !chart.x.integer || Number.isInteger(t))) {
      const tx = xLinear(tick)
      parts.push(
        `<line x1="${tx}" x2="${tx}" y1="${plotHeight}" y2="${plotHeight + 4}" stroke="#888"/>`,
        `<text x="${tx}" y="${plotHeight + 15}" text-anchor="middle" fill="#444">${escapeXml(formatAxisNumber(tick))}</text>`
      )
    }
  }
  parts.push(
    `<text x="${plotWidth / 2}" y="${plotHeight + 36}" text-anchor="middle" fill="#222">${escapeXml(chart.x.label)}</text>`,
    `<text transform="translate(${-46},${plotHeight / 2}) rotate(-90)" text-anchor="middle" fill="#222">${escapeXml(chart.y.label)}</text>`
  )

  // Bars first (behind lines), grouped per category.
  const barSeries = chart.series.map((s, i) => ({ s, i })).filter(({ s }) => s.style === 'bar')
  if (barSeries.length > 0) {
    const inner = scaleBand<string>()
      .domain(barSeries.map(({ s }) => s.name))
      .range([0, band ? xBand.bandwidth() : Math.max(8, plotWidth / Math.max(1, categories.length) / 2)])
      .padding(0.08)
    for (const { s, i } of barSeries.map(({ s, i }) => ({ s, i: s.color ?? i })))
      for (const p of s.points) {
        const left = (band ? (xBand(String(p.x)) ?? 0) : xLinear(Number(p.x)) - inner.range()[1] / 2) + (inner(s.name) ?? 0)
        const top = y(Math.max(0, p.y))
        const height = Math.abs(y(p.y) - y(0))
        parts.push(
          `<rect x="${left.toFixed(2)}" y="${top.toFixed(2)}" width="${inner.bandwidth().toFixed(2)}" height="${height.toFixed(2)}" fill="${seriesColor(i)}"><title>${escapeXml(`${s.name} · ${p.label ?? p.x}: ${formatAxisNumber(p.y)}`)}</title></rect>`
        )
      }
  }
  // Lines and points.
  chart.series.forEach((s, i) => {
    if (s.style === 'bar') return
    const color = seriesColor(s.color ?? i)
    const points = s.points.filter((p) => Number.isFinite(p.y))
    if (s.style !== 'points' && points.length > 1) {
      const sorted = band ? points : [...points].sort((a, b) => Number(a.x) - Number(b.x))
      // A step series (histogram) lists the left edges of its bins: close the last bin at the next edge.
      if (s.style === 'step' && !band) {
        const last = sorted[sorted.length - 1]
        sorted.push({ ...last, x: Number(last.x) + (Number(last.x) - Number(sorted[sorted.length - 2].x)) })
      }
      const path = line<{ x: number | string; y: number }>()
        .x((p) => xOf(p.x))
        .y((p) => y(p.y))
        .curve(s.style === 'step' ? curveStepAfter : curveLinear)(sorted)
      const dash = s.style === 'dashed' ? ' stroke-dasharray="6 4"' : ''
      parts.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`)
    }
    if (s.style === 'points' || s.style === 'line+points' || points.length === 1)
      for (const p of points)
        parts.push(
          `<circle cx="${xOf(p.x).toFixed(2)}" cy="${y(p.y).toFixed(2)}" r="4" fill="${color}" stroke="#fff" stroke-width="1"><title>${escapeXml(`${s.name}${p.label ? ` (${p.label})` : ''}: ${formatAxisNumber(Number(p.x))}, ${formatAxisNumber(p.y)}`)}</title></circle>`
        )
  })
  if (chart.reference) {
    const ry = y(chart.reference.y)
    parts.push(
      `<line x1="0" x2="${plotWidth}" y1="${ry}" y2="${ry}" stroke="#555" stroke-dasharray="5 4"/>`,
      `<text x="4" y="${ry - 4}" fill="#555">${escapeXml(chart.reference.label)}</text>`
    )
  }
  if (chart.marker && !band) {
    const mx = xLinear(chart.marker.x)
    parts.push(
      `<line x1="${mx}" x2="${mx}" y1="0" y2="${plotHeight}" stroke="#333" stroke-dasharray="3 3"/>`,
      mx > plotWidth * 0.6
        ? `<text x="${mx - 4}" y="10" text-anchor="end" fill="#333">${escapeXml(chart.marker.label)}</text>`
        : `<text x="${mx + 4}" y="10" fill="#333">${escapeXml(chart.marker.label)}</text>`
    )
  }
  parts.push('</g>')
  // Legend.
  const legendX = MARGIN.left + plotWidth + 16
  chart.series.forEach((s, i) => {
    const ly = MARGIN.top + 6 + i * 17
    const color = seriesColor(s.color ?? i)
    const swatch =
      s.style === 'points'
        ? `<circle cx="${legendX + 7}" cy="${ly}" r="4" fill="${color}"/>`
        : s.style === 'bar'
          ? `<rect x="${legendX}" y="${ly - 5}" width="14" height="10" fill="${color}"/>`
          : `<line x1="${legendX}" x2="${legendX + 14}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${s.style === 'dashed' ? ' stroke-dasharray="4 3"' : ''}/>`
    const name = s.name.length > 24 ? `${s.name.slice(0, 23)}…` : s.name
    parts.push(swatch, `<text x="${legendX + 20}" y="${ly}" dy="0.32em" fill="#222">${escapeXml(name)}</text>`)
  })
  parts.push('</svg>')
  return parts.join('')
}
