/**
 * The colour scheme for what CSS cannot colour: Chart.js draws on a canvas, so chart configs name colours as CSS
 * variables (`'var(--series-1)'`, defined in app.css for both palettes) and Chart.svelte resolves them here when
 * it builds a chart. `scheme.dark` follows the system (prefers-color-scheme); reading it in an effect re-runs that
 * effect — and so re-draws the chart — when the system switches between light and dark.
 */
const query = typeof matchMedia === 'function' ? matchMedia('(prefers-color-scheme: dark)') : null

export const scheme = $state({ dark: query?.matches ?? false })
query?.addEventListener('change', (event) => (scheme.dark = event.matches))

/** The current value of a CSS custom property on :root, e.g. cssVar('--chart-text'). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim()
}

const VAR = /^var\((--[\w-]+)\)$/

/** A copy of plain data (a chart config) with every `'var(--name)'` string replaced by that variable's value. */
export function resolveCssVars<T>(value: T): T {
  if (typeof value === 'string') {
    const match = VAR.exec(value)
    return (match ? cssVar(match[1]) || value : value) as T
  }
  if (Array.isArray(value)) return value.map(resolveCssVars) as T
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveCssVars(item)])) as T
  }
  return value
}
