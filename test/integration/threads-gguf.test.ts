/**
 * Threads per phase (engine/model/llama-cpp-model.ts): a single-token evaluation runs with `threads`, a batch (several
 * tokens, or several sequences decoded together) with `batchThreads` — read back from llama.cpp's context after each
 * decode, so a change in node-llama-cpp's internals (it re-applies the context's thread count before every decode)
 * fails here; loadTrio gives only the target more batch threads, and a run records what the target was loaded with.
 * Without a thread count loadTrio measures each model's threads per phase (thread-calibration.ts), caches them per
 * model file, machine and binary, and a run records the calibration.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Token } from 'node-llama-cpp'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RAW_WARP } from '../../electron/engine/decoders/session-pool'
import { loadLlamaModel, targetBatchThreadsFor, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { loadTrio, type LoadedTrio } from '../../electron/experiments/models'
import { RunConfig } from '../../electron/api/runs'
import { loadPrompts } from '../../electron/experiments/prompts'
import { executeRun } from '../../electron/experiments/runner'
import { withLoadedTrio } from '../../electron/experiments/run-request'
import { RunStore } from '../../electron/store/run-store'
import { threadCandidates } from '../../electron/engine/model/thread-calibration'
import { calibrationCachePath } from '../../electron/experiments/thread-calibration-cache'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/threads-gguf.test.ts', [TARGET, DRAFT])

/** The thread count llama.cpp's context ran its last decode with. */
const lastThreads = (model: LlamaCppModel): number => (model.context as unknown as { _ctx: { getThreads(): number } })._ctx.getThreads()

withModels('threads per phase', () => {
  let model: LlamaCppModel
  let trio: LoadedTrio

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, batchThreads: 2, contextSize: 256, sequences: 2 })
    trio = await loadTrio({ target: modelPath(TARGET), draft: modelPath(DRAFT) }, { threads: 1, contextSize: 256 })
  })
  afterAll(async () => {
    await model?.dispose()
    await trio?.dispose()
  })

  it('one token runs on `threads`, a batch on `batchThreads`, two sequences decoded together count as a batch', async () => {
    expect(model.phaseThreads).toEqual({ threads: 1, batchThreads: 2 })
    const [a, b] = [await model.createSession(RAW_WARP), await model.createSession(RAW_WARP)]
    let bDisposed = false
    try {
      const prompt = [model.info.bos!, ...model.tokenize('Once upon a time')]
      await a.append(prompt, prompt.length - 1)
      expect(lastThreads(model)).toBe(2)
      await a.append([300], 0)
      expect(lastThreads(model)).toBe(1)
      await a.append([301, 302, 303], 0)
      expect(lastThreads(model)).toBe(2)
      await a.append([304], 0)
      expect(lastThreads(model)).toBe(1)
      await b.append([model.info.bos!], 0)
      await Promise.all([a.append([305], 0), b.append([306], 0)])
      expect(lastThreads(model)).toBe(2)
      await a.append([307], 0)
      expect(lastThreads(model)).toBe(1)
      // node-llama-cpp's own predictors (nlc-draft, nlc-lookup) evaluate on `threads`, whatever ran last.
      await a.append([308, 309], 0)
      expect(lastThreads(model)).toBe(2)
      model.useSingleTokenThreads()
      await b.dispose() // (its sequence is the context's second and last)
      bDisposed = true
      const raw = model.context.getSequence()
      try {
        await raw.controlledEvaluate([model.info.bos!, 300, 301] as Token[])
        expect(lastThreads(model)).toBe(1)
      } finally {
        raw.dispose()
      }
    } finally {
      await a.dispose()
      if (!bDisposed) await b.dispose()
    }
  })

  it('loadTrio: the target batches on every core of a ≤ 2-core machine when threads are the default; drafts never', () => {
    const target = trio.models.target as LlamaCppModel
    const draft = trio.models.draft as LlamaCppModel
    expect(target.phaseThreads).toEqual({ threads: 1, batchThreads: targetBatchThreadsFor(1) })
    if (os.cpus().length <= 2) expect(target.phaseThreads.batchThreads).toBe(os.cpus().length)
    expect(draft.phaseThreads).toEqual({ threads: 1, batchThreads: 1 })
    // An explicit thread count other than the default is kept for batches too.
    expect(targetBatchThreadsFor(3)).toBe(3)
  })
})

withModels('thread calibration at load', () => {
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-calibration-'))
  const savedCache = process.env.SPECLAB_THREAD_CALIBRATION_CACHE
  const paths = { target: modelPath(TARGET), draft: modelPath(DRAFT) }
  const loaded: LoadedTrio[] = []
  const load = async (options: Parameters<typeof loadTrio>[1]) => {
    const trio = await loadTrio(paths, { contextSize: 256, ...options })
    loaded.push(trio)
    return trio
  }
  beforeAll(() => {
    process.env.SPECLAB_THREAD_CALIBRATION_CACHE = path.join(cacheDir, 'thread-calibration.json')
  })
  afterAll(async () => {
    for (const trio of loaded) await trio.dispose()
    if (savedCache === undefined) delete process.env.SPECLAB_THREAD_CALIBRATION_CACHE
    else process.env.SPECLAB_THREAD_CALIBRATION_CACHE = savedCache
  })

  it('measures every model per phase when no threads are given, applies the choice, caches it, and a run records it', async () => {
    const trio = await load({})
    const calibrations = trio.threadCalibration!
    expect(calibrations.map((c) => [c.role, c.source, c.path])).toEqual([
      ['target', 'measured', paths.target],
      ['draft', 'measured', paths.draft]
    ])
    const candidates = threadCandidates(os.cpus().length)
    const [target, draft] = [trio.models.target, trio.models.draft!]
    for (const [model, calibration] of [[target, calibrations[0]!], [draft, calibrations[1]!]] as const) {
      expect(calibration.single.map((t) => t.threads)).toEqual(candidates)
      expect(calibration.single.every((t) => t.ms > 0)).toBe(true)
      expect(calibration.rounds).toBeGreaterThanOrEqual(1)
      expect(calibration.contextTokens).toBeLessThanOrEqual(256)
      expect(model.phaseThreads).toEqual(calibration.chosen)
    }
    // The plan says what loaded and how: the calibration's choice, measured now, for every model and phase.
    expect(trio.threadPlan.calibration).toEqual(calibrations)
    expect(trio.threadPlan.models.map((m) => [m.role, m.token.threads, m.token.source, m.batch.threads, m.batch.source])).toEqual(
      calibrations.map((c) => [c.role, c.chosen.threads, 'measured', c.chosen.batchThreads, 'measured'])
    )
    expect(calibrations[0]!.batch!.map((t) => t.threads)).toEqual(candidates)
    expect(calibrations[1]!.batch).toBeNull() // drafts: single tokens only
    expect(calibrations[1]!.chosen.batchThreads).toBe(calibrations[1]!.chosen.threads)
    expect(fs.existsSync(calibrationCachePath())).toBe(true)

    // llama.cpp runs the chosen counts.
    const session = await target.createSession(RAW_WARP)
    try {
      await session.append([target.info.bos!, 300, 301], 0)
      expect(lastThreads(target)).toBe(calibrations[0]!.chosen.batchThreads)
      await session.append([302], 0)
      expect(lastThreads(target)).toBe(calibrations[0]!.chosen.threads)
    } finally {
      await session.dispose()
    }

    const store = RunStore.open(path.join(cacheDir, 'runs.sqlite'))
    try {
      const config = RunConfig.parse({
        suite: null,
        methods: ['ar', 'sd'],
        models: paths,
        prompts: { dataset: 'stories', limit: 1 },
        maxTokens: 8,
        sampling: { temperature: 0, topK: 64, topP: 1, fullVocabulary: false },
        seed: 1,
        gamma: 4,
        params: {},
        threads: 1,
        contextSize: 256
      })
      const ran = withLoadedTrio(config, { contextSize: 256, fingerprints: trio.fingerprints, threadPlan: trio.threadPlan })
      const report = await executeRun(store, ran, trio.models, loadPrompts(config.prompts))
      expect(report.config.threadPlan).toEqual(trio.threadPlan)
      expect(report.config.threadCalibration).toEqual(calibrations)
      expect(report.config.targetThreads).toBe(calibrations[0]!.chosen.threads)
      expect(report.config.batchThreads).toBe(calibrations[0]!.chosen.batchThreads)
      expect(report.config.draftThreads).toBe(calibrations[1]!.chosen.threads)
    } finally {
      store.close()
    }
  })

  it('finds the calibration in the cache at the next load; refresh measures again; an explicit count measures nothing', async () => {
    const first = await load({})
    const cached = await load({})
    expect(cached.threadCalibration!.map((c) => c.source)).toEqual(['cached', 'cached'])
    expect(cached.threadCalibration!.map((c) => c.chosen)).toEqual(first.threadCalibration!.map((c) => c.chosen))
    expect(cached.models.target.phaseThreads).toEqual(first.models.target.phaseThreads)

    const refreshed = await load({ calibration: 'refresh' })
    expect(refreshed.threadCalibration!.map((c) => c.source)).toEqual(['measured', 'measured'])

    // An explicit batch count wins over the target's measured one.
    const overridden = await load({ batchThreads: 3 })
    expect(overridden.models.target.phaseThreads.batchThreads).toBe(3)
    expect(overridden.threadCalibration![0]!.source).toBe('cached')
    expect(overridden.threadPlan.models[0]).toMatchObject({ token: { source: 'cached' }, batch: { threads: 3, source: 'given' } })

    const given = await load({ threads: 1 })
    expect(given.threadCalibration).toBeNull()
    expect(given.models.draft!.phaseThreads).toEqual({ threads: 1, batchThreads: 1 })
    expect(given.threadPlan.models.map((m) => [m.token.threads, m.token.source, m.batch.source])).toEqual([
      [1, 'given', 'given'],
      [1, 'given', 'given']
    ])
    const rule = await load({ calibration: 'off' })
    expect(rule.threadCalibration).toBeNull()
    expect(rule.threadPlan.models.every((m) => m.token.source === 'rule' && m.batch.source === 'rule')).toBe(true)
    expect(rule.threadPlan.models.map((m) => m.token.threads)).toEqual([rule.models.target.phaseThreads.threads, rule.models.draft!.phaseThreads.threads])
    for (const trio of loaded.splice(0)) await trio.dispose()
  })

  it('a corrupt cache file is measured over, not a failed load', async () => {
    fs.writeFileSync(calibrationCachePath(), '\u0000garbage')
    const trio = await load({})
    expect(trio.threadCalibration!.map((c) => c.source)).toEqual(['measured', 'measured'])
    expect(JSON.parse(fs.readFileSync(calibrationCachePath(), 'utf8')).version).toBe(1)
  })
})
