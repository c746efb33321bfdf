/**
 * A suite-level run with every draft-length policy on the shared models: σ, η, γ trajectories, speedups and each
 * policy's reasons all land in SQLite and read back consistently.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import { POLICY_METHODS } from '../../electron/cli/bench-command'
import { foldSteps, sigma } from '../../electron/engine/metrics/fold'
import { loadTrio, type LoadedTrio } from '../../electron/experiments/models'
import { loadPrompts } from '../../electron/experiments/prompts'
import { executeRun } from '../../electron/experiments/runner'
import { RunStore } from '../../electron/store/run-store'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/policies-run.test.ts', [TARGET, DRAFT])

withModels('every policy in one stored run', () => {
  let trio: LoadedTrio
  let store: RunStore

  beforeAll(async () => {
    trio = await loadTrio(
      { target: modelPath(TARGET), draft: modelPath(DRAFT) },
      { threads: 1, contextSize: 512 }
    )
    store = RunStore.open(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-policies-')), 'runs.sqlite'))
  })
  afterAll(async () => {
    store?.close()
    await trio?.dispose()
  })

  it('stores σ, η, γ trajectories, speedups and the reasons of every policy', async () => {
    const methods = ['ar', 'sd', ...POLICY_METHODS]
    const config = RunConfig.parse({
      suite: 'policies',
      methods,
      models: { target: trio.models.target.info.path, draft: trio.models.draft!.info.path },
      prompts: { dataset: 'stories', limit: 2 },
      maxTokens: 32,
      sampling: { temperature: 1, topK: 64, topP: 1, fullVocabulary: false },
      seed: 11,
      gamma: 5,
      params: {},
      threads: 1,
      contextSize: 512
    })
    const report = await executeRun(store, config, trio.models, loadPrompts(config.prompts))
    expect(report.status).toBe('done')
    expect(report.methods.map((m) => m.method)).toEqual(methods)

    const results = store.getPromptResults(report.runId)
    for (const summary of report.methods) {
      expect(summary.prompts).toBe(2)
      expect(summary.speedup).not.toBeNull()
      expect(summary.eta).toBeGreaterThan(0)
      if (summary.method === 'ar') continue
      expect(summary.sigma).not.toBeNull()
      expect(summary.gammaTrajectory).toHaveLength(2)
      expect(summary.gammaTrajectory.flat().length).toBeGreaterThan(0)
      // The report is a fold over the stored steps: recompute σ from the rows.
      const steps = results.filter((r) => r.method === summary.method).flatMap((r) => store.getSteps(r.id))
      expect(sigma(foldSteps(steps))).toBeCloseTo(summary.sigma!, 12)
      expect(steps.map((s) => s.proposed).filter((g) => g > 0)).toEqual(summary.gammaTrajectory.flat())
      // Every policy explains itself in every round it drafted.
      for (const step of steps) expect(step.decision).not.toBeNull()
    }
    const selfVerifySteps = results.filter((r) => r.method === 'self-verify').flatMap((r) => store.getSteps(r.id))
    expect(selfVerifySteps.every((s) => typeof s.threshold === 'number')).toBe(true)
    const svipSteps = results.filter((r) => r.method === 'svip').flatMap((r) => store.getSteps(r.id))
    expect(svipSteps.every((s) => s.threshold === 0.3)).toBe(true)
  })
})
