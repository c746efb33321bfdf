/**
 * Where one `ar` token's time goes, SpecLab's against llama-server's, on the machine under test.
 *
 * Why: SpecLab's `ar` runs at about 0.81× llama-server's on an H100 (docs/performance.md, GPU check), a quarter of
 * a millisecond more per token of about one. This splits a greedy token of SpecLab's target session (one token per evaluation, as `ar` decodes)
 * into the two node-llama-cpp addon calls it awaits, timed on the addon object the session's evaluation calls
 * (direct-evaluation.ts makes exactly these calls; the wrappers are removed afterwards). Terms, per generated token:
 * - step: the wall time of the session's `append` of one token — SpecLab's whole path for a target token.
 * - decode: the awaited `decodeBatch()`: a hand-off to a libuv worker thread, `llama_decode` and `llama_synchronize`
 *   (the addon's worker waits there for the backend, GPU included), and the completion's hand-off back to the JS
 *   thread; with SpecLab's addon patch, `decodeBatchNow()`: the same on the JS thread, no hand-offs.
 * - read: the awaited `sampleToken()` (or `sampleTokenNow()`) of the position: a hand-off and back around the sampler
 *   chain on the logits (copied under the context's sampling lock) that returns the top 64; with SpecLab's addon patch
 *   `topLogits()` / `topLogitsNow()`, the same 64 read from the logits in one pass.
 * - reread: the same read again at once, when nothing is left to wait for: the price of one addon call (two thread
 *   hand-offs unless on the JS thread) plus the read itself with warm caches. Not part of the step: it runs after it.
 * - engine: step − decode − read: SpecLab's JS and node-llama-cpp's synchronous calls (batch set-up, bookkeeping,
 *   warping the distribution).
 * - llama-server's token: `predicted_ms / (predicted_n − 1)` of the same greedy generation from the same prompt —
 *   the server's own time per generated token (decode, sampling, its loop), HTTP excluded; the server runs at the
 *   threads of SpecLab's session.
 * Each is the median over every generated token of every prompt with its 95 % two-stage bootstrap interval (prompts,
 * then tokens within a prompt; electron/engine/stats/bootstrap.ts); llama-server's is one value per prompt.
 */
import type { LlamaContext } from 'node-llama-cpp'
import type { LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import type { LanguageModel } from '../../electron/engine/model/types'
import { localServer, type LocalServerSpec } from '../../electron/engine/peers/llama-server-process'
import { argmax } from '../../electron/engine/sampling/distribution'
import { DEFAULT_WARP } from '../../electron/engine/sampling/warp'
import { medianInterval, type Cell, type Interval } from '../../electron/engine/stats/bootstrap'

export interface TokenSplit {
  /** Generated tokens timed (every prompt's). */
  tokens: number
  /** Tokens that went through the addon path; a step through node-llama-cpp's own path is not split. */
  direct: number
  stepMs: Interval | null
  decodeMs: Interval | null
  readMs: Interval | null
  rereadMs: Interval | null
  engineMs: Interval | null
  /** llama-server's own time per generated token; null without a llama-server binary. */
  serverMs: Interval | null
}

/**
 * The awaited addon calls of an evaluation, as the session's direct path makes them: on a libuv worker, or on the JS
 * thread with SpecLab's addon patch (decodeBatchNow / sampleTokenNow, where the build has them), and the reads through
 * its top-k read where the build has it (topLogits / topLogitsNow).
 */
const DECODES = ['decodeBatch', 'decodeBatchNow'] as const
const READS = ['sampleToken', 'sampleTokenNow', 'topLogits', 'topLogitsNow'] as const
type AddonCall = (...args: unknown[]) => Promise<unknown>
type TimedAddon = Partial<Record<(typeof DECODES)[number] | (typeof READS)[number], AddonCall>>

/** One token's times, filled by the wrappers while its `append` runs. */
interface TokenTimes {
  decode: number
  read: number
  reread: number
  reads: number
}

/**
 * Wraps the context's addon calls so each one's awaited time lands in `current()`; returns the function that removes
 * the wrappers. The first read after a decode is also repeated once and timed (the reread).
 */
function timeAddonCalls(context: LlamaContext, current: () => TokenTimes | null): () => void {
  const addon = (context as unknown as { _ctx: TimedAddon })._ctx
  // The addon's methods are read-only properties of its prototype: own properties of the instance shadow them.
  const shadow = (name: keyof TimedAddon, value: AddonCall) => Object.defineProperty(addon, name, { value, configurable: true, writable: true })
  const wrapped: (keyof TimedAddon)[] = []
  /** Shadows each of `names` the build has with `timed(its own call)`. */
  const wrap = (names: readonly (keyof TimedAddon)[], timed: (call: AddonCall) => AddonCall) => {
    for (const name of names) {
      const call = addon[name]
      if (typeof call !== 'function') continue
      wrapped.push(name)
      shadow(name, timed(call))
    }
  }
  wrap(DECODES, (decode) =>
    async function (this: TimedAddon, ...args: unknown[]) {
      const started = performance.now()
      await decode.apply(this, args)
      const times = current()
      if (times) times.decode += performance.now() - started
    }
  )
  wrap(READS, (read) =>
    async function (this: TimedAddon, ...args: unknown[]) {
      const started = performance.now()
      const result = await read.apply(this, args)
      const times = current()
      if (times) {
        times.read += performance.now() - started
        if (times.reads++ === 0) {
          const again = performance.now()
          await read.apply(this, args)
          times.reread += performance.now() - again
        }
      }
      return result
    }
  )
  return () => {
    for (const name of wrapped) delete addon[name]
  }
}

/** SpecLab's greedy tokens from each prompt, one evaluation per token, each split as the header says. */
async function speclabCells(target: LlamaCppModel, prompts: readonly (readonly number[])[], maxTokens: number) {
  const cells = { step: [] as Cell[], decode: [] as Cell[], read: [] as Cell[], reread: [] as Cell[], engine: [] as Cell[] }
  let current: TokenTimes | null = null
  let direct = 0
  const directEvaluations = () => target.direct?.evaluations ?? 0
  const restore = timeAddonCalls(target.context, () => current)
  try {
    for (const [prompt, tokens] of prompts.entries()) {
      const session = await target.createSession(DEFAULT_WARP)
      try {
        let distribution = (await session.append(tokens, tokens.length - 1))[0]!
        for (let i = 0; i < maxTokens - 1; i++) {
          const times: TokenTimes = { decode: 0, read: 0, reread: 0, reads: 0 }
          current = times
          const before = directEvaluations()
          const started = performance.now()
          distribution = (await session.append([argmax(distribution)], 0))[0]!
          const step = performance.now() - started - times.reread
          current = null
          cells.step.push({ prompt, repeat: i, value: step })
          // A step node-llama-cpp's own path took (controlledEvaluate: other calls around the same two) is not split.
          if (directEvaluations() === before) continue
          direct++
          cells.decode.push({ prompt, repeat: i, value: times.decode })
          cells.read.push({ prompt, repeat: i, value: times.read })
          cells.reread.push({ prompt, repeat: i, value: times.reread })
          cells.engine.push({ prompt, repeat: i, value: step - times.decode - times.read })
        }
      } finally {
        await session.dispose()
      }
    }
  } finally {
    restore()
  }
  return { cells, direct }
}

/** llama-server's own time per generated token for each prompt (see the header); [] without a binary. */
async function serverCells(spec: LocalServerSpec | null, prompts: readonly (readonly number[])[], maxTokens: number): Promise<Cell[]> {
  if (!spec) return []
  const server = await localServer(spec)
  const request = (prompt: readonly number[]) => ({ prompt, nPredict: maxTokens, temperature: 0, topK: 1, topP: 1, seed: 1 })
  await server.complete(request(prompts[0]!)) // warm-up: the server's first request allocates its buffers
  const cells: Cell[] = []
  for (const [prompt, tokens] of prompts.entries()) {
    const { timings } = await server.complete(request(tokens))
    if (timings.predictedN >= 2) cells.push({ prompt, repeat: 0, value: timings.predictedMs / (timings.predictedN - 1) })
  }
  return cells
}

/**
 * The split of SpecLab's `ar` token beside llama-server's token, on `prompts` with `maxTokens` generated each. `server`
 * is the llama-server SpecLab's `llama-server:ar` arm runs (null: none); the target evaluates at its phase threads.
 */
export async function measureTokenSplit(target: LanguageModel, prompts: readonly (readonly number[])[], maxTokens: number, server: LocalServerSpec | null): Promise<TokenSplit> {
  const model = target as Partial<LlamaCppModel>
  if (!model.context || !model.createSession) throw new Error('the token split needs a GGUF target')
  const { cells, direct } = await speclabCells(model as LlamaCppModel, prompts, maxTokens)
  return {
    tokens: cells.step.length,
    direct,
    stepMs: medianInterval(cells.step),
    decodeMs: medianInterval(cells.decode),
    readMs: medianInterval(cells.read),
    rereadMs: medianInterval(cells.reread),
    engineMs: medianInterval(cells.engine),
    serverMs: medianInterval(await serverCells(server, prompts, maxTokens))
  }
}
