/** The decoding settings form shared by Chat and the Workbench, and its conversion to the contract's shape. */
import type { DecodeSettings } from '../../../electron/api/decode'
import type { MethodInfo } from '../../../electron/api/methods'
import { parseParams } from './format'
import { initialText, readSettings } from './setting-form'

/** The decoding settings of the form, in the catalog's order (Chat and the Workbench show the same fields). */
export const DECODE_KEYS = ['maxTokens', 'temperature', 'topK', 'topP', 'gamma', 'seed'] as const
export type DecodeKey = (typeof DECODE_KEYS)[number]

export interface DecodeForm {
  /** Each decoding setting as typed (read with the catalog's rules; an empty seed = a random one per run / message). */
  maxTokens: string
  temperature: string
  topK: string
  topP: string
  gamma: string
  seed: string
  /** Catalog parameters the user changed (key → text); only the chosen methods' keys are sent. */
  params: Record<string, string>
  /** Further parameters as key=value pairs. */
  extra: string
}

/** The catalog's defaults; `maxTokens` as the screen wants it (a chat reply and a Workbench prompt differ). */
export const defaultDecodeForm = (maxTokens?: number): DecodeForm => ({
  ...(Object.fromEntries(DECODE_KEYS.map((key) => [key, initialText(key)])) as Record<DecodeKey, string>),
  ...(maxTokens === undefined ? {} : { maxTokens: String(maxTokens) }),
  params: {},
  extra: ''
})

/** The parameter keys of the chosen methods (the catalog's, via app:info). */
export const parameterKeys = (methods: readonly MethodInfo[]): Set<string> => new Set(methods.flatMap((m) => m.params.map((p) => p.key)))

/**
 * The contract's settings from the form. Fields of methods no longer chosen are left out (the host refuses a key
 * of a method that is not in the run); what the user typed under "More parameters" is sent as is, so a typo there
 * comes back as the host's message naming the key and the valid ones.
 */
export function toDecodeSettings(form: DecodeForm, methods: readonly MethodInfo[]): { settings: DecodeSettings; error: null } | { settings: null; error: string } {
  const extra = parseParams(form.extra)
  if (extra.error) return { settings: null, error: `Parameters: ${extra.error}` }
  const keys = parameterKeys(methods)
  // File paths go as typed (they may hold spaces); numbers and flags are typed by parseParams.
  const pathKeys = new Set(methods.flatMap((m) => m.params.filter((p) => p.type === 'path').map((p) => p.key)))
  const filled = Object.entries(form.params).filter(([k, v]) => keys.has(k) && v.trim() !== '')
  const fromFields = parseParams(
    filled
      .filter(([k]) => !pathKeys.has(k))
      .map(([k, v]) => `${k}=${v.trim()}`)
      .join(' ')
  )
  if (fromFields.error) return { settings: null, error: `Parameters: ${fromFields.error}` }
  for (const [k, v] of filled) if (pathKeys.has(k)) fromFields.params[k] = v.trim()
  const read = readSettings(Object.fromEntries(DECODE_KEYS.map((key) => [key, form[key]])) as Record<DecodeKey, string>)
  if (read.error !== null) return { settings: null, error: read.error }
  const { maxTokens, temperature, topK, topP, gamma, seed } = read.values as Record<DecodeKey, number | null>
  return {
    settings: {
      maxTokens: maxTokens!,
      temperature: temperature!,
      topK: topK!,
      topP: topP!,
      gamma: gamma!,
      seed,
      params: { ...fromFields.params, ...extra.params }
    },
    error: null
  }
}
