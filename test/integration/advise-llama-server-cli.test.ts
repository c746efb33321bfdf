/**
 * `speclab advise` with llama-server built (target5M-q8_0 ← 260K, greedy, 2 prompts × 32 tokens): the llama-server
 * arms are priced with llama-server's own costs, measured before the verification, and the advice says so in
 * `--json` (pricedWith, llamaServerCosts) and in the stored run (`show`); a second advice reads the costs from the
 * cache. A llama-server that cannot start for the cost measurement (a wrapper that refuses every server without
 * `--spec-type`, i.e. the measuring ones) does not fail the advice: the arms keep SpecLab's prices and one line says why.
 *
 * Needs the llama-server binary; skipped with a banner without it, failing under SPECLAB_REQUIRE_LLAMA_SERVER=1.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import { modelPath } from '../helpers/gguf'
import { describeWithLlamaServer } from '../helpers/llama-server'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const TARGET = 'family/stories-target5M-q8_0.gguf'
const DRAFT = 'stories260K-f32.gguf'
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')
const SMALL = ['--limit', '2', '--max-tokens', '32', '--seed', '4', '--temperature', '0', '--threads', '1', '--context-size', '512']

let dir: string

function speclab(args: string[], env: Record<string, string> = {}) {
  const environment = { ...process.env, SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'calibration.json'), SPECLAB_SERVER_COST_CACHE: path.join(dir, 'server-costs.json'), ...env }
  const result = spawnSync(tsx, [cli, ...args, '--db', path.join(dir, 'db.sqlite')], { cwd: root, encoding: 'utf8', env: environment })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

interface Row {
  method: string
  predicted: { tokensPerSecond: number } | null
  pricedWith: string | null
}

const advise = (env: Record<string, string> = {}) => speclab(['advise', '--target', modelPath(TARGET), '--draft', modelPath(DRAFT), ...SMALL, '--methods', 'sd', '--verify', '1', '--repeats', '1', '--json'], env)

describeWithLlamaServer('test/integration/advise-llama-server-cli.test.ts', [TARGET, DRAFT])('speclab advise: llama-server arms priced with llama-server costs', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-advise-server-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it("--json and the stored run say which curve priced each prediction; a second advice reads llama-server's costs from the cache", () => {
    const result = advise()
    expect(result.code).toBe(0)
    const advice = JSON.parse(result.stdout)
    const server = advice.candidates.filter((c: Row) => c.method.startsWith('llama-server:'))
    expect(server.length).toBeGreaterThan(0)
    for (const c of server) expect(c.pricedWith).toBe('llama-server')
    for (const c of advice.candidates.filter((c: Row) => !c.method.startsWith('llama-server:') && c.predicted)) expect(c.pricedWith).toBe('speclab')
    expect(advice.llamaServerNote).toBeNull()
    expect(advice.llamaServerCosts).toHaveLength(1)
    expect(advice.llamaServerCosts[0].source).toBe('measured')
    expect(advice.llamaServerCosts[0].targetMs.every((ms: number) => ms > 0)).toBe(true)
    // Greedy: one real request of the draft arm scaled the draft's costs (advise-server-pricing.ts serverCalibration).
    const scale = advice.llamaServerCosts[0].roundScale?.[path.basename(modelPath(DRAFT), '.gguf')]
    expect(scale, JSON.stringify(advice.llamaServerCosts[0])).toBeGreaterThan(0.2)
    expect(scale).toBeLessThan(5)

    const shown = JSON.parse(speclab(['show', String(advice.runId), '--json']).stdout)
    expect(shown.config.advice.arms.filter((a: { method: string }) => a.method.startsWith('llama-server:')).map((a: { pricedWith: string }) => a.pricedWith)).toEqual(server.map(() => 'llama-server'))
    expect(shown.config.advice.llamaServerCosts).toEqual(advice.llamaServerCosts)
    // Measured at the threads the llama-server arms run with.
    for (const arm of shown.config.advice.arms.filter((a: { method: string }) => a.method.startsWith('llama-server:'))) expect(arm.threads).toEqual(advice.llamaServerCosts[0].threads)
    expect(speclab(['show', String(advice.runId)]).stdout).toMatch(/llama-server:\* rows: predicted with llama-server's own costs/)

    const again = JSON.parse(advise().stdout)
    expect(again.llamaServerCosts.map((c: { source: string }) => c.source)).toEqual(['cached'])
    expect(again.llamaServerCosts[0].targetMs).toEqual(advice.llamaServerCosts[0].targetMs)
  }, 600_000)

  it("a llama-server that cannot start for the cost measurement: SpecLab's prices and one line, the advice goes on", () => {
    const wrapper = path.join(dir, 'llama-server-only-speculative.sh')
    fs.writeFileSync(wrapper, `#!/bin/sh\ncase " $* " in *" --spec-type "*) exec '${findLlamaServer().path}' "$@" ;; esac\necho "error: refusing to start without --spec-type" >&2\nexit 1\n`, { mode: 0o755 })
    const result = advise({ SPECLAB_LLAMA_SERVER: wrapper, SPECLAB_SERVER_COST_CACHE: path.join(dir, 'other-costs.json') })
    expect(result.code).toBe(0)
    const advice = JSON.parse(result.stdout)
    expect(advice.llamaServerNote).toMatch(/^llama-server's own costs could not be measured \(llama-server exited .*\): its arms are priced with SpecLab's cost curve$/)
    expect(advice.llamaServerCosts).toEqual([])
    const server = advice.candidates.filter((c: Row) => c.method.startsWith('llama-server:'))
    expect(server.length).toBeGreaterThan(0)
    for (const c of server) expect(c.pricedWith).toBe('speclab')
  }, 600_000)
})
