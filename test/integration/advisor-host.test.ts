/**
 * The Advisor's channels on the engine host in-process, on the shared models (target5M-q8_0 ← 260K, greedy,
 * 2 prompts × 32 tokens, the best candidate measured beside ar with 2 repeats): invalid payloads refused by the
 * contract, an advice on the loaded trio with progress through every stage (the trio lent, still loaded after),
 * the stored advice read back with its recommendation, cancel, and a run that is no advice refused.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { AdvisorProgress } from '../../electron/api/advisor'
import type { ApiChannel, ApiRequest, ApiResponses } from '../../electron/api/contract'
import type { HostEvent } from '../../electron/api/events'
import { EngineHost } from '../../electron/host/host'
import { describeWithModels, modelPath } from '../helpers/gguf'
import { until } from '../helpers/until'

const TARGET = 'family/stories-target5M-q8_0.gguf'
const DRAFT = 'stories260K-f32.gguf'
const MID = 'family/stories-mid1M-f32.gguf'
const withModels = describeWithModels('test/integration/advisor-host.test.ts', [TARGET, DRAFT, MID])

let dir: string
let host: EngineHost
const events: HostEvent[] = []
const ids = { target: 0, draft: 0, mid: 0 }
const LOAD = { contextSize: 512, gpuLayers: 0, threads: 1, batchThreads: null, fullVocabulary: false } as const

const call = <C extends ApiChannel>(channel: C, payload: ApiRequest<C>) => host.request(channel, payload) as Promise<ApiResponses[C]>

const progressOf = (jobId: string): AdvisorProgress[] =>
  events.flatMap((e) => (e.type === 'advisor:progress' && e.progress.jobId === jobId ? [e.progress] : []))

const finished = (jobId: string) => until(() => progressOf(jobId).find((p) => p.phase === 'finished'), 180_000)

const request = (overrides: Partial<ApiRequest<'advisor:start'>> = {}): ApiRequest<'advisor:start'> => ({
  models: { target: ids.target, drafts: [ids.draft] },
  dataset: { kind: 'builtin', id: 'stories' },
  limit: 2,
  settings: { maxTokens: 32, temperature: 0, topK: 64, topP: 1, seed: 4 },
  load: LOAD,
  repeats: 2,
  verify: 1,
  deploy: 'any',
  budgetSeconds: null,
  // sd and pld, as the CLI test: the full grid's cost measurement (svip's full-vocabulary transfer) takes minutes here.
  methods: ['sd', 'pld'],
  ...overrides
})

withModels('Advisor channels on the engine host', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-advisor-'))
    process.env.SPECLAB_THREAD_CALIBRATION_CACHE = path.join(dir, 'thread-calibration.json')
    process.env.SPECLAB_SERVER_COST_CACHE = path.join(dir, 'server-costs.json') // not the user's
    host = EngineHost.open(
      { databasePath: path.join(dir, 'db.sqlite'), nativeBinding: null, downloadDirectory: path.join(dir, 'downloads'), version: 'test', mode: 'browser' },
      (event) => events.push(event)
    )
    ids.target = (await call('models:add', { path: modelPath(TARGET) })).id
    ids.draft = (await call('models:add', { path: modelPath(DRAFT) })).id
    ids.mid = (await call('models:add', { path: modelPath(MID) })).id
  })
  afterAll(async () => {
    await host?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('refuses invalid payloads with the field that is wrong', async () => {
    const bad = (payload: unknown) => host.request('advisor:start', payload)
    await expect(bad({ ...request(), verify: 0 })).rejects.toThrow(/Invalid request for advisor:start: verify/)
    await expect(bad({ ...request(), deploy: 'cloud' })).rejects.toThrow(/Invalid request for advisor:start: deploy/)
    await expect(bad({ ...request(), budgetSeconds: -5 })).rejects.toThrow(/budgetSeconds/)
    await expect(bad({ ...request(), settings: { ...request().settings, temperature: 99 } })).rejects.toThrow(/temperature/)
    await expect(bad({ dataset: { kind: 'builtin', id: 'stories' } })).rejects.toThrow(/models/)
    await expect(host.request('advisor:advice', { runId: 'one' })).rejects.toThrow(/Invalid request for advisor:advice/)
    await expect(host.request('advisor:cancel', {})).rejects.toThrow(/jobId/)
    // Valid in shape, refused by the workflow before anything loads: one line.
    await expect(call('advisor:start', request({ dataset: { kind: 'builtin', id: 'no-such-set' } }))).rejects.toThrow(/unknown dataset 'no-such-set'/)
    await expect(call('advisor:advice', { runId: 9999 })).rejects.toThrow(/no run with id 9999/)
    expect(await call('advisor:status', {})).toBeNull()
  })

  it('advises on the loaded trio: every stage in order, one stored run, the recommendation read back', async () => {
    await call('models:load', { trio: { target: ids.target, mid: null, draft: ids.draft }, settings: LOAD })
    const { jobId } = await call('advisor:start', request())
    const last = await finished(jobId)
    expect(last.error).toBeNull()
    expect(last.status).toBe('done')
    const phases = [...new Set(progressOf(jobId).map((p) => p.phase))]
    expect(phases).toEqual(['loading', 'trace', 'draft-pass', 'replay', 'costs', 'verify', 'finished'])
    const verifying = progressOf(jobId).filter((p) => p.phase === 'verify')
    expect(verifying.at(-1)!.arms[0]).toBe('ar')
    expect(verifying.at(-1)!.repeats).toBe(2)
    expect(verifying.at(-1)!.cellsDone).toBe(verifying.at(-1)!.cellsTotal)
    expect(typeof last.runId).toBe('number')
    // The loaded trio was lent, not freed: still loaded.
    expect((await call('models:list', {})).loaded?.draft?.id).toBe(ids.draft)

    const advice = await call('advisor:advice', { runId: last.runId! })
    expect(advice).toMatchObject({ runId: last.runId, status: 'done', seed: 4, prompts: 2, repeats: 2, workload: { dataset: 'stories', limit: 2 } })
    const measured = advice.candidates.filter((c) => c.measured)
    // Candidates are listed fastest predicted first: ar is measured once, wherever its prediction ranks it.
    expect(measured.filter((c) => c.method === 'ar')).toHaveLength(1)
    expect(measured.length).toBeGreaterThanOrEqual(2)
    for (const c of measured) expect(c.measured!.tokensPerSecond!.low).toBeLessThanOrEqual(c.measured!.tokensPerSecond!.median)
    const r = advice.recommendation!
    expect(r.reason.length).toBeGreaterThan(20)
    expect(r.speculate ? r.speedup!.low > 1 : r.method === 'ar').toBe(true)
    expect(r.speclabCommand).toMatch(/speclab /)
    // The same advice as the stored run says it: the run is suite 'advise' with the arms as its methods.
    const report = await call('runs:show', { runId: last.runId! })
    expect(report?.config.suite).toBe('advise')
    expect(report?.methods.map((m) => m.method)).toEqual(report?.config.advice?.arms.map((a) => a.label))
  }, 240_000)

  it('with a mid model: the loaded trio is lent with it, and the hierarchy is a predicted candidate', async () => {
    await call('models:load', { trio: { target: ids.target, mid: ids.mid, draft: ids.draft }, settings: LOAD })
    const { jobId } = await call('advisor:start', request({ models: { target: ids.target, drafts: [ids.draft], mid: ids.mid }, methods: ['sd', 'hier-chen'] }))
    const last = await finished(jobId)
    expect(last.error).toBeNull()
    expect(last.status).toBe('done')
    expect(progressOf(jobId).find((p) => p.phase === 'loading')?.message).toMatch(/Using the loaded models/)
    expect((await call('models:list', {})).loaded?.mid?.id).toBe(ids.mid)
    const advice = await call('advisor:advice', { runId: last.runId! })
    const hierarchies = advice.candidates.filter((c) => c.method === 'hier-chen')
    expect(hierarchies.length).toBeGreaterThan(0)
    for (const c of hierarchies) expect(c).toMatchObject({ draft: 'stories260K-f32', mid: 'stories-mid1M-f32', error: null })
    expect(advice.draftFiles['stories-mid1M-f32']).toBe(path.resolve(modelPath(MID)))
    // A mid model without a draft is refused before anything loads.
    await expect(call('advisor:start', request({ models: { target: ids.target, drafts: [], mid: ids.mid } }))).rejects.toThrow(/--mid needs a --draft/)
  }, 240_000)

  it('cancels an advice: the job ends cancelled and the models are free again', async () => {
    const { jobId } = await call('advisor:start', request({ limit: 4, settings: { ...request().settings, maxTokens: 64 } }))
    await until(() => progressOf(jobId).find((p) => p.phase === 'trace' || p.phase === 'draft-pass'), 60_000)
    expect(await call('advisor:cancel', { jobId })).toEqual({ cancelled: true })
    const last = await finished(jobId)
    expect(last.status).toBe('cancelled')
    expect(last.error).toBeNull()
    expect(await call('advisor:cancel', { jobId })).toEqual({ cancelled: false })
    expect((await call('advisor:status', {}))?.jobId).toBe(jobId)
  }, 120_000)
})
