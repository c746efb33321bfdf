/**
 * The app's plumbing without models: the contract's schemas and envelopes, the RPC client and server halves,
 * the Electron menu template, method parameter discovery, incremental detokenisation, the app store (conversations,
 * model library, filtered run list), entropy histograms and CSV export, and the browser server's HTTP guards.
 */
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ApiRequests, PRIVILEGED_CHANNELS } from '../../electron/api/contract'
import { HostEvent } from '../../electron/api/events'
import { isModelUri } from '../../electron/api/models'
import { RunConfig } from '../../electron/api/runs'
import type { ResponseMessage } from '../../electron/api/transport'
import { RpcClient } from '../../electron/api/rpc-client'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { SUITES } from '../../electron/experiments/suites'
import { cutAtStopString } from '../../electron/host/chat'
import { IncrementalText } from '../../electron/host/incremental-text'
import { serveRequests } from '../../electron/host/rpc-server'
import { entropyHistogram, runCsv } from '../../electron/host/runs-browser'
import { startBrowserServer } from '../../electron/host/server'
import { buildMenuTemplate, type MenuActions } from '../../electron/main/menu'
import { AppStore } from '../../electron/store/app-store'
import { RunStore } from '../../electron/store/run-store'

const step = (overrides: Partial<StepRecord> = {}): StepRecord => ({
  index: 0,
  stage: 'sd',
  proposed: 3,
  accepted: 1,
  resampled: true,
  bonus: false,
  emitted: 2,
  draftTokens: 3,
  acceptedDraftTokens: 1,
  draftEntropies: [0.5, 2.5, 1.0],
  threshold: null,
  decision: null,
  targetCalls: 1,
  draftCalls: 3,
  draftMs: 1,
  verifyMs: 2,
  totalMs: 3.5,
  ...overrides
})

const config = (overrides: Partial<RunConfig> = {}) =>
  RunConfig.parse({
    suite: null,
    methods: ['ar', 'sd'],
    models: { target: '/m/stories-target.gguf', draft: '/m/tiny-draft.gguf' },
    prompts: { dataset: 'stories', limit: 2 },
    maxTokens: 32,
    sampling: { temperature: 0, topK: 64, topP: 1, fullVocabulary: false },
    seed: 1,
    gamma: 4,
    params: {},
    threads: 1,
    contextSize: 512,
    ...overrides
  })

describe('contract', () => {
  it('accepts hf: URIs and https .gguf URLs only', () => {
    expect(isModelUri('hf:bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M')).toBe(true)
    expect(isModelUri('hf:user/repo/sub/model-Q8_0.gguf')).toBe(true)
    expect(isModelUri('hf:user/repo')).toBe(true)
    expect(isModelUri('https://example.com/models/m.gguf')).toBe(true)
    expect(isModelUri('http://127.0.0.1:8080/m.gguf')).toBe(true)
    expect(isModelUri('http://example.com/m.gguf')).toBe(false)
    expect(isModelUri('file:///etc/passwd')).toBe(false)
    expect(isModelUri('https://example.com/script.sh')).toBe(false)
    expect(isModelUri('hf:../../etc')).toBe(false)
  })

  it('validates request payloads strictly (types, ranges, .gguf model paths)', () => {
    expect(ApiRequests['models:add'].safeParse({ path: '/x/model.gguf' }).success).toBe(true)
    expect(ApiRequests['models:add'].safeParse({ path: '/etc/passwd' }).success).toBe(false)
    expect(ApiRequests['models:add'].safeParse({ path: 7 }).success).toBe(false)
    expect(ApiRequests['chat:send'].safeParse({ conversationId: null, text: '   ', settings: {}, format: 'auto', systemPrompt: '' }).success).toBe(false)
    expect(ApiRequests['runs:diff'].safeParse({ a: 1, b: -2 }).success).toBe(false)
    expect(
      ApiRequests['workbench:start'].safeParse({
        suite: null,
        methods: ['sd', 'not-a-method'],
        dataset: { kind: 'builtin', id: 'stories' },
        limit: null,
        models: { target: 1, mid: null, draft: 2 },
        load: { contextSize: 512, gpuLayers: 'auto', threads: null, batchThreads: null, fullVocabulary: false },
        settings: { maxTokens: 8, temperature: 0, topK: 64, topP: 1, gamma: 4, seed: null, params: {} }
      }).success
    ).toBe(false)
    expect(PRIVILEGED_CHANNELS.has('app:open-database')).toBe(true)
  })

  it('validates pushed events', () => {
    expect(HostEvent.safeParse({ type: 'runs:changed' }).success).toBe(true)
    expect(HostEvent.safeParse({ type: 'chat:tokens', generationId: 'g', conversationId: 1, tokens: [{ text: 'a', provenance: 'alien' }], stats: {} }).success).toBe(false)
    expect(HostEvent.safeParse({ type: 'ui:command', command: { kind: 'navigate', view: 'runs' } }).success).toBe(true)
    expect(HostEvent.safeParse({ type: 'ui:command', command: { kind: 'navigate', view: 'settings' } }).success).toBe(false)
  })
})

describe('rpc', () => {
  it('client matches responses to calls, dispatches valid events and drops malformed messages', async () => {
    const reported = vi.spyOn(console, 'error').mockImplementation(() => {})
    const sent: unknown[] = []
    const client = new RpcClient((message) => sent.push(message))
    const events: HostEvent[] = []
    client.onEvent((event) => events.push(event))
    const first = client.call('runs:list', {})
    const second = client.call('runs:show', { runId: 1 })
    expect(sent).toEqual([
      { kind: 'request', id: 1, channel: 'runs:list', payload: {} },
      { kind: 'request', id: 2, channel: 'runs:show', payload: { runId: 1 } }
    ])
    client.receive({ kind: 'response', id: 2, ok: false, error: 'no such run' })
    client.receive({ kind: 'response', id: 'x', ok: true })
    client.receive({ kind: 'event', event: { type: 'nope' } })
    client.receive({ kind: 'event', event: { type: 'models:changed' } })
    client.receive({ kind: 'response', id: 1, ok: true, result: [] })
    await expect(first).resolves.toEqual([])
    await expect(second).rejects.toThrow('no such run')
    expect(events).toEqual([{ type: 'models:changed' }])
    const third = client.call('runs:list', {})
    client.failAll('gone')
    await expect(third).rejects.toThrow('gone')
    expect(reported).toHaveBeenCalledTimes(2)
    reported.mockRestore()
  })

  it('server refuses privileged channels to untrusted peers and answers malformed requests', async () => {
    const calls: string[] = []
    const replies: ResponseMessage[] = []
    const host = { request: async (channel: string) => (calls.push(channel), 'ok') }
    const untrusted = serveRequests(host, (m) => replies.push(m), { trusted: false })
    const trusted = serveRequests(host, (m) => replies.push(m), { trusted: true })
    untrusted({ kind: 'request', id: 1, channel: 'app:open-database', payload: { path: '/x.sqlite' } })
    trusted({ kind: 'request', id: 2, channel: 'app:open-database', payload: { path: '/x.sqlite' } })
    untrusted({ kind: 'request', id: 3 })
    untrusted('garbage')
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(calls).toEqual(['app:open-database'])
    expect(replies).toContainEqual({ kind: 'response', id: 1, ok: false, error: 'app:open-database is not available here' })
    expect(replies).toContainEqual({ kind: 'response', id: 2, ok: true, result: 'ok' })
    expect(replies).toContainEqual({ kind: 'response', id: 3, ok: false, error: 'malformed request' })
  })
})

describe('application menu', () => {
  const actions: MenuActions = {
    addModel: () => {},
    openDatabase: () => {},
    navigate: () => {},
    startSuite: () => {},
    about: () => {},
    openDocs: () => {}
  }
  const submenu = (template: ReturnType<typeof buildMenuTemplate>, label: string) =>
    (template.find((item) => item.label === label || item.role === label)?.submenu ?? []) as { label?: string; type?: string }[]

  it('lists File, Experiments, View and Help; Experiments shows only the Workbench while no suite exists', () => {
    const template = buildMenuTemplate({ suites: [], isMac: false, isDev: false }, actions)
    expect(submenu(template, 'File').map((i) => i.label).filter(Boolean)).toEqual(['Add Model…', 'Open Database…'])
    expect(submenu(template, 'Experiments')).toEqual([expect.objectContaining({ label: 'Workbench' })])
    expect(submenu(template, 'View').map((i) => i.label).filter(Boolean)).toEqual(['Chat', 'Workbench', 'Runs', 'Models', 'Advisor']) // Advisor last: the older shortcuts (Ctrl+1…4) keep their screens
    expect(submenu(template, 'help').map((i) => i.label)).toEqual(['About SpecLab', 'Documentation'])
  })

  it('lists every registered suite by name, each starting that suite', () => {
    const started: string[] = []
    const suites = [
      { id: 'smoke', name: 'Smoke test' },
      { id: 'svip', name: 'SVIP' }
    ]
    const template = buildMenuTemplate({ suites, isMac: true, isDev: true }, { ...actions, startSuite: (id) => started.push(id) })
    const items = submenu(template, 'Experiments') as { label?: string; click?: () => void }[]
    expect(items.map((i) => i.label).filter(Boolean)).toEqual(['Workbench', 'Smoke test', 'SVIP'])
    items.find((i) => i.label === 'SVIP')!.click!()
    expect(started).toEqual(['svip'])
    expect(template[0]).toEqual({ role: 'appMenu' })
    // The registry the app reads: every entry has an id, a name and a preset of available methods.
    for (const suite of SUITES) expect(suite.preset.methods.length).toBeGreaterThan(0)
  })
})

describe('IncrementalText', () => {
  it('gives each token the growth of the whole text and holds back incomplete characters', () => {
    const pieces: Record<number, string> = { 1: 'He', 2: 'llo', 3: '\uFFFD', 4: 'é', 5: ' world' }
    // Token 3 alone is half a character; with token 4 the pair is "é".
    const detokenize = (tokens: readonly number[]) =>
      tokens.map((t, i) => (t === 3 && tokens[i + 1] === 4 ? '' : pieces[t])).join('')
    const text = new IncrementalText(detokenize)
    expect([1, 2, 3, 4, 5].map((t) => text.push(t))).toEqual(['He', 'llo', '', 'é', ' world'])
    expect(text.value).toBe('Helloé world')
  })
})

describe('chat stop strings', () => {
  const segments = [
    { text: 'Hello wor', provenance: 'draft' as const },
    { text: 'ld<|im', provenance: 'target' as const },
    { text: '_end|> more', provenance: 'bonus' as const }
  ]

  it("cuts the text at the template's stop string, across token pieces, keeping each piece's provenance", () => {
    expect(cutAtStopString(segments, ['<|im_end|>'])).toEqual([
      { text: 'Hello wor', provenance: 'draft' },
      { text: 'ld', provenance: 'target' }
    ])
  })

  it('cuts at the earliest of several stop strings, and says null when none occurs', () => {
    expect(cutAtStopString(segments, [' more', 'world'])).toEqual([{ text: 'Hello ', provenance: 'draft' }])
    expect(cutAtStopString(segments, ['</s>'])).toBeNull()
  })
})

describe('app store', () => {
  let dir: string
  let runs: RunStore
  let app: AppStore
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-app-store-'))
    runs = RunStore.open(path.join(dir, 'db.sqlite'))
    app = new AppStore(runs.database)
  })
  afterEach(() => {
    runs.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('keeps conversations with their messages, newest first, and deletes them with their messages', () => {
    const a = app.createConversation('  Tell me\n a story about a very long day in the park with a dog and a ball and a kite  ')
    const asked = app.addUserMessage(a, 'Tell me a story')
    const stats = { tokens: 2, elapsedMs: 10, tokensPerSecond: 200, acceptanceRate: 0.5, sigma: 0.5, eta: 0.5, meanAcceptedLength: 1, targetCalls: 1, gammas: [2] }
    const settings = { method: 'sd' as const, maxTokens: 8, temperature: 0, topK: 64, topP: 1, gamma: 2, seed: 3, params: {} }
    const reply = app.addAssistantMessage(a, {
      text: 'Once upon',
      segments: [
        { text: 'Once', provenance: 'draft' },
        { text: ' upon', provenance: 'bonus' }
      ],
      settings,
      stats,
      stopReason: 'max-tokens',
      format: 'completion',
      models: { target: '/t.gguf', mid: null, draft: '/d.gguf' },
      promptTokens: [1, 42, 7]
    }, asked.id)
    expect(reply).toMatchObject({ role: 'assistant', settings, stats, format: 'completion', stopReason: 'max-tokens', models: { target: '/t.gguf', mid: null, draft: '/d.gguf' }, baseline: null })
    // The prompt is kept for a later baseline, and the baseline is stored on the reply.
    expect(app.promptTokensOf(reply.id)).toEqual([1, 42, 7])
    const interval = (median: number) => ({ median, low: median - 1, high: median + 1, cells: 3, prompts: 1, repeats: 3 })
    const baseline = { repeats: 3, arTokensPerSecond: interval(50), methodTokensPerSecond: interval(60), speedup: interval(1.2), measuredAt: '2026-11-23T20:00:00.000Z' }
    expect(app.setBaseline(reply.id, baseline).baseline).toEqual(baseline)
    expect(app.getMessages(a)[1].baseline).toEqual(baseline)
    const b = app.createConversation('second')
    expect(app.listConversations().map((c) => c.id)).toEqual([b, a])
    expect(app.getConversation(a)!.title).toBe('Tell me a story about a very long day in the park with a dog')
    expect(app.getMessages(a).map((m) => m.role)).toEqual(['user', 'assistant'])
    expect(app.getMessages(a)[1].segments).toEqual(reply.segments)
    expect(app.deleteConversation(a)).toBe(true)
    expect(runs.database.prepare('SELECT COUNT(*) AS n FROM messages').get()).toEqual({ n: 0 })
  })

  it('keeps the model library unique by path', () => {
    const first = app.addModel('/m/a.gguf', 'file', null)
    expect(app.addModel('/m/a.gguf', 'file', null).id).toBe(first.id)
    expect(app.addModel('/m/a.gguf', 'download', 'hf:u/r:Q8_0')).toMatchObject({ id: first.id, source: 'download', uri: 'hf:u/r:Q8_0' })
    app.addModel('/m/b.gguf', 'file', null)
    expect(app.listModels().map((m) => m.path)).toEqual(['/m/a.gguf', '/m/b.gguf'])
    expect(app.removeModel(first.id)).toBe(true)
    expect(app.listModels().map((m) => m.path)).toEqual(['/m/b.gguf'])
  })

  it('filters runs by status, suite, method, model, date and free text', () => {
    const r1 = runs.createRun(config())
    runs.finishRun(r1, 'done')
    const r2 = runs.createRun(config({ suite: 'smoke', methods: ['ar', 'svip'], models: { target: '/m/Qwen-7B.gguf' }, prompts: { file: '/data/gsm8k.jsonl' } }))
    runs.finishRun(r2, 'cancelled')
    const ids = (filter: Parameters<AppStore['searchRuns']>[0]) => app.searchRuns(filter).map((r) => r.id)
    expect(ids({})).toEqual([r2, r1])
    expect(ids({ status: 'cancelled' })).toEqual([r2])
    expect(ids({ suite: 'smoke' })).toEqual([r2])
    expect(ids({ method: 'sd' })).toEqual([r1])
    expect(ids({ method: 's' })).toEqual([])
    expect(ids({ model: 'qwen' })).toEqual([r2])
    expect(ids({ model: 'tiny-draft' })).toEqual([r1])
    expect(ids({ search: 'gsm8k' })).toEqual([r2])
    expect(ids({ search: `#${r1}` })).toEqual([r1])
    const today = new Date().toISOString().slice(0, 10)
    expect(ids({ from: today, to: today })).toEqual([r2, r1])
    expect(ids({ to: '2000-01-01' })).toEqual([])
    expect(app.searchRuns({})[0]).toMatchObject({ dataset: '/data/gsm8k.jsonl', models: { target: '/m/Qwen-7B.gguf', mid: null, draft: null }, gamma: 4 })
  })

  it('exports a run as CSV with quoting and formula-safe text', () => {
    const runId = runs.createRun(config())
    const result = runs.startPromptResult({ runId, method: 'sd', promptIndex: 0, promptId: null, category: null, promptText: '=cmd("x")', seedStream: 0 })
    runs.addStep(result, step())
    runs.finishPromptResult(result, { status: 'done', outputText: 'Hello, "world"\nbye', outputTokens: [5, 6], provenance: 'dr', stopReason: 'max-tokens', wallMs: 1404.0636299999896 })
    runs.finishRun(runId, 'done')
    const lines = runCsv(runs, runId).trimEnd().split('\r\n')
    expect(lines[0].split(',')).toContain('acceptance_rate')
    // Numbers to six significant digits, not 1404.0636299999896.
    expect(lines[1]).toContain(`${runId},sd,0,,,done,max-tokens,2,1404.06,1.42444,1,3,1,`)
    expect(lines[1]).toContain(`'=cmd(""x"")"`)
    expect(lines[1]).toContain('"Hello, ""world""\nbye"')
  })
})

describe('entropy histogram', () => {
  it('counts accepted drafts and the first rejected one by entropy, skipping misaligned rounds', () => {
    const h = entropyHistogram('sd', [
      step({ proposed: 3, accepted: 1, draftEntropies: [0.5, 2.5, 1.0] }),
      step({ proposed: 2, accepted: 2, draftEntropies: [1.0, 0.25] }),
      step({ proposed: 2, accepted: 1, draftEntropies: [9] }),
      step({ proposed: 0, accepted: 0, draftEntropies: [] })
    ])
    expect(h.bins).toHaveLength(21)
    expect(h.bins.at(-1)).toBeCloseTo(2.5)
    expect(h.accepted.reduce((a, b) => a + b)).toBe(3)
    expect(h.rejected.reduce((a, b) => a + b)).toBe(1)
    expect(h.rejected[19]).toBe(1) // 2.5 nats, the top bin
  })
})

describe('browser server', () => {
  let dir: string
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-server-'))
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>x</title>')
    fs.writeFileSync(path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`), 'secret')
  })
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true })
    fs.rmSync(path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`), { force: true })
  })

  function get(port: number, target: string, host = `127.0.0.1:${port}`) {
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, path: target, headers: { Host: host } }, (response) => {
        let body = ''
        response.on('data', (chunk: Buffer) => (body += chunk.toString()))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }))
      })
      request.once('error', reject)
      request.end()
    })
  }

  it('serves the renderer with a strict CSP on 127.0.0.1 only, never files outside it', async () => {
    const server = await startBrowserServer({ host: { request: async () => null }, subscribe: () => () => {}, rendererDirectory: dir, port: 0, token: 't0ken' })
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=t0ken`)
      const index = await get(server.port, '/?token=t0ken')
      expect(index.status).toBe(200)
      expect(index.headers['content-security-policy']).toContain(`connect-src 'self' ws://127.0.0.1:${server.port}`)
      expect(index.headers['content-security-policy']).toContain("script-src 'self'")
      expect(index.headers['x-content-type-options']).toBe('nosniff')
      expect((await get(server.port, `/../${path.basename(dir)}-secret.txt`)).body).not.toContain('secret')
      expect((await get(server.port, `/%2e%2e/${path.basename(dir)}-secret.txt`)).body).not.toContain('secret')
      expect((await get(server.port, `/..%2f${path.basename(dir)}-secret.txt`)).status).toBe(403)
      expect((await get(server.port, '/missing.js')).status).toBe(404)
      expect((await get(server.port, '/', 'attacker.example')).status).toBe(421)
      expect((await get(server.port, '/', `localhost:${server.port}`)).status).toBe(200)
    } finally {
      await server.close()
    }
  })
})
