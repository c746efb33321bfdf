/**
 * The run-settings catalog: every setting of a run that is not a method parameter (those live in the method
 * catalog, engine/methods/catalog.ts), declared once with its kind, default, range, unit and one line of help.
 *
 * Derived from it, so that no bound or sentence is written twice:
 * - the contract's schemas (api/runs.ts, api/models.ts, api/chat.ts …) and the stored run config: `settingSchema`;
 * - the CLI options, their parsers and help (cli/setting-options.ts): `parseSettingText`, `settingHelp`;
 * - the app's forms — Chat, Workbench, Models (bounds, defaults, tooltips, validation): `checkSetting`;
 * - the settings table in docs/settings.md (scripts/generate-methods.ts): `settingsTable`.
 *
 * A value out of range is refused with the same sentence on every entry path ("expected a number from 0 to 10"):
 * the CLI prefixes the flag, a request the field. Pure (zod only), so the renderer may use it.
 */
import { z } from 'zod'
import { GAMMA_RANGE, MAX_REPEATS } from '../methods/limits'

/** Where a setting acts: the decode (sampling, budget, γ), the loaded models, or the run's schedule and workload. */
export type SettingGroup = 'decode' | 'load' | 'run'

interface SettingBase {
  /** Field name in requests and the stored run config; the CLI flag is its kebab-case (`topK` → `--top-k`). */
  key: string
  /** What the app's forms call it. */
  label: string
  /** One line of help: CLI help, form tooltip, docs table. */
  help: string
  group: SettingGroup
  /** The CLI placeholder (`--temperature <t>`). */
  placeholder: string
}

export interface NumericSetting extends SettingBase {
  kind: 'integer' | 'number'
  min: number
  max: number
  /** The range excludes `min` (top-p > 0). */
  minExclusive?: boolean
  /** The default; null: none given (see `nullMeans`). */
  default: number | null
  /** What leaving it empty means ("a random seed, recorded with the run"); absent: the setting is required. */
  nullMeans?: string
  /** The same in one word, for an empty field's placeholder ("random"). */
  emptyWord?: string
  /** A word accepted beside the numbers (GPU layers: 'auto'), and the default when it is. */
  word?: string
  unit?: string
  /** The app's input step. */
  step?: number
}

export interface ChoiceSetting extends SettingBase {
  kind: 'choice'
  choices: readonly string[]
  default: string
}

export interface BooleanSetting extends SettingBase {
  kind: 'boolean'
  default: boolean
}

export type RunSetting = NumericSetting | ChoiceSetting | BooleanSetting

/** Seeds are 32-bit: the PRNG (engine/sampling/prng.ts) is seeded with one unsigned word. */
const MAX_SEED = 2 ** 32 - 1

/**
 * Every run setting. Ranges are the union of what any entry path ever accepted, so a stored run always reads
 * back; where two paths used to differ (max tokens 16 384 in the app, 100 000 in the CLI), the wider bound holds.
 */
export const RUN_SETTINGS = [
  {
    key: 'maxTokens', label: 'Max tokens', group: 'decode', kind: 'integer', min: 1, max: 100_000, default: 128, unit: 'tokens',
    placeholder: 'n', help: 'tokens to generate per prompt (or reply)'
  },
  {
    key: 'temperature', label: 'Temperature', group: 'decode', kind: 'number', min: 0, max: 10, default: 1, step: 0.1,
    placeholder: 't', help: 'sampling temperature; 0 = greedy (argmax verify/correct)'
  },
  {
    key: 'topK', label: 'Top-k', group: 'decode', kind: 'integer', min: 0, max: 1_000_000, default: 64,
    placeholder: 'k', help: 'top-k warping for draft and target alike; 0 = whole vocabulary'
  },
  {
    key: 'topP', label: 'Top-p', group: 'decode', kind: 'number', min: 0, minExclusive: true, max: 1, default: 1, step: 0.05,
    placeholder: 'p', help: 'nucleus warping after top-k; 1 = off'
  },
  {
    key: 'gamma', label: 'γ (draft length)', group: 'decode', kind: 'integer', min: GAMMA_RANGE.min, max: GAMMA_RANGE.max, default: 5, unit: 'tokens',
    placeholder: 'g', help: 'draft length γ of fixed-window methods (the cap of adaptive ones)'
  },
  {
    key: 'seed', label: 'Seed', group: 'decode', kind: 'integer', min: 0, max: MAX_SEED, default: null,
    nullMeans: 'a random seed, recorded with the run', emptyWord: 'random', placeholder: 's', help: 'PRNG seed; each prompt draws from its own stream (seed, prompt index)'
  },
  {
    key: 'fullVocabulary', label: 'Full vocabulary', group: 'load', kind: 'boolean', default: false, placeholder: '',
    help: 'transfer all logits from llama.cpp instead of the top-k (slower, exact for any warp)'
  },
  {
    key: 'contextSize', label: 'Context size', group: 'load', kind: 'integer', min: 64, max: 1_048_576, default: 2048, step: 64,
    unit: 'tokens', placeholder: 'n', help: "context size per sequence (capped by each model's training context)"
  },
  {
    key: 'threads', label: 'Threads', group: 'load', kind: 'integer', min: 1, max: 256, default: null,
    nullMeans: 'measured per model and phase at load', emptyWord: 'measured', placeholder: 'n',
    help: 'CPU threads of every model and phase'
  },
  {
    key: 'batchThreads', label: 'Batch threads (target)', group: 'load', kind: 'integer', min: 1, max: 256, default: null,
    nullMeans: 'measured at load, else the thread count given', emptyWord: 'measured', placeholder: 'n',
    help: "the target's threads for batched evaluations (verification, prefill)"
  },
  {
    key: 'calibration', label: 'Thread calibration', group: 'load', kind: 'choice', choices: ['auto', 'refresh', 'off'], default: 'auto',
    placeholder: 'mode',
    help:
      'how threads are chosen when no thread count is given: auto = measured at load and cached per model file, machine and ' +
      "llama.cpp binary; refresh = measure again; off = the rule (1 on ≤ 2 cores; the target's batches on every core)"
  },
  {
    key: 'gpuLayers', label: 'GPU layers', group: 'load', kind: 'integer', min: 0, max: 1000, default: null, word: 'auto',
    nullMeans: 'auto', placeholder: 'n', help: 'layers to offload to the GPU: auto (node-llama-cpp decides) or a number (0 = CPU only)'
  },
  {
    key: 'repeats', label: 'Timed repeats', group: 'run', kind: 'integer', min: 1, max: MAX_REPEATS, default: null,
    nullMeans: '3 when ar is compared with another method, else 1', emptyWord: 'auto', placeholder: 'n',
    help: 'timed repeats of every (prompt, method), interleaved prompt → repeat → method; tok/s and speedups are medians with 95 % bootstrap intervals'
  },
  {
    key: 'limit', label: 'Prompt limit', group: 'run', kind: 'integer', min: 1, max: 1_000_000, default: null,
    nullMeans: 'every prompt of the set', emptyWord: 'all', placeholder: 'n', help: 'use the first N prompts'
  }
] as const satisfies readonly RunSetting[]

export type RunSettingKey = (typeof RUN_SETTINGS)[number]['key']

/** The declaration of one setting. */
export function runSetting(key: RunSettingKey): RunSetting {
  return RUN_SETTINGS.find((s) => s.key === key)! as RunSetting
}

/** The CLI flag of a setting: `topK` → `--top-k`. */
export const flagOf = (key: string): string => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`

/** "expected a number from 0 to 10" — the one sentence every entry path says for a value out of range. */
export function expectation(setting: RunSetting): string {
  if (setting.kind === 'boolean') return 'expected true or false'
  if (setting.kind === 'choice') return `expected one of ${setting.choices.join(', ')}`
  const what = setting.kind === 'integer' ? 'an integer' : 'a number'
  const range = setting.minExclusive ? `above ${setting.min} and at most ${setting.max}` : `from ${setting.min} to ${setting.max}`
  return `expected ${what} ${range}${setting.word ? `, or ${setting.word}` : ''}`
}

/** Null when `value` is allowed, else the setting's sentence (a number, or the setting's word where it has one). */
export function checkSetting(key: RunSettingKey, value: unknown): string | null {
  const setting = runSetting(key)
  if (setting.kind === 'boolean') return typeof value === 'boolean' ? null : expectation(setting)
  if (setting.kind === 'choice') return typeof value === 'string' && setting.choices.includes(value) ? null : expectation(setting)
  if (setting.word !== undefined && value === setting.word) return null
  return inRange(setting, value) ? null : expectation(setting)
}

function inRange(setting: NumericSetting, value: unknown): value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return false
  if (setting.kind === 'integer' && !Number.isInteger(value)) return false
  const aboveMin = setting.minExclusive ? value > setting.min : value >= setting.min
  return aboveMin && value <= setting.max
}

/**
 * The setting as the user typed it (a CLI argument, a form field): the value, or the setting's sentence.
 * Integers must be written as integers ("2.0" and "1e3" are not), so what the CLI accepts a request accepts too.
 */
export function parseSettingText(key: RunSettingKey, text: string): { value: number | string | boolean } | { error: string } {
  const setting = runSetting(key)
  const trimmed = text.trim()
  let value: number | string | boolean
  if (setting.kind === 'boolean') value = trimmed === 'true' ? true : trimmed === 'false' ? false : trimmed
  else if (setting.kind === 'choice' || (setting.word !== undefined && trimmed === setting.word)) value = trimmed
  else if (setting.kind === 'integer') value = /^-?\d+$/.test(trimmed) ? Number(trimmed) : NaN
  else value = trimmed === '' ? NaN : Number(trimmed)
  const error = checkSetting(key, value)
  return error === null ? { value } : { error }
}

/** Every setting's value type, by key: what the CLI's parsed options, the builder's request and the forms carry. */
export interface RunSettingValues {
  maxTokens: number
  temperature: number
  topK: number
  topP: number
  gamma: number
  seed: number
  fullVocabulary: boolean
  contextSize: number
  threads: number
  batchThreads: number
  calibration: CalibrationMode
  gpuLayers: number | 'auto'
  repeats: number
  limit: number
}

/** The settings whose value is a plain number (no word beside the numbers). */
export type NumberSettingKey = Exclude<RunSettingKey, 'fullVocabulary' | 'calibration' | 'gpuLayers'>
export type CalibrationMode = 'auto' | 'refresh' | 'off'

/**
 * The zod schema of a setting's value (never null: callers add `.nullable()` where empty has a meaning). Out of
 * range, it fails with the setting's sentence, which api/request-errors.ts prints after the field's name.
 */
export function settingSchema(key: 'fullVocabulary'): z.ZodBoolean
export function settingSchema(key: 'calibration'): z.ZodType<CalibrationMode>
export function settingSchema(key: 'gpuLayers'): z.ZodType<'auto' | number>
export function settingSchema(key: NumberSettingKey): z.ZodNumber
export function settingSchema(key: RunSettingKey): z.ZodType {
  const setting = runSetting(key)
  const message = expectation(setting)
  const valid = (value: unknown) => checkSetting(key, value) === null
  if (setting.kind === 'boolean') return z.boolean()
  // z.custom, not z.enum / z.union: their own messages ("Invalid input") would replace the setting's sentence.
  if (setting.kind === 'choice' || setting.word !== undefined) return z.custom(valid, { error: message })
  return z.number().refine(valid, { error: message })
}

/** The default of a setting as its form shows it: the number, the word, or '' for "empty = …". */
export function defaultText(setting: RunSetting): string {
  const value = settingDefault(setting)
  return value === null ? '' : String(value)
}

/** "a number from 0 to 10" (empty for flags and choices, whose values speak for themselves). */
export function rangeText(setting: RunSetting): string {
  return setting.kind === 'boolean' || setting.kind === 'choice' ? '' : expectation(setting).replace(/^expected /, '')
}

/** "sampling temperature; 0 = greedy … (a number from 0 to 10; default 1)" — form tooltips. */
export function settingHelp(setting: RunSetting, defaultShown: string | number | boolean | null = settingDefault(setting)): string {
  const range = rangeText(setting)
  const fallback = setting.kind === 'integer' || setting.kind === 'number' ? setting.nullMeans : undefined
  const shown = defaultShown === null || defaultShown === '' ? (fallback ? `empty = ${fallback}` : '') : `default ${String(defaultShown)}`
  const tail = [range, shown].filter(Boolean).join('; ')
  return tail ? `${setting.help} (${tail})` : setting.help
}

/** The catalog's default value (null where empty means something). */
export function settingDefault(setting: RunSetting): number | string | boolean | null {
  if (setting.kind === 'integer' || setting.kind === 'number') return setting.default ?? setting.word ?? null
  return setting.default
}

/** The markdown table of docs/settings.md: one row per setting, from this catalog. */
export function settingsTable(): string {
  const rows = RUN_SETTINGS.map((raw) => {
    const setting = raw as RunSetting
    const range = setting.kind === 'boolean' ? 'true / false' : setting.kind === 'choice' ? setting.choices.join(' / ') : rangeText(setting)
    const fallback = setting.kind === 'integer' || setting.kind === 'number' ? setting.nullMeans : undefined
    const shown = settingDefault(setting)
    const dflt = shown === null ? `empty = ${fallback}` : String(shown)
    const unit = setting.kind === 'integer' || setting.kind === 'number' ? (setting.unit ?? '') : ''
    const flag = setting.kind === 'boolean' ? flagOf(setting.key) : `${flagOf(setting.key)} <${setting.placeholder}>`
    return `| \`${setting.key}\` | \`${flag}\` | ${setting.label} | ${setting.group} | ${range}${unit ? ` ${unit}` : ''} | ${dflt} | ${setting.help} |`
  })
  return ['| setting | CLI | app | acts on | range | default | what it does |', '| --- | --- | --- | --- | --- | --- | --- |', ...rows].join('\n')
}
