/**
 * What the UI's method picker shows: the registry's methods, what models each needs, and the parameters each
 * documents. Parameters are read from the `key=value` examples in the registry's summaries (the same text
 * `speclab run --help` prints), so a method registered with documented defaults appears with its knobs and
 * nothing here can drift from the registry. Examples written as alternatives (`key=value:`) are skipped.
 */
import type { MethodInfo, MethodParamInfo } from '../api/contract'
import { availableMethods } from '../engine/decoders/registry'

const PARAM = /\b([a-z][a-zA-Z]*\.[a-zA-Z]\w*)=([^\s,;)]+)/g

function literal(raw: string): number | boolean | null {
  if (raw.endsWith(':')) return null // "key=value: meaning" describes an alternative, not the default
  const value = raw.replace(/\.$/, '')
  if (value === 'true') return true
  if (value === 'false') return false
  return value !== '' && Number.isFinite(Number(value)) ? Number(value) : null
}

export function documentedParams(summary: string): MethodParamInfo[] {
  const params: MethodParamInfo[] = []
  for (const match of summary.matchAll(PARAM)) {
    const defaultValue = literal(match[2])
    if (defaultValue === null || params.some((p) => p.key === match[1])) continue
    params.push({ key: match[1], defaultValue })
  }
  return params
}

export function methodInfos(): MethodInfo[] {
  return availableMethods().map((method) => ({
    id: method.id,
    summary: method.summary.replace(/\n\s+/g, ' '),
    needs: { ...method.needs },
    params: documentedParams(method.summary)
  }))
}
