/**
 * llama-server's own cost table on the real GGUF family (experiments/llama-server-costs.ts, measured through the
 * server's timings by engine/peers/llama-server-cost-table.ts): positive, more for more positions, a second request
 * read from the cache without starting a server, and a server that cannot start rejected with its own line (the
 * advice then keeps SpecLab's pricing: test/unit/advise-server-pricing.test.ts).
 *
 * Needs the llama-server binary; skipped with a banner without it, failing under SPECLAB_REQUIRE_LLAMA_SERVER=1.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import { stopLocalServers } from '../../electron/engine/peers/llama-server-process'
import { llamaServerCosts, type ServerCostRequest } from '../../electron/experiments/llama-server-costs'
import { GREEDY_64, modelPath } from '../helpers/gguf'
import { describeWithLlamaServer } from '../helpers/llama-server'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const PROMPT = 'Once upon a time, there was a little dog named Max.'
const STORY =
  ' Max liked to run in the park with his friend Lily. One day they found a big red ball under a tree. Max barked and Lily laughed. They played until the sun went down, and then they walked home together, tired and happy.'

describeWithLlamaServer('test/integration/llama-server-costs-gguf.test.ts', [TARGET, DRAFT])("llama-server's cost table (target5M ← 260K)", () => {
  let target: LlamaCppModel
  let request: ServerCostRequest
  let cacheDir: string

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512 })
    const prompt = target.tokenize(PROMPT)
    const sequence = [...prompt, ...target.tokenize(STORY).slice(1)]
    cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-server-costs-'))
    request = {
      binary: findLlamaServer().path!,
      target: { file: modelPath(TARGET), fingerprint: 'target5M' },
      drafts: { d: { file: modelPath(DRAFT), fingerprint: 'stories260K' } },
      threads: { threads: 1, batchThreads: 1, draftThreads: 1 },
      contextSize: 512,
      measurement: { sequence, promptLength: prompt.length, warp: GREEDY_64, maxPositions: 16, points: 2, repeats: 2 },
      prompts: [prompt],
      cacheFile: path.join(cacheDir, 'costs.json')
    }
  }, 120_000)

  afterAll(async () => {
    stopLocalServers()
    await target?.dispose()
    if (cacheDir) fs.rmSync(cacheDir, { recursive: true, force: true })
  })

  it('measures positive costs that grow with k, then reads them from the cache', async () => {
    const first = await llamaServerCosts(request)
    expect(first.source).toBe('measured')
    const { targetMs, drafts, prefillMs } = first.costs
    console.log(`llama-server c_T(k) ms: ${targetMs.map((ms) => ms.toFixed(3)).join(' ')}; c_D ${drafts.d.ms.toFixed(3)} ms; prompts ${prefillMs!.target.toFixed(2)} ms (draft ${prefillMs!.drafts.d.toFixed(2)})`)
    expect(targetMs).toHaveLength(16)
    expect(targetMs.every((ms) => ms > 0)).toBe(true)
    for (let k = 1; k < targetMs.length; k++) expect(targetMs[k]).toBeGreaterThanOrEqual(targetMs[k - 1])
    expect(targetMs[15]).toBeGreaterThan(targetMs[0])
    expect(drafts.d.ms).toBeGreaterThan(0)
    // The 260K draft is ~20× smaller than the 5M target: its decode step is cheaper.
    expect(drafts.d.ms).toBeLessThan(targetMs[0])
    expect(prefillMs!.target).toBeGreaterThan(0)
    expect(prefillMs!.drafts.d).toBeGreaterThan(0)

    const started = performance.now()
    const second = await llamaServerCosts(request)
    expect(second).toEqual({ costs: first.costs, source: 'cached' })
    expect(performance.now() - started).toBeLessThan(1000)
    const entries = Object.keys(JSON.parse(fs.readFileSync(request.cacheFile!, 'utf8')).entries)
    expect(entries).toHaveLength(1)
  }, 300_000)

  it('a server that cannot start rejects with its own line, and nothing is cached', async () => {
    const notAModel = path.join(cacheDir, 'not-a-model.gguf')
    fs.writeFileSync(notAModel, 'this is not a GGUF file')
    const broken = { ...request, target: { file: notAModel, fingerprint: 'broken' }, cacheFile: path.join(cacheDir, 'broken.json') }
    await expect(llamaServerCosts(broken)).rejects.toThrow(/llama-server exited/)
    expect(fs.existsSync(broken.cacheFile)).toBe(false)
  }, 120_000)
})
