/**
 * A session's evaluation through node-llama-cpp's addon, below its `controlledEvaluate`.
 *
 * Why: `controlledEvaluate` wraps each evaluation in JS work of its own — a new native sampler per call, the
 * sequence's evaluation lock, the context's batch queue and its dispatch on the next event-loop turn, per-position
 * sampler configs resolved again, Maps — about 0.3 ms per target token on this machine (`npm run profile:decode`,
 * 462 ms of node-llama-cpp JS over 1,536 tokens; 47 ms through this path; docs/performance.md, "The evaluation
 * path"): 3–6 % of a target token and a large share of a small draft's,
 * paid once per draft token and once per verification. This path makes the same addon calls node-llama-cpp makes
 * for one sequence's batch (`initBatch`, `addToBatch`, `setThreads`, `decodeBatch`, then `sampleToken` per requested
 * position with the same sampler configuration), under the same context lock (lifecycle-utils' `withLock` on
 * `[context, 'context']`: one copy of lifecycle-utils serves SpecLab and node-llama-cpp — a direct dependency, kept
 * external by the Electron build — and a second copy would show as the interleaving test failing), and keeps the sequence's own
 * bookkeeping (`_nextTokenIndex`, `_contextTokens`) as node-llama-cpp's `_decodeTokens` does, so its erase, copy and
 * every later `controlledEvaluate` see the same state.
 *
 * When node-llama-cpp's own path runs instead (`usable` false): the internals are missing (another node-llama-cpp
 * version: feature-detected, and test/integration/direct-evaluation-gguf.test.ts fails so the pin is noticed); the
 * sequence has a token predictor (nlc-draft, nlc-lookup) or needs checkpoints (samplersFor); the
 * tokens are none, exceed the batch or the context's free cells (node-llama-cpp splits batches and shifts the context); or
 * another evaluation is in flight on the context — node-llama-cpp then decodes them together as one batch, which is
 * what the caller's concurrency asks for.
 *
 * `SPECLAB_DIRECT_EVALUATION=0` turns the path off (every evaluation through `controlledEvaluate`): a switch for
 * comparing the two paths and a way out should a node-llama-cpp build behave differently.
 *
 * On the JS thread: SpecLab's own CPU build carries a patch to the addon (addon-patch.ts) with `decodeBatchNow` and
 * `sampleTokenNow`, the same jobs run on the calling thread. An evaluation of at most JS_THREAD_MAX_TOKENS tokens
 * that is alone in the process (no other model evaluating: nothing it could overlap with) runs there — no hand-off
 * to a libuv worker and back per call, and one OpenMP master for all of them, as llama-server decodes. Measured
 * (docs/performance.md, "On the JS thread"; 2 cores, three alternations under load): `ar` at two threads 0.86–0.89×
 * → 0.90–0.91× llama-server's, `sd` 0.93–0.95× → 0.96–0.99× its draft. Anything else — evaluations that overlap
 * (PEARL, the parallel options), long prompts — goes to a worker as before, and so does everything with a binary
 * without the patch (feature-detected).
 * `SPECLAB_JS_THREAD_EVALUATION=0` keeps every evaluation on the workers.
 *
 * The samplers: configured once per session with what `controlledEvaluate` resolves for the same request
 * (`_resolveSamplerConfig`). A chain returns the same logits whether fresh or reused: top-k and temperature 1 keep
 * no state, and the seeded `dist` at the end only picks the token this path ignores.
 *
 * The top-k read: SpecLab's CPU build also has `topLogits` / `topLogitsNow` (addon-patch.ts), the k highest raw logits
 * of a position in one pass over llama.cpp's logits — what the chain above returns for a top-k request (top-k,
 * temperature 1, `dist`), without copying the whole vocabulary into the sampler's candidates and sorting it. Where the
 * binary has them every top-k request reads through them, on the JS thread and on workers alike, so both paths see the
 * same order among equal logits (the lower id first, as llama.cpp's greedy pick); a whole-vocabulary request keeps
 * `sampleToken`. Measured at 131,072 tokens: docs/performance.md, "The top-k read".
 */
import { withLock } from 'lifecycle-utils'
import type { LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp'

/** The addon calls this path makes (node-llama-cpp 3.22.1's AddonContext and AddonSampler). */
interface AddonContext {
  initBatch(size: number): void
  addToBatch(sequenceId: number, firstTokenSequenceIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array
  setThreads(threads: number): void
  decodeBatch(): Promise<void>
  sampleToken: SampleToken
  /** SpecLab's addon patch (addon-patch.ts): the same calls, run on the calling thread. */
  decodeBatchNow?(): Promise<void>
  sampleTokenNow?: SampleToken
  /** SpecLab's addon patch: a position's k highest raw logits as [id, logit, …], highest first; null without logits. */
  topLogits?: TopLogits
  topLogitsNow?: TopLogits
}
type TopLogits = (batchLogitIndex: number, k: number) => Promise<number[] | null>
type SampleToken = (
  batchLogitIndex: number,
  sampler: AddonSampler,
  probabilities: boolean,
  confidence: boolean,
  logits: boolean | SampledLogits,
  totalLogitWeight: boolean
) => Promise<[number, unknown, unknown, number[] | undefined, unknown]>
/** `sampleToken`'s logits request: true (every logit), or [filter ids, highest, lowest, selected, top-k]. */
type SampledLogits = true | [number[], boolean, boolean, boolean, number]
interface AddonSampler {
  applyConfig(config: object): void
  dispose(): void
}
interface SequenceInternals {
  _sequenceId: number
  _nextTokenIndex: number
  _contextTokens: number[]
  _tokenPredictor?: unknown
  _disposed?: boolean
  _resolveSamplerConfig(options: object): object
}
interface ContextInternals {
  _ctx: AddonContext
  _disposed?: boolean
}
interface ModelInternals {
  _model: unknown
  _llama: { _bindings: { AddonSampler: new (model: unknown) => AddonSampler } }
}

/** What to read per requested position: the top-k logits (sorted), or every logit. */
export type LogitsRequest = { includeTop: number; options: object } | { all: true }

export interface PositionLogits {
  ids: Int32Array
  values: Float64Array
}

/**
 * The largest evaluation run on the JS thread: it blocks the engine's event loop meanwhile (its RPC, a cancel), so a
 * long prompt goes to a worker. 32 covers every verification of γ ≤ 31 and a round's draft catch-up; a 32-token
 * batch of the inflated 78M target takes about 0.1 s on 2 cores.
 */
export const JS_THREAD_MAX_TOKENS = 32

/**
 * Evaluations on the JS thread settle their promises before they return, so a decode made of them would run to its
 * end in microtasks, never letting the event loop turn: no I/O (a cancel, an RPC, a socket closed by a llama-server
 * between requests, which fetch would then reuse: "other side closed"), no timers. So before such an evaluation the
 * loop turns once (setImmediate: one poll of I/O, a few microseconds) whenever EVENT_LOOP_TURN_MS have passed since
 * the last turn — about once per target token here.
 */
export const EVENT_LOOP_TURN_MS = 5
let lastTurn = 0

async function turnTheEventLoop(): Promise<void> {
  if (performance.now() - lastTurn < EVENT_LOOP_TURN_MS) return
  await new Promise((resolve) => setImmediate(resolve))
  lastTurn = performance.now()
}

export class DirectEvaluation {
  /** Evaluations this path made, and how many of them on the JS thread (the tests count which path each took). */
  evaluations = 0
  jsThreadEvaluations = 0

  private constructor(
    private readonly context: LlamaContext,
    private readonly addon: AddonContext,
    private readonly samplerClass: new (model: unknown) => AddonSampler,
    private readonly nativeModel: unknown,
    /** The binary has SpecLab's calls on the calling thread and they are not turned off. */
    readonly jsThread: boolean,
    /** The binary has SpecLab's top-k read (topLogits, topLogitsNow): top-k requests skip the sampler chain. */
    readonly topLogitsRead: boolean
  ) {}

  /** The direct path for `context`, or null where node-llama-cpp lacks the internals it uses or it is turned off. */
  static of(context: LlamaContext, model: LlamaModel, env: NodeJS.ProcessEnv = process.env): DirectEvaluation | null {
    if (!directEvaluationEnabled(env)) return null
    const addon = (context as unknown as Partial<ContextInternals>)._ctx
    const internals = model as unknown as Partial<ModelInternals>
    const samplerClass = internals._llama?._bindings?.AddonSampler
    const calls = ['initBatch', 'addToBatch', 'setThreads', 'decodeBatch', 'sampleToken'] as const
    if (!addon || !calls.every((call) => typeof addon[call] === 'function') || typeof samplerClass !== 'function' || !internals._model) return null
    return new DirectEvaluation(context, addon, samplerClass, internals._model, jsThreadCallsUsable(addon, env), topLogitsReadUsable(addon, env))
  }

  /** Whether `tokens` tokens can be evaluated on `sequence` by this path (see the file comment). */
  usable(sequence: LlamaContextSequence, tokens: number): boolean {
    const internals = sequence as unknown as Partial<SequenceInternals>
    return (
      typeof internals._sequenceId === 'number' &&
      typeof internals._nextTokenIndex === 'number' &&
      Array.isArray(internals._contextTokens) &&
      internals._tokenPredictor == null &&
      !sequence.disposed &&
      tokens >= 1 &&
      tokens <= this.context.batchSize &&
      internals._nextTokenIndex + tokens <= this.context.contextSize - 1
    )
  }

  /**
   * The samplers of a session on `sequence` that reads `request` per position (see SessionSamplers); null where the
   * session cannot take this path: its sequence needs checkpoints (node-llama-cpp's own rule — hybrid, recurrent and
   * sliding-window models — whose checkpoints it takes after its batches), or lacks the sampler resolution.
   */
  samplersFor(sequence: LlamaContextSequence, request: LogitsRequest): SessionSamplers | null {
    const resolve = (sequence as unknown as Partial<SequenceInternals>)._resolveSamplerConfig
    if (sequence.needsCheckpoints || typeof resolve !== 'function') return null
    const config = resolve.call(sequence, 'all' in request ? {} : request.options)
    const logits: SampledLogits = 'all' in request ? true : [[], false, false, false, request.includeTop]
    return new SessionSamplers(() => {
      const sampler = new this.samplerClass(this.nativeModel)
      sampler.applyConfig(config)
      return sampler
    }, logits)
  }

  /**
   * Evaluates `tokens` on `sequence` with `threads` and returns the logits of the positions from `from` on (one entry
   * per position; null where llama.cpp returned none), as `controlledEvaluate` would have returned them. On the JS
   * thread where the binary can and `aloneInProcess` (no other evaluation in flight in this process) says it may.
   */
  async evaluate(
    sequence: LlamaContextSequence,
    tokens: readonly number[],
    from: number,
    samplers: SessionSamplers,
    threads: number,
    aloneInProcess: boolean
  ): Promise<(PositionLogits | null)[]> {
    const internals = sequence as unknown as SequenceInternals
    const logitIndexes = Uint32Array.from({ length: Math.max(0, tokens.length - from) }, (_, i) => from + i)
    const onJsThread = this.jsThread && aloneInProcess && tokens.length <= JS_THREAD_MAX_TOKENS
    if (onJsThread) await turnTheEventLoop()
    const decode = onJsThread ? () => this.addon.decodeBatchNow!() : () => this.addon.decodeBatch()
    const sample: SampleToken = onJsThread ? (...args) => this.addon.sampleTokenNow!(...args) : (...args) => this.addon.sampleToken(...args)
    return withLock([this.context, 'context'], async () => {
      if ((this.context as unknown as ContextInternals)._disposed || sequence.disposed) throw new Error('the model was unloaded during an evaluation')
      this.addon.initBatch(tokens.length)
      const batchIndexes = this.addon.addToBatch(internals._sequenceId, internals._nextTokenIndex, Uint32Array.from(tokens), logitIndexes)
      this.addon.setThreads(threads)
      await decode()
      this.evaluations++
      if (onJsThread) this.jsThreadEvaluations++
      // The sequence now holds the tokens (node-llama-cpp's _decodeTokens keeps the same two fields).
      internals._nextTokenIndex += tokens.length
      internals._contextTokens = internals._contextTokens.concat(tokens)
      // Every position is read at once — with SpecLab's top-k read, or each with a sampler of its own
      // (SessionSamplers); on the JS thread one after the other, each settled before the next starts.
      const read = await this.read([...batchIndexes], samplers, onJsThread, sample)
      return read.map((pairs) => (pairs ? unpair(pairs) : null))
    })
  }

  /**
   * The [id, logit, …] lists of the batch positions `batchIndexes`: a top-k request through SpecLab's top-k read where
   * the binary has it (the same k raw logits, highest first, that the sampler chain returns; addon-patch.ts), else
   * through `sample` with the session's samplers.
   */
  private async read(batchIndexes: number[], samplers: SessionSamplers, onJsThread: boolean, sample: SampleToken): Promise<(number[] | null | undefined)[]> {
    const topK = this.topLogitsRead ? samplers.topK : null
    if (topK !== null) {
      return Promise.all(batchIndexes.map((batchIndex) => (onJsThread ? this.addon.topLogitsNow!(batchIndex, topK) : this.addon.topLogits!(batchIndex, topK))))
    }
    const positions = samplers.take(batchIndexes.length)
    const read = await Promise.all(batchIndexes.map((batchIndex, i) => sample(batchIndex, positions[i]!, false, false, samplers.logits, false)))
    return read.map(([, , , pairs]) => pairs)
  }
}

/**
 * A session's samplers, one per position of its largest evaluation so far, all configured alike. node-llama-cpp reads
 * a batch's positions one after the other with one sampler (each read a hand-off to a libuv worker and back); the
 * addon copies a position's logits into the sampler's own buffer under the context's sampling mutex and runs the chain
 * outside it, so reads with distinct samplers may run at once on libuv's workers — a verification of γ + 1 positions
 * then waits for about one read instead of γ + 1.
 */
export class SessionSamplers {
  private readonly samplers: AddonSampler[] = []

  constructor(
    private readonly make: () => AddonSampler,
    /** What each read returns, as `sampleToken` takes it: every logit, or the top-k (sorted). */
    readonly logits: SampledLogits
  ) {}

  /** The k of a top-k request; null where every logit is read. */
  get topK(): number | null {
    return Array.isArray(this.logits) ? this.logits[4] : null
  }

  /** `count` samplers, made as needed. */
  take(count: number): AddonSampler[] {
    while (this.samplers.length < count) this.samplers.push(this.make())
    return this.samplers.slice(0, count)
  }

  dispose(): void {
    for (const sampler of this.samplers) sampler.dispose()
    this.samplers.length = 0
  }
}

/** Whether `SPECLAB_DIRECT_EVALUATION=0` leaves every evaluation to `controlledEvaluate` (recorded with every run). */
export function directEvaluationEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.SPECLAB_DIRECT_EVALUATION !== '0'
}

/**
 * Whether evaluations alone in the process run on the JS thread with `calls` (an AddonContext, or its class's
 * prototype): SpecLab's two calls are there (addon-patch.ts), and neither `SPECLAB_DIRECT_EVALUATION=0` nor
 * `SPECLAB_JS_THREAD_EVALUATION=0` turns the path off.
 */
function jsThreadCallsUsable(calls: Partial<AddonContext> | undefined, env: NodeJS.ProcessEnv): boolean {
  return (
    directEvaluationEnabled(env) &&
    env.SPECLAB_JS_THREAD_EVALUATION !== '0' &&
    typeof calls?.decodeBatchNow === 'function' &&
    typeof calls.sampleTokenNow === 'function'
  )
}

/** Whether top-k requests of the direct path use SpecLab's top-k read with `calls` (addon-patch.ts). */
function topLogitsReadUsable(calls: Partial<AddonContext> | undefined, env: NodeJS.ProcessEnv): boolean {
  return directEvaluationEnabled(env) && typeof calls?.topLogits === 'function' && typeof calls.topLogitsNow === 'function'
}

/** The runtime `llama`'s AddonContext prototype: what its contexts will have, before any context exists. */
const addonContextOf = (llama: unknown) => (llama as { _bindings?: { AddonContext?: { prototype?: Partial<AddonContext> } } })._bindings?.AddonContext?.prototype

/** jsThreadCallsUsable for the runtime `llama` (recorded with every run). */
export function jsThreadEvaluationOf(llama: unknown, env: NodeJS.ProcessEnv = process.env): boolean {
  return jsThreadCallsUsable(addonContextOf(llama), env)
}

/** topLogitsReadUsable for the runtime `llama` (recorded with every run). */
export function topLogitsReadOf(llama: unknown, env: NodeJS.ProcessEnv = process.env): boolean {
  return topLogitsReadUsable(addonContextOf(llama), env)
}

/** The addon's flat [id, logit, id, logit, …] list as ids and values, in its order. */
function unpair(pairs: readonly number[]): PositionLogits {
  const ids = new Int32Array(pairs.length >> 1)
  const values = new Float64Array(pairs.length >> 1)
  for (let i = 0; i < ids.length; i++) {
    ids[i] = pairs[2 * i]
    values[i] = pairs[2 * i + 1]
  }
  return { ids, values }
}
