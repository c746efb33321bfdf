/** Number and text formatting for tables and stats. */
export const num = (v: number | null | undefined, digits = 2): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(digits)
export const pct = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : `${(v * 100).toFixed(1)}%`
export const times = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : `${v.toFixed(2)}×`
export const signed = (v: number | null | undefined, digits = 3): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '—' : `${v > 0 ? '+' : ''}${v.toFixed(digits)}`
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—'
  const units = ['B', 'KB', 'MB', 'GB', 'TB']
  let value = n
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(unit === 0 ? 0 : value < 10 ? 2 : 1)} ${units[unit]}`
}
export function count(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—'
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`
  return String(n)
}
export function date(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString()
}
export const baseName = (p: string | null | undefined): string => (p ? (p.split(/[\\/]/).pop() ?? p) : '—')
export const duration = (ms: number): string =>
  ms < 1000 ? `${ms.toFixed(0)} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`

/** Parses "key=value" lines / space-separated pairs into method parameters (numbers and booleans typed). */
export function parseParams(text: string): { params: Record<string, number | string | boolean>; error: string | null } {
  const params: Record<string, number | string | boolean> = {}
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    const match = /^([\w.-]+)=(.*)$/.exec(item)
    if (!match) return { params, error: `expected key=value, got "${item}"` }
    const raw = match[2]
    params[match[1]] = raw === 'true' ? true : raw === 'false' ? false : raw !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw
  }
  return { params, error: null }
}

/** Why a generation ended, in words (the engine's StopReason, and chat's stop string). */
export const STOP_REASON_LABELS: Record<string, string> = {
  eos: 'ended by the model',
  'max-tokens': 'reached the token limit',
  cancelled: 'stopped',
  'stop-string': 'ended at a stop string'
}

export const stopReasonLabel = (reason: string): string => STOP_REASON_LABELS[reason] ?? reason

export const PROVENANCE_LABELS = {
  draft: 'accepted from the small draft (M_q1; in a tree, its first choice)',
  ngram: 'accepted from an n-gram / prompt lookup (no model)',
  branch: "accepted from another branch of the draft's tree (sd-tree)",
  mid: 'accepted from the mid draft (M_q2)',
  resampled: 'resampled by the target after a rejection',
  bonus: 'bonus token from the target (all drafts accepted)',
  target: 'target only (no draft)'
} as const
export const PROVENANCE_CODES: Record<string, keyof typeof PROVENANCE_LABELS> = {
  d: 'draft',
  n: 'ngram',
  a: 'branch',
  m: 'mid',
  r: 'resampled',
  b: 'bonus',
  t: 'target'
}

/** Ten chart series colours that stay apart on either palette (app.css; Chart.svelte resolves the variables). */
/**
 * A chart's category label broken at spaces into lines of about `width` characters, at most `maxLines` (the last
 * one ends with … when text is left over): a method with its settings ("llama-server:draft γ=6
 * llamaserver.nMax=6 …") is longer than a bar is wide, and Chart.js draws an array as stacked lines.
 */
export function chartLabelLines(text: string, width = 16, maxLines = 3): string[] {
  const lines: string[] = []
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.length - 1
    if (last >= 0 && lines[last].length + 1 + word.length <= width) lines[last] += ` ${word}`
    else lines.push(word)
  }
  if (lines.length <= maxLines) return lines
  const kept = lines.slice(0, maxLines)
  kept[maxLines - 1] += ' …'
  return kept
}

export const SERIES_COLORS = Array.from({ length: 10 }, (_, i) => `var(--series-${i + 1})`)
