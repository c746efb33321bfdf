/**
 * `speclab advise` end to end on the shared models (target5M-q8_0 ← 260K, greedy, 2 prompts × 32 tokens): the JSON
 * contract (recommendation, candidates with predicted beside measured, profile, runId), the verification stored as
 * a run of suite 'advise' that `runs` and `show` find, --save, and bad input as one line with exit code 2.
 * A draft of another vocabulary (tinystories-656k, acceptance ≈ 0.03–0.13 on this target): its sd-tli / sd-uad
 * candidates are replayed and measured beside ar, and the recommendation is never slower than ar.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { describeWithModels, modelPath } from '../helpers/gguf'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const TARGET = 'family/stories-target5M-q8_0.gguf'
const DRAFT = 'stories260K-f32.gguf'
const OTHER_VOCABULARY = 'tinystories-656k-f32.gguf'
const MID = 'family/stories-mid1M-f32.gguf'
const withModels = describeWithModels('test/integration/advise-cli.test.ts', [TARGET, DRAFT, OTHER_VOCABULARY, MID])
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')

let dir: string

function speclab(...args: string[]) {
  const env = { ...process.env, SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'calibration.json'), SPECLAB_SERVER_COST_CACHE: path.join(dir, 'server-costs.json') }
  const result = spawnSync(tsx, [cli, ...args, '--db', path.join(dir, 'db.sqlite')], { cwd: root, encoding: 'utf8', env })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

const SMALL = ['--limit', '2', '--max-tokens', '32', '--seed', '4', '--temperature', '0', '--threads', '1', '--context-size', '512']

interface Interval {
  median: number
  low: number
  high: number
}
const isInterval = (i: Interval) => Number.isFinite(i.median) && i.low <= i.median && i.median <= i.high

withModels('speclab advise', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-advise-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('--json: predictions beside measurements of one stored interleaved run, and a recommendation', () => {
    const saved = path.join(dir, 'advice.json')
    const result = speclab('advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), ...SMALL, '--methods', 'sd,pld', '--verify', '1', '--repeats', '2', '--json', '--save', saved)
    expect(result.stderr).not.toMatch(/error/i)
    expect(result.code).toBe(0)
    const advice = JSON.parse(result.stdout)
    expect(JSON.parse(fs.readFileSync(saved, 'utf8'))).toEqual(advice)
    expect(advice.seed).toBe(4)
    expect(advice.prompts).toBe(2)

    // Every candidate predicted; ar, the best one (and llama-server's default where it is built) measured.
    expect(new Set(advice.candidates.map((c: { method: string }) => c.method))).toEqual(new Set(['ar', 'sd', 'pld', ...(advice.candidates.some((c: { method: string }) => c.method === 'llama-server:draft') ? ['llama-server:draft'] : [])]))
    for (const c of advice.candidates) {
      expect(Object.keys(c)).toEqual(expect.arrayContaining(['method', 'params', 'gamma', 'draft', 'predicted']))
      if (c.method !== 'llama-server:draft') expect(c.predicted.tokensPerSecond).toBeGreaterThan(0)
    }
    const measured = advice.candidates.filter((c: { measured?: unknown }) => c.measured)
    expect(measured.length).toBeGreaterThanOrEqual(2)
    // Candidates are listed fastest predicted first: ar is measured once, wherever its prediction ranks it.
    expect(measured.filter((c: { method: string }) => c.method === 'ar')).toHaveLength(1)
    for (const c of measured) {
      expect(isInterval(c.measured.tokensPerSecond)).toBe(true)
      expect(isInterval(c.measured.speedup)).toBe(true)
    }
    expect(advice.verification).toMatchObject({ repeats: 2 })

    const r = advice.recommendation
    expect(Object.keys(r)).toEqual(expect.arrayContaining(['method', 'params', 'gamma', 'draft', 'threads', 'speedup', 'tokensPerSecond', 'llamaServerCommand', 'reason']))
    expect(isInterval(r.speedup)).toBe(true)
    expect(r.speculate ? r.speedup.low > 1 : r.method === 'ar').toBe(true)
    expect(r.reason.length).toBeGreaterThan(20)
    expect(r.note).toMatch(/-md.*alone drafts nothing/)
    if (r.method === 'sd') expect(r.llamaServerCommand).toMatch(/--spec-type draft-simple --spec-draft-n-max \d+/)

    expect(advice.profile.targetMs.length).toBeGreaterThan(1)
    expect(advice.profile.drafts['stories260K-f32'].acceptance).toHaveLength(8)
    // What each decode paid outside its rounds and prompt, timed in the calibrating ar decode (never below 0).
    expect(typeof advice.profile.decodeOutsideMs).toBe('number')
    expect(advice.profile.decodeOutsideMs).toBeGreaterThanOrEqual(0)

    // The verification is a stored run: runs lists it, show reads its arms and the advice it came from.
    expect(typeof advice.runId).toBe('number')
    const runs = JSON.parse(speclab('runs', '--json').stdout)
    expect(runs.find((run: { id: number }) => run.id === advice.runId)).toMatchObject({ suite: 'advise', status: 'done' })
    const shown = JSON.parse(speclab('show', String(advice.runId), '--json').stdout)
    const labels = shown.config.advice.arms.map((a: { label: string }) => a.label)
    expect(shown.methods.map((m: { method: string }) => m.method)).toEqual(labels)
    expect(labels[0]).toBe('ar')
    expect(shown.config.repeats).toBe(2)
    expect(shown.config.advice.predictions.length).toBe(advice.candidates.filter((c: { method: string }) => c.method !== 'llama-server:draft').length)
    // show's text and the run's report carry the advice: the same recommendation, recomputed from the stored cells.
    const text = speclab('show', String(advice.runId)).stdout
    expect(text).toMatch(/advice \(predicted beside measured/)
    expect(text).toContain(advice.recommendation.speclabCommand)
    const markdown = speclab('show', String(advice.runId), '--format', 'md').stdout
    expect(markdown).toMatch(/Advice: predicted beside measured/)
    expect(markdown).toContain(`Recommendation: ${advice.recommendation.speculate ? advice.recommendation.speclabCommand : 'no speculation (ar)'}`)
  })

  it('a draft of another vocabulary: sd-tli / sd-uad candidates replayed and measured, never a recommendation slower than ar', () => {
    const other = 'tinystories-656k-f32'
    const result = speclab('advise', '--target', modelPath(TARGET), '--draft', modelPath(OTHER_VOCABULARY), ...SMALL, '--methods', 'sd-tli,sd-uad', '--verify', '1', '--repeats', '2', '--deploy', 'speclab', '--json')
    expect(result.stderr).not.toMatch(/error/i)
    expect(result.code).toBe(0)
    const advice = JSON.parse(result.stdout)
    const foreign = advice.candidates.filter((c: { draft: string | null }) => c.draft === other)
    // Only the cross-vocabulary methods draft with it, every one replayed exactly (greedy) and priced.
    expect(new Set(foreign.map((c: { method: string }) => c.method))).toEqual(new Set(['sd-tli', 'sd-uad']))
    expect(advice.mode).toBe('replayed')
    for (const c of foreign) {
      expect(c.error).toBeNull()
      expect(c.predicted.tokensPerSecond).toBeGreaterThan(0)
    }
    expect(advice.profile.drafts[other].acceptanceFrom).toBe('rounds')
    expect(advice.profile.drafts[other].acceptance[0]).toBeGreaterThanOrEqual(0)
    // The best measured beside ar in one interleaved run, with intervals.
    const measured = advice.candidates.filter((c: { measured?: unknown }) => c.measured)
    const measuredMethods = measured.map((c: { method: string }) => c.method)
    expect(measuredMethods).toHaveLength(2)
    expect(measuredMethods.filter((m: string) => m === 'ar')).toHaveLength(1)
    expect(measuredMethods.filter((m: string) => m === 'sd-tli' || m === 'sd-uad')).toHaveLength(1)
    for (const c of measured) expect(isInterval(c.measured.speedup)).toBe(true)
    // Never slower than ar: a recommended method's whole interval is above 1, else the advice is ar and says so.
    const r = advice.recommendation
    if (r.speculate) expect(r.speedup.low).toBeGreaterThan(1)
    else expect([r.method, r.reason]).toEqual(['ar', expect.stringMatching(/does not pay/)])
  }, 300_000) // eight live-draft replays and a verification run: ~30 s alone, minutes on a loaded 2-core machine

  it('with drafts of both vocabularies the grid gives each its methods (predict only)', () => {
    const result = speclab('advise', '--target', modelPath(TARGET), '--draft', `${modelPath(DRAFT)},${modelPath(OTHER_VOCABULARY)}`, ...SMALL, '--methods', 'sd,sd-tli,sd-uad', '--verify', '0', '--json')
    expect(result.code).toBe(0)
    const advice = JSON.parse(result.stdout)
    const methodsOf = (draft: string) => new Set(advice.candidates.filter((c: { draft: string | null }) => c.draft === draft).map((c: { method: string }) => c.method))
    expect(methodsOf('stories260K-f32')).toEqual(new Set(['sd']))
    expect(methodsOf('tinystories-656k-f32')).toEqual(new Set(['sd-tli', 'sd-uad']))
    expect(advice.candidates.every((c: { method: string; error: string | null }) => c.method === 'ar' || c.error === null)).toBe(true)
    expect(advice.profile.drafts['stories260K-f32'].acceptanceFrom).toBe('trace')
    expect(advice.runId).toBeNull()
  })

  it('--mid: the mid model is a draft candidate, and with the draft the hierarchy hier-chen, predicted and measured', () => {
    const result = speclab('advise', '--target', modelPath(TARGET), '--mid', modelPath(MID), '--draft', modelPath(DRAFT), ...SMALL, '--methods', 'sd,hier-chen', '--verify', '2', '--repeats', '2', '--json')
    expect(result.code, result.stderr).toBe(0)
    const advice = JSON.parse(result.stdout)
    const hierarchies = advice.candidates.filter((c: { method: string }) => c.method === 'hier-chen')
    expect(hierarchies.length).toBeGreaterThan(0)
    for (const c of hierarchies) {
      expect(c).toMatchObject({ draft: 'stories260K-f32', mid: 'stories-mid1M-f32', error: null })
      expect(c.params['chen.residual']).toBe(true) // lossless only
      expect(c.predicted.tokensPerSecond).toBeGreaterThan(0)
    }
    // The mid model drafts alone too (sd with it), and the other candidates name no mid model.
    expect(advice.candidates.some((c: { method: string; draft: string | null }) => c.method === 'sd' && c.draft === 'stories-mid1M-f32')).toBe(true)
    expect(advice.candidates.filter((c: { method: string }) => c.method !== 'hier-chen').every((c: { mid: string | null }) => c.mid === null)).toBe(true)
    expect(Object.keys(advice.profile.drafts).sort()).toEqual(['stories-mid1M-f32', 'stories260K-f32'])
    // The best hierarchy is measured beside ar when it is among the best predicted; forced here with --methods.
    const only = speclab('advise', '--target', modelPath(TARGET), '--mid', modelPath(MID), '--draft', modelPath(DRAFT), ...SMALL, '--methods', 'hier-chen', '--verify', '1', '--repeats', '2', '--json')
    expect(only.code, only.stderr).toBe(0)
    const measured = JSON.parse(only.stdout)
    const arm = measured.candidates.find((c: { method: string; measured?: unknown }) => c.method === 'hier-chen' && c.measured)
    expect(arm.label).toMatch(/^hier-chen .*← stories260K-f32 ← stories-mid1M-f32$/)
    expect(isInterval(arm.measured.tokensPerSecond)).toBe(true)
    const r = measured.recommendation
    if (r.method === 'hier-chen') {
      expect(r).toMatchObject({ mid: 'stories-mid1M-f32', midFile: path.resolve(modelPath(MID)), llamaServerCommand: null, lmStudio: null })
      expect(r.speclabCommand).toContain(`--mid ${modelPath(MID)}`)
      expect(r.llamaServerNote).toMatch(/no hierarchy/)
    } else expect(r).toMatchObject({ method: 'ar', mid: null })
    const shown = speclab('show', String(measured.runId))
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain('stories260K-f32 → stories-mid1M-f32')
  })

  it('bad input is one line and exit 2: no target, a mid model, a draft of another vocabulary without sd-tli / sd-uad, an empty workload, a budget too small', () => {
    const oneLine = (r: { code: number | null; stderr: string }) => {
      expect(r.code).toBe(2)
      expect(r.stderr.trim().split('\n').filter((line) => line.startsWith('speclab:'))).toHaveLength(1)
      return r.stderr
    }
    expect(oneLine(speclab('advise', '--draft', modelPath(DRAFT)))).toMatch(/--target/)
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--mid', modelPath(MID)))).toMatch(/--mid needs a --draft/)
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--mid', modelPath(DRAFT), '--draft', modelPath(DRAFT)))).toMatch(/is also a --draft/)
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--mid', modelPath(OTHER_VOCABULARY), '--draft', modelPath(DRAFT), ...SMALL))).toMatch(/--mid must share the target's vocabulary/)
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), '--methods', 'beam'))).toMatch(/--methods beam/)
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--draft', `${modelPath(DRAFT)},${modelPath(OTHER_VOCABULARY)}`, ...SMALL, '--methods', 'sd'))).toMatch(/tinystories-656k-f32 has another vocabulary.*sd-tli and sd-uad.*--methods sd leaves neither/)
    const empty = path.join(dir, 'empty.jsonl')
    fs.writeFileSync(empty, '')
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), '--prompts', empty))).toMatch(/empty/)
    expect(oneLine(speclab('advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), ...SMALL, '--methods', 'sd', '--budget', '0.001'))).toMatch(/--budget 0.001 s is too small/)
  })
})
