/**
 * The run-settings catalog is the one home of every run setting: this test walks each setting through every entry
 * path that takes it — the CLI's options (`speclab run`, `bench`, `suite`), the Workbench's request, Chat's request
 * and the Models screen's load — and finds the same value accepted or refused with the same sentence on each. It also
 * checks the builder (experiments/run-request.ts) turns the same settings into the same run config from any path.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Command, Option } from 'commander'
import { describe, expect, it } from 'vitest'
import { ApiRequests } from '../../electron/api/contract'
import { describeInvalidRequest } from '../../electron/api/request-errors'
import { benchCommand } from '../../electron/cli/bench-command'
import { runCommand } from '../../electron/cli/run-command'
import { suiteCommand } from '../../electron/cli/suite-command'
import {
  checkSetting,
  expectation,
  flagOf,
  parseSettingText,
  RUN_SETTINGS,
  runSetting,
  settingsTable,
  type RunSettingKey
} from '../../electron/engine/settings/run-settings'
import { withGeneratedBlock } from '../../electron/engine/methods/docs'
import { SETTINGS_TABLE } from '../../electron/engine/settings/docs'
import { buildRunRequest, resolveDecode, withLoadedTrio } from '../../electron/experiments/run-request'

type Path = 'workbench' | 'chat' | 'load'

/** Where each setting sits in each app request (the CLI takes every setting as its flag). */
const PLACES: Record<RunSettingKey, Partial<Record<Path, (value: unknown) => Record<string, unknown>>>> = {
  maxTokens: { workbench: (v) => workbench({ settings: decode({ maxTokens: v }) }), chat: (v) => chat(decode({ maxTokens: v })) },
  temperature: { workbench: (v) => workbench({ settings: decode({ temperature: v }) }), chat: (v) => chat(decode({ temperature: v })) },
  topK: { workbench: (v) => workbench({ settings: decode({ topK: v }) }), chat: (v) => chat(decode({ topK: v })) },
  topP: { workbench: (v) => workbench({ settings: decode({ topP: v }) }), chat: (v) => chat(decode({ topP: v })) },
  gamma: { workbench: (v) => workbench({ settings: decode({ gamma: v }) }), chat: (v) => chat(decode({ gamma: v })) },
  seed: { workbench: (v) => workbench({ settings: decode({ seed: v }) }), chat: (v) => chat(decode({ seed: v })) },
  fullVocabulary: { workbench: (v) => workbench({ load: load({ fullVocabulary: v }) }), load: (v) => modelsLoad({ fullVocabulary: v }) },
  contextSize: { workbench: (v) => workbench({ load: load({ contextSize: v }) }), load: (v) => modelsLoad({ contextSize: v }) },
  threads: { workbench: (v) => workbench({ load: load({ threads: v }) }), load: (v) => modelsLoad({ threads: v }) },
  batchThreads: { workbench: (v) => workbench({ load: load({ batchThreads: v }) }), load: (v) => modelsLoad({ batchThreads: v }) },
  calibration: { workbench: (v) => workbench({ load: load({ calibration: v }) }), load: (v) => modelsLoad({ calibration: v }) },
  gpuLayers: { workbench: (v) => workbench({ load: load({ gpuLayers: v }) }), load: (v) => modelsLoad({ gpuLayers: v }) },
  repeats: { workbench: (v) => workbench({ repeats: v }) },
  limit: { workbench: (v) => workbench({ limit: v }) }
}

const decode = (patch: Record<string, unknown>) => ({ maxTokens: 16, temperature: 0, topK: 64, topP: 1, gamma: 4, seed: 1, params: {}, ...patch })
const load = (patch: Record<string, unknown>) => ({ contextSize: 512, gpuLayers: 'auto', threads: null, batchThreads: null, fullVocabulary: false, ...patch })
const workbench = (patch: Record<string, unknown>) => ({
  suite: null,
  methods: ['ar', 'sd'],
  dataset: { kind: 'builtin', id: 'stories' },
  limit: 2,
  models: { target: 1, mid: null, draft: 2 },
  load: load({}),
  settings: decode({}),
  ...patch
})
const chat = (settings: Record<string, unknown>) => ({ conversationId: null, text: 'Once', settings: { ...settings, method: 'sd' }, format: 'auto', systemPrompt: '' })
const modelsLoad = (patch: Record<string, unknown>) => ({ trio: { target: 1, mid: null, draft: 2 }, settings: load(patch) })

const CHANNEL: Record<Path, 'workbench:start' | 'chat:send' | 'models:load'> = { workbench: 'workbench:start', chat: 'chat:send', load: 'models:load' }

/** The app's answer to a request: null when accepted, else the refusal's sentence (after the field's name). */
function appVerdict(path: Path, request: Record<string, unknown>): string | null {
  const parsed = ApiRequests[CHANNEL[path]].safeParse(request)
  if (parsed.success) return null
  return describeInvalidRequest(parsed.error).replace(/^[\w.[\]]+: /, '')
}

/** The CLI's answer to `--flag text`: null when accepted, else the parser's sentence. */
function cliVerdict(command: Command, key: RunSettingKey, text: string): string | null | 'absent' {
  const option = command.options.find((o: Option) => o.long === flagOf(key))
  if (!option) return 'absent'
  const setting = runSetting(key)
  if (setting.kind === 'boolean') return null
  if (setting.kind === 'choice') return option.argChoices?.includes(text) ? null : expectation(setting)
  try {
    option.parseArg!(text, undefined)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

/** For each setting: values inside and outside its range, as typed (CLI) and as sent (app). */
function samples(key: RunSettingKey): { good: [string, unknown][]; bad: [string, unknown][] } {
  const setting = runSetting(key)
  if (setting.kind === 'boolean') return { good: [['true', true], ['false', false]], bad: [] }
  if (setting.kind === 'choice') return { good: setting.choices.map((c) => [c, c]), bad: [['sometimes', 'sometimes']] }
  const step = setting.kind === 'integer' ? 1 : 0.5
  const good: [string, unknown][] = [[String(setting.max), setting.max]]
  good.push(setting.minExclusive ? [String(setting.min + step / 10), setting.min + step / 10] : [String(setting.min), setting.min])
  if (setting.word) good.push([setting.word, setting.word])
  const bad: [string, unknown][] = [
    [String(setting.max + step), setting.max + step],
    [String(setting.min - (setting.minExclusive ? 0 : step)), setting.min - (setting.minExclusive ? 0 : step)]
  ]
  if (setting.kind === 'integer') bad.push([String(setting.min + 0.5), setting.min + 0.5])
  return { good, bad }
}

describe('the run-settings catalog', () => {
  it('declares each setting once, and every entry path places it', () => {
    const keys = RUN_SETTINGS.map((s) => s.key)
    expect(new Set(keys).size).toBe(keys.length)
    expect(Object.keys(PLACES).sort()).toEqual([...keys].sort())
  })

  it.each(RUN_SETTINGS.map((s) => s.key))('%s: the CLI, the Workbench, Chat and the Models screen accept and refuse alike', (key) => {
    const run = runCommand()
    const { good, bad } = samples(key)
    // `speclab run` takes every setting as its flag.
    expect(cliVerdict(run, key, good[0]![0])).not.toBe('absent')
    for (const [text, value] of good) {
      expect(cliVerdict(run, key, text), `--${key} ${text}`).toBeNull()
      expect(checkSetting(key, value)).toBeNull()
      for (const [path, place] of Object.entries(PLACES[key]) as [Path, (v: unknown) => Record<string, unknown>][])
        expect(appVerdict(path, place(value)), `${path} ${key}=${String(value)}`).toBeNull()
    }
    for (const [text, value] of bad) {
      const sentence = expectation(runSetting(key))
      expect(cliVerdict(run, key, text), `--${key} ${text}`).toBe(sentence)
      for (const [path, place] of Object.entries(PLACES[key]) as [Path, (v: unknown) => Record<string, unknown>][])
        expect(appVerdict(path, place(value)), `${path} ${key}=${String(value)}`).toBe(sentence)
    }
  })

  it('bench and suite take the shared settings with the same parser (their defaults are their own)', () => {
    for (const command of [benchCommand(), suiteCommand()])
      for (const key of ['maxTokens', 'seed', 'repeats'] as const) {
        expect(cliVerdict(command, key, '0')).toBe(key === 'seed' ? null : expectation(runSetting(key)))
        expect(cliVerdict(command, key, '2.5')).toBe(expectation(runSetting(key)))
      }
  })

  it('parses typed text strictly: integers are written as integers', () => {
    expect(parseSettingText('gamma', '2.0')).toEqual({ error: 'expected an integer from 1 to 128' })
    expect(parseSettingText('gamma', '1e1')).toEqual({ error: 'expected an integer from 1 to 128' })
    expect(parseSettingText('temperature', ' 0.7 ')).toEqual({ value: 0.7 })
    expect(parseSettingText('gpuLayers', 'auto')).toEqual({ value: 'auto' })
    expect(parseSettingText('topP', '0')).toEqual({ error: 'expected a number above 0 and at most 1' })
  })

  it('docs/settings.md holds the generated table (npm run methods:docs)', () => {
    const docs = fs.readFileSync(path.join(__dirname, '../../docs/settings.md'), 'utf8')
    expect(withGeneratedBlock(docs, SETTINGS_TABLE)).toBe(docs)
  })

  it('generates the docs table from the catalog, one row per setting', () => {
    const table = settingsTable().split('\n')
    expect(table).toHaveLength(RUN_SETTINGS.length + 2)
    for (const setting of RUN_SETTINGS) expect(table.some((row) => row.startsWith(`| \`${setting.key}\``))).toBe(true)
  })
})

describe('the run-request builder', () => {
  const request = {
    suite: null,
    methods: ['ar', 'sd'],
    models: { target: '/m/t.gguf', draft: '/m/d.gguf' },
    prompts: { dataset: 'stories', limit: 2 },
    decode: { temperature: 0.5, topK: 8, maxTokens: 32, seed: 7 },
    load: {}
  }

  it('fills defaults from the catalog and shapes the warp once', () => {
    const { config, load } = buildRunRequest(request)
    expect(config.sampling).toEqual({ temperature: 0.5, topK: 8, topP: 1, fullVocabulary: false })
    expect(config.gamma).toBe(runSetting('gamma').default)
    expect(config.contextSize).toBe(runSetting('contextSize').default)
    expect(config.repeats).toBe(3)
    expect(load).toMatchObject({ threads: undefined, calibration: 'auto', contextSize: 2048, sharedVocabulary: true })
    expect(resolveDecode(request.decode).warp).toEqual({ temperature: 0.5, topK: 8, topP: 1 })
  })

  it('refuses a value out of range with the catalog sentence', () => {
    expect(() => buildRunRequest({ ...request, decode: { temperature: 11 } })).toThrow(/expected a number from 0 to 10/)
  })

  it('records the thread plan once, with the older per-field counts written from it', () => {
    const { config } = buildRunRequest(request)
    const plan = {
      models: [
        { role: 'target' as const, file: '/m/t.gguf', token: { threads: 1, source: 'measured' as const }, batch: { threads: 2, source: 'measured' as const } },
        { role: 'draft' as const, file: '/m/d.gguf', token: { threads: 1, source: 'cached' as const }, batch: { threads: 1, source: 'cached' as const } }
      ],
      calibration: null
    }
    const ran = withLoadedTrio(config, { contextSize: 512, fingerprints: [], threadPlan: plan })
    expect(ran.threadPlan).toEqual(plan)
    expect(ran).toMatchObject({ threads: 1, targetThreads: 1, batchThreads: 2, draftThreads: 1, contextSize: 512 })
  })
})
