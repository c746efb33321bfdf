/**
 * llama.cpp's llama-server as a peer engine (decoders/llama-server.ts, peers/llama-server-process.ts), on the real
 * GGUF family: every `llama-server:*` type testable here decodes greedily to SpecLab's `ar` (same llama.cpp commit;
 * the near-tie rule of test/helpers/gguf.ts), and the drafting types really draft and get accepted (the server's own
 * counts). `llamaserver.url` accepts a server that serves the run's target and refuses one that does not; a server
 * that cannot start costs one line; a killed run leaves no server behind.
 *
 * Needs the binary `npm run build:llama-server` builds (or SPECLAB_LLAMA_SERVER). Without it the file is skipped
 * with a banner — and fails where SPECLAB_REQUIRE_LLAMA_SERVER=1 (CI builds it first: .ci/run).
 */
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import type { RawParams } from '../../electron/engine/methods/param-spec'
import { prepare } from '../../electron/engine/methods/prepare'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import { localServer, remoteServer, stopLocalServers } from '../../electron/engine/peers/llama-server-process'
import { isProcessAlive } from '../../electron/store/owner'
import { decode, makeRequest } from '../helpers/decode'
import { copyingPrompt, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'
import { describeWithLlamaServer } from '../helpers/llama-server'
import { until } from '../helpers/until'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const MAX_TOKENS = 48
const OPENINGS = ['Once upon a time, there was a little dog named Max.', 'Lily went to the park with her mom. She saw a big red ball']
/** `ps` is a process of its own: poll it every 200 ms, not every 10. */
const PS_INTERVAL = 200
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** The server's n-gram defaults (n = 12 and more) rarely recur in 48 tokens of a 5M model: short n-grams do. */
const NGRAM: RawParams = { 'llamaserver.ngramN': 3, 'llamaserver.ngramM': 8 }
const METHODS: { id: string; params: RawParams; drafts: boolean }[] = [
  { id: 'llama-server:ar', params: {}, drafts: false },
  { id: 'llama-server:draft', params: {}, drafts: true },
  { id: 'llama-server:ngram-simple', params: NGRAM, drafts: true },
  { id: 'llama-server:ngram-map-k', params: NGRAM, drafts: true },
  { id: 'llama-server:ngram-map-k4v', params: NGRAM, drafts: true },
  { id: 'llama-server:ngram-mod', params: { ...NGRAM, 'llamaserver.ngramModMin': 1 }, drafts: true },
  // Without a static cache it learns from the context alone (llama.cpp's n-gram cache, nothing to set).
  { id: 'llama-server:ngram-cache', params: {}, drafts: true }
]

describeWithLlamaServer('test/integration/llama-server-gguf.test.ts', [TARGET, DRAFT])('llama-server peer methods on GGUF (target5M ← 260K)', () => {
  let target: LlamaCppModel
  let draft: LlamaCppModel
  const prompts: number[][] = []
  const reference: number[][] = []

  beforeAll(async () => {
    target = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 512 })
    draft = await loadLlamaModel(modelPath(DRAFT), { threads: 1, contextSize: 512 })
    for (const opening of OPENINGS) {
      const copying = await copyingPrompt(target, opening, 40, MAX_TOKENS)
      prompts.push(copying.promptTokens)
      reference.push(copying.reference)
    }
  }, 120_000)

  afterAll(async () => {
    stopLocalServers()
    await target?.dispose()
    await draft?.dispose()
  })

  it.each(METHODS.map((m) => [m.id, m] as const))('greedy %s = greedy ar, with the server’s own draft counts', async (id, { params, drafts }) => {
    const run = prepare(id, { gamma: 4, params }).newRun()
    let proposed = 0
    let accepted = 0
    const outcomes: string[] = []
    for (const [i, promptTokens] of prompts.entries()) {
      const result = await decode(run(), { target, draft }, makeRequest({ promptTokens, maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
      outcomes.push(await expectSameOrNearTie(id, target, promptTokens, reference[i], result.tokens))
      expect(result.steps).toHaveLength(1)
      expect(result.steps[0].stage).toBe(id)
      expect(result.steps[0].decision?.requestTotals).toBe(true)
      expect(result.steps[0].emitted).toBe(result.tokens.length)
      proposed += result.steps[0].proposed
      accepted += result.steps[0].accepted
    }
    console.log(`${id}: ${proposed} drafted, ${accepted} accepted by the server, ${outcomes.join(' ')}`)
    expect(outcomes.filter((o) => o === 'identical').length).toBeGreaterThanOrEqual(prompts.length - 1)
    if (drafts) expect(accepted).toBeGreaterThan(5)
    else expect(proposed).toBe(0)
  }, 120_000)

  it('a server at llamaserver.url is used when its /props names the run’s target, refused otherwise', async () => {
    const binary = findLlamaServer().path!
    const spec = { binary, target: modelPath(TARGET), draft: null, threads: 1, batchThreads: 1, draftThreads: 1, contextSize: 512, speculative: [] }
    const server = await localServer(spec)
    const result = await decode(
      prepare('llama-server:ar', { gamma: 4, params: { 'llamaserver.url': server.url } }).newRun()(),
      { target },
      makeRequest({ promptTokens: prompts[0], maxTokens: MAX_TOKENS, warp: GREEDY_64 })
    )
    expect(result.steps[0].decision?.server).toBe('url')
    await expectSameOrNearTie('llamaserver.url', target, prompts[0], reference[0], result.tokens)

    // The same server for a run whose target is another file: refused before any prompt.
    const other = { path: modelPath(DRAFT), tokenize: (text: string) => draft.tokenize(text) }
    await expect(remoteServer(server.url, other)).rejects.toThrow(/serves stories-target5M-f32\.gguf, not the run's target stories260K-f32\.gguf/)
    // A URL where nothing listens: one line.
    const closed = `http://127.0.0.1:${new URL(server.url).port === '9' ? 10 : 9}`
    await expect(remoteServer(closed, { path: modelPath(TARGET), tokenize: (text) => target.tokenize(text) })).rejects.toThrow(/no llama-server answers \/props/)
  }, 120_000)

  it('a server that cannot start (a model it refuses, a binary that crashes) costs one UserInputError', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-llama-server-'))
    try {
      const junk = path.join(dir, 'junk.gguf')
      fs.writeFileSync(junk, 'GGUF this is not a model')
      const binary = findLlamaServer().path!
      const base = { binary, draft: null, threads: 1, batchThreads: 1, draftThreads: 1, contextSize: 512, speculative: [] }
      const refused = localServer({ ...base, target: junk })
      await expect(refused).rejects.toBeInstanceOf(UserInputError)
      await expect(refused).rejects.toThrow(/^llama-server exited \(code \d+\)/)

      const crashing = path.join(dir, 'crashing-server')
      fs.writeFileSync(crashing, '#!/bin/sh\necho "error: cannot allocate the KV cache" >&2\nexit 3\n', { mode: 0o755 })
      await expect(localServer({ ...base, binary: crashing, target: modelPath(TARGET) })).rejects.toThrow('llama-server exited (code 3): error: cannot allocate the KV cache')
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('a server that dies during a request costs one UserInputError naming its exit, not a failed fetch', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-llama-server-'))
    try {
      // Answers /health, then dies on the first completion: its connection drops before its exit reaches SpecLab.
      const dying = path.join(dir, 'dying-server')
      fs.writeFileSync(
        dying,
        `#!${process.execPath}\nconst port = Number(process.argv[process.argv.indexOf('--port') + 1])\n` +
          `require('node:http').createServer((request, response) => {\n  if (request.url === '/health') return response.end('{}')\n` +
          `  console.error('error: out of memory while decoding')\n  process.exit(4)\n}).listen(port, '127.0.0.1')\n`,
        { mode: 0o755 }
      )
      const server = await localServer({ binary: dying, target: modelPath(TARGET), draft: null, threads: 1, batchThreads: 1, draftThreads: 1, contextSize: 512, speculative: [] })
      const completion = server.complete({ prompt: [1, 2, 3], nPredict: 4, temperature: 0, topK: 1, topP: 1, seed: 1 })
      await expect(completion).rejects.toBeInstanceOf(UserInputError)
      await expect(completion).rejects.toThrow('llama-server exited (code 4): error: out of memory while decoding')
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('a model process killed mid-run (SIGKILL: no exit hook runs) leaves no llama-server behind', async () => {
    stopLocalServers()
    await until(() => (serverProcesses().length === 0 ? true : undefined), 15_000, PS_INTERVAL)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-llama-server-kill-'))
    const cli = path.join(root, 'electron/cli.ts')
    const parent = spawn(
      process.execPath,
      ['--import', 'tsx', cli, 'run', '--target', modelPath(TARGET), '--methods', 'llama-server:ar', '--max-tokens', '400', '--limit', '8', '--repeats', '5', '--temperature', '0', '--db', path.join(dir, 'runs.sqlite')],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] }
    )
    try {
      // The server is a child of the watchdog shell, itself a child of the CLI's model process.
      const servers = await until(() => {
        const found = serverProcesses()
        return found.length > 0 ? found : undefined
      }, 60_000, PS_INTERVAL)
      // The CLI's model process (its supervised child) dies at once; only the watchdog can stop its server.
      const worker = Number(execFileSync('pgrep', ['-P', String(parent.pid)], { encoding: 'utf8' }).trim().split('\n')[0])
      process.kill(worker, 'SIGKILL')
      await new Promise((resolve) => parent.once('exit', resolve))
      await until(() => (servers.some(isProcessAlive) ? undefined : true), 15_000, PS_INTERVAL)
    } finally {
      if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL')
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})

/** Pids of the llama-server processes this machine runs on the target (started by the CLI under test). */
function serverProcesses(): number[] {
  const listing = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
  return listing
    .split('\n')
    .filter((line) => line.includes('--no-webui') && line.includes(modelPath(TARGET)) && !line.includes('speclab-llama-server'))
    .map((line) => Number(line.trim().split(/\s+/)[0]))
}
