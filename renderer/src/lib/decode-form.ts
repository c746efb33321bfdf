/** The decoding settings form shared by Chat and the Workbench, and its conversion to the contract's shape. */
import type { DecodeSettings } from '../../../electron/api/decode'
import type { MethodInfo } from '../../../electron/api/methods'
import { GAMMA_RANGE } from '../../../electron/api/renderer-kit'
import { parseParams } from './format'

export interface DecodeForm {
  maxTokens: number
  temperature: number
  topK: number
  topP: number
  gamma: number
  /** Empty = a random seed per run / message. */
  seed: string
  /** Catalog parameters the user changed (key → text); only the chosen methods' keys are sent. */
  params: Record<string, string>
  /** Further parameters as key=value pairs. */
  extra: string
}

export const defaultDecodeForm = (maxTokens = 128): DecodeForm => ({
  maxTokens,
  temperature: 1,
  topK: 64,
  topP: 1,
  gamma: 5,
  seed: '',
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
  const seedText = form.seed.trim()
  const seed = seedText === '' ? null : Number(seedText)
  if (seed !== null && !(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32)) return { settings: null, error: 'Seed: a whole number from 0 to 4294967295, or empty' }
  const checks: [boolean, string][] = [
    [Number.isInteger(form.maxTokens) && form.maxTokens >= 1, 'Max tokens: a whole number ≥ 1'],
    [Number.isFinite(form.temperature) && form.temperature >= 0, 'Temperature: ≥ 0 (0 = greedy)'],
    [Number.isInteger(form.topK) && form.topK >= 0, 'Top-k: a whole number ≥ 0 (0 = whole vocabulary)'],
    [Number.isFinite(form.topP) && form.topP > 0 && form.topP <= 1, 'Top-p: in (0, 1]'],
    [Number.isInteger(form.gamma) && form.gamma >= GAMMA_RANGE.min && form.gamma <= GAMMA_RANGE.max, `γ: a whole number from ${GAMMA_RANGE.min} to ${GAMMA_RANGE.max}`]
  ]
  const failed = checks.find(([ok]) => !ok)
  if (failed) return { settings: null, error: failed[1] }
  return {
    settings: {
      maxTokens: form.maxTokens,
      temperature: form.temperature,
      topK: form.topK,
      topP: form.topP,
      gamma: form.gamma,
      seed,
      params: { ...fromFields.params, ...extra.params }
    },
    error: null
  }
}
