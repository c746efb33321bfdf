/**
 * `sd`: speculative decoding (Leviathan et al. 2023; Chen et al. 2023), as SVIP Appendix A Algorithm 6 writes it:
 * the draft proposes x_1..x_γ from q (one forward call each), the target scores all γ+1 positions in ONE batched
 * call, Verify/Correct (sampling/verify.ts) keep the accepted prefix plus a correction or a bonus token.
 * The draft length comes from a DraftLengthPolicy, so every adaptive method reuses this loop; drafting also
 * stops at an end-of-generation token (nothing after it can be kept). Lossless: the output is distributed as the
 * target's warped distribution whatever the policy decides, because each decision depends only on draft-side
 * information and every drafted token is verified exactly.
 * What drafts is a Drafter (decoders/drafter.ts): the draft model (`modelDrafter`, the default), or a model-free
 * drafter whose proposals are point masses q = δ(x) — prompt lookup and llama.cpp's n-gram maps (engine/lookup/),
 * verified by the same Verify/Correct (accept with p(x), correct from norm(max(0, p − δ))). A drafter that finds
 * nothing to propose makes the round target-only.
 */
import type { ModelSession } from '../model/types'
import type { DraftLengthPolicy, DraftStop, EntropySource, PolicyExplanation } from '../policies/types'
import { argmax, entropy, sample, type Distribution } from '../sampling/distribution'
import type { Prng } from '../sampling/prng'
import { verifySynthetic } from '../sampling/synthetic-acceptance'
import { verifyDraft } from '../sampling/verify'
import { isGreedy } from '../sampling/warp'
import type { LanguageModel } from '../model/types'
import { targetOnlyRound } from './autoregressive'
import type { Drafter, DrafterSession, Proposal, ProposalFacts } from './drafter'
import { OutputBuffer } from './output'
import { evaluatePending, now, rewindTo } from './session-sync'
import { stepRecord } from './step-record'
import type { DecodeEvent, DecodeRequest, DecoderModels, Provenance } from './types'

interface Draft {
  tokens: number[]
  distributions: Distribution[]
  entropies: number[]
  calls: number
  ms: number
  stoppedBy: DraftStop
}

/**
 * Draft up to `limit` tokens (the policy's `cap`, or less when the --max-tokens budget is nearer), asking the policy
 * after each whether to stop, and record why drafting stopped.
 */
async function draftTokens(
  session: ModelSession,
  sequence: readonly number[],
  cap: number,
  limit: number,
  policy: DraftLengthPolicy,
  model: LanguageModel,
  greedy: boolean,
  rng: Prng
): Promise<Draft> {
  const draft: Draft = { tokens: [], distributions: [], entropies: [], calls: 0, ms: 0, stoppedBy: null }
  let pending = await rewindTo(session, sequence)
  for (;;) {
    const started = now()
    const [q] = await evaluatePending(session, pending)
    draft.ms += now() - started
    draft.calls += 1
    const token = greedy ? argmax(q) : sample(q, rng)
    const h = draftEntropy(q, policy.entropy ?? 'warped', model)
    draft.tokens.push(token)
    draft.distributions.push(q)
    draft.entropies.push(h)
    const position = draft.tokens.length
    draft.stoppedBy = policy.shouldStop({ position, token, distribution: q, entropy: h })
      ? 'policy'
      : position >= cap
        ? 'cap'
        : position >= limit || model.isEndOfGeneration(token)
          ? 'engine'
          : null
    if (draft.stoppedBy !== null) return draft
    pending = [token]
  }
}

/** The entropy of a drafted token that the policy thresholds (and the step record keeps): see EntropySource. */
function draftEntropy(q: Distribution, source: EntropySource, model: LanguageModel): number {
  if (source === 'warped') return entropy(q)
  if (q.fullEntropy === undefined)
    throw new Error(`${model.info.path}: the draft session returned no full-vocabulary entropy (createSession option fullEntropy)`)
  return q.fullEntropy
}

/** The draft model as a Drafter: draws x_i ~ q_i one forward call at a time (`draftTokens`). */
export const modelDrafter: Drafter = {
  stage: 'sd',
  async open(models, request, policy) {
    const draftModel = models.draft
    if (!draftModel) throw new Error('speculative decoding needs a draft model')
    const session = await draftModel.createSession(request.warp, { fullEntropy: policy.entropy === 'full' })
    return {
      propose: ({ sequence, cap, limit, greedy, rng }) => draftTokens(session, sequence, cap, limit, policy, draftModel, greedy, rng),
      dispose: () => session.dispose()
    }
  }
}

export function speculativeDecoder(policy: DraftLengthPolicy, drafter: Drafter = modelDrafter) {
  return async function* speculative(models: DecoderModels, request: DecodeRequest): AsyncGenerator<DecodeEvent> {
    const target = await models.target.createSession(request.warp)
    let drafts: DrafterSession
    try {
      drafts = await drafter.open(models, request, policy)
    } catch (error) {
      await target.dispose()
      throw error
    }
    const greedy = isGreedy(request.warp)
    const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
    policy.startPrompt?.(request.promptTokens)
    try {
      for (let step = 0; !output.done; step++) {
        if (output.cancelledBy(request.signal)) break
        const started = now()
        const cap = policy.draftLength()
        const limit = Math.min(cap, request.maxTokens - output.tokens.length)
        if (limit <= 0) {
          yield* targetOnlyPolicyRound(target, output, step, request, policy)
          continue
        }
        const draft = await drafts.propose({ sequence: output.sequence, cap, limit, greedy, rng: request.rng })
        if (draft.tokens.length === 0) {
          // A model-free drafter found nothing: the target decodes one token alone, recorded under the drafter's stage.
          yield* targetOnlyPolicyRound(target, output, step, request, policy, drafter.stage, draft)
          continue
        }
        const pending = await rewindTo(target, output.sequence)
        const verifyStarted = now()
        const p = await evaluatePending(target, pending, draft.tokens)
        const verifyMs = now() - verifyStarted
        const verdict = request.syntheticAcceptance
          ? verifySynthetic(draft.tokens, p, request.syntheticAcceptance, greedy, request.rng)
          : verifyDraft(draft.tokens, draft.distributions, p, greedy, request.rng)
        const candidates: { token: number; provenance: Provenance }[] = draft.tokens
          .slice(0, verdict.accepted)
          .map((token) => ({ token, provenance: draft.provenance ?? 'draft' }))
        candidates.push({ token: verdict.next, provenance: verdict.rejected ? 'resampled' : 'bonus' })
        const events = output.commit(candidates, step)
        const acceptedDraftTokens = Math.min(verdict.accepted, events.length)
        drafts.accepted?.(verdict.accepted)
        policy.update({
          stoppedBy: draft.stoppedBy,
          proposed: draft.tokens.length,
          accepted: verdict.accepted,
          draftEntropies: draft.entropies,
          draftTokens: draft.tokens,
          emittedTokens: events.map((e) => (e.type === 'token' ? e.token : -1)),
          draftMs: draft.ms,
          verifyMs
        })
        const explanation = policy.explain()
        const record = stepRecord({
          index: step,
          stage: drafter.stage,
          proposed: draft.tokens.length,
          accepted: verdict.accepted,
          resampled: verdict.rejected,
          bonus: !verdict.rejected,
          emitted: events.length,
          draftTokens: draft.tokens.length,
          acceptedDraftTokens,
          draftEntropies: draft.entropies,
          threshold: explanation.threshold,
          decision: withFacts(explanation.decision, draft.facts),
          targetCalls: 1,
          draftCalls: draft.calls,
          draftMs: draft.ms,
          verifyMs,
          totalMs: now() - started
        })
        yield* events
        yield { type: 'step', record }
      }
      yield { type: 'done', stopReason: output.stopReason ?? 'max-tokens' }
    } finally {
      await drafts.dispose()
      await target.dispose()
    }
  }
}

/** The policy's decision with what a model-free drafter found (match length, position …); the policy's alone otherwise. */
function withFacts(decision: PolicyExplanation['decision'], facts: ProposalFacts | undefined): PolicyExplanation['decision'] {
  return facts === undefined ? decision : { ...(decision ?? {}), ...facts }
}

/**
 * A policy chose γ = 0, or a model-free drafter found nothing to propose (`nothing`, recorded under its stage with
 * what it looked for and the time it took): the target decodes one token alone. The policy still hears the outcome
 * (nothing proposed) so state machines can leave 0 again, and the round's record carries the policy's explanation.
 */
export async function* targetOnlyPolicyRound(
  target: ModelSession,
  output: OutputBuffer,
  step: number,
  request: DecodeRequest,
  policy: DraftLengthPolicy,
  stage = 'target-only',
  nothing?: Proposal
): AsyncGenerator<DecodeEvent> {
  const explanation = policy.explain()
  for await (const event of targetOnlyRound(target, output, step, request, stage)) {
    if (event.type === 'step') {
      policy.update({
        stoppedBy: null,
        proposed: 0,
        accepted: 0,
        draftEntropies: [],
        draftTokens: [],
        emittedTokens: output.tokens.slice(-event.record.emitted),
        draftMs: 0,
        verifyMs: event.record.verifyMs
      })
      const record = { ...event.record, threshold: explanation.threshold, decision: withFacts(explanation.decision, nothing?.facts) }
      if (nothing) {
        record.draftMs = nothing.ms
        record.totalMs += nothing.ms
      }
      yield { type: 'step', record }
    } else yield event
  }
}
