/**
 * What the `speclab` CLI prints for people: numbers without float noise,
 * the `runs` and `diff` tables, the progress bar (no NaN/Infinity ETA, its line wiped before the report, nothing in
 * a log that is not a terminal) and the method list of `run --help`.
 */
import { describe, expect, it } from 'vitest'
import type { RunReport } from '../../electron/api/runs'
import { diffRuns } from '../../electron/api/run-diff'
import { bestSpeedup, formatDiff, formatFixed, formatNumber, formatTable, methodTable, runsTable, terminalSafe, type RunsRow } from '../../electron/cli/format'
import { createProgressBar, createProgressLine, estimateRemainingMs, formatEta, progressStream, TTY_COLUMNS_ENV } from '../../electron/cli/progress'
import { methodHelp, methodInfos } from '../../electron/engine/methods/docs'
import type { MethodSummary } from '../../electron/engine/metrics/summary'

/** A terminal (or a log file) that records what is written to it. */
function fakeStream(isTTY: boolean, columns = 160) {
  const writes: string[] = []
  return { writes, stream: { isTTY, columns, write: (text: string) => (writes.push(text), true) } }
}

function method(name: string, overrides: Partial<MethodSummary> = {}): MethodSummary {
  return {
    method: name,
    prompts: 2,
    outputTokens: 48,
    wallMs: 34.18,
    tokensPerSecond: 1404.0636299999896,
    speedup: name === 'ar' ? 1 : 1.3849999999,
    aggregateTokensPerSecond: null,
    throughputRatio: null,
    sigma: name === 'ar' ? null : 0.28301886792452835,
    eta: name === 'ar' ? 1 : 0.25,
    acceptanceRate: name === 'ar' ? null : 0.7169811320754716,
    meanAcceptedLength: name === 'ar' ? null : 3.1666666666666665,
    targetCalls: name === 'ar' ? 48 : 12,
    draftTokens: name === 'ar' ? 0 : 53,
    acceptedTokens: name === 'ar' ? 0 : 38,
    gammaTrajectory: [],
    outputs: [],
    draftMs: 0,
    verifyMs: 0,
    overheadMs: 0,
    steps: 0,
    overheadPerStepMs: 0.035999999999,
    repeats: 1,
    tokensPerSecondInterval: null,
    speedupInterval: null,
    acceptanceByPosition: [],
    alpha: null,
    timings: [],
    decisionDigest: '',
    costs: null,
    theory: null,
    ...overrides
  }
}

function report(runId: number, methods: MethodSummary[], config: Partial<RunReport['config']> = {}): RunReport {
  return {
    runId,
    status: 'done',
    methods,
    machine: null,
    whatIf: null,
    config: {
      suite: null,
      methods: methods.map((m) => m.method) as RunReport['config']['methods'],
      models: { target: '/models/stories260K-f32.gguf', draft: '/models/stories260K-q4_0.gguf' },
      modelFingerprints: [],
      prompts: { dataset: 'stories', limit: 2 },
      maxTokens: 24,
      sampling: { temperature: 0, topK: 64, topP: 1, fullVocabulary: false },
      seed: 2279793213,
      gamma: 5,
      params: {},
      threads: 2,
      batchThreads: null,
      targetThreads: null,
      draftThreads: null,
      threadCalibration: null,
      threadPlan: null,
      contextSize: 2048,
      draftSelection: null,
      repeats: 1,
      syntheticAcceptance: null,
      advice: null,
      ...config
    }
  }
}

const FLOAT_NOISE = /\d\.\d{5,}/

describe('numbers', () => {
  it('never print float noise, NaN or Infinity', () => {
    expect(formatNumber(1404.0636299999896, 1)).toBe('1404.1')
    expect(formatNumber(48)).toBe('48')
    for (const bad of [null, undefined, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(formatNumber(bad)).toBe('–')
      expect(formatFixed(bad)).toBe('–')
    }
    expect(formatFixed(1)).toBe('1.00')
    const table = methodTable([method('ar'), method('sd')])
    expect(table).not.toMatch(FLOAT_NOISE)
    expect(table).toContain('1.00×')
    expect(table).toContain('1.38×')
  })

  it('tables right-align numeric columns and left-align text', () => {
    const lines = formatTable(['name', 'file', 'n'], [['a', 'x.gguf', '5'], ['bb', 'longer.gguf', '12']]).split('\n')
    expect(lines[2]).toBe('a     x.gguf        5')
    expect(lines[3]).toBe('bb    longer.gguf  12')
  })
})

describe('progress bar', () => {
  it('shows "ETA –" until the first cell is done, never NaN or Infinity', () => {
    const { writes, stream } = fakeStream(true)
    let now = 1000
    const bar = createProgressBar(4, stream, () => now)
    bar.update({ promptIndex: 0, promptCount: 2, method: 'ar', repeat: 0, repeats: 1, tokens: 5, cellsDone: 0, cellsTotal: 4 })
    const before = writes.join('')
    expect(before).toContain('ETA –')
    now += 2000
    bar.update({ promptIndex: 0, promptCount: 2, method: 'sd', repeat: 0, repeats: 2, tokens: 0, cellsDone: 1, cellsTotal: 4 })
    bar.stop()
    const all = writes.join('')
    expect(all).not.toMatch(/NaN|NULL|INF|NF/)
    expect(all).toContain('ETA 6s') // 2 s per cell, 3 cells to go
    expect(all).toContain('prompt 1/2 repeat 1/2 sd')
  })

  it('wipes its line before the report and leaves the cursor where the bar was', () => {
    const { writes, stream } = fakeStream(true)
    const bar = createProgressBar(2, progressStream(stream, {}))
    bar.update({ promptIndex: 1, promptCount: 1, method: 'sd', repeat: 0, repeats: 1, tokens: 24, cellsDone: 2, cellsTotal: 2 })
    bar.stop()
    const all = writes.join('')
    // cli-progress's cursor save / restore would send the report to another line after anything else was written.
    expect(all).not.toContain('\x1b7')
    expect(all).not.toContain('\x1b8')
    expect(all.endsWith('\r\x1b[K')).toBe(true)
    const lastBar = all.lastIndexOf('ETA')
    expect(all.slice(lastBar)).toMatch(/\x1b\[2K|\r\x1b\[K/) // cleared after its last drawing
  })

  it('prints nothing when stderr is not a terminal; log lines still go out, each on its own line', () => {
    const { writes, stream } = fakeStream(false)
    const line = createProgressLine('{bar} ETA {eta_text}', progressStream(stream, {}))
    line.start(3, { eta_text: '–' })
    line.update(1, { eta_text: '1s' })
    line.log('seed 7')
    line.stop()
    expect(writes).toEqual(['seed 7\n'])
  })

  it('on a terminal, log clears the bar line first so a message never lands inside the bar', () => {
    const { writes, stream } = fakeStream(true)
    const line = createProgressLine('{bar} ETA {eta_text}', stream)
    line.start(3, { eta_text: '–' })
    line.log('suite run 4 (smoke)')
    line.stop()
    expect(writes).toContain('\r\x1b[Ksuite run 4 (smoke)\n')
  })

  it('a supervised child draws on the terminal its parent names', () => {
    const { stream } = fakeStream(false)
    ;(stream as { columns?: number }).columns = undefined
    const inherited = progressStream(stream, { [TTY_COLUMNS_ENV]: '100' })
    expect(inherited.isTTY).toBe(true)
    expect(inherited.columns).toBe(100)
    expect(progressStream(stream, {}).isTTY).toBe(false)
  })

  it('formats ETAs', () => {
    expect(formatEta(null)).toBe('–')
    expect(formatEta(Number.NaN)).toBe('–')
    expect(formatEta(Number.POSITIVE_INFINITY)).toBe('–')
    expect(formatEta(45_000)).toBe('45s')
    expect(formatEta(187_000)).toBe('3m07s')
    expect(formatEta(7_500_000)).toBe('2h05m')
    expect(estimateRemainingMs(5000, 0, 4)).toBeNull()
    expect(estimateRemainingMs(5000, 1, 4)).toBe(15_000)
  })
})

describe('speclab runs', () => {
  const summary = (id: number, methods: string[]): RunsRow['summary'] => ({
    id,
    createdAt: '2026-11-23T18:29:47.123Z',
    finishedAt: null,
    suite: null,
    methods,
    status: 'done',
    error: null,
    promptCount: 4,
    name: null,
    notes: null,
    machine: null
  })
  const result = (methodName: string, outputCount: number, wallMs: number, status = 'done') => ({ method: methodName, status, outputCount, wallMs })

  it('the best speedup over ar, and none without ar', () => {
    const results = [result('ar', 40, 100), result('ar', 40, 100), result('sd', 80, 200), result('nlc-draft', 80, 100), result('nlc-draft', 900, 1, 'cancelled')]
    expect(bestSpeedup(results)).toEqual({ method: 'nlc-draft', speedup: 2 })
    expect(bestSpeedup([result('sd', 80, 200)])).toBeNull()
    expect(bestSpeedup([result('ar', 80, 200)])).toBeNull()
  })

  it('pairs every timed repeat with ar on the same prompt and repeat, and takes the median', () => {
    const results = [
      { id: 1, method: 'ar', status: 'done', promptIndex: 0, outputCount: 40, wallMs: 100 },
      { id: 2, method: 'sd', status: 'done', promptIndex: 0, outputCount: 40, wallMs: 50 }
    ]
    // ar 400, 200, 400 tok/s; sd 800, 400, 400 → ratios 2, 2, 1 → median 2.
    const repeats = new Map([
      [1, [{ repeat: 0, wallMs: 100, outputCount: 40 }, { repeat: 1, wallMs: 200, outputCount: 40 }, { repeat: 2, wallMs: 100, outputCount: 40 }]],
      [2, [{ repeat: 0, wallMs: 50, outputCount: 40 }, { repeat: 1, wallMs: 100, outputCount: 40 }, { repeat: 2, wallMs: 100, outputCount: 40 }]]
    ])
    expect(bestSpeedup(results, repeats)).toEqual({ method: 'sd', speedup: 2 })
  })

  it('lists target file name, prompt source and best speedup', () => {
    const text = runsTable([
      {
        summary: summary(2, ['sd']),
        config: { models: { target: '/models/family/stories-target5M-f32.gguf' }, prompts: { file: '/data/mt-bench.jsonl' } },
        best: null
      },
      { summary: summary(1, ['ar', 'sd']), config: { models: { target: '/models/stories260K-f32.gguf' }, prompts: { dataset: 'code' } }, best: { method: 'sd', speedup: 1.4049999 } }
    ])
    const [header, , second, first] = text.split('\n')
    expect(header).toMatch(/^id\s+created\s+status\s+target\s+prompts\s+methods\s+results\s+best vs ar\s+suite\s+name$/)
    expect(second).toMatch(/^2\s+2026-11-23 18:29:47\s+done\s+stories-target5M-f32\.gguf\s+mt-bench\.jsonl\s+sd\s+4\s+–/)
    expect(first).toMatch(/stories260K-f32\.gguf\s+code\s+ar,sd\s+4\s+1\.40× sd/)
    expect(text).not.toContain('/models/')
  })

  it('prints names with terminal escapes and line breaks as visible text, one row a run', () => {
    const name = '\x1b]0;pwned\x07\x1b[2J\x1b[Hrow\nsplit\u202eevil\u009b'
    const text = runsTable([{ summary: { ...summary(3, ['ar']), name }, config: null, best: null }])
    expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/u) // nothing that acts on a terminal; newlines only between rows
    expect(text.split('\n')).toHaveLength(3)
    expect(text.split('\n')[2]).toMatch(/\\x1b\]0;pwned\\x07\\x1b\[2J\\x1b\[Hrow\\nsplit\\u202eevil\\x9b$/)
    expect(terminalSafe('line 1\n\tline 2\x1b[31m', { keepNewlines: true })).toBe('line 1\n\tline 2\\x1b[31m')
  })
})

describe('speclab diff', () => {
  const a = report(1, [method('ar'), method('sd'), method('nlc-draft', { tokensPerSecond: 1177.178, speedup: 1.384, targetCalls: 0, draftTokens: 0, acceptedTokens: 0, sigma: null, eta: null, acceptanceRate: null, meanAcceptedLength: null })])
  const b = report(2, [method('ar', { tokensPerSecond: 1521.6412 }), method('sd', { tokensPerSecond: 854.13, speedup: 0.5613, targetCalls: 18 })], {
    gamma: 3,
    seed: 3,
    sampling: { temperature: 1, topK: 64, topP: 1, fullVocabulary: false }
  })
  const text = formatDiff(diffRuns(a, b))

  it('is one settings table and one metrics table with human labels', () => {
    expect(text).toMatch(/^run 1 vs run 2: 4 settings differ$/m)
    expect(text).toMatch(/^gamma\s+5\s+3$/m)
    expect(text).toMatch(/^methods\s+ar,sd,nlc-draft\s+ar,sd$/m)
    expect(text).toMatch(/^sampling\.temperature\s+0\s+1$/m)
    expect(text.match(/^method\s+metric\s+run 1\s+run 2\s+Δ\s+change\s+Δ of medians \[95% CI\]$/gm)).toHaveLength(1)
    for (const label of ['tokens/s', 'speedup vs ar', 'acceptance', 'mean accepted length', 'σ', 'η', 'target calls', 'overhead ms/step'])
      expect(text).toContain(label)
    expect(text).not.toMatch(/tokensPerSecond|acceptanceRate|meanAcceptedLength|targetCalls|overheadPerStepMs/)
    expect(text).not.toMatch(FLOAT_NOISE)
    expect(text.split('\n').length).toBeLessThan(32)
  })

  it('shows deltas and relative changes, and leaves out rows with nothing to say', () => {
    expect(text).toMatch(/^ar\s+tokens\/s\s+1404\.1\s+1521\.6\s+\+117\.6\s+\+8\.4%\s+–$/m)
    // Counts do not depend on timing: exact.
    expect(text).toMatch(/^\s+target calls\s+12\s+18\s+\+6\s+\+50\.0%\s+exact$/m)
    expect(text).toMatch(/^nlc-draft \(run 1 only\)\s+tokens\/s\s+1177\.2\s+–\s+–$/m)
    // ar's speedup is 1 by definition; its draft tokens are 0 in both runs.
    const arRows = text.slice(text.indexOf('\nar '), text.indexOf('\nsd ')).split('\n')
    expect(arRows.some((row) => row.includes('speedup'))).toBe(false)
    expect(arRows.some((row) => row.includes('draft tokens'))).toBe(false)
  })

  it('calls a timing difference whose interval holds 0 within noise, and says when only timing differs', () => {
    const timings = (values: number[]) => values.map((tokensPerSecond, i) => ({ prompt: i % 2, repeat: i >> 1, wallMs: 1000, tokens: 48, tokensPerSecond, speedup: null }))
    const run = (runId: number, values: number[]) => report(runId, [method('svip', { tokensPerSecond: values[0], timings: timings(values), decisionDigest: '2:56:abc' })])
    const noise = formatDiff(diffRuns(run(1, [50, 64, 52, 61, 49, 66]), run(2, [64, 51, 60, 50, 65, 53])))
    expect(noise).toMatch(/^svip\s+tokens\/s\s+50\.0\s+64\.0\s+\+14\.0\s+\+28\.0%\s+within noise \[-?[\d.]+–\+[\d.]+\]$/m)
    expect(noise).toContain('svip: same decisions; only timing differs')
    const real = formatDiff(diffRuns(run(1, [50, 51, 49, 52, 50, 51]), run(2, [70, 71, 69, 72, 70, 71])))
    expect(real).toMatch(/tokens\/s .* \+20\.0 \[\+[\d.]+–\+[\d.]+\]$/m)
  })

  it('shows what two thread calibrations chose, not their timings', () => {
    const calibration = (ms: number, source: 'measured' | 'cached', threads: number) => ({
      role: 'target' as const,
      path: '/models/t.gguf',
      source,
      measuredAt: source === 'measured' ? '2026-11-25T00:00:00Z' : '2026-11-24T00:00:00Z',
      single: [{ threads: 1, ms, sem: 0.1 }],
      batch: [{ threads: 1, ms: ms * 3, sem: 0.2 }],
      batchTokens: 6,
      contextTokens: 128,
      rounds: 8,
      chosen: { threads, batchThreads: 2 }
    })
    const withCalibration = (runId: number, c: ReturnType<typeof calibration>) => ({ ...a, runId, config: { ...a.config, threadCalibration: [c] } })
    const same = diffRuns(withCalibration(1, calibration(7, 'measured', 1)), withCalibration(2, calibration(9, 'cached', 1)))
    expect(same.configDifferences).toEqual([])
    const other = diffRuns(withCalibration(1, calibration(7, 'measured', 1)), withCalibration(2, calibration(9, 'cached', 2)))
    expect(other.configDifferences).toEqual([{ key: 'threadCalibration.0.chosen.threads', a: 1, b: 2 }])
  })

  it('says so when the settings are the same', () => {
    expect(formatDiff(diffRuns(a, { ...a, runId: 5 }))).toMatch(/^run 1 vs run 5: same settings\nconfigs are identical\n/)
  })
})

describe('run --help', () => {
  it('the id column fits the longest id and continuation lines start under the text', () => {
    const lines = methodHelp().split('\n')
    const ids = methodInfos().map((m) => m.id)
    const column = 2 + Math.max(...ids.map((id) => id.length)) + 2
    for (const id of ids) {
      const line = lines.find((l) => l.startsWith(`  ${id} `))!
      expect(line, id).toBeDefined()
      expect(line.slice(0, column).trimEnd(), id).toBe(`  ${id}`)
      expect(line[column], id).not.toBe(' ')
    }
    const continuation = lines.filter((l) => !ids.some((id) => l.startsWith(`  ${id} `)))
    expect(continuation.length).toBeGreaterThan(0)
    for (const line of continuation) {
      expect(line.slice(0, column).trim(), line).toBe('')
      expect(line[column], line).not.toBeUndefined()
    }
    // The facts line is directly under the summary.
    expect(lines[1].search(/\S/)).toBe(column)
  })
})
