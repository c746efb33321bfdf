/**
 * The trace as language models (the replay's adapters at the model seam, model/types.ts): a recorded target and a
 * recorded draft for ONE prompt, whose sessions answer every context the trace holds with the distribution recorded
 * there. The catalog's real decoders, policies, drafters and verifier then run on them unchanged
 * (replay/replay.ts), so a replayed round makes the decisions a real run makes.
 *
 * Which contexts a greedy run asks for (terms: replay/trace.ts):
 * - the target: prompt + tokens[<i] for the positions it commits (on the trace: p_i), and, in a verification batch,
 *   contexts after a rejected draft token. The greedy verifier stops at the first rejection and never reads those,
 *   so they get OFF_TRACE, a distribution on the id −1: should anything read it, −1 reaches the output and the
 *   replay's output check (replay.ts) fails.
 * - the draft: prompt + tokens[<i] (q_i), or, after its own token x_1 ≠ tokens[i] and j − 1 further greedy tokens,
 *   rollouts[i][j − 1]. A context the trace does not hold (a rollout longer than recorded, a sampled draft token)
 *   throws TraceGapError rather than guessing.
 */
import type { LanguageModel, ModelInfo, ModelSession, SessionOptions, TokenKind } from '../model/types'
import type { Distribution } from '../sampling/distribution'
import type { WarpConfig } from '../sampling/warp'
import type { DraftTrace, PromptTrace, TracedModel } from './trace'

export const OFF_TRACE: Distribution = { ids: Int32Array.of(-1), probs: Float64Array.of(1) }

/** The replay needed a context the trace did not record. */
export class TraceGapError extends Error {}

/** What a recorded model answers after the context `tokens` (full sequence, prompt included). */
type Answer = (tokens: readonly number[], onTrace: number) => Distribution

function infoOf(model: TracedModel): ModelInfo {
  return {
    path: model.path,
    name: model.name,
    architecture: 'trace',
    vocabularySize: model.vocabularySize,
    bos: model.bos,
    eos: model.eos,
    parameters: null,
    quantization: null,
    sizeBytes: null
  }
}

/** What a tokenizer's model says about its tokenizer (vocabulary-bytes.ts and the SPM / BPE rules read these). */
const tokenizerFacts = (info: ModelInfo): Partial<ModelInfo> => ({
  vocabularyType: info.vocabularyType,
  tokenizerModel: info.tokenizerModel,
  addBos: info.addBos,
  addEos: info.addEos
})

/**
 * A LanguageModel over recorded answers. `full` = prompt + the trace's tokens; a session tracks `onTrace`, how many
 * of its leading tokens agree with `full`, so each answer costs O(1) on the trace.
 */
export class RecordedModel implements LanguageModel {
  readonly info: ModelInfo
  /** Whether a session asked for the whole-vocabulary entropy (a real draft would then transfer every logit: it costs). */
  fullEntropyAsked = false
  /** The tokenizer's token kinds, when a live tokenizer was given and has them. */
  readonly tokenKind?: (token: number) => TokenKind
  private readonly ends: Set<number>

  /**
   * `tokenizer`: the live model whose tokenizer (tokenize, detokenize, token texts and kinds, tokenizer facts) this
   * one lends — what the cross-vocabulary methods read of the target to map text between vocabularies; its
   * distributions still come from the trace alone. Absent: a model without a tokenizer.
   */
  constructor(
    model: TracedModel,
    private readonly warp: WarpConfig,
    private readonly full: readonly number[],
    private readonly answer: Answer,
    private readonly tokenizer?: LanguageModel
  ) {
    this.info = tokenizer ? { ...infoOf(model), ...tokenizerFacts(tokenizer.info) } : infoOf(model)
    this.ends = new Set(model.endTokens)
    const kinds = tokenizer?.tokenKind?.bind(tokenizer)
    if (kinds) this.tokenKind = kinds
  }

  tokenize(text: string): number[] {
    if (!this.tokenizer) throw new Error('a recorded model has no tokenizer')
    return this.tokenizer.tokenize(text)
  }
  detokenize(tokens: readonly number[]): string {
    if (!this.tokenizer) throw new Error('a recorded model has no tokenizer')
    return this.tokenizer.detokenize(tokens)
  }
  tokenText(token: number): string {
    return this.tokenizer ? this.tokenizer.tokenText(token) : ''
  }
  isEndOfGeneration(token: number): boolean {
    return this.ends.has(token)
  }
  async logProbabilities(): Promise<number[]> {
    throw new Error('a recorded model has no log-probabilities')
  }
  async dispose(): Promise<void> {}

  async createSession(warp: WarpConfig, options?: SessionOptions): Promise<ModelSession> {
    if (options?.fullEntropy) this.fullEntropyAsked = true
    // The trace holds distributions under one warp; replaying another would silently mix the two.
    if (warp.temperature !== this.warp.temperature || warp.topK !== this.warp.topK || warp.topP !== this.warp.topP)
      throw new Error(`the trace was recorded with ${JSON.stringify(this.warp)}, not ${JSON.stringify(warp)}`)
    const tokens: number[] = []
    let onTrace = 0
    const { full, answer } = this
    return {
      tokens,
      async append(appended, distributionsFrom) {
        const out: Distribution[] = []
        appended.forEach((token, k) => {
          if (onTrace === tokens.length && full[tokens.length] === token) onTrace++
          tokens.push(token)
          if (k >= distributionsFrom) out.push(answer(tokens, onTrace))
        })
        return out
      },
      async truncate(length) {
        tokens.length = Math.min(tokens.length, length)
        onTrace = Math.min(onTrace, tokens.length)
      },
      async dispose() {}
    }
  }
}

/** The target of one prompt: p_i on the trace, OFF_TRACE elsewhere; `tokenizer` lends it a live tokenizer. */
export function recordedTarget(model: TracedModel, warp: WarpConfig, prompt: PromptTrace, tokenizer?: LanguageModel): RecordedModel {
  const full = [...prompt.promptTokens, ...prompt.tokens]
  const start = prompt.promptTokens.length
  return new RecordedModel(
    model,
    warp,
    full,
    (tokens, onTrace) => {
      const i = tokens.length - start
      return onTrace === tokens.length && i >= 0 && i < prompt.target.length ? prompt.target[i] : OFF_TRACE
    },
    tokenizer
  )
}

/**
 * A context nobody's decision reads, answered in `lenient` mode: certainty on the smallest id that does not end the
 * text, so a guess made there neither ends the round early nor matches anything the verifier accepts.
 */
function fillerOf(model: TracedModel): Distribution {
  const ends = new Set(model.endTokens)
  let id = 0
  while (ends.has(id)) id++
  return { ids: Int32Array.of(id), probs: Float64Array.of(1) }
}

/**
 * A draft of one prompt: q_i on the trace, the rollout after a divergence, TraceGapError anywhere else — or, with
 * `lenient` (a hierarchy's guesses after a round's first divergence, replay.ts HIERARCHY_REPLAYABLE), a filler there.
 */
export function recordedDraft(model: TracedModel, warp: WarpConfig, prompt: PromptTrace, draft: DraftTrace, { lenient = false } = {}): RecordedModel {
  const full = [...prompt.promptTokens, ...prompt.tokens]
  const start = prompt.promptTokens.length
  const filler = lenient ? fillerOf(model) : null
  return new RecordedModel(model, warp, full, (tokens, onTrace) => {
    const answer = recordedAnswer(tokens, onTrace)
    if (!(answer instanceof TraceGapError)) return answer
    if (filler && onTrace >= start) return filler
    throw answer
  })

  function recordedAnswer(tokens: readonly number[], onTrace: number): Distribution | TraceGapError {
    const gap = (why: string) => new TraceGapError(`${model.name}: no recorded distribution after ${tokens.length - start} output tokens (${why})`)
    if (onTrace < start) return gap('the context leaves the prompt')
    if (onTrace === tokens.length) {
      const point = draft.points[tokens.length - start]
      if (!point) return gap('past the end of the trace')
      return point.distribution
    }
    // Off the trace: tokens[onTrace] must be the draft's own argmax there and what follows its rollout.
    const i = onTrace - start
    const rollout = draft.rollouts[i] ?? []
    if (tokens[onTrace] !== draft.points[i]?.argmax) return gap(`token ${tokens[onTrace]} at output position ${i} is not the draft's greedy token`)
    const depth = tokens.length - onTrace
    for (let j = 1; j < depth; j++)
      if (tokens[onTrace + j] !== rollout[j - 1]?.argmax) return gap(`the draft's rollout at output position ${i} holds no token ${tokens[onTrace + j]} at depth ${j}`)
    const point = rollout[depth - 1]
    if (!point) return gap(`the rollout at output position ${i} is ${rollout.length} tokens long, ${depth} needed (raise the trace's rolloutLength)`)
    return point.distribution
  }
}
