/** Printing a report's numbers: one function, so Markdown, HTML and the tests agree on every digit. */
import type { TableColumn, TableValue } from './model'

export function formatValue(value: TableValue, column: TableColumn): string {
  if (value === null || value === undefined) return '–'
  if (typeof value === 'boolean') return value ? '✓' : ''
  if (typeof value === 'string') return value
  if (typeof value === 'object') {
    if (value.low === value.high) return formatValue(value.median, column)
    return `${formatValue(value.median, column)} [${formatValue(value.low, { ...column, format: column.format === 'speedup' ? 'number' : column.format })}–${formatValue(value.high, column)}]`
  }
  if (!Number.isFinite(value)) return '–'
  const digits = column.digits ?? (column.format === 'ratio' ? 3 : 2)
  switch (column.format) {
    case 'integer':
      return String(Math.round(value))
    case 'speedup':
      return `${value.toFixed(digits)}×`
    case 'percent':
      return (value * 100).toFixed(digits)
    case 'text':
      return String(value)
    default:
      return value.toFixed(digits)
  }
}

/** Compact axis / chart-data numbers: up to 3 significant decimals, no trailing zeros. */
export function formatAxisNumber(value: number): string {
  if (!Number.isFinite(value)) return '–'
  if (Number.isInteger(value)) return String(value)
  const abs = Math.abs(value)
  const digits = abs >= 100 ? 1 : abs >= 1 ? 2 : 3
  return String(Number(value.toFixed(digits)))
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}
