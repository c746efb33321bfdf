import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  calibrateThreads,
  fewestThreadsNotClearlyBeaten,
  threadCandidates,
  type CalibratableModel,
  type ModelThreadCalibration,
  type PhaseThreads
} from '../../electron/engine/model/thread-calibration'
import { cachedCalibration, calibrationKey, storeCalibration } from '../../electron/experiments/thread-calibration-cache'
import { calibrationInWords, describeRunThreads, describeThreadPlan, timingsText } from '../../electron/api/thread-summary'
import { describeLoadProgress } from '../../electron/api/models'
import type { ModelSession } from '../../electron/engine/model/types'

/**
 * A model whose evaluations advance a fake clock by cost(threads, tokens, n) ms — n counts the evaluations of that
 * thread count and phase, so a cost can alternate — and that logs the thread count of every evaluation.
 */
function fakeModel(cost: (threads: number, tokens: number, n: number) => number) {
  let clock = 0
  const log: { threads: number; tokens: number }[] = []
  const counts = new Map<string, number>()
  const phaseThreads: PhaseThreads = { threads: 3, batchThreads: 5 }
  const model: CalibratableModel = {
    info: { bos: 1, path: '/models/fake.gguf' },
    phaseThreads,
    async createSession() {
      const tokens: number[] = []
      const session: ModelSession = {
        tokens,
        async append(appended, from) {
          const threads = appended.length > 1 ? phaseThreads.batchThreads : phaseThreads.threads
          const key = `${threads}/${appended.length > 1}`
          const n = counts.get(key) ?? 0
          counts.set(key, n + 1)
          clock += cost(threads, appended.length, n)
          log.push({ threads, tokens: appended.length })
          tokens.push(...appended)
          return appended.slice(from).map(() => ({ ids: Int32Array.of(7 + (tokens.length % 3)), probs: Float64Array.of(1) }))
        },
        async truncate(length) {
          tokens.length = Math.min(tokens.length, length)
        },
        async dispose() {}
      }
      return session
    }
  }
  return { model, log, now: () => clock, phaseThreads }
}

describe('thread calibration: candidates and choice', () => {
  it('tries 1, 2, 4, … and the core count', () => {
    expect(threadCandidates(1)).toEqual([1])
    expect(threadCandidates(2)).toEqual([1, 2])
    expect(threadCandidates(6)).toEqual([1, 2, 4, 6])
    expect(threadCandidates(16)).toEqual([1, 2, 4, 8, 16])
  })

  it('chooses the fewest threads that no larger count beats by more than 3 % and two standard errors', () => {
    const t = (threads: number, ms: number, sem = 0) => ({ threads, ms, sem })
    expect(fewestThreadsNotClearlyBeaten([t(1, 10), t(2, 6), t(4, 5.9)])).toBe(2)
    expect(fewestThreadsNotClearlyBeaten([t(1, 10), t(2, 6), t(4, 5)])).toBe(4)
    expect(fewestThreadsNotClearlyBeaten([t(1, 10), t(2, 10.2)])).toBe(1)
    expect(fewestThreadsNotClearlyBeaten([t(1, 10), t(2, 9.6)])).toBe(2) // 4 %, measured without noise
  })

  it('keeps the fewer threads when the faster mean is within the noise', () => {
    const t = (threads: number, ms: number, sem: number) => ({ threads, ms, sem })
    // Two threads 8 % faster on average, but their mean is uncertain (a bimodal count): one thread stays.
    expect(fewestThreadsNotClearlyBeaten([t(1, 11.4, 0.05), t(2, 10.5, 0.9)])).toBe(1)
    // The same gap measured tightly is a real gain.
    expect(fewestThreadsNotClearlyBeaten([t(1, 11.4, 0.05), t(2, 10.5, 0.1)])).toBe(2)
    // A batch: 47 vs 31 ms, clear despite noise.
    expect(fewestThreadsNotClearlyBeaten([t(1, 47, 0.3), t(2, 31, 2.5)])).toBe(2)
    expect(() => fewestThreadsNotClearlyBeaten([])).toThrow()
  })
})

describe('calibrateThreads', () => {
  it('measures single tokens and batches per thread count, chooses per phase and restores the threads', async () => {
    const single: Record<number, number> = { 1: 10, 2: 7, 4: 6.95 }
    const batch: Record<number, number> = { 1: 40, 2: 30, 4: 20 }
    // Thread count 3 is the model's own, used while the context is prepared.
    const fake = fakeModel((threads, tokens) => (tokens > 1 ? batch[threads] : single[threads]) ?? 1)
    const calibration = await calibrateThreads(fake.model, { role: 'target', cores: 4, now: fake.now, budgetMs: Infinity })
    expect(calibration.single).toEqual([
      { threads: 1, ms: 10, sem: 0 },
      { threads: 2, ms: 7, sem: 0 },
      { threads: 4, ms: 6.95, sem: 0 }
    ])
    expect(calibration.batch).toEqual([
      { threads: 1, ms: 40, sem: 0 },
      { threads: 2, ms: 30, sem: 0 },
      { threads: 4, ms: 20, sem: 0 }
    ])
    // 4 threads buy < 3 % on single tokens: 2; on batches 4 is a third faster.
    expect(calibration.chosen).toEqual({ threads: 2, batchThreads: 4 })
    // More threads won: the rounds ran twice.
    expect(calibration).toMatchObject({ role: 'target', source: 'measured', rounds: 16, batchTokens: 6, path: '/models/fake.gguf' })
    expect(calibration.contextTokens).toBe(128)
    expect(fake.phaseThreads).toEqual({ threads: 3, batchThreads: 5 })
  })

  it('interleaves the candidates round by round and rotates their order', async () => {
    const fake = fakeModel((threads) => (threads === 2 ? 1.2 : 1))
    await calibrateThreads(fake.model, { role: 'draft', cores: 2, rounds: 3, now: fake.now, budgetMs: Infinity })
    // After the context (BOS, greedy tokens, filler, probe) come the rounds: 6 single tokens per candidate.
    const measured = fake.log.slice(-4 * 2 * 6).map((e) => e.threads)
    const blocks = Array.from({ length: 8 }, (_, i) => measured[i * 6])
    expect(blocks).toEqual([1, 2, 2, 1, 1, 2, 2, 1])
  })

  it('takes the mean, so a thread count that is fast mostly but slow sometimes is not chosen', async () => {
    // Two threads: 5 ms three times out of four, 60 ms the fourth (median 5, mean 18.75); one thread: 10 ms.
    const fake = fakeModel((threads, _tokens, n) => (threads === 1 ? 10 : n % 4 === 3 ? 60 : 5))
    const calibration = await calibrateThreads(fake.model, { role: 'draft', cores: 2, now: fake.now, budgetMs: Infinity })
    expect(calibration.chosen.threads).toBe(1)
    expect(calibration.single.find((t) => t.threads === 2)!.ms).toBeGreaterThan(15)
    expect(calibration.batch).toBeNull()
  })

  it('confirms a win of more threads with as many rounds again; a count fast only in a burst loses', async () => {
    // Two threads: 5 ms for their first 54 single tokens (warm-up + 8 rounds), 40 ms after; one thread: 10 ms.
    const fake = fakeModel((threads, _tokens, n) => (threads === 1 ? 10 : n < 54 ? 5 : 40))
    const calibration = await calibrateThreads(fake.model, { role: 'draft', cores: 2, now: fake.now, budgetMs: Infinity })
    expect(calibration.rounds).toBe(16)
    expect(calibration.chosen.threads).toBe(1)
    // Faster on average but not clearly (2 or 16 ms, mean 9, against a steady 10): measured again too.
    const noisy = fakeModel((threads, _tokens, n) => (threads === 1 ? 10 : n % 2 === 0 ? 2 : 16))
    expect((await calibrateThreads(noisy.model, { role: 'draft', cores: 2, now: noisy.now, budgetMs: Infinity })).rounds).toBe(16)
    // Without a win of more threads there is no second pass.
    const steady = fakeModel((threads) => (threads === 1 ? 10 : 12))
    expect((await calibrateThreads(steady.model, { role: 'draft', cores: 2, now: steady.now, budgetMs: Infinity })).rounds).toBe(8)
  })

  it('drops a candidate far slower in every phase after the first counted round', async () => {
    const fake = fakeModel((threads, tokens) => (threads === 4 ? 100 : threads) * tokens)
    const calibration = await calibrateThreads(fake.model, { role: 'target', cores: 4, now: fake.now, budgetMs: Infinity })
    const rounds = (threads: number) => fake.log.filter((e) => e.threads === threads && e.tokens === 6).length / 3
    expect(rounds(4)).toBe(2) // the warm-up and the first counted round
    expect(rounds(1)).toBe(9)
    expect(calibration.chosen).toEqual({ threads: 1, batchThreads: 1 })
  })

  it('stops starting rounds once its time budget is spent, after one counted round', async () => {
    const fake = fakeModel(() => 1000)
    const calibration = await calibrateThreads(fake.model, { role: 'target', cores: 2, now: fake.now, budgetMs: 5000 })
    expect(calibration.rounds).toBe(1)
  })

  it('stays inside a small context', async () => {
    const fake = fakeModel(() => 1)
    const calibration = await calibrateThreads(fake.model, { role: 'target', cores: 1, now: fake.now, contextSize: 64 })
    expect(calibration.contextTokens).toBe(52)
  })
})

describe('thread calibration cache', () => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-calibration-'))
  const file = path.join(directory, 'thread-calibration.json')
  afterEach(() => fs.rmSync(file, { force: true }))
  const native = { build: 'prebuilt', openmp: false, release: 'v0.5.0', gpu: 'cpu' }
  const calibration: ModelThreadCalibration = {
    role: 'target',
    path: '/a/model.gguf',
    source: 'measured',
    measuredAt: '2026-11-25T00:00:00.000Z',
    single: [{ threads: 1, ms: 7, sem: 0.1 }],
    batch: [{ threads: 1, ms: 20, sem: 0.2 }],
    batchTokens: 6,
    contextTokens: 128,
    rounds: 8,
    chosen: { threads: 1, batchThreads: 1 }
  }

  it('keys by model, role, GPU layers and binary', () => {
    const key = calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native })
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native })).toBe(key)
    expect(calibrationKey({ fingerprint: 'abd', role: 'target', gpuLayers: 0, native })).not.toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'draft', gpuLayers: 0, native })).not.toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 8, native })).not.toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, openmp: true } })).not.toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, build: 'localBuild' } })).not.toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, libuvWorkers: 1 } })).not.toBe(key)
    // The evaluation path: unrecorded reads as the default (the addon), turned off is another key.
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, directEvaluation: true } })).toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, directEvaluation: false } })).not.toBe(key)
    // The top-k read: unrecorded reads as absent (a binary without it), present is another key.
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, topLogitsRead: false } })).toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, topLogitsRead: true } })).not.toBe(key)
    // Small f16 batches on ggml's kernel: likewise.
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, smallBatchMatmul: false } })).toBe(key)
    expect(calibrationKey({ fingerprint: 'abc', role: 'target', gpuLayers: 0, native: { ...native, smallBatchMatmul: true } })).not.toBe(key)
  })

  it('finds a stored calibration again as cached, under the path given now', () => {
    expect(cachedCalibration('k1', '/b/model.gguf', file)).toBeNull()
    expect(storeCalibration('k1', calibration, file)).toBe(true)
    expect(cachedCalibration('k1', '/b/model.gguf', file)).toEqual({ ...calibration, path: '/b/model.gguf', source: 'cached' })
    expect(cachedCalibration('k2', '/b/model.gguf', file)).toBeNull()
  })

  it('reads a corrupt or foreign file as empty and replaces it; drops only the entries it cannot read', () => {
    fs.writeFileSync(file, '{not json')
    expect(cachedCalibration('k1', '/a/model.gguf', file)).toBeNull()
    expect(storeCalibration('k1', calibration, file)).toBe(true)
    expect(cachedCalibration('k1', '/a/model.gguf', file)).not.toBeNull()
    const stored = JSON.parse(fs.readFileSync(file, 'utf8'))
    stored.entries.old = { role: 'target', chosen: 'two' }
    fs.writeFileSync(file, JSON.stringify(stored))
    expect(cachedCalibration('old', '/a/model.gguf', file)).toBeNull()
    expect(cachedCalibration('k1', '/a/model.gguf', file)).not.toBeNull()
  })

  it('reports a cache it cannot write instead of failing', () => {
    const blocked = path.join(directory, 'a-file')
    fs.writeFileSync(blocked, '')
    expect(storeCalibration('k1', calibration, path.join(blocked, 'thread-calibration.json'))).toBe(false)
  })
})

describe('thread summary', () => {
  const config = {
    threads: 1,
    targetThreads: 1,
    batchThreads: 2,
    draftThreads: 1,
    threadCalibration: null,
    models: { target: '/t.gguf', draft: '/d.gguf' }
  }

  it('says the threads per phase and how they were chosen', () => {
    expect(describeRunThreads(config)).toBe('target 1 per token, 2 per batch; draft 1 — given or by rule (not measured)')
    const measured = { source: 'measured' } as ModelThreadCalibration
    const cached = { source: 'cached' } as ModelThreadCalibration
    expect(describeRunThreads({ ...config, threadCalibration: [measured, measured] })).toMatch(/— measured at load$/)
    expect(describeRunThreads({ ...config, threadCalibration: [cached, cached] })).toMatch(/\(cached\)$/)
    expect(describeRunThreads({ ...config, threadCalibration: [measured, cached] })).toMatch(/some cached/)
    expect(describeRunThreads({ ...config, targetThreads: null, batchThreads: null, models: { target: '/t.gguf' } })).toBe(
      'target 1 per token, 1 per batch — given or by rule (not measured)'
    )
  })

  it('describes a run by its thread plan where it has one: counts per phase and how each was chosen', () => {
    const entry = (role: 'target' | 'draft', token: number, batch: number, source: 'given' | 'rule' | 'measured', batchSource = source) => ({
      role,
      file: `/${role}.gguf`,
      token: { threads: token, source },
      batch: { threads: batch, source: batchSource }
    })
    const plan = (models: ReturnType<typeof entry>[], calibration: ModelThreadCalibration[] | null = null) => ({ models, calibration })
    expect(describeRunThreads({ ...config, threadPlan: plan([entry('target', 2, 2, 'given'), entry('draft', 2, 2, 'given')]) })).toBe(
      'target 2 per token, 2 per batch; draft 2 — given (not measured)'
    )
    expect(describeThreadPlan(plan([entry('target', 1, 2, 'rule')]))).toBe('target 1 per token, 2 per batch — by rule (not measured)')
    const measured = { source: 'measured' } as ModelThreadCalibration
    expect(describeThreadPlan(plan([entry('target', 1, 3, 'measured', 'given'), entry('draft', 1, 1, 'measured')], [measured, measured]))).toBe(
      "target 1 per token, 3 per batch; draft 1 — measured at load; the target's batch count given"
    )
  })

  it('says a calibration in words: the chosen count against the fastest other one', () => {
    const calibration = {
      source: 'cached',
      single: [{ threads: 1, ms: 4.76, sem: 0 }, { threads: 2, ms: 838.72, sem: 0 }],
      batch: [{ threads: 1, ms: 23.6, sem: 0 }, { threads: 2, ms: 14.04, sem: 0 }],
      chosen: { threads: 1, batchThreads: 2 }
    } as ModelThreadCalibration
    expect(calibrationInWords(calibration)).toBe(
      '1 thread per token (4.8 ms; 2 threads: 838.7 ms), 2 threads per batch (14.0 ms; 1 thread: 23.6 ms) — measured at an earlier load (cached)'
    )
    expect(calibrationInWords({ ...calibration, source: 'measured', batch: null })).toMatch(/its one-token count for batches — measured at load$/)
  })

  it('labels the stages of a load', () => {
    const p = { fileName: 't.gguf', index: 0, count: 2, fraction: 0.4 }
    expect(describeLoadProgress(p)).toBe('Loading t.gguf (1/2) 40%')
    expect(describeLoadProgress({ ...p, stage: 'measuring', fraction: 0 })).toMatch(/^Measuring the threads of t\.gguf \(1\/2\)/)
  })

  it('marks the chosen count among the timings', () => {
    expect(timingsText([{ threads: 1, ms: 7.123, sem: 0.1 }, { threads: 2, ms: 5, sem: 0.2 }], 2)).toBe('1: 7.12 · 2*: 5.00 ms')
    expect(timingsText(null, 1)).toBe('–')
  })
})
