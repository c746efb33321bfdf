/**
 * Form fields of run settings, from the run-settings catalog (electron/engine/settings/run-settings.ts): what a field
 * shows (label, placeholder, tooltip) and how its text becomes the setting's value — refused with the catalog's
 * sentence, the one the CLI and the host say too ("Temperature: expected a number from 0 to 10").
 */
import type { LoadSettings } from '../../../electron/api/models'
import { defaultText, parseSettingText, runSetting, settingHelp, type RunSettingKey } from '../../../electron/api/renderer-kit'

export type SettingValue = number | string | boolean

/**
 * A field's text as the setting's value. Empty text is null where the catalog gives empty a meaning (a random seed,
 * measured threads), else it is refused.
 */
export function readSetting(key: RunSettingKey, text: string): { value: SettingValue | null; error: null } | { value: null; error: string } {
  const setting = runSetting(key)
  if (text.trim() === '' && (setting.kind === 'integer' || setting.kind === 'number') && setting.nullMeans !== undefined) return { value: null, error: null }
  const parsed = parseSettingText(key, text)
  if ('error' in parsed) return { value: null, error: `${setting.label}: ${parsed.error}` }
  return { value: parsed.value, error: null }
}

/** Reads several fields at once: the values by key, or the first field's error. */
export function readSettings<K extends RunSettingKey>(texts: Record<K, string>): { values: Record<K, SettingValue | null>; error: null } | { values: null; error: string } {
  const values = {} as Record<K, SettingValue | null>
  for (const key of Object.keys(texts) as K[]) {
    const read = readSetting(key, texts[key])
    if (read.error !== null) return { values: null, error: read.error }
    values[key] = read.value
  }
  return { values, error: null }
}

/** The text a field starts with: the catalog's default ('' where empty means something). */
export const initialText = (key: RunSettingKey): string => defaultText(runSetting(key))

/** What an empty field means, in one word, as its placeholder ("random", "measured"); the default otherwise. */
export function placeholderOf(key: RunSettingKey): string {
  const setting = runSetting(key)
  if ((setting.kind === 'integer' || setting.kind === 'number') && setting.nullMeans !== undefined) return setting.emptyWord ?? setting.word ?? ''
  return defaultText(setting)
}

/** The field's tooltip: the catalog's help, range and default. */
export const tooltipOf = (key: RunSettingKey): string => settingHelp(runSetting(key))

/** The load settings a form shows as text (full vocabulary is a checkbox). */
export const LOAD_KEYS = ['contextSize', 'gpuLayers', 'threads', 'batchThreads', 'calibration'] as const
export type LoadKey = (typeof LOAD_KEYS)[number]
export type LoadForm = Record<LoadKey, string> & { fullVocabulary: boolean }

/** A load form filled from settings (those of the loaded trio, or the catalog's defaults when none). */
export function loadFormOf(settings: LoadSettings | null): LoadForm {
  if (!settings) return { ...(Object.fromEntries(LOAD_KEYS.map((key) => [key, initialText(key)])) as Record<LoadKey, string>), fullVocabulary: false }
  return {
    contextSize: String(settings.contextSize),
    gpuLayers: String(settings.gpuLayers),
    threads: settings.threads === null ? '' : String(settings.threads),
    batchThreads: settings.batchThreads === null ? '' : String(settings.batchThreads),
    calibration: settings.calibration ?? initialText('calibration'),
    fullVocabulary: settings.fullVocabulary
  }
}

/** The contract's load settings from the form, or the first field's error in the catalog's words. */
export function toLoadSettings(form: LoadForm): { settings: LoadSettings; error: null } | { settings: null; error: string } {
  const read = readSettings(Object.fromEntries(LOAD_KEYS.map((key) => [key, form[key]])) as Record<LoadKey, string>)
  if (read.error !== null) return { settings: null, error: read.error }
  const values = read.values
  return {
    settings: {
      contextSize: values.contextSize as number,
      gpuLayers: (values.gpuLayers ?? 'auto') as number | 'auto',
      threads: values.threads as number | null,
      batchThreads: values.batchThreads as number | null,
      calibration: values.calibration as LoadSettings['calibration'],
      fullVocabulary: form.fullVocabulary
    },
    error: null
  }
}
