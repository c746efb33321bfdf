import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { summarizeMethod } from '../../electron/engine/metrics/fold'
import { holdWriteLock } from '../helpers/write-lock'
import { switchToWal } from '../../electron/store/database-file'
import { MIGRATIONS } from '../../electron/store/migrations'
import { AppStore } from '../../electron/store/app-store'
import { RunStore } from '../../electron/store/run-store'

function makeConfig(overrides: Partial<RunConfig> = {}): RunConfig {
  return RunConfig.parse({
    suite: 'smoke',
    methods: ['ar', 'sd'],
    models: { target: '/models/target.gguf', draft: '/models/draft.gguf' },
    modelFingerprints: [
      { path: '/models/target.gguf', sizeBytes: 1234, fingerprint: 'abc', architecture: 'llama', vocabularySize: 32000 }
    ],
    prompts: { dataset: 'mt-bench', limit: 2 },
    maxTokens: 64,
    sampling: { temperature: 0, topK: 40, topP: 1, fullVocabulary: false },
    seed: 42,
    gamma: 4,
    params: { tau: 0.5, mode: 'fast', warm: true },
    threads: 4,
    contextSize: 2048,
    ...overrides
  })
}

function makeStep(index: number, overrides: Partial<StepRecord> = {}): StepRecord {
  return {
    index,
    stage: 'sd',
    proposed: 4,
    accepted: 3,
    resampled: true,
    bonus: false,
    emitted: 4,
    draftTokens: 4,
    acceptedDraftTokens: 3,
    draftEntropies: [0.125, 1.5, 2.75, 0.03125],
    threshold: 0.75,
    decision: { reason: 'entropy', h: 2.75, stopped: true, extra: null },
    targetCalls: 1,
    draftCalls: 4,
    draftMs: 3.5,
    verifyMs: 12.25,
    totalMs: 16.5,
    ...overrides
  }
}

let dir: string
let file: string
let store: RunStore | undefined

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-'))
  file = path.join(dir, 'nested', 'runs.sqlite')
})

afterEach(() => {
  store?.close()
  store = undefined
  fs.rmSync(dir, { recursive: true, force: true })
})

/** Adds one finished prompt result with the given steps; returns its id. */
function addResult(s: RunStore, runId: number, method: string, promptIndex: number, steps: StepRecord[]): number {
  const resultId = s.startPromptResult({
    runId,
    method,
    promptIndex,
    promptId: `p${promptIndex}`,
    category: 'writing',
    promptText: `prompt ${promptIndex}`,
    seedStream: promptIndex * 7
  })
  for (const step of steps) s.addStep(resultId, step)
  s.finishPromptResult(resultId, {
    status: 'done',
    outputText: `out ${method} ${promptIndex}`,
    outputTokens: [10, 11, 12, 13],
    provenance: method === 'ar' ? 'tttt' : 'dddr',
    stopReason: 'max-tokens',
    wallMs: 20 + promptIndex
  })
  return resultId
}

describe('RunStore', () => {
  it('creates the parent directory and reports no recovered runs on a fresh file', () => {
    store = RunStore.open(file)
    expect(fs.existsSync(file)).toBe(true)
    expect(store.recoveredInterruptedRuns).toBe(0)
    expect(store.listRuns()).toEqual([])
  })

  it('round-trips a run with two methods, prompt results and steps', () => {
    store = RunStore.open(file)
    const config = makeConfig()
    const runId = store.createRun(config)

    const sdSteps = [makeStep(0), makeStep(1, { threshold: null, decision: null, resampled: false, bonus: true })]
    const arSteps = [
      makeStep(0, {
        stage: 'ar',
        proposed: 0,
        accepted: 0,
        resampled: false,
        emitted: 1,
        draftTokens: 0,
        acceptedDraftTokens: 0,
        draftEntropies: [],
        threshold: null,
        decision: null,
        draftCalls: 0,
        draftMs: 0
      })
    ]
    const ids: number[] = []
    for (const promptIndex of [0, 1]) {
      ids.push(addResult(store, runId, 'ar', promptIndex, arSteps))
      ids.push(addResult(store, runId, 'sd', promptIndex, sdSteps))
    }
    store.finishRun(runId, 'done')

    const run = store.getRun(runId)
    expect(run).not.toBeNull()
    expect(run!.config).toEqual(config)
    expect(run!.summary).toMatchObject({
      id: runId,
      suite: 'smoke',
      methods: ['ar', 'sd'],
      status: 'done',
      error: null,
      promptCount: 4
    })
    expect(run!.summary.finishedAt).not.toBeNull()

    const results = store.getPromptResults(runId)
    expect(results.map((r) => [r.promptIndex, r.method])).toEqual([
      [0, 'ar'],
      [0, 'sd'],
      [1, 'ar'],
      [1, 'sd']
    ])
    expect(results[1]).toMatchObject({
      id: ids[1],
      runId,
      method: 'sd',
      promptId: 'p0',
      category: 'writing',
      promptText: 'prompt 0',
      seedStream: 0,
      status: 'done',
      outputText: 'out sd 0',
      outputTokens: [10, 11, 12, 13],
      provenance: 'dddr',
      outputCount: 4,
      stopReason: 'max-tokens',
      wallMs: 20
    })
    expect(results[1].finishedAt).not.toBeNull()

    expect(store.getSteps(ids[1])).toEqual(sdSteps)
    expect(store.getSteps(ids[0])).toEqual(arSteps)

    // Timed repeats (migration 9) of prompt 0's sd cell; prompt 1's has none and reads as its one wall time.
    const repeats = [20, 26, 19].map((wallMs, repeat) => ({ repeat, runOrder: 1 + 2 * repeat, wallMs, outputCount: 4, sameOutput: repeat !== 2 }))
    for (const row of repeats) store.addRepeat(ids[1], row)
    expect(store.getRepeats(runId)).toEqual(new Map([[ids[1], repeats]]))
    const machine = { cpus: 2, loadBefore: [0.5, 0.4, 0.3], loadAfter: [1.9, 0.8, 0.4], governor: 'performance', busy: false }
    store.setMachine(runId, machine)
    expect(store.getRun(runId)!.summary.machine).toEqual(machine)

    const outcomes = store.getOutcomes(runId)
    expect([...outcomes.keys()]).toEqual(['ar', 'sd'])
    expect(outcomes.get('sd')).toEqual([
      {
        promptIndex: 0,
        outputText: 'out sd 0',
        outputTokens: 4,
        wallMs: 20,
        steps: sdSteps,
        repeats: repeats.map((r) => ({ repeat: r.repeat, wallMs: r.wallMs, outputTokens: 4 }))
      },
      { promptIndex: 1, outputText: 'out sd 1', outputTokens: 4, wallMs: 21, steps: sdSteps, repeats: [{ repeat: 0, wallMs: 21, outputTokens: 4 }] }
    ])
    const summary = summarizeMethod('sd', outcomes.get('sd')!, null)
    expect(summary.prompts).toBe(2)
    expect(summary.targetCalls).toBe(4)
  })

  it('leaves unfinished prompt results out of the outcomes', () => {
    store = RunStore.open(file)
    const runId = store.createRun(makeConfig())
    addResult(store, runId, 'sd', 0, [makeStep(0)])
    const cancelled = store.startPromptResult({
      runId,
      method: 'sd',
      promptIndex: 1,
      promptId: null,
      category: null,
      promptText: 'x',
      seedStream: 1
    })
    store.finishPromptResult(cancelled, {
      status: 'cancelled',
      outputText: 'a',
      outputTokens: [1],
      provenance: 'b',
      stopReason: 'cancelled',
      wallMs: 1
    })
    expect(store.getOutcomes(runId).get('sd')).toHaveLength(1)
  })

  it('rejects provenance that does not match the output tokens', () => {
    store = RunStore.open(file)
    const runId = store.createRun(makeConfig())
    const resultId = store.startPromptResult({
      runId,
      method: 'sd',
      promptIndex: 0,
      promptId: null,
      category: null,
      promptText: 'x',
      seedStream: 0
    })
    const finish = { status: 'done' as const, outputText: '', stopReason: null, wallMs: 1 }
    expect(() => store!.finishPromptResult(resultId, { ...finish, outputTokens: [1, 2], provenance: 'd' })).toThrow(
      /provenance/
    )
    expect(() => store!.finishPromptResult(resultId, { ...finish, outputTokens: [1], provenance: 'x' })).toThrow(
      /provenance/
    )
  })

  it('lists runs newest first with their prompt counts', () => {
    store = RunStore.open(file)
    const first = store.createRun(makeConfig({ suite: null }))
    addResult(store, first, 'ar', 0, [])
    const second = store.createRun(makeConfig())
    addResult(store, second, 'ar', 0, [])
    addResult(store, second, 'sd', 0, [])
    addResult(store, second, 'ar', 1, [])
    const third = store.createRun(makeConfig())

    const runs = store.listRuns()
    expect(runs.map((r) => [r.id, r.promptCount])).toEqual([
      [third, 0],
      [second, 3],
      [first, 1]
    ])
    expect(runs[2].suite).toBeNull()
    expect(runs[0].status).toBe('running')
    expect(store.listRuns(2).map((r) => r.id)).toEqual([third, second])
  })

  it('leaves a run alone while its owner process is alive, and interrupts it once that process is gone', async () => {
    store = RunStore.open(file)
    const runId = store.createRun(makeConfig())
    store.close()
    // Hand the run to another live process, as when the CLI runs while the app opens the same file.
    const owner = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'])
    const raw = new Database(file)
    raw.prepare('UPDATE runs SET owner_pid = ? WHERE id = ?').run(owner.pid, runId)
    raw.close()

    store = RunStore.open(file)
    expect(store.recoveredInterruptedRuns).toBe(0)
    expect(store.getRun(runId)!.summary.status).toBe('running')
    store.close()

    owner.kill('SIGKILL')
    await new Promise((resolve) => owner.once('exit', resolve))
    store = RunStore.open(file)
    expect(store.recoveredInterruptedRuns).toBe(1)
    expect(store.getRun(runId)!.summary.status).toBe('interrupted')
  })

  it('names a run and keeps notes on it; blank text clears them; the app search finds them', () => {
    store = RunStore.open(file)
    const runId = store.createRun(makeConfig())
    expect(store.listRuns()[0]).toMatchObject({ name: null, notes: null })
    expect(store.annotateRun(runId, { name: '  svip h sweep ', notes: 'quiet machine\nload < 1' })).toBe(true)
    expect(store.getRun(runId)!.summary).toMatchObject({ name: 'svip h sweep', notes: 'quiet machine\nload < 1' })
    const app = new AppStore(store.database)
    expect(app.searchRuns({ search: 'H SWEEP' }).map((r) => r.id)).toEqual([runId])
    expect(app.searchRuns({ search: 'quiet' }).map((r) => r.id)).toEqual([runId])
    expect(store.annotateRun(runId, { name: ' ', notes: '' })).toBe(true)
    expect(store.listRuns()[0]).toMatchObject({ name: null, notes: null })
    expect(store.annotateRun(runId + 100, { name: 'x', notes: '' })).toBe(false)
  })

  it('marks runs left running as interrupted when reopened', () => {
    store = RunStore.open(file)
    const finishedRun = store.createRun(makeConfig())
    store.finishRun(finishedRun, 'failed', 'model missing')
    const runId = store.createRun(makeConfig())
    const doneId = addResult(store, runId, 'ar', 0, [makeStep(0)])
    const runningId = store.startPromptResult({
      runId,
      method: 'sd',
      promptIndex: 0,
      promptId: null,
      category: null,
      promptText: 'in flight',
      seedStream: 3
    })
    store.addStep(runningId, makeStep(0))
    store.close()

    store = RunStore.open(file)
    expect(store.recoveredInterruptedRuns).toBe(1)
    const run = store.getRun(runId)!.summary
    expect(run.status).toBe('interrupted')
    expect(run.error).toBe('process ended while the run was in progress')
    expect(run.finishedAt).not.toBeNull()
    expect(store.getRun(finishedRun)!.summary).toMatchObject({ status: 'failed', error: 'model missing' })

    const results = store.getPromptResults(runId)
    expect(results.find((r) => r.id === doneId)).toMatchObject({ status: 'done', outputText: 'out ar 0' })
    expect(results.find((r) => r.id === runningId)?.status).toBe('failed')
    expect(store.getSteps(doneId)).toHaveLength(1)
    expect(store.getSteps(runningId)).toHaveLength(1)
    store.close()

    store = RunStore.open(file)
    expect(store.recoveredInterruptedRuns).toBe(0)
  })

  it('applies migrations once, however often the file is opened', () => {
    RunStore.open(file).close()
    RunStore.open(file).close()
    const db = new Database(file, { readonly: true })
    const rows = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()
    db.close()
    expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })))
  })

  it('applies migrations once when several processes open one new file at the same moment', async () => {
    // The app and the CLI may create the database together; each of 4 processes opens 6 fresh files in step.
    const files = Array.from({ length: 6 }, (_, i) => path.join(dir, `together-${i}.sqlite`))
    const start = Date.now() + 3000 // after every process has started (tsx takes about a second under load)
    const fixture = path.resolve(__dirname, '../fixtures/open-store-at.ts')
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () => {
        const child = spawn(process.execPath, ['--import', 'tsx', fixture, String(start), ...files], { stdio: ['ignore', 'pipe', 'inherit'] })
        let stdout = ''
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
        return new Promise<string[]>((resolve) => child.once('close', () => resolve(stdout.trim().split('\n'))))
      })
    )
    expect(outputs.flat()).toEqual(Array(4 * files.length).fill('ok'))
    for (const each of files) {
      const db = new Database(each, { readonly: true })
      expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual(MIGRATIONS.map((m) => ({ version: m.version })))
      db.close()
    }
  }, 30_000)

  it('switches a file to WAL while another process holds its write lock, once the lock is released', async () => {
    // SQLite answers this switch with SQLITE_BUSY at once, without its busy handler: the switch must retry. The lock
    // is held for a second, so a test process slow to start the switch on a loaded machine still finds it held.
    const plain = path.join(dir, 'plain.sqlite')
    new Database(plain).exec('CREATE TABLE t (x)')
    const holder = await holdWriteLock(plain, 1000)
    const db = new Database(plain)
    const begun = Date.now()
    switchToWal(db)
    expect(Date.now() - begun).toBeGreaterThan(100)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    db.close()
    await holder.released
  })

  it('names the file when it is not a database', () => {
    const bogus = path.join(dir, 'notes.sqlite')
    fs.writeFileSync(bogus, 'these are some notes, certainly not a SQLite database\n'.repeat(40))
    expect(() => RunStore.open(bogus)).toThrow(`not a SpecLab database: ${bogus} is not a SQLite database`)
  })

  it('deletes a run with its prompt results and steps', () => {
    store = RunStore.open(file)
    const keep = store.createRun(makeConfig())
    const keptResult = addResult(store, keep, 'ar', 0, [makeStep(0)])
    const runId = store.createRun(makeConfig())
    const resultId = addResult(store, runId, 'sd', 0, [makeStep(0), makeStep(1)])

    store.deleteRun(runId)
    expect(store.getRun(runId)).toBeNull()
    expect(store.getPromptResults(runId)).toEqual([])
    expect(store.getSteps(resultId)).toEqual([])
    expect(store.getSteps(keptResult)).toHaveLength(1)
    expect(store.listRuns().map((r) => r.id)).toEqual([keep])
  })
})
