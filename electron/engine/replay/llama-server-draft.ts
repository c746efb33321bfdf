/**
 * llama-server's draft-model speculation (`--spec-type draft-simple`) as a sampling replay's rounds
 * (replay/expected.ts). Under sampling llama.cpp drafts and verifies differently from SpecLab's `sd` (bundled
 * llama.cpp: common/speculative.cpp, the draft-simple loop; tools/server/server-context.cpp,
 * common_sampler_sample_and_accept_n):
 *
 * - the draft proposes its top token x̂_j (the first of its top-10 candidates), not a sample of q;
 * - it stops BEFORE a token whose probability among its ten most likely (a softmax over the ten largest draft logits)
 *   is below p_min, and after n_max tokens;
 * - a draft shorter than n_min is dropped: the round verifies nothing, having paid for the draft calls;
 * - the target samples every position from its own warped distribution p and keeps draft tokens while its sample
 *   equals them, so draft token j is accepted, given 1..j − 1 were, with probability
 *       α_j = p(x̂_j)
 *   where SpecLab's rejection sampling accepts with Σ_y min(p(y), q(y)) (Leviathan et al. 2023, §3.3). Both are
 *   lossless; the match rule accepts less wherever q spreads its mass.
 *
 * Draft calls per round: one call on the tokens the last round committed gives the logits of draft position 1, then
 * every drafted token is evaluated for the next position's logits — except the last when n_max (or the budget)
 * ends the draft. So a draft of n tokens costs n calls when the cap ends it, n + 1 when p_min does (at least 1).
 *
 * Under greedy decoding α_j ∈ {0, 1} and the rounds are `sd`'s at γ = n_max (with p_min 0): greedy advice replays
 * SpecLab's decoder instead (replay/replay.ts). The approximation beside expected.ts's: the top-10 probability is
 * read from the trace's q, the draft's distribution under the run's warp — exact at temperature 1 with top-k ≥ 10;
 * llama.cpp's draft sampler applies no temperature.
 */
import type { Distribution } from '../sampling/distribution'
import { probabilityOf } from '../sampling/distribution'
import type { Proposer } from './expected'
import type { DraftTrace, PromptTrace } from './trace'

/** llama.cpp's draft sampler: top-k 10 (common/speculative.cpp). */
const DRAFT_TOP_K = 10

export interface LlamaServerDraftSettings {
  /** --spec-draft-n-max, --spec-draft-n-min, --spec-draft-p-min. */
  nMax: number
  nMin: number
  pMin: number
}

/** q's top token and its probability among q's ten most likely tokens (llama.cpp's `cur_p->data[0].p`). */
export function topTenShare(q: Distribution): { token: number; p: number } {
  const order = [...q.probs.keys()].sort((a, b) => q.probs[b] - q.probs[a]).slice(0, DRAFT_TOP_K)
  const mass = order.reduce((sum, i) => sum + q.probs[i], 0)
  const top = order[0]
  return top === undefined || mass <= 0 ? { token: -1, p: 0 } : { token: q.ids[top], p: q.probs[top] / mass }
}

/** The rounds llama-server's draft speculation makes from each output position t of `prompt` (see the header). */
export function llamaServerDraftProposer(prompt: PromptTrace, draft: DraftTrace, settings: LlamaServerDraftSettings, maxTokens: number): Proposer {
  return (t) => {
    const limit = Math.min(settings.nMax, maxTokens - t, prompt.tokens.length - t)
    if (limit <= 0) return { rates: [], draftCalls: 0 }
    const rates: number[] = []
    let stoppedByPMin = false
    while (rates.length < limit) {
      const i = t + rates.length
      const { token, p } = topTenShare(draft.points[i].distribution)
      if (p < settings.pMin) {
        stoppedByPMin = true
        break
      }
      rates.push(probabilityOf(prompt.target[i], token))
    }
    const draftCalls = stoppedByPMin ? rates.length + 1 : rates.length
    return { rates: rates.length < settings.nMin ? [] : rates, draftCalls }
  }
}
