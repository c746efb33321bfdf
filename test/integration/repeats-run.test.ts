/**
 * Repeats on the shared models: every (prompt, method) runs `repeats` times, interleaved prompt → repeat
 * → method, each repeat's wall time stored in the schedule's order; repeats make the same decisions (their own run
 * state, the prompt's PRNG stream), also for a policy whose state carries across prompts; the report's intervals
 * are made from exactly those cells; the machine's load is recorded around the run.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RunConfig } from '../../electron/api/runs'
import { loadTrio, type LoadedTrio } from '../../electron/experiments/models'
import { loadPrompts } from '../../electron/experiments/prompts'
import { executeRun } from '../../electron/experiments/runner'
import { buildRunReport } from '../../electron/api/runs-service'
import { diffRuns } from '../../electron/api/run-diff'
import { bestSpeedup, formatDiff, formatFixed, methodTable } from '../../electron/cli/format'
import { speedupCell } from '../../electron/experiments/reports/common'
import { RunStore } from '../../electron/store/run-store'
import { describeWithModels, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/repeats-run.test.ts', [TARGET, DRAFT])

withModels('a run with repeats', () => {
  let trio: LoadedTrio
  let store: RunStore

  beforeAll(async () => {
    trio = await loadTrio({ target: modelPath(TARGET), draft: modelPath(DRAFT) }, { threads: 1, contextSize: 512 })
    store = RunStore.open(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-repeats-')), 'runs.sqlite'))
  })
  afterAll(async () => {
    store?.close()
    await trio?.dispose()
  })

  it('interleaves prompt → repeat → method (the methods rotating), stores every repeat in that order, and repeats decide alike', async () => {
    const methods = ['ar', 'sd', 'adaptive-rl'] as const
    const config = RunConfig.parse({
      suite: null,
      methods,
      models: { target: trio.models.target.info.path, draft: trio.models.draft!.info.path },
      prompts: { dataset: 'stories', limit: 2 },
      maxTokens: 16,
      sampling: { temperature: 1, topK: 64, topP: 1, fullVocabulary: false },
      seed: 7,
      gamma: 4,
      params: {},
      threads: 1,
      contextSize: 512,
      repeats: 3
    })
    const report = await executeRun(store, config, trio.models, loadPrompts(config.prompts))
    expect(report.status).toBe('done')

    const results = store.getPromptResults(report.runId)
    expect(results).toHaveLength(2 * methods.length) // one stored output per (prompt, method)
    const repeats = store.getRepeats(report.runId)
    const schedule = results
      .flatMap((r) => repeats.get(r.id)!.map((x) => ({ ...x, prompt: r.promptIndex, method: r.method })))
      .sort((a, b) => a.runOrder - b.runOrder)
    // A B C, B C A, C A B on prompt 0, then on prompt 1 (the rotation goes on: it counts every (prompt, repeat)).
    const rotated = (by: number) => methods.map((_, i) => methods[(by + i) % methods.length]!)
    expect(schedule.map((x) => `${x.prompt}/${x.repeat}/${x.method}`)).toEqual(
      [0, 1].flatMap((p) => [0, 1, 2].flatMap((r) => rotated(p * 3 + r).map((m) => `${p}/${r}/${m}`)))
    )
    expect(schedule.map((x) => x.runOrder)).toEqual([...schedule.keys()])
    // Sampling at temperature 1, and adaptive-rl learns across prompts: still, every repeat decides as repeat 0 did.
    expect(schedule.every((x) => x.sameOutput && x.wallMs > 0)).toBe(true)
    for (const r of results) expect(repeats.get(r.id)!.every((x) => x.outputCount === r.outputCount)).toBe(true)
    expect(repeats.get(results[0]!.id)![0]!.wallMs).toBe(results[0]!.wallMs) // repeat 0 is the stored decode

    for (const summary of report.methods) {
      expect(summary.repeats).toBe(3)
      expect(summary.timings).toHaveLength(6)
      expect(summary.tokensPerSecondInterval).toMatchObject({ cells: 6, prompts: 2, repeats: 3 })
      expect(summary.tokensPerSecondInterval!.low).toBeLessThanOrEqual(summary.tokensPerSecondInterval!.median)
      expect(summary.speedupInterval).toMatchObject({ cells: 6 })
    }
    // The speedup of a (prompt, repeat) is paired with ar's decode of the same prompt and repeat.
    const ar = report.methods.find((m) => m.method === 'ar')!
    const sd = report.methods.find((m) => m.method === 'sd')!
    for (const cell of sd.timings) {
      const base = ar.timings.find((t) => t.prompt === cell.prompt && t.repeat === cell.repeat)!
      expect(cell.speedup).toBeCloseTo(cell.tokensPerSecond / base.tokensPerSecond, 12)
    }
    expect(sd.acceptanceByPosition.map((p) => p.position)).toEqual([1, 2, 3, 4])
    // One speedup: `show --json` and the Runs screen (the report), `diff` and the Diff screen, the CLI's table,
    // `runs`' best speedup and the suite reports all say the median of the paired ratios.
    expect(sd.speedup).toBe(sd.speedupInterval!.median)
    expect(sd.tokensPerSecond).toBe(sd.tokensPerSecondInterval!.median)
    expect(buildRunReport(store, report.runId)!.methods.find((m) => m.method === 'sd')!.speedup).toBe(sd.speedup)
    expect(diffRuns(report, report).methods.find((m) => m.method === 'sd')!.metrics.speedup.a).toBe(sd.speedup)
    expect(methodTable(report.methods)).toContain(`${formatFixed(sd.speedup, 2)}× [`)
    expect(formatDiff(diffRuns(report, report))).toMatch(new RegExp(`speedup vs ar\\s+${formatFixed(sd.speedup, 2).replace('.', '\\.')}\\s`))
    const best = bestSpeedup(store.getPromptResults(report.runId), store.getRepeats(report.runId))!
    expect(report.methods.find((m) => m.method === best.method)!.speedup).toBeCloseTo(best.speedup, 12)
    expect(speedupCell(sd)).toMatchObject({ median: sd.speedup })
    expect(report.machine).toMatchObject({ cpus: os.availableParallelism(), loadBefore: expect.any(Array), loadAfter: expect.any(Array) })
  })
})
