/**
 * A session's evaluation through node-llama-cpp's addon, below its `controlledEvaluate`.
 *
 * Why: `controlledEvaluate` wraps each evaluation in JS work of its own — a new native sampler per call, the
 * sequence's evaluation lock, the context's batch queue and its dispatch on the next event-loop turn, per-position
 * sampler configs resolved again, Maps — about 0.2 ms per call on this machine (a 260K draft token: 0.60–0.72 ms
 * through it against 0.44–0.49 ms through the addon; the inflated target at two threads: 7.3 against 6.6–7.0 ms;
 * docs/performance.md, "Where a token's time goes"). That is 3–6 % of a target token and a third of a draft token,
 * paid once per draft token and once per verification. This path makes the same addon calls node-llama-cpp makes
 * for one sequence's batch (`initBatch`, `addToBatch`, `setThreads`, `decodeBatch`, then `sampleToken` per requested
 * position with the same sampler configuration), under the same context lock, and keeps the sequence's own
 * bookkeeping (`_nextTokenIndex`, `_contextTokens`) as node-llama-cpp's `_decodeTokens` does, so its erase, copy and
 * every later `controlledEvaluate` see the same state.
 *
 * When node-llama-cpp's own path runs instead (`usable` false): the internals are missing (another node-llama-cpp
 * version: feature-detected, and test/integration/direct-evaluation-gguf.test.ts fails so the pin is noticed); the
 * sequence has a token predictor (nlc-draft, nlc-lookup) or needs checkpoints (hybrid, recurrent or SWA models); the
 * tokens exceed the batch or the context's free cells (node-llama-cpp splits batches and shifts the context); or
 * another evaluation is in flight on the context — node-llama-cpp then decodes them together as one batch, which is
 * what the caller's concurrency asks for.
 *
 * `SPECLAB_DIRECT_EVALUATION=0` turns the path off (every evaluation through `controlledEvaluate`): a switch for
 * comparing the two paths and a way out should a node-llama-cpp build behave differently.
 *
 * The sampler: one per session, configured once with what `controlledEvaluate` resolves for the same request
 * (`_resolveSamplerConfig`). Its chain returns the same logits whether fresh or reused: top-k and temperature 1 keep
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
    logits: boolean | [number[], boolean, boolean, boolean, number],
    totalLogitWeight: boolean
  ): Promise<[number, unknown, unknown, number[] | undefined, unknown]>
}
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
  /** Evaluations this path made (peer-bench and the tests report how many evaluations took it). */
  evaluations = 0

  private constructor(
    private readonly context: LlamaContext,
    private readonly addon: AddonContext,
    private readonly samplerClass: new (model: unknown) => AddonSampler,
    private readonly nativeModel: unknown,
    /** Hybrid, recurrent and SWA models keep checkpoints that node-llama-cpp takes after its batches. */
    private readonly needsCheckpoints: boolean
  ) {}

  /** The direct path for `context`, or null where node-llama-cpp lacks the internals it uses or it is turned off. */
  static of(context: LlamaContext, model: LlamaModel, env: NodeJS.ProcessEnv = process.env): DirectEvaluation | null {
    if (!directEvaluationEnabled(env)) return null
    const addon = (context as unknown as Partial<ContextInternals>)._ctx
    const internals = model as unknown as Partial<ModelInternals>
    const samplerClass = internals._llama?._bindings?.AddonSampler
    const calls = ['initBatch', 'addToBatch', 'setThreads', 'decodeBatch', 'sampleToken'] as const
    if (!addon || !calls.every((call) => typeof addon[call] === 'function') || typeof samplerClass !== 'function' || !internals._model) return null
    const insights = model.fileInsights
    const needsCheckpoints = insights.isHybrid || insights.isRecurrent || insights.swaSize != null
    return new DirectEvaluation(context, addon, samplerClass, internals._model, needsCheckpoints)
  }

  /** Whether `tokens` tokens can be evaluated on `sequence` by this path (see the file comment). */
  usable(sequence: LlamaContextSequence, tokens: number): boolean {
    const internals = sequence as unknown as Partial<SequenceInternals>
    return (
      !this.needsCheckpoints &&
      typeof internals._sequenceId === 'number' &&
      typeof internals._nextTokenIndex === 'number' &&
      Array.isArray(internals._contextTokens) &&
      typeof internals._resolveSamplerConfig === 'function' &&
      internals._tokenPredictor == null &&
      !sequence.disposed &&
      tokens <= this.context.batchSize &&
      internals._nextTokenIndex + tokens <= this.context.contextSize - 1
    )
  }

  /** A sampler configured as `controlledEvaluate` would configure it for `request` on `sequence`. */
  sampler(sequence: LlamaContextSequence, request: LogitsRequest): AddonSampler {
    const sampler = new this.samplerClass(this.nativeModel)
    const options = 'all' in request ? {} : request.options
    sampler.applyConfig((sequence as unknown as SequenceInternals)._resolveSamplerConfig(options))
    return sampler
  }

  /**
   * Evaluates `tokens` on `sequence` with `threads` and returns the logits of the positions from `from` on (one entry
   * per position; null where llama.cpp returned none), as `controlledEvaluate` would have returned them.
   */
  async evaluate(
    sequence: LlamaContextSequence,
    tokens: readonly number[],
    from: number,
    sampler: AddonSampler,
    request: LogitsRequest,
    threads: number
  ): Promise<(PositionLogits | null)[]> {
    const internals = sequence as unknown as SequenceInternals
    const logitIndexes = Uint32Array.from({ length: Math.max(0, tokens.length - from) }, (_, i) => from + i)
    const logits: [number[], boolean, boolean, boolean, number] | true = 'all' in request ? true : [[], false, false, false, request.includeTop]
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
      const out: (PositionLogits | null)[] = []
      for (const batchIndex of batchIndexes) {
        const [, , , pairs] = await this.addon.sampleToken(batchIndex, sampler, false, false, logits, false)
        out.push(pairs ? unpair(pairs) : null)
      }
      return out
    })
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
