/** The decoding settings form shared by Chat and the Workbench, and its conversion to the contract's shape. */
import type { DecodeSettings } from '../../../electron/api/contract'
import { parseParams } from './format'

export interface DecodeForm {
  maxTokens: number
  temperature: number
  topK: number
  topP: number
  gamma: number
  /** Empty = a random seed per run / message. */
  seed: string
  /** Documented parameters the user changed (key → text). */
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

export function toDecodeSettings(form: DecodeForm): { settings: DecodeSettings; error: null } | { settings: null; error: string } {
  const extra = parseParams(form.extra)
  if (extra.error) return { settings: null, error: `Parameters: ${extra.error}` }
  const fromFields = parseParams(
    Object.entries(form.params)
      .filter(([, v]) => v.trim() !== '')
      .map(([k, v]) => `${k}=${v.trim()}`)
      .join(' ')
  )
  if (fromFields.error) return { settings: null, error: `Parameters: ${fromFields.error}` }
  const seedText = form.seed.trim()
  const seed = seedText === '' ? null : Number(seedText)
  if (seed !== null && !(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32)) return { settings: null, error: 'Seed: a whole number from 0 to 4294967295, or empty' }
  const checks: [boolean, string][] = [
    [Number.isInteger(form.maxTokens) && form.maxTokens >= 1, 'Max tokens: a whole number ≥ 1'],
    [Number.isFinite(form.temperature) && form.temperature >= 0, 'Temperature: ≥ 0 (0 = greedy)'],
    [Number.isInteger(form.topK) && form.topK >= 0, 'Top-k: a whole number ≥ 0 (0 = whole vocabulary)'],
    [Number.isFinite(form.topP) && form.topP > 0 && form.topP <= 1, 'Top-p: in (0, 1]'],
    [Number.isInteger(form.gamma) && form.gamma >= 1, 'γ: a whole number ≥ 1']
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
