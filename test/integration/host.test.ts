/**
 * The engine host in-process on the shared models, through its validated request entry point (what Electron's
 * utility process and the browser server call): model library checks, the trio check, load with progress, chat
 * (streamed provenance, greedy sd = greedy ar, stop, persistence), the job lock, workbench runs with progress,
 * the runs browser (search, details, steps, export, diff, perplexity, delete), prompt-file import, downloads with
 * node-llama-cpp's real downloader from a local HTTP server (progress, done, cancel), switching databases, a whole
 * suite run (progress, the job lock, cancel, resume, list, report), and the
 * utility-process entry over a message port.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChatMessage } from '../../electron/api/chat'
import type { ApiChannel, ApiRequest, ApiResponses } from '../../electron/api/contract'
import { HostEvent } from '../../electron/api/events'
import type { WorkbenchProgress } from '../../electron/api/workbench'
import { DEFAULT_SEQUENCES, prepare, prepareRun } from '../../electron/engine/methods/prepare'
import { EngineHost } from '../../electron/host/host'
import { runUtilityHost, type PortLike } from '../../electron/host/utility-entry'
import { CHATML_TEMPLATE } from '../helpers/chat-templates'
import { writeGgufWithStringKey } from '../helpers/gguf-metadata'
import { until } from '../helpers/until'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const models = process.env.SPECLAB_MODELS ?? path.resolve(root, '../shared/models')
const files = {
  target: path.join(models, 'family/stories-target5M-f32.gguf'),
  mid: path.join(models, 'family/stories-mid1M-f32.gguf'),
  draft: path.join(models, 'stories260K-f32.gguf'),
  foreign: path.join(models, 'tinystories-656k-q8_0.gguf')
}
const haveModels = Object.values(files).every((f) => fs.existsSync(f))
if (!haveModels) console.warn(`\n!!! engine host tests SKIPPED: no shared models at ${models} (set SPECLAB_MODELS) !!!\n`)

let dir: string
let host: EngineHost
const events: HostEvent[] = []
const ids = { target: 0, mid: 0, draft: 0, foreign: 0 }
const LOAD = { contextSize: 512, gpuLayers: 0, threads: 1, batchThreads: null, fullVocabulary: false } as const

const call = <C extends ApiChannel>(channel: C, payload: ApiRequest<C>) => host.request(channel, payload) as Promise<ApiResponses[C]>

const chatDone = (generationId: string) =>
  until(() => events.find((e): e is Extract<HostEvent, { type: 'chat:done' }> => e.type === 'chat:done' && e.generationId === generationId))

const finished = (jobId: string) =>
  until(() =>
    events.find(
      (e): e is Extract<HostEvent, { type: 'workbench:progress' }> =>
        e.type === 'workbench:progress' && e.progress.jobId === jobId && e.progress.phase === 'finished'
    )
  ).then((e) => e.progress)

const suiteFinished = (jobId: string) =>
  until(
    () =>
      events.find(
        (e): e is Extract<HostEvent, { type: 'suite:progress' }> =>
          e.type === 'suite:progress' && e.progress.jobId === jobId && e.progress.phase === 'finished'
      ),
    120_000
  ).then((e) => e.progress)

const settings = (overrides: Partial<ApiRequest<'chat:send'>['settings']> = {}): ApiRequest<'chat:send'>['settings'] => ({
  method: 'sd',
  maxTokens: 40,
  temperature: 0,
  topK: 64,
  topP: 1,
  gamma: 4,
  seed: 1,
  params: {},
  ...overrides
})

describe.skipIf(!haveModels)('engine host', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-host-'))
    process.env.SPECLAB_THREAD_CALIBRATION_CACHE = path.join(dir, 'thread-calibration.json') // not the user's
    host = EngineHost.open(
      { databasePath: path.join(dir, 'db.sqlite'), nativeBinding: null, downloadDirectory: path.join(dir, 'downloads'), version: 'test', mode: 'browser' },
      (event) => events.push(event)
    )
  })
  afterAll(async () => {
    await host?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('adds only existing GGUF files, with their header facts', async () => {
    const junk = path.join(dir, 'junk.gguf')
    fs.writeFileSync(junk, 'not a model at all')
    await expect(call('models:add', { path: path.join(dir, 'missing.gguf') })).rejects.toThrow(/model file not found/)
    await expect(call('models:add', { path: junk })).rejects.toThrow(/not a GGUF model file/)
    await expect(call('models:add', { path: dir + '/' })).rejects.toThrow(/Invalid request for models:add/)
    await expect(call('models:add', { path: '/etc/passwd' })).rejects.toThrow(/must end in \.gguf/)
    for (const role of ['target', 'mid', 'draft', 'foreign'] as const) ids[role] = (await call('models:add', { path: files[role] })).id
    const library = await call('models:list', {})
    expect(library.models.map((m) => m.fileName)).toEqual([
      'stories-target5M-f32.gguf',
      'stories-mid1M-f32.gguf',
      'stories260K-f32.gguf',
      'tinystories-656k-q8_0.gguf'
    ])
    expect(library.models[0]).toMatchObject({ architecture: 'llama', vocabularySize: 512, quantization: 'F32', contextLength: 512, hasChatTemplate: false, missing: false })
    expect(library.models[3]).toMatchObject({ vocabularySize: 2048, quantization: 'Q8_0' })
    const inspection = await call('models:inspect', { modelId: ids.target })
    expect(inspection).toMatchObject({ layers: 6, embeddingLength: 288, tokenizer: { model: 'llama', bos: 1, eos: 2, vocabularySize: 512 } })
    expect(events).toContainEqual({ type: 'models:changed' })
  })

  it('checks trio compatibility with one clear sentence', async () => {
    const ok = await call('models:check-trio', { target: ids.target, mid: ids.mid, draft: ids.draft })
    expect(ok.compatible).toBe(true)
    expect(ok.message).toMatch(/^Compatible: all three models share one vocabulary \(llama, 512 tokens/)
    expect(ok.memory).toBeNull() // no load settings given: no estimate

    // With the load about to be made: what it needs, per file (weights ≈ the file's tensors) and in all.
    const sized = await call('models:check-trio', { target: ids.target, mid: ids.mid, draft: ids.draft, settings: LOAD })
    const target = sized.memory!.files[0]
    expect(target.weightsBytes).toBeGreaterThan(0.9 * fs.statSync(files.target).size - 1024 * 1024)
    expect(target.weightsBytes).toBeLessThan(1.1 * fs.statSync(files.target).size)
    expect(target.contextBytes).toBeGreaterThan(0)
    expect(sized.memory!.totalBytes).toBe(sized.memory!.files.reduce((n, f) => n + f.weightsBytes + f.contextBytes, 0))
    // This machine's llama.cpp runs on the CPU (node-llama-cpp falls back when there is no GPU): every layer there.
    expect(sized.memory).toMatchObject({ gpu: null, gpuLayersSetting: 0, vramTotalBytes: 0, vramFreeBytes: 0, totalVramBytes: 0 })
    expect(sized.memory!.files.map((f) => [f.role, f.gpuLayers, f.totalLayers, f.vramBytes, f.fitsVram])).toEqual([
      ['target', 0, 7, 0, true], // 6 blocks + the output layer, as llama.cpp counts them
      ['mid', 0, expect.any(Number), 0, true],
      ['draft', 0, expect.any(Number), 0, true]
    ])
    expect(sized.memoryMessage).toMatch(
      /^No GPU in this build: all layers run on the CPU\. Loading needs about [\d.]+ MB of RAM \(weights [\d.]+ MB \+ context [\d.]+ MB at 512 tokens × 4 sequences\); [\d.]+ [MG]B free\.$/
    )
    // 'auto' (the screen's default) on the CPU: the same placement, and the target alone.
    const auto = await call('models:check-trio', { target: ids.target, mid: null, draft: null, settings: { ...LOAD, gpuLayers: 'auto' } })
    expect(auto.memory!.files).toEqual([expect.objectContaining({ role: 'target', gpuLayers: 0, totalLayers: 7, weightsBytes: target.weightsBytes })])
    expect(auto.memoryMessage).toMatch(/^No GPU in this build: all layers run on the CPU\. Loading needs about/)
    const bad = await call('models:check-trio', { target: ids.target, mid: ids.mid, draft: ids.foreign })
    expect(bad.compatible).toBe(false)
    expect(bad.message).toMatch(/tinystories-656k-q8_0\.gguf: vocabulary sizes differ by 1,536 \(2,048 vs the target's 512 tokens; more than llama\.cpp's 128\)/)
    expect(bad.pairs).toEqual([
      { role: 'mid', compatible: true, reason: null, held: "stories-mid1M-f32.gguf: same 512 tokens; the first 512 token texts are identical (llama.cpp's rule: from id 5)" },
      expect.objectContaining({ role: 'draft', compatible: false })
    ])
    expect(bad.message).toMatch(/^Vocabularies differ: only sd-tli\b/)
    // The Models screen still loads the pair, marked: chat then refuses id-comparing methods and runs sd-tli.
    const foreign = await call('models:load', { trio: { target: ids.target, mid: null, draft: ids.foreign }, settings: LOAD })
    expect(foreign.vocabularyMismatch).toMatch(/^vocabulary mismatch between .*stories-target5M-f32\.gguf and .*tinystories-656k-q8_0\.gguf/)
    expect((await call('models:list', {})).loaded?.vocabularyMismatch).toBe(foreign.vocabularyMismatch)
    const chatOn = (method: 'sd' | 'sd-tli') =>
      call('chat:send', { conversationId: null, text: 'Once upon a time', settings: settings({ method, maxTokens: 12 }), format: 'auto', systemPrompt: '' })
    await expect(chatOn('sd')).rejects.toThrow(/^sd compares token ids across models, but the loaded vocabularies differ \(vocabulary mismatch .*\): only sd-tli\b/)
    const tli = await chatDone((await chatOn('sd-tli')).generationId)
    expect(tli.error).toBeNull()
    expect(tli.message!.stats!.tokens).toBe(12)
    await call('chat:delete-conversation', { conversationId: tli.message!.conversationId })
    await call('models:unload', {})
  })

  it('refuses chat before a trio is loaded, then loads it with progress', async () => {
    await expect(call('chat:send', { conversationId: null, text: 'Hi', settings: settings(), format: 'auto', systemPrompt: '' })).rejects.toThrow(/no model is loaded/)
    events.length = 0
    const loaded = await call('models:load', { trio: { target: ids.target, mid: ids.mid, draft: ids.draft }, settings: LOAD })
    expect(loaded).toMatchObject({ contextSize: 512, target: { id: ids.target }, mid: { id: ids.mid }, draft: { id: ids.draft } })
    const progress = events.filter((e) => e.type === 'models:load-progress')
    expect(progress.map((e) => e.type === 'models:load-progress' && e.role)).toEqual(expect.arrayContaining(['target', 'mid', 'draft']))
    expect(progress.at(-1)).toMatchObject({ role: 'draft', index: 2, count: 3, fraction: 1 })
    expect((await call('models:list', {})).loaded?.draft?.fileName).toBe('stories260K-f32.gguf')
    await expect(call('models:remove', { modelId: ids.draft })).rejects.toThrow(/unload it before removing/)
  })

  it('measures the loaded trio\'s threads again on request; refuses when Threads was given', async () => {
    await expect(call('models:calibrate', {})).rejects.toThrow(/Threads is set to 1: clear it/)
    const trio = { target: ids.target, mid: ids.mid, draft: ids.draft }
    const measured = await call('models:load', { trio, settings: { ...LOAD, threads: null } })
    expect(measured.threadCalibration!.map((c) => c.role)).toEqual(['target', 'mid', 'draft'])
    const again = await call('models:calibrate', {})
    expect(again.threadCalibration!.map((c) => c.source)).toEqual(['measured', 'measured', 'measured'])
    expect(again.threads).toEqual({
      single: again.threadCalibration![0]!.chosen.threads,
      targetBatch: again.threadCalibration![0]!.chosen.batchThreads,
      drafts: again.threadCalibration![2]!.chosen.threads
    })
    await call('models:unload', {})
    await expect(call('models:calibrate', {})).rejects.toThrow(/no models are loaded/)
    await call('models:load', { trio, settings: LOAD }) // as the tests below expect
  })

  let conversationId = 0
  let sdMessage: ChatMessage
  it('chats: tokens stream with provenance and live stats; greedy sd equals greedy ar; the conversation is stored', async () => {
    events.length = 0
    const sent = await call('chat:send', { conversationId: null, text: 'Once upon a time', settings: settings(), format: 'auto', systemPrompt: '' })
    conversationId = sent.conversationId
    expect(sent.userMessage).toMatchObject({ role: 'user', text: 'Once upon a time' })
    const done = await chatDone(sent.generationId)
    expect(done.error).toBeNull()
    sdMessage = done.message!
    expect(sdMessage).toMatchObject({ role: 'assistant', format: 'completion', stopReason: 'max-tokens', settings: { method: 'sd', seed: 1 } })
    expect(sdMessage.stats!.tokens).toBe(40)
    expect(sdMessage.stats!.acceptanceRate).toBeGreaterThan(0)
    expect(sdMessage.stats!.gammas.every((g) => g >= 1 && g <= 4)).toBe(true)
    const streamed = events.filter((e): e is Extract<HostEvent, { type: 'chat:tokens' }> => e.type === 'chat:tokens').flatMap((e) => e.tokens)
    expect(streamed.length).toBe(40)
    expect(streamed.map((t) => t.text).join('')).toBe(sdMessage.text)
    expect(new Set(streamed.map((t) => t.provenance))).toContain('draft')
    expect(sdMessage.segments!.map((s) => s.text).join('')).toBe(sdMessage.text)

    const ar = await call('chat:send', { conversationId: null, text: 'Once upon a time', settings: settings({ method: 'ar' }), format: 'auto', systemPrompt: '' })
    const arDone = await chatDone(ar.generationId)
    expect(arDone.message!.text).toBe(sdMessage.text) // lossless: greedy sd reproduces greedy ar
    expect(arDone.message!.segments!.every((s) => s.provenance === 'target')).toBe(true)

    // Forcing the chat format on a base model goes through node-llama-cpp's chat wrappers (a general template here).
    const chat = await call('chat:send', { conversationId: null, text: 'Tell me a story.', settings: settings({ maxTokens: 24 }), format: 'chat', systemPrompt: 'You tell stories.' })
    const chatDoneEvent = await chatDone(chat.generationId)
    expect(chatDoneEvent.error).toBeNull()
    expect(chatDoneEvent.message!.format).toBe('chat')
    await call('chat:delete-conversation', { conversationId: chat.conversationId })

    const reopened = await call('chat:conversation', { conversationId })
    expect(reopened!.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
    expect(reopened!.messages[1]).toEqual(sdMessage)
    expect((await call('chat:conversations', {})).map((c) => c.title)).toEqual(['Once upon a time', 'Once upon a time'])
  })

  it('continues a conversation as one text for base models, and stop cancels a generation', async () => {
    events.length = 0
    const sent = await call('chat:send', { conversationId, text: 'The end.', settings: settings({ maxTokens: 400, temperature: 1, seed: null }), format: 'completion', systemPrompt: '' })
    await expect(call('workbench:start', {
      suite: null,
      methods: ['ar'],
      dataset: { kind: 'builtin', id: 'stories' },
      limit: 1,
      models: { target: ids.target, mid: null, draft: null },
      load: LOAD,
      settings: { maxTokens: 8, temperature: 0, topK: 64, topP: 1, gamma: 4, seed: 1, params: {} }
    })).rejects.toThrow(/the models are busy \(chat generation with sd\)/)
    expect(await call('chat:stop', { generationId: sent.generationId })).toEqual({ stopped: true })
    const done = await chatDone(sent.generationId)
    expect(done.message!.stopReason).toBe('cancelled')
    expect(done.message!.stats!.tokens).toBeLessThan(400)
    expect(Number.isInteger(done.message!.settings!.seed)).toBe(true) // the random seed is recorded
    expect((await call('chat:conversation', { conversationId }))!.messages).toHaveLength(4)
    await expect(call('chat:send', { conversationId: 9999, text: 'x', settings: settings(), format: 'auto', systemPrompt: '' })).rejects.toThrow(/does not exist/)
    await expect(call('chat:send', { conversationId: null, text: 'x', settings: settings({ params: { 'svip.h': -3 } , method: 'svip' }), format: 'auto', systemPrompt: '' })).rejects.toThrow(/svip\.h/)

    // Chat and the Workbench refuse bad parameters with the catalog's own line (the CLI prints the same, exit 2).
    const messageOf = (fn: () => unknown): string => {
      try {
        fn()
      } catch (error) {
        return (error as Error).message
      }
      throw new Error('expected a refusal')
    }
    const typo = { 'svip.hh': 0.3 }
    await expect(call('chat:send', { conversationId: null, text: 'x', settings: settings({ params: typo, method: 'svip' }), format: 'auto', systemPrompt: '' })).rejects.toThrow(
      messageOf(() => prepare('svip', { gamma: 4, params: typo }))
    )
    const workbench = (methods: ApiRequest<'workbench:start'>['methods'], params: Record<string, number | string>) =>
      call('workbench:start', {
        suite: null,
        methods,
        dataset: { kind: 'builtin', id: 'stories' },
        limit: 1,
        models: { target: ids.target, mid: null, draft: ids.draft },
        load: LOAD,
        settings: { maxTokens: 8, temperature: 0, topK: 64, topP: 1, gamma: 4, seed: 1, params }
      })
    await expect(workbench(['ar', 'svip'], typo)).rejects.toThrow(messageOf(() => prepareRun(['ar', 'svip'], { gamma: 4, params: typo })))
    await expect(workbench(['ar', 'nlc-draft'], { 'nlc.minConfidence': 'abc' })).rejects.toThrow('nlc.minConfidence (nlc-draft) must be a number in [0, 1], got "abc"')
    await expect(workbench(['ar', 'sd'], { 'svip.h': 0.2 })).rejects.toThrow(/svip\.h is not a parameter of ar or sd .*: it belongs to svip/)
    await expect(workbench(['ar', 'ar'], {})).rejects.toThrow("method 'ar' is listed twice")
  })

  it('edits and regenerates: the replaced message and everything after it give way to the new turn', async () => {
    const before = (await call('chat:conversation', { conversationId }))!.messages
    expect(before.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
    // Regenerate the first reply with ar: the same text again, from the first user message on.
    const again = await call('chat:send', { conversationId, text: before[0]!.text, settings: settings({ method: 'ar' }), format: 'auto', systemPrompt: '', replaceFrom: before[0]!.id })
    const regenerated = (await chatDone(again.generationId)).message!
    expect(regenerated.text).toBe(sdMessage.text) // greedy ar reproduces greedy sd's reply
    expect(regenerated.settings!.method).toBe('ar')
    const afterRegenerate = (await call('chat:conversation', { conversationId }))!
    expect(afterRegenerate.messages.map((m) => m.id)).toEqual([again.userMessage.id, regenerated.id])
    expect(again.userMessage.id).toBeGreaterThan(before[3]!.id)
    // Edit the (new) first message: the title follows it, the history before it is empty, the reply continues the edit.
    const edited = await call('chat:send', { conversationId, text: 'Lily had a red ball', settings: settings({ maxTokens: 12 }), format: 'auto', systemPrompt: '', replaceFrom: again.userMessage.id })
    const reply = (await chatDone(edited.generationId)).message!
    const afterEdit = (await call('chat:conversation', { conversationId }))!
    expect(afterEdit.messages.map((m) => m.text)).toEqual(['Lily had a red ball', reply.text])
    expect(afterEdit.summary.title).toBe('Lily had a red ball')
    // A message that is gone, or a reply rather than a user message, cannot be replaced; nothing is lost.
    await expect(call('chat:send', { conversationId, text: 'x', settings: settings(), format: 'auto', systemPrompt: '', replaceFrom: before[0]!.id })).rejects.toThrow(/is not one of your messages/)
    await expect(call('chat:send', { conversationId, text: 'x', settings: settings(), format: 'auto', systemPrompt: '', replaceFrom: reply.id })).rejects.toThrow(/is not one of your messages/)
    await expect(call('chat:send', { conversationId: null, text: 'x', settings: settings(), format: 'auto', systemPrompt: '', replaceFrom: reply.id })).rejects.toThrow(/saved conversation/)
    expect((await call('chat:conversation', { conversationId }))!.messages).toEqual(afterEdit.messages)
  })

  it("measures a reply's speedup over ar on its own prompt tokens, and keeps it with the reply", async () => {
    const [question, reply] = (await call('chat:conversation', { conversationId }))!.messages
    const measured = await call('chat:baseline', { messageId: reply!.id })
    expect(measured.baseline).toMatchObject({ repeats: 3, speedup: { cells: 3, prompts: 1, repeats: 3 }, arTokensPerSecond: { cells: 3 } })
    const { speedup, arTokensPerSecond, methodTokensPerSecond } = measured.baseline!
    expect(speedup.low).toBeLessThanOrEqual(speedup.median)
    expect(speedup.median).toBeGreaterThan(0)
    expect(arTokensPerSecond.median).toBeGreaterThan(0)
    expect(methodTokensPerSecond.median).toBeGreaterThan(0)
    expect((await call('chat:conversation', { conversationId }))!.messages[1]!.baseline).toEqual(measured.baseline)
    await expect(call('chat:baseline', { messageId: question!.id })).rejects.toThrow(/is not a reply of the model/)
  })

  const runIds: number[] = []
  it('runs the workbench with progress, stores the run, and reports it', async () => {
    events.length = 0
    const start = (gamma: number, methods: ApiRequest<'workbench:start'>['methods'], limit: number, repeats?: number) =>
      call('workbench:start', {
        suite: null,
        methods,
        dataset: { kind: 'builtin', id: 'stories' },
        limit,
        models: { target: ids.target, mid: ids.mid, draft: ids.draft },
        load: LOAD,
        settings: { maxTokens: 24, temperature: 0, topK: 64, topP: 1, gamma, seed: 5, params: {} },
        ...(repeats === undefined ? {} : { repeats })
      })
    const { jobId } = await start(4, ['sd', 'ar', 'pre-verify'], 2, 1)
    const final = await finished(jobId)
    expect(final).toMatchObject({ status: 'done', cellsDone: 6, cellsTotal: 6, repeats: 1, error: null })
    runIds.push(final.runId!)
    const progress = events.filter((e): e is Extract<HostEvent, { type: 'workbench:progress' }> => e.type === 'workbench:progress').map((e) => e.progress)
    expect(progress[0].phase).toBe('loading')
    expect(progress.some((p: WorkbenchProgress) => p.phase === 'running' && p.tokens > 0)).toBe(true)
    expect(new Set(progress.map((p) => p.cellsDone))).toEqual(new Set([0, 1, 2, 3, 4, 5, 6]))
    expect(await call('workbench:status', {})).toMatchObject({ jobId, phase: 'finished' })

    // No repeats asked for: ar against sd is a speed comparison, so 3 timed repeats per (prompt, method).
    events.length = 0
    const second = await start(2, ['ar', 'sd'], 1)
    const secondFinal = await finished(second.jobId)
    expect(secondFinal).toMatchObject({ status: 'done', repeats: 3, cellsDone: 6, cellsTotal: 6 })
    expect(events.some((e) => e.type === 'workbench:progress' && e.progress.repeat === 2 && /repeat 3\/3/.test(e.progress.message))).toBe(true)
    runIds.push(secondFinal.runId!)

    const details = (await call('runs:details', { runId: runIds[0] }))!
    expect(details.report.config.methods).toEqual(['ar', 'sd', 'pre-verify']) // contract order
    expect(details.report.methods.find((m) => m.method === 'sd')!.outputs).toEqual(details.report.methods.find((m) => m.method === 'ar')!.outputs)
    expect(details.results).toHaveLength(6)
    expect(details.results.every((r) => r.steps > 0 && r.provenance.length === r.outputCount)).toBe(true)
    const sdHistogram = details.entropy.find((h) => h.method === 'sd')!
    const sdSummary = details.report.methods.find((m) => m.method === 'sd')!
    expect(sdHistogram.accepted.reduce((a, b) => a + b)).toBe(
      (await Promise.all(details.results.filter((r) => r.method === 'sd').map((r) => call('runs:steps', { resultId: r.id })))).flat().reduce((n, s) => n + s.accepted, 0)
    )
    expect(sdSummary.acceptedTokens).toBeGreaterThan(0)
  })

  it('searches, exports, diffs, computes perplexities and deletes runs', async () => {
    const [a, b] = runIds
    expect((await call('runs:search', {})).map((r) => r.id)).toEqual([b, a])
    expect((await call('runs:search', { method: 'pre-verify' })).map((r) => r.id)).toEqual([a])
    expect((await call('runs:search', { model: 'stories-target5M' })).length).toBe(2)
    const csv = await call('runs:export', { runId: a, format: 'csv' })
    expect(csv.fileName).toBe(`speclab-run-${a}.csv`)
    expect(csv.content.trimEnd().split('\r\n')).toHaveLength(7)
    const json = JSON.parse((await call('runs:export', { runId: a, format: 'json' })).content)
    expect(json.results[0].steps.length).toBeGreaterThan(0)
    const diff = await call('runs:diff', { a, b })
    expect(diff.configDifferences.map((d) => d.key)).toEqual(expect.arrayContaining(['gamma', 'methods', 'prompts.limit']))
    expect(diff.outputs.find((o) => o.method === 'sd' && o.promptIndex === 0)).toMatchObject({ a: expect.any(String), b: expect.any(String) })
    expect(diff.outputs.find((o) => o.method === 'pre-verify')!.b).toBeNull()
    const ppl = await call('runs:perplexity', { runId: a })
    expect(ppl.map((p) => p.method)).toEqual(['ar', 'sd', 'pre-verify'])
    for (const p of ppl) expect(p.perplexity).toBeGreaterThan(1)
    // Greedy outputs are identical across these lossless methods, so their perplexities are too.
    expect(ppl[1].perplexity).toBeCloseTo(ppl[0].perplexity, 6)
    expect(await call('runs:delete', { runId: b })).toEqual({ deleted: true })
    expect(await call('runs:delete', { runId: b })).toEqual({ deleted: false })
    expect(await call('runs:details', { runId: b })).toBeNull()
    await expect(call('runs:diff', { a, b })).rejects.toThrow(`no run with id ${b}`)
  })

  it('imports JSONL prompt files with clear errors', async () => {
    const good = path.join(dir, 'prompts.jsonl')
    fs.writeFileSync(good, '{"question": "What is 2+2?", "category": "math"}\n{"turns": ["Write a haiku."], "category": "writing"}\n')
    const bad = path.join(dir, 'bad.jsonl')
    fs.writeFileSync(bad, '{"text": "ok"}\n{oops}\n')
    fs.writeFileSync(path.join(dir, 'prompts.txt'), 'x')
    expect(await call('workbench:import-dataset', { path: good })).toMatchObject({ kind: 'file', prompts: 2, categories: ['math', 'writing'] })
    await expect(call('workbench:import-dataset', { path: bad })).rejects.toThrow(/bad\.jsonl:2: not valid JSON/)
    await expect(call('workbench:import-dataset', { path: path.join(dir, 'prompts.txt') })).rejects.toThrow(/must be a \.jsonl file/)
    expect((await call('workbench:datasets', {})).map((d) => d.id)).toEqual(['stories', 'chat', 'code', 'math', 'mixed', 'copy', good])
    expect((await call('app:info', {})).datasets).toHaveLength(7)
  })

  it('downloads a model with node-llama-cpp from a local server (progress, then the library), and cancels one', async () => {
    const data = fs.readFileSync(files.draft)
    const server = http.createServer((request, response) => {
      const slow = request.url?.startsWith('/slow')
      const range = /bytes=(\d+)-(\d*)/.exec(request.headers.range ?? '')
      const start = range ? Number(range[1]) : 0
      const end = range && range[2] ? Number(range[2]) : data.length - 1
      response.writeHead(range ? 206 : 200, {
        'Content-Length': end - start + 1,
        'Accept-Ranges': 'bytes',
        ...(range ? { 'Content-Range': `bytes ${start}-${end}/${data.length}` } : {})
      })
      if (request.method === 'HEAD') return void response.end()
      if (!slow) return void response.end(data.subarray(start, end + 1))
      let offset = start
      const timer = setInterval(() => {
        if (offset > end || response.destroyed) return void (clearInterval(timer), response.end())
        response.write(data.subarray(offset, Math.min(end + 1, offset + 16_384)))
        offset += 16_384
      }, 50)
      response.on('close', () => clearInterval(timer))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    const port = (server.address() as { port: number }).port
    try {
      events.length = 0
      const started = await call('models:download', { uri: `http://127.0.0.1:${port}/fast/tiny-draft.gguf` })
      expect(started.state).toBe('downloading')
      const done = await until(() =>
        events.find((e): e is Extract<HostEvent, { type: 'download:progress' }> => e.type === 'download:progress' && e.download.downloadId === started.downloadId && e.download.state !== 'downloading')
      )
      expect(done.download).toMatchObject({ state: 'done', fileName: 'tiny-draft.gguf', totalBytes: data.length })
      const entry = (await call('models:list', {})).models.find((m) => m.id === done.download.modelId)!
      expect(entry).toMatchObject({ source: 'download', uri: started.uri, vocabularySize: 512, sizeBytes: data.length })

      const slow = await call('models:download', { uri: `http://127.0.0.1:${port}/slow/slow-draft.gguf` })
      await until(() => events.find((e) => e.type === 'download:progress' && e.download.downloadId === slow.downloadId && e.download.downloadedBytes > 0))
      expect(await call('models:download-cancel', { downloadId: slow.downloadId })).toEqual({ cancelled: true })
      const cancelled = await until(() =>
        events.find((e): e is Extract<HostEvent, { type: 'download:progress' }> => e.type === 'download:progress' && e.download.downloadId === slow.downloadId && e.download.state !== 'downloading')
      )
      expect(cancelled.download.state).toBe('cancelled')
      expect((await call('models:downloads', {})).map((d) => d.state)).toEqual(['done', 'cancelled'])
      expect((await call('models:list', {})).models.some((m) => m.fileName === 'slow-draft.gguf')).toBe(false)
      await expect(call('models:download', { uri: 'ftp://example.com/x.gguf' })).rejects.toThrow(/expected hf:/)
    } finally {
      server.closeAllConnections() // the downloader keeps connections alive
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('switches databases (the menu’s privileged channel) and keeps each one’s runs apart', async () => {
    await expect(call('app:open-database', { path: path.join(dir, 'notes.txt') })).rejects.toThrow(/ends in \.sqlite/)
    const other = path.join(dir, 'other.sqlite')
    const info = await call('app:open-database', { path: other })
    expect(info.databasePath).toBe(other)
    expect(await call('runs:search', {})).toEqual([])
    expect((await call('models:list', {})).models).toEqual([])
    await call('app:open-database', { path: path.join(dir, 'db.sqlite') })
    expect((await call('runs:search', {})).length).toBe(1)
  })

  it('runs a whole suite (smoke, quick) with progress and the job lock; cancel, resume, list and report', async () => {
    const models = { target: ids.target, mid: ids.mid, draft: ids.draft }
    await expect(call('suites:start', { suite: 'nope', quick: true, resume: null, models })).rejects.toThrow(/unknown suite/)

    // Cancelled at once: the suite run exists with no finished cell; a resume finishes it.
    const first = await call('suites:start', { suite: 'smoke', quick: true, resume: null, models })
    await expect(call('workbench:start', {
      suite: null, methods: ['ar'], dataset: { kind: 'builtin', id: 'stories' }, limit: 1, models, load: LOAD,
      settings: { maxTokens: 4, temperature: 0, topK: 64, topP: 1, gamma: 4, seed: 1, params: {} }
    })).rejects.toThrow(/busy/)
    expect((await call('suites:cancel', { jobId: first.jobId })).cancelled).toBe(true)
    const cancelled = await suiteFinished(first.jobId)
    expect(cancelled.status).toBe('cancelled')
    expect(cancelled.suiteRunId).not.toBeNull()

    const second = await call('suites:start', { suite: 'smoke', quick: true, resume: cancelled.suiteRunId, models: null })
    const done = await suiteFinished(second.jobId)
    expect(done).toMatchObject({ status: 'done', suiteRunId: cancelled.suiteRunId, error: null })
    const progress = events.filter((e): e is Extract<HostEvent, { type: 'suite:progress' }> => e.type === 'suite:progress' && e.progress.jobId === second.jobId)
    expect(progress.some((e) => e.progress.phase === 'running' && e.progress.cellKey === 'smoke/stories')).toBe(true)
    expect(progress.some((e) => e.progress.etaMs !== null)).toBe(true)
    for (const e of progress) expect(HostEvent.safeParse(e).error?.message, JSON.stringify(e)).toBeUndefined()
    expect(await call('suites:status', {})).toMatchObject({ jobId: second.jobId, phase: 'finished' })

    const [listed] = await call('suites:runs', {})
    expect(listed).toMatchObject({ id: cancelled.suiteRunId, suite: 'smoke', quick: true, status: 'done', cells: 1, finishedCells: 1 })
    const report = await call('suites:report', { suiteRunId: listed.id })
    expect(report.baseName).toBe(`smoke-${listed.id}`)
    expect(report.html).toMatch(/<h2>Every method on the same prompts<\/h2>/)
    expect(report.html).not.toMatch(/<script/i)
    expect(report.markdown).toMatch(/\| *method/i)
    await expect(call('suites:report', { suiteRunId: 9999 })).rejects.toThrow(/no suite run/)
  }, 180_000)

  it('lends the loaded trio to a suite on the same files; frees it for one that needs more KV sequences', async () => {
    const trio = { target: ids.target, mid: ids.mid, draft: ids.draft }
    // Measured threads on both sides (the suite gives none) — a trio loaded with a thread count is freed, not lent.
    await call('models:load', { trio, settings: { ...LOAD, threads: null } })
    const loadsBefore = events.filter((e) => e.type === 'models:load-progress').length

    const lent = await call('suites:start', { suite: 'hierarchy-theory', quick: true, resume: null, models: trio })
    expect(await suiteFinished(lent.jobId)).toMatchObject({ status: 'done', error: null })
    expect((await call('models:list', {})).loaded?.target.id).toBe(ids.target) // still held, never reloaded
    expect(events.filter((e) => e.type === 'models:load-progress').length).toBe(loadsBefore)

    // smoke runs DSBD with 12 KV sequences per model; the held trio has 4: it is freed before the suite loads its own,
    // and the user's trio (same files, settings and sequences) is loaded again when the suite ends.
    const freed = await call('suites:start', { suite: 'smoke', quick: true, resume: null, models: trio })
    expect(await suiteFinished(freed.jobId)).toMatchObject({ status: 'done', error: null })
    const after = (await call('models:list', {})).loaded
    expect(after).toMatchObject({ target: { id: ids.target }, mid: { id: ids.mid }, draft: { id: ids.draft }, sequences: DEFAULT_SEQUENCES })
    expect(after!.settings).toMatchObject({ ...LOAD, threads: null })
  }, 240_000)

  it('loads the trio with the KV sequences a beam or DSBD run needs, from the Workbench and from chat', async () => {
    const trio = { target: ids.target, mid: ids.mid, draft: ids.draft }
    const loadedSequences = async () => (await call('models:list', {})).loaded?.sequences
    await call('models:load', { trio, settings: LOAD })
    expect(await loadedSequences()).toBe(DEFAULT_SEQUENCES)

    const dsbdParams = { 'dsbd.ws': 6 }
    const needed = prepare('dsbd', { gamma: 2, params: dsbdParams }).sessions
    expect(needed).toBeGreaterThan(DEFAULT_SEQUENCES)
    const { jobId } = await call('workbench:start', {
      suite: null, methods: ['dsbd'], dataset: { kind: 'builtin', id: 'stories' }, limit: 1, models: trio, load: LOAD,
      settings: { maxTokens: 8, temperature: 1, topK: 10, topP: 1, gamma: 2, seed: 1, params: dsbdParams }
    })
    expect(await finished(jobId)).toMatchObject({ status: 'done', error: null })
    expect(await loadedSequences()).toBe(needed)

    await call('models:unload', {})
    await call('models:load', { trio, settings: LOAD })
    const sent = await call('chat:send', { conversationId: null, text: 'Once upon a time', settings: settings({ method: 'beam', maxTokens: 8, params: { 'beam.width': 7 } }), format: 'completion', systemPrompt: '' })
    const done = await chatDone(sent.generationId)
    expect(done.error).toBeNull()
    expect(done.message?.text.length).toBeGreaterThan(0)
    expect(await loadedSequences()).toBe(7)
  }, 120_000)

  it("chats with an instruct model through its GGUF chat template (format 'auto')", async () => {
    // The shared models are base models: a copy of target5M with a ChatML template in its metadata stands in for
    // an instruct model. node-llama-cpp recognises the template (ChatMLChatWrapper).
    const instruct = path.join(dir, 'stories-target5M-chatml.gguf')
    writeGgufWithStringKey(files.target, instruct, 'tokenizer.chat_template', CHATML_TEMPLATE)
    const entry = await call('models:add', { path: instruct })
    expect(entry.hasChatTemplate).toBe(true)
    expect((await call('models:list', {})).models.find((m) => m.id === ids.target)?.hasChatTemplate).toBe(false)

    await call('models:load', { trio: { target: entry.id, mid: null, draft: null }, settings: LOAD })
    const sent = await call('chat:send', { conversationId: null, text: 'Tell me a story.', settings: settings({ method: 'ar', maxTokens: 12 }), format: 'auto', systemPrompt: 'You tell stories.' })
    const done = await chatDone(sent.generationId)
    expect(done.error ?? null).toBeNull()
    expect(done.message).toMatchObject({ role: 'assistant', format: 'chat' })
    await call('models:unload', {})
  }, 60_000)
})

describe('utility-process entry', () => {
  it('starts the host on init, serves requests over the port, pushes events and shuts down', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-utility-'))
    const fromHost: unknown[] = []
    const listeners: { message?: (event: { data: unknown }) => void; close?: () => void } = {}
    const port: PortLike = {
      on: ((event: 'message' | 'close', listener: never) => {
        listeners[event] = listener
      }) as PortLike['on'],
      postMessage: (message) => fromHost.push(message),
      start: () => {},
      close: () => {}
    }
    let exitCode: number | null = null
    let onInit: ((event: { data: unknown; ports: PortLike[] }) => void) | undefined
    runUtilityHost({ once: (_event, listener) => (onInit = listener) }, (code) => (exitCode = code))
    onInit!({
      data: {
        kind: 'init',
        options: { databasePath: path.join(tmp, 'db.sqlite'), nativeBinding: null, downloadDirectory: path.join(tmp, 'dl'), version: '9.9.9', mode: 'electron' }
      },
      ports: [port]
    })
    expect(fromHost).toContainEqual({ kind: 'event', event: { type: 'host:status', state: 'ready', message: null } })
    listeners.message!({ data: { kind: 'request', id: 7, channel: 'app:info', payload: {} } })
    listeners.message!({ data: { kind: 'request', id: 8, channel: 'runs:show', payload: { runId: 'x' } } })
    const reply = await until(() => fromHost.find((m) => (m as { id?: number }).id === 7) as { ok: boolean; result: { version: string; mode: string } } | undefined)
    expect(reply).toMatchObject({ ok: true, result: { version: '9.9.9', mode: 'electron' } })
    const invalid = await until(() => fromHost.find((m) => (m as { id?: number }).id === 8) as { ok: boolean; error: string } | undefined)
    expect(invalid.ok).toBe(false)
    expect(invalid.error).toMatch(/Invalid request for runs:show/)
    listeners.message!({ data: { kind: 'shutdown' } })
    await until(() => (exitCode === null ? undefined : exitCode))
    expect(exitCode).toBe(0)
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it('the built entry (out/main/host.js, what Electron forks) starts and serves over its port', async () => {
    const built = path.join(root, 'out/main/host.js')
    if (!fs.existsSync(built)) return console.warn('!!! out/main/host.js missing: run `npm run build` (npm test does) !!!')
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-built-host-'))
    // A stand-in for Electron's process.parentPort and MessagePortMain, in a plain Node child process.
    const script = `
      const sent = []
      let onMessage
      const port = { on: (e, l) => { if (e === 'message') onMessage = l }, postMessage: (m) => sent.push(m), start() {}, close() {} }
      process.parentPort = { once: (_e, l) => setTimeout(() => l({ data: { kind: 'init', options: ${JSON.stringify({
        databasePath: path.join(tmp, 'db.sqlite'),
        nativeBinding: null,
        downloadDirectory: tmp,
        version: 'built',
        mode: 'electron'
      })} }, ports: [port] })) }
      await import(${JSON.stringify(pathToFileURL(built).href)})
      await new Promise((r) => setTimeout(r, 100))
      onMessage({ data: { kind: 'request', id: 1, channel: 'app:info', payload: {} } })
      onMessage({ data: { kind: 'request', id: 2, channel: 'models:catalog', payload: {} } })
      const deadline = Date.now() + 20000
      while (sent.filter((m) => m.kind === 'response').length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      process.stdout.write(JSON.stringify(sent))
      process.exit(0)`
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 60_000 })
    fs.rmSync(tmp, { recursive: true, force: true })
    const sent = JSON.parse(result.stdout) as { kind: string; id?: number; ok?: boolean; result?: unknown; event?: unknown }[]
    expect(sent[0]).toEqual({ kind: 'event', event: { type: 'host:status', state: 'ready', message: null } })
    expect(sent.find((m) => m.id === 1)).toMatchObject({ ok: true, result: { version: 'built', mode: 'electron' } })
    expect((sent.find((m) => m.id === 2)?.result as unknown[]).length).toBeGreaterThan(0)
  })

  it('answers every request with the reason when the database cannot open', async () => {
    const fromHost: unknown[] = []
    let onMessage: ((event: { data: unknown }) => void) | undefined
    const port: PortLike = {
      on: ((event: 'message' | 'close', listener: never) => {
        if (event === 'message') onMessage = listener
      }) as PortLike['on'],
      postMessage: (message) => fromHost.push(message),
      start: () => {},
      close: () => {}
    }
    let onInit: ((event: { data: unknown; ports: PortLike[] }) => void) | undefined
    runUtilityHost({ once: (_event, listener) => (onInit = listener) }, () => {})
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-utility-bad-'))
    const notADatabase = path.join(tmp, 'notes.sqlite')
    fs.writeFileSync(notADatabase, 'these are notes, not a database\n'.repeat(200))
    onInit!({
      data: { kind: 'init', options: { databasePath: notADatabase, nativeBinding: null, downloadDirectory: os.tmpdir(), version: '1', mode: 'electron' } },
      ports: [port]
    })
    expect(fromHost[0]).toMatchObject({ kind: 'event', event: { type: 'host:status', state: 'failed', message: expect.stringMatching(/not a SpecLab database/) } })
    onMessage!({ data: { kind: 'request', id: 1, channel: 'app:info', payload: {} } })
    const reply = await until(() => fromHost.find((m) => (m as { id?: number }).id === 1) as { ok: boolean; error: string } | undefined)
    expect(reply.error).toMatch(/not a SpecLab database/)
    fs.rmSync(tmp, { recursive: true, force: true })
  })
})
