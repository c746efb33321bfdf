/**
 * `speclab advise` end to end on the shared models (target5M-q8_0 ← 260K, greedy, 2 prompts × 32 tokens): the JSON
 * advice ranks ar and the chosen methods with predictions, measures the best one and ar by real runs, and bad input
 * is one line with exit code 2.
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
const withModels = describeWithModels('test/integration/advise-cli.test.ts', [TARGET, DRAFT])
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')

let dir: string

function speclab(...args: string[]) {
  const env = { ...process.env, SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'calibration.json') }
  const result = spawnSync(tsx, [cli, ...args, '--db', path.join(dir, 'db.sqlite')], { cwd: root, encoding: 'utf8', env })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

withModels('speclab advise', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-advise-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('--json: ar and the grid of the chosen methods ranked, the best measured', () => {
    const result = speclab(
      'advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), '--limit', '2', '--max-tokens', '32', '--seed', '4',
      '--temperature', '0', '--threads', '1', '--context-size', '512', '--methods', 'sd,pld', '--verify', '1', '--json'
    )
    expect(result.stderr).not.toMatch(/error/i)
    expect(result.code).toBe(0)
    const advice = JSON.parse(result.stdout)
    expect(advice.seed).toBe(4)
    expect(advice.prompts).toBe(2)
    const methods = advice.verdicts.map((v: { candidate: { method: string } }) => v.candidate.method)
    expect(new Set(methods)).toEqual(new Set(['ar', 'sd', 'pld']))
    expect(methods.filter((m: string) => m === 'sd')).toHaveLength(8)
    for (const v of advice.verdicts) {
      expect(v.error).toBeNull()
      expect(v.mode).toBe('replayed')
      expect(v.prediction.tokensPerSecond).toBeGreaterThan(0)
    }
    expect(advice.verdicts.find((v: { candidate: { method: string } }) => v.candidate.method === 'ar').prediction.speedup).toBeCloseTo(1, 9)
    expect(advice.measured.map((m: { candidate: { method: string } }) => m.candidate.method)[0]).toBe('ar')
    expect(advice.measured).toHaveLength(2)
    expect(advice.costs.targetMs).toHaveLength(16)
  })

  it('refuses a mid model and an empty method filter with one line, exit 2', () => {
    const mid = speclab('advise', '--target', modelPath(TARGET), '--mid', modelPath(DRAFT), '--draft', modelPath(DRAFT))
    expect(mid.code).toBe(2)
    expect(mid.stderr.trim()).toBe('speclab: advise replays two-model methods: leave out --mid')
    const none = speclab('advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), '--methods', 'beam')
    expect(none.code).toBe(2)
    expect(none.stderr.trim().split('\n')).toHaveLength(1)
  })
})
