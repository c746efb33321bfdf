/**
 * The workload trace: what the setup advisor records ONCE and replays every candidate configuration against
 * (replay/replay.ts under greedy decoding, replay/expected.ts under sampling).
 *
 * Terms, for one prompt of the workload:
 * - prompt: its tokens, BOS included; L: the number of output tokens the target decoded after it.
 * - output position i (0 ≤ i < L): the i-th output token `tokens[i]`, decoded from the context prompt + tokens[<i].
 * - p_i: the target's warped next-token distribution at position i (sampling/warp.ts: the run's temperature, top-k,
 *   top-p; greedy: the temperature-1 softmax of the top-k), the law `tokens[i]` was drawn from.
 * - q_i: a draft model's warped distribution at position i, in the same context (teacher-forced: the draft reads
 *   the target's tokens, not its own), recorded by replay/draft-trace.ts; its argmax, its top-1 probability
 *   (confidence), H(q_i) and the whole-vocabulary entropy SVIP thresholds.
 * - divergence: a position where the draft's argmax differs from the target's token. Under greedy decoding a draft
 *   that diverges at i keeps drafting from its OWN token; the rollout at i is that greedy continuation (the tokens
 *   and distributions the draft produces after argmax q_i), which the draft-length policies see after a rejected
 *   token and before the verifier runs.
 *
 * This file records the target's part: `ar` with the user's sampling settings and seed, one token per forward call
 * through the ModelSession seam exactly as decoders/autoregressive.ts does (same PRNG stream per prompt as
 * methods/decode-once.ts, so the recorded output is the `ar` run's output).
 */
import type { LanguageModel } from '../model/types'
import { evaluatePending, rewindTo } from '../decoders/session-sync'
import { argmax, sample, type Distribution } from '../sampling/distribution'
import { createPrng } from '../sampling/prng'
import { isGreedy, type WarpConfig } from '../sampling/warp'

/** What a draft model said at one context. */
export interface DraftPoint {
  /** q: the draft's warped distribution (ids sorted by descending probability). */
  distribution: Distribution
  argmax: number
  /** Top-1 probability of q (what sd-pmin thresholds). */
  confidence: number
  /** H(q) in nats. */
  entropy: number
  /** H of the draft's raw whole-vocabulary softmax at temperature 1 (what svip thresholds), null when not recorded. */
  fullEntropy: number | null
}

/** One draft model's view of one prompt's trace. */
export interface DraftTrace {
  /** points[i]: q_i in the context prompt + tokens[<i], for every output position (length L). */
  points: DraftPoint[]
  /**
   * rollouts[i] (greedy traces only): at a divergence i, the draft's greedy continuation after its own token
   * x_1 = argmax q_i: rollouts[i][j − 1] is the draft in the context prompt + tokens[<i] + x_1..x_j, and
   * x_{j+1} its argmax. It ends after an end-of-generation token or at the trace's rollout length. [] elsewhere.
   */
  rollouts: DraftPoint[][]
}

export interface PromptTrace {
  promptTokens: number[]
  /** The target's output, L tokens. */
  tokens: number[]
  stopReason: 'eos' | 'max-tokens'
  /** target[i] = p_i. */
  target: Distribution[]
  /** By draft name (the names given to `recordDrafts`). */
  drafts: Record<string, DraftTrace>
}

/** What replay needs to know about a model without loading it. */
export interface TracedModel {
  name: string
  path: string
  vocabularySize: number
  bos: number | null
  eos: number | null
  /** Every id for which isEndOfGeneration holds. */
  endTokens: number[]
  /**
   * A draft whose vocabulary is not the target's (model/vocabulary-check.ts): its ids mean other strings, so it has
   * no teacher-forced points (PromptTrace.drafts lacks it) and only the cross-vocabulary methods (sd-tli, sd-uad)
   * draft with it, replayed with the live draft model (replay/replay.ts). Absent: the target's vocabulary.
   */
  foreign?: true
}

export interface Trace {
  warp: WarpConfig
  seed: number
  maxTokens: number
  /** The longest rollout recorded after a divergence (draft tokens after the diverging one). */
  rolloutLength: number
  target: TracedModel
  drafts: Record<string, TracedModel>
  prompts: PromptTrace[]
}

export interface TargetPassSettings {
  warp: WarpConfig
  seed: number
  maxTokens: number
}

/** Every end-of-generation id of `model` (a scan of its vocabulary: replay has no model to ask). */
export function tracedModel(model: LanguageModel): TracedModel {
  const endTokens: number[] = []
  for (let id = 0; id < model.info.vocabularySize; id++) if (model.isEndOfGeneration(id)) endTokens.push(id)
  return { name: model.info.name, path: model.info.path, vocabularySize: model.info.vocabularySize, bos: model.info.bos, eos: model.info.eos, endTokens }
}

/**
 * The target's pass over one prompt: `ar` to EOS or `maxTokens`, keeping p_i at every position. `stream` is the
 * prompt's index in the workload (the PRNG stream decode-once.ts gives it).
 */
export async function recordTargetPass(
  target: LanguageModel,
  promptTokens: readonly number[],
  settings: TargetPassSettings,
  stream: number
): Promise<PromptTrace> {
  const session = await target.createSession(settings.warp)
  const rng = createPrng(settings.seed, stream)
  const greedy = isGreedy(settings.warp)
  const sequence = [...promptTokens]
  const trace: PromptTrace = { promptTokens: [...promptTokens], tokens: [], stopReason: 'max-tokens', target: [], drafts: {} }
  try {
    while (trace.tokens.length < settings.maxTokens) {
      const [p] = await evaluatePending(session, await rewindTo(session, sequence))
      const token = greedy ? argmax(p) : sample(p, rng)
      trace.target.push(p)
      trace.tokens.push(token)
      sequence.push(token)
      if (target.isEndOfGeneration(token)) {
        trace.stopReason = 'eos'
        break
      }
    }
  } finally {
    await session.dispose()
  }
  return trace
}
