/**
 * Runs written straight through the stores, without a model: every table that hangs off a run gets rows (prompt
 * results, steps with and without per-level counters, repeats, output scores, draft choices, a suite run with its
 * cells, a name, notes and the machine state), so tests of what reads or moves stored runs see all of them in
 * seconds. The numbers differ per run so diffs and reports have something to show.
 */
import { RunConfig } from '../../electron/api/runs'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { RunStore } from '../../electron/store/run-store'
import { SuiteStore } from '../../electron/store/suite-store'

export function storedRunConfig(overrides: Partial<RunConfig> = {}): RunConfig {
  return RunConfig.parse({
    suite: null,
    methods: ['ar', 'sd'],
    models: { target: '/models/target.gguf', draft: '/models/draft.gguf' },
    prompts: { dataset: 'stories', limit: 2 },
    maxTokens: 8,
    sampling: { temperature: 0, topK: 40, topP: 1, fullVocabulary: false },
    seed: 7,
    gamma: 4,
    params: { 'sd.parallel': false },
    threads: 2,
    contextSize: 512,
    repeats: 2,
    ...overrides
  })
}

function step(index: number, accepted: number, msPerStep: number, levels: boolean): StepRecord {
  return {
    index,
    stage: 'sd',
    proposed: 4,
    accepted,
    resampled: accepted < 4,
    bonus: accepted === 4,
    emitted: accepted + 1,
    draftTokens: 4,
    acceptedDraftTokens: accepted,
    draftEntropies: [0.5, 1.25, 2, 0.125],
    threshold: null,
    decision: null,
    targetCalls: 1,
    draftCalls: 4,
    draftMs: msPerStep / 3,
    verifyMs: (2 * msPerStep) / 3,
    totalMs: msPerStep,
    ...(levels
      ? {
          levels: {
            q1: { drafted: 4, examinedByQ2: 4, acceptedByQ2: 3, acceptedByP: accepted, calls: 4, ms: msPerStep / 4 },
            q2: { drafted: 1, accepted: 1, calls: 1, ms: msPerStep / 8 },
            p: { calls: 1, examined: accepted + 1, accepted },
            alpha: { sum: 0.5, positions: 1 },
            beta: { sum: 0.25, positions: 1 }
          }
        }
      : {})
  }
}

/** One finished run: ar and sd over two prompts, two repeats each, with steps, scores and a draft choice. */
export function addStoredRun(store: RunStore, config: RunConfig, speed: number, options: { suiteRunId?: number; cellKey?: string; name?: string } = {}): number {
  const runId = store.createRun(config)
  const suites = new SuiteStore(store.database)
  let order = 0
  for (let prompt = 0; prompt < 2; prompt++) {
    for (const method of config.methods) {
      const resultId = store.startPromptResult({ runId, method, promptIndex: prompt, promptId: `p${prompt}`, category: 'story', promptText: `Once upon a time ${prompt}`, seedStream: prompt })
      const tokens = [5, 6, 7, 8, 9, 10].map((t) => t + prompt)
      const wallMs = (method === 'ar' ? 60 : 60 / speed) * (1 + prompt / 10)
      if (method !== 'ar') for (let i = 0; i < 2; i++) store.addStep(resultId, step(i, 2 + i, wallMs / 2, prompt === 1))
      store.finishPromptResult(resultId, {
        status: 'done',
        outputText: `output of ${method} on ${prompt}`,
        outputTokens: tokens,
        provenance: method === 'ar' ? 'tttttt' : 'ddbddb',
        stopReason: 'length',
        wallMs
      })
      for (let repeat = 0; repeat < 2; repeat++)
        store.addRepeat(resultId, { repeat, runOrder: order++, wallMs: wallMs * (1 + repeat / 20), outputCount: tokens.length, sameOutput: true })
      suites.addScore({ resultId, scorer: config.models.target, nll: 3.5 + prompt, tokens: tokens.length })
    }
    store.addDraftChoice(runId, { promptIndex: prompt, phase: 'choice', draftPath: config.models.draft ?? '', detail: { predicted: 0.5 + prompt / 10 } })
  }
  store.setMachine(runId, { cpus: 2, loadBefore: [0.5, 0.4, 0.3], loadAfter: [1.1, 0.6, 0.4], governor: null, busy: false })
  if (options.suiteRunId !== undefined) suites.linkRun(runId, options.suiteRunId, options.cellKey ?? `cell-${runId}`)
  if (options.name) store.annotateRun(runId, { name: options.name, notes: `notes on ${options.name}` })
  store.finishRun(runId, 'done')
  return runId
}

/**
 * A database file with three runs (γ 2, 4 and 6; the last two cells of one suite run) and returns their ids.
 * Closes the store, so a CLI or server may open the file next.
 */
export function seedStoredRuns(file: string): number[] {
  const store = RunStore.open(file)
  try {
    const suites = new SuiteStore(store.database)
    const suiteRunId = suites.createSuiteRun({ suite: 'smoke', quick: true, options: { seed: 7 }, plan: [] })
    const ids = [
      addStoredRun(store, storedRunConfig({ gamma: 2 }), 1.2, { name: 'gamma two' }),
      addStoredRun(store, storedRunConfig({ gamma: 4, suite: 'smoke' }), 1.6, { suiteRunId, cellKey: 'smoke/g4' }),
      addStoredRun(store, storedRunConfig({ gamma: 6, suite: 'smoke' }), 1.4, { suiteRunId, cellKey: 'smoke/g6' })
    ]
    suites.finishSuiteRun(suiteRunId, 'done')
    return ids
  } finally {
    store.close()
  }
}
