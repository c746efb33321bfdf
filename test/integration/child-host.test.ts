/**
 * Browser mode's engine host in a child process (electron/host/child-host.ts): a model load that kills the engine
 * process — here the child is sent SIGABRT while llama.cpp loads a file, which is what a GGML_ASSERT does — fails
 * the request with a message naming the file, a fresh child starts and keeps answering, the library records the
 * failure against the file, and the file is loaded again only when the user asks (retryFailed).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { ApiChannel, ApiRequest, ApiResponse } from '../../electron/api/contract'
import type { HostEvent } from '../../electron/api/events'
import { ChildHost } from '../../electron/host/child-host'
import { appendLines, crashReason } from '../../electron/host/crash-witness'
import { writeCraftedGgufs } from '../helpers/gguf-craft'
import { describeWithModels, modelPath } from '../helpers/gguf'
import { until } from '../helpers/until'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** The largest shared model: its load lasts long enough to be interrupted. */
const BIG = 'family/stories-target5M-inflated-78M-f16.gguf'
const SMALL = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/child-host.test.ts', [BIG, SMALL])
const LOAD = { contextSize: 256, gpuLayers: 0, threads: 1, batchThreads: null, fullVocabulary: false } as const

let dir: string
let host: ChildHost
const events: HostEvent[] = []
const call = <C extends ApiChannel>(channel: C, payload: ApiRequest<C>) => host.request(channel, payload) as Promise<ApiResponse<C>>

it('crashReason picks the assertion out of a dying process\'s stderr', () => {
  const tail = ['llama_model_load: loading', '/src/llama.cpp:123: GGML_ASSERT(n_head > 0) failed', '', 'Aborted']
  expect(crashReason(tail)).toBe('/src/llama.cpp:123: GGML_ASSERT(n_head > 0) failed')
  expect(crashReason(['seed 42', 'terminate called: fatal error in the runtime'])).toBe('terminate called: fatal error in the runtime')
  expect(crashReason(['seed 42'])).toBeNull() // ordinary output says nothing about the crash
  expect(crashReason([])).toBeNull()
  // A line split across chunks is whole again; a progress bar's redraws and colours are not part of it.
  let chunks = appendLines([], 'loading\n/src/llama.cpp:12: GGML_')
  chunks = appendLines(chunks, 'ASSERT(n_head > 0) failed\n')
  expect(crashReason(chunks)).toBe('/src/llama.cpp:12: GGML_ASSERT(n_head > 0) failed')
  expect(appendLines([], '\x1b[32m10%\r\x1b[2K50% done\nnext')).toEqual(['50% done', 'next'])
})

withModels('engine host in a child process', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-child-'))
    host = new ChildHost(
      { entry: path.join(root, 'electron/host/utility-entry.ts'), execArgv: ['--import', import.meta.resolve('tsx')] },
      { databasePath: path.join(dir, 'app.sqlite'), nativeBinding: null, downloadDirectory: path.join(dir, 'downloads'), version: 'test', mode: 'browser' },
      (event) => events.push(event)
    )
    await host.start()
  }, 60_000)
  afterAll(async () => {
    await host?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('every crafted GGUF is refused by the api with one line naming the file and the field; the engine keeps answering', async () => {
    const craftedDir = fs.mkdirSync(path.join(dir, 'crafted'), { recursive: true })!
    const crafted = writeCraftedGgufs(modelPath(SMALL), craftedDir)
    const pid = host.pid
    for (const file of crafted.filter((c) => c.field !== null)) {
      const refusal = call('models:add', { path: file.file }).then(
        () => 'accepted',
        (error: Error) => error.message
      )
      const message = await refusal
      expect(message, file.name).toContain(file.field!)
      expect(message, file.name).not.toContain('\n')
    }
    expect(host.pid).toBe(pid) // the same engine process: nothing crashed
    expect((await call('models:list', {})).models).toHaveLength(0)
  }, 120_000)

  it('a load that kills the engine process is one clear error; the host restarts and keeps the file from loading until asked', async () => {
    const big = await call('models:add', { path: modelPath(BIG) })
    const small = await call('models:add', { path: modelPath(SMALL) })
    const firstPid = host.pid
    // Kill the child as a GGML_ASSERT would (SIGABRT) as soon as it reports loading the big file.
    // Past 0: llama.cpp itself is reading the file (fraction 0 is sent just before the load starts).
    const killer = until(() => events.find((e) => e.type === 'models:load-progress' && e.fileName === big.fileName && e.fraction > 0)).then(() =>
      process.kill(firstPid!, 'SIGABRT')
    )
    const load = call('models:load', { trio: { target: big.id, mid: null, draft: null }, settings: LOAD })
    await killer
    await expect(load).rejects.toThrow(`the model process crashed while loading ${big.fileName}`)

    // A fresh child answers; the library knows why the file failed and refuses to load it unasked.
    await until(() => events.find((e) => e.type === 'host:status' && e.state === 'restarting'))
    const library = await call('models:list', {})
    expect(host.pid).not.toBe(firstPid)
    const entry = library.models.find((m) => m.id === big.id)!
    expect(entry.loadError).toMatch(/the engine process died while loading it/)
    expect(library.models.find((m) => m.id === small.id)!.loadError).toBeNull()
    await expect(call('models:load', { trio: { target: big.id, mid: null, draft: null }, settings: LOAD })).rejects.toThrow(
      `${big.fileName} failed to load before: `
    )
    // Other models still load; asked explicitly, the failed one loads too and its mark is cleared.
    expect((await call('models:load', { trio: { target: small.id, mid: null, draft: null }, settings: LOAD })).target.id).toBe(small.id)
    expect((await call('models:load', { trio: { target: big.id, mid: null, draft: null }, settings: LOAD, retryFailed: true })).target.id).toBe(big.id)
    expect((await call('models:list', {})).models.find((m) => m.id === big.id)!.loadError).toBeNull()
  }, 180_000)

  it('a death while the second file of a trio loads is held against that file only, not the one loaded before it', async () => {
    const { models } = await call('models:list', {})
    const big = models.find((m) => m.path === modelPath(BIG))!
    const small = models.find((m) => m.path === modelPath(SMALL))!
    const pid = host.pid
    const from = events.length
    const killer = until(() => events.slice(from).find((e) => e.type === 'models:load-progress' && e.role === 'draft' && e.fraction > 0)).then(() =>
      process.kill(pid!, 'SIGABRT')
    )
    const load = call('models:load', { trio: { target: small.id, mid: null, draft: big.id }, settings: LOAD })
    await killer
    await expect(load).rejects.toThrow(`the model process crashed while loading ${big.fileName}`)
    await until(() => (host.pid !== undefined && host.pid !== pid ? true : undefined), 60_000)
    const after = (await call('models:list', {})).models
    expect(after.find((m) => m.id === big.id)!.loadError).toMatch(/the engine process died while loading it/)
    expect(after.find((m) => m.id === small.id)!.loadError).toBeNull() // the good file stays loadable
    expect((await call('models:load', { trio: { target: small.id, mid: null, draft: null }, settings: LOAD })).target.id).toBe(small.id)
  }, 180_000)
})
