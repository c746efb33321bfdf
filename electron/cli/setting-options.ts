/**
 * CLI options generated from the run-settings catalog (engine/settings/run-settings.ts): the flag, its parser and
 * bounds, and its help come from the setting's declaration, so `--temperature 11` is refused with the same
 * sentence the app's requests use ("expected a number from 0 to 10"). A command may give its own default (bench
 * measures greedily, for instance) and add a clause to the help; the bounds and the sentence are never its own.
 */
import { InvalidArgumentError, Option } from 'commander'
import { flagOf, parseSettingText, rangeText, runSetting, settingDefault, type RunSettingKey } from '../engine/settings/run-settings'

export interface SettingOptionChoice {
  /**
   * The command's default; absent: the catalog's (none where empty means something, e.g. a random seed); null: none,
   * the command decides when the option is not given (a suite's cells keep their own generation length).
   */
  default?: number | string | boolean | null
  /** A clause appended to the catalog's help, for what the setting means in this command. */
  note?: string
  /** Narrow a choice setting to some of its choices (`models calibrate` measures, so it takes auto or refresh). */
  choices?: readonly string[]
}

/** The parser commander calls with the typed text: the value, or the catalog's sentence as the error. */
export function settingParser(key: RunSettingKey): (text: string) => number | string | boolean {
  return (text) => {
    const parsed = parseSettingText(key, text)
    if ('error' in parsed) throw new InvalidArgumentError(parsed.error)
    return parsed.value
  }
}

/** The commander option of a run setting (`--top-k <k>`, `--full-vocabulary`). */
export function settingOption(key: RunSettingKey, choice: SettingOptionChoice = {}): Option {
  const setting = runSetting(key)
  const catalogDefault = settingDefault(setting)
  const shown = choice.default !== undefined ? choice.default : setting.kind === 'boolean' ? null : catalogDefault
  // Commander adds "(default: …)" for a given default; a default that is no value is said in words.
  const unset = shown === null && setting.kind !== 'boolean' && setting.kind !== 'choice' ? setting.nullMeans : undefined
  const clauses = [rangeText(setting), unset ? `default: ${unset}` : ''].filter(Boolean).join('; ')
  const help = `${setting.help}${choice.note ? `; ${choice.note}` : ''}${clauses ? ` (${clauses})` : ''}`
  if (setting.kind === 'boolean') return new Option(flagOf(key), help)
  const option = new Option(`${flagOf(key)} <${setting.placeholder}>`, help)
  if (setting.kind === 'choice') option.choices(choice.choices ?? setting.choices)
  else option.argParser(settingParser(key))
  if (shown !== null && shown !== undefined) option.default(shown)
  return option
}
