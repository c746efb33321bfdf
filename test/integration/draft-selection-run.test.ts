/** 004 §5 draft-model selection wired through a real run: warm-up rows, per-prompt choices, features recorded. */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import { loadTrio, type LoadedTrio } from '../../electron/experiments/models'
import { loadPrompts } from '../../electron/experiments/prompts'
import { executeRun } from '../../electron/experiments/runner'
import { RunStore } from '../../electron/store/run-store'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFTS = ['stories260K-q4_0.gguf', 'family/stories-mid1M-f32.gguf']
const withModels = describeWithModels('test/integration/draft-selection-run.test.ts', [TARGET, ...DRAFTS])

withModels('adaptive draft-model selection in a run', () => {
  let trio: LoadedTrio
  let store: RunStore
  const drafts = DRAFTS.map(modelPath)

  beforeAll(async () => {
    trio = await loadTrio(
      { target: modelPath(TARGET), draft: drafts[0], drafts },
      { threads: 1, contextSize: 512 }
    )
    store = RunStore.open(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-select-')), 'runs.sqlite'))
  })
  afterAll(async () => {
    store?.close()
    await trio?.dispose()
  })

  it('profiles every draft on the warm-up prompts, then records a choice with features and predictions per prompt', async () => {
    const config = RunConfig.parse({
      suite: null,
      methods: ['ar', 'sd'],
      models: { target: trio.models.target.info.path, draft: drafts[0], drafts },
      prompts: { dataset: 'stories', limit: 4 },
      maxTokens: 24,
      sampling: { temperature: 0, topK: 64, topP: 1, fullVocabulary: false },
      seed: 5,
      gamma: 4,
      params: {},
      threads: 1,
      contextSize: 512,
      draftSelection: { warmupPrompts: 3 }
    })
    const report = await executeRun(store, config, trio.models, loadPrompts(config.prompts), { draftCandidates: trio.drafts })
    const choices = store.getDraftChoices(report.runId)
    const warmup = choices.filter((c) => c.phase === 'warmup')
    expect(warmup).toHaveLength(3 * 2)
    expect(new Set(warmup.map((c) => c.draftPath))).toEqual(new Set(drafts))
    for (const row of warmup) expect(row.detail.observedAcceptance).toBeGreaterThan(0)

    const picked = choices.filter((c) => c.phase === 'choice')
    expect(picked.map((c) => c.promptIndex)).toEqual([0, 1, 2, 3])
    for (const row of picked) {
      const candidates = row.detail.candidates as { path: string; throughput: number; features: { length: number; perplexity: number; tfidf: number }; coefficients: number[] }[]
      expect(candidates).toHaveLength(2)
      const best = candidates.reduce((a, b) => (b.throughput > a.throughput ? b : a))
      expect(row.draftPath).toBe(best.path)
      for (const c of candidates) {
        expect(c.features.perplexity).toBeGreaterThan(1)
        expect(c.coefficients).toHaveLength(3)
      }
    }
    // Greedy sd still reproduces ar with whichever draft each prompt got.
    const [ar, sd] = report.methods
    expect(sd.outputs).toEqual(ar.outputs)
  })
})
