/**
 * A draft model's part of the trace (terms: replay/trace.ts): q_i at every output position, teacher-forced on the
 * target's tokens in batched forward calls, and under greedy decoding the rollout at every divergence.
 *
 * Why rollouts: under greedy decoding a round that starts at position t drafts x_1 = argmax q_t, x_2 = argmax of the
 * draft after x_1, … As long as x_j equals the target's token the draft's context is on the trace (q_{t+j−1}).
 * After the first x_j that differs (a divergence at i = t + j − 1) the verifier will reject it, but the draft does not
 * know that yet: it keeps drafting from its own token until its length policy stops it, and how many tokens it
 * proposes (and so what the target pays to verify, and what the policy learns) depends on those off-trace
 * distributions. They depend only on i, not on where the round started — the draft's context is prompt +
 * tokens[<i] + its own greedy tokens — so one rollout per divergence serves every round and every policy.
 *
 * Numerics: llama.cpp's batched and single-token evaluations round differently (~1e-2 in logits, docs/testing.md).
 * A real run's draft evaluates the prompt in one call and then mostly one or two tokens at a time; here the prompt is
 * one call too, and the output goes `batch` tokens per call (1 is closest to a real run and slowest). Any other shape
 * can flip a near-tie of the draft's top two tokens or a decision right at a threshold.
 */
import type { LanguageModel, ModelSession } from '../model/types'
import { evaluatePending, rewindTo } from '../decoders/session-sync'
import { entropy, type Distribution } from '../sampling/distribution'
import { isGreedy, type WarpConfig } from '../sampling/warp'
import type { DraftPoint, DraftTrace, PromptTrace } from './trace'

export interface DraftPassSettings {
  warp: WarpConfig
  /** Tokens per forward call of the teacher-forced pass (≥ 1). */
  batch: number
  /** Draft tokens recorded after a diverging one (the longest draft any replayed configuration makes, minus 1). */
  rolloutLength: number
  /** Record the whole-vocabulary entropy (svip's default statistic; node-llama-cpp then transfers every logit). */
  fullEntropy: boolean
}

export function draftPoint(distribution: Distribution): DraftPoint {
  return {
    distribution,
    argmax: distribution.ids[0],
    confidence: distribution.probs[0] ?? 0,
    entropy: entropy(distribution),
    fullEntropy: distribution.fullEntropy ?? null
  }
}

/**
 * q_0 … q_{L−1}: the context prompt + tokens[<i] for each i. The prompt is evaluated in one call, as a real run's
 * draft evaluates it (its first round), then the output `batch` tokens per call.
 */
async function teacherForced(session: ModelSession, trace: PromptTrace, batch: number): Promise<DraftPoint[]> {
  if (trace.tokens.length === 0) return []
  const prompt = trace.promptTokens
  const points = (await session.append(prompt, prompt.length - 1)).map(draftPoint)
  const rest = trace.tokens.slice(0, -1)
  for (let start = 0; start < rest.length; start += batch)
    for (const q of await session.append(rest.slice(start, start + batch), 0)) points.push(draftPoint(q))
  return points
}

/** The greedy rollout at divergence i: the draft's own tokens after argmax q_i, one forward call each. */
async function rollout(
  session: ModelSession,
  draft: LanguageModel,
  trace: PromptTrace,
  i: number,
  first: DraftPoint,
  length: number
): Promise<DraftPoint[]> {
  const sequence = [...trace.promptTokens, ...trace.tokens.slice(0, i), first.argmax]
  const points: DraftPoint[] = []
  while (points.length < length && !draft.isEndOfGeneration(sequence[sequence.length - 1])) {
    const [q] = await evaluatePending(session, await rewindTo(session, sequence))
    const point = draftPoint(q)
    points.push(point)
    sequence.push(point.argmax)
  }
  return points
}

/** One draft model over one prompt's trace (the target's pass already recorded). */
export async function recordDraftPass(draft: LanguageModel, trace: PromptTrace, settings: DraftPassSettings): Promise<DraftTrace> {
  if (!(settings.batch >= 1)) throw new RangeError(`draft pass batch must be ≥ 1, got ${settings.batch}`)
  const options = { fullEntropy: settings.fullEntropy }
  const forced = await draft.createSession(settings.warp, options)
  let points: DraftPoint[]
  try {
    points = await teacherForced(forced, trace, settings.batch)
  } finally {
    await forced.dispose()
  }
  const rollouts: DraftPoint[][] = points.map(() => [])
  if (isGreedy(settings.warp) && settings.rolloutLength > 0) {
    const session = await draft.createSession(settings.warp, options)
    try {
      for (const [i, point] of points.entries())
        if (point.argmax !== trace.tokens[i]) rollouts[i] = await rollout(session, draft, trace, i, point, settings.rolloutLength)
    } finally {
      await session.dispose()
    }
  }
  return { points, rollouts }
}
