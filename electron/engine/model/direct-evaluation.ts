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
 * The samplers: configured once per session with what `controlledEvaluate` resolves for the same request
 * (`_resolveSamplerConfig`). A chain returns the same logits whether fresh or reused: top-k and temperature 1 keep
 * no state, and the seeded `dist` at the end only picks the token this path ignores.
 */
import { withLock } from 'lifecycle-utils'
import type { LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp'

/** The addon calls this path makes (node-llama-cpp 3.22.1's AddonContext and AddonSampler). */
interface AddonContext {
  initBatch(size: number): void
  addToBatch(sequenceId: number, firstTokenSequenceIndex: number, tokens: Uint32Array, logitIndexes: Uint32Array): Uint32Array
  setThreads(threads: number): void
  decodeBatch(): Promise<void>
  sampleToken(
    batchLogitIndex: number,
    sampler: AddonSampler,
    probabilities: boolean,
    confidence: boolean,
    logits: boolean | SampledLogits,
    totalLogitWeight: boolean
  ): Promise<[number, unknown, unknown, number[] | undefined, unknown]>
}
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

export class DirectEvaluation {
  /** Evaluations this path made (the tests count which evaluations took it). */
  evaluations = 0

  private constructor(
    private readonly context: LlamaContext,
    private readonly addon: AddonContext,
    private readonly samplerClass: new (model: unknown) => AddonSampler,
    private readonly nativeModel: unknown
  ) {}

  /** The direct path for `context`, or null where node-llama-cpp lacks the internals it uses or it is turned off. */
  static of(context: LlamaContext, model: LlamaModel, env: NodeJS.ProcessEnv = process.env): DirectEvaluation | null {
    if (!directEvaluationEnabled(env)) return null
    const addon = (context as unknown as Partial<ContextInternals>)._ctx
    const internals = model as unknown as Partial<ModelInternals>
    const samplerClass = internals._llama?._bindings?.AddonSampler
    const calls = ['initBatch', 'addToBatch', 'setThreads', 'decodeBatch', 'sampleToken'] as const
    if (!addon || !calls.every((call) => typeof addon[call] === 'function') || typeof samplerClass !== 'function' || !internals._model) return null
    return new DirectEvaluation(context, addon, samplerClass, internals._model)
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
   * per position; null where llama.cpp returned none), as `controlledEvaluate` would have returned them.
   */
  async evaluate(
    sequence: LlamaContextSequence,
    tokens: readonly number[],
    from: number,
    samplers: SessionSamplers,
    threads: number
  ): Promise<(PositionLogits | null)[]> {
    const internals = sequence as unknown as SequenceInternals
    const logitIndexes = Uint32Array.from({ length: Math.max(0, tokens.length - from) }, (_, i) => from + i)
    return withLock([this.context, 'context'], async () => {
      if ((this.context as unknown as ContextInternals)._disposed || sequence.disposed) throw new Error('the model was unloaded during an evaluation')
      this.addon.initBatch(tokens.length)
      const batchIndexes = this.addon.addToBatch(internals._sequenceId, internals._nextTokenIndex, Uint32Array.from(tokens), logitIndexes)
      this.addon.setThreads(threads)
      await this.addon.decodeBatch()
      this.evaluations++
      // The sequence now holds the tokens (node-llama-cpp's _decodeTokens keeps the same two fields).
      internals._nextTokenIndex += tokens.length
      internals._contextTokens = internals._contextTokens.concat(tokens)
      // Every position is read at once, each with a sampler of its own (SessionSamplers).
      const positions = samplers.take(batchIndexes.length)
      const read = await Promise.all([...batchIndexes].map((batchIndex, i) => this.addon.sampleToken(batchIndex, positions[i]!, false, false, samplers.logits, false)))
      return read.map(([, , , pairs]) => (pairs ? unpair(pairs) : null))
    })
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
