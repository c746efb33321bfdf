/**
 * A candidate configuration's expected rounds on a sampled trace (replay/expected.ts): the catalog method and its
 * resolved parameters (methods/prepare.ts) mapped to the real policy and lookup objects, then the renewal sums (replay/expected.ts) per
 * prompt. Covered: `sd` (fixed γ), `sd-pmin`, `svip`, `pld`, `ngram-simple`, `sd+ngram`, `hier-chen` (with its mid
 * model) — the chain methods whose decisions depend on the current round alone —, `llama-server:draft`, whose verification under sampling is
 * llama.cpp's own (replay/llama-server-draft.ts), and parallel drafting at a fixed window — `pearl` and `sd` with
 * `sd.parallel` — whose rounds carry drafts from one to the next (replay/expected-parallel.ts). Any other method, and
 * a draft-length policy with its `parallel` option, is refused by name.
 */
import { ngramSimpleState } from '../lookup/ngram-map'
import { promptLookupState } from '../lookup/prompt-lookup'
import { prepare } from '../methods/prepare'
import { fixedLengthPolicy } from '../policies/fixed'
import { pMinPolicy } from '../policies/p-min'
import { svipPolicy } from '../policies/svip'
import { llamaServerDraftProposer } from './llama-server-draft'
import { chainProposer, expectedRun, hierarchyProposer, lookupProposer, modelProposer, overlap, type ExpectedRun, type Proposer, type RoundCost } from './expected'
import { parallelExpectedRun } from './expected-parallel'
import { parallelDrafting, type Candidate } from './replay'
import type { PromptTrace, Trace } from './trace'

export const EXPECTED_METHODS = ['sd', 'sd-pmin', 'svip', 'pld', 'ngram-simple', 'sd+ngram', 'hier-chen', 'llama-server:draft', 'pearl'] as const

type Params = Readonly<Record<string, number | string | boolean>>

function proposerOf(trace: Trace, prompt: PromptTrace, candidate: Candidate, params: Params, gamma: number): Proposer {
  const ends = new Set(trace.target.endTokens)
  const isEnd = (token: number) => ends.has(token)
  const num = (key: string) => Number(params[key])
  const draft = () => {
    if (candidate.draft === null || !prompt.drafts[candidate.draft]) throw new Error(`${candidate.method} needs a traced draft model`)
    return prompt.drafts[candidate.draft]
  }
  const model = (policy: Parameters<typeof modelProposer>[2]) => modelProposer(prompt, draft(), policy, trace.maxTokens)
  switch (candidate.method) {
    case 'sd':
      return model(fixedLengthPolicy(gamma))
    case 'sd-pmin':
      return model(pMinPolicy({ p: num('pmin.p'), min: num('pmin.min'), max: num('pmin.max') }))
    case 'svip':
      return model(svipPolicy({ h: num('svip.h'), c: num('svip.c'), maxDraft: num('svip.maxDraft'), warpedEntropy: params['svip.warpedEntropy'] === true }))
    case 'pld':
      return lookupProposer(prompt, promptLookupState({ maxNgram: num('pld.ngram'), k: num('pld.k') }, isEnd), num('pld.k'), trace.maxTokens, isEnd)
    case 'ngram-simple': {
      const config = { n: num('ngramsimple.n'), m: num('ngramsimple.m') }
      return lookupProposer(prompt, ngramSimpleState(config, prompt.promptTokens.length), config.m, trace.maxTokens, isEnd)
    }
    case 'sd+ngram': {
      const config = { n: num('sdngram.n'), m: num('sdngram.m') }
      return chainProposer([
        lookupProposer(prompt, ngramSimpleState(config, prompt.promptTokens.length), gamma, trace.maxTokens, isEnd),
        model(fixedLengthPolicy(gamma))
      ])
    }
    case 'hier-chen': {
      if (!candidate.mid || !prompt.drafts[candidate.mid]) throw new Error('hier-chen needs a traced mid model')
      return hierarchyProposer(prompt, draft(), prompt.drafts[candidate.mid], { m: num('chen.m'), n: num('chen.n') }, trace.maxTokens)
    }
    case 'llama-server:draft':
      return llamaServerDraftProposer(prompt, draft(), { nMax: num('llamaserver.nMax'), nMin: num('llamaserver.nMin'), pMin: num('llamaserver.pMin') }, trace.maxTokens)
    default:
      throw new Error(`no expected-value replay for '${candidate.method}' (covered: ${EXPECTED_METHODS.join(', ')})`)
  }
}

/** Whether the candidate's draft-length policy reads the whole-vocabulary entropy (policies/svip.ts's default). */
export function readsFullEntropy(candidate: Candidate): boolean {
  if (candidate.method !== 'svip') return false
  return prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).params['svip.warpedEntropy'] !== true
}

/** A parallel candidate's expected runs: `pearl`, or `sd.parallel` (the fixed window); refused for the policies' option. */
function parallelRuns(trace: Trace, candidate: Candidate, gamma: number, cost?: RoundCost): ExpectedRun[] {
  if (candidate.method !== 'pearl' && candidate.method !== 'sd')
    throw new Error(`no expected-value replay for ${candidate.method} with parallel drafting (covered: pearl, sd with sd.parallel)`)
  return trace.prompts.map((prompt) => {
    if (candidate.draft === null || !prompt.drafts[candidate.draft]) throw new Error(`${candidate.method} needs a traced draft model`)
    const draft = prompt.drafts[candidate.draft]
    const alpha = (i: number) => overlap(prompt.target[i], draft.points[i].distribution)
    return parallelExpectedRun(prompt.tokens.length, alpha, { gamma, preVerify: candidate.method === 'pearl', maxTokens: trace.maxTokens }, cost)
  })
}

/** Expected rounds of `candidate` on every prompt of `trace` (priced by `cost` when given). */
export function replayExpected(trace: Trace, candidate: Candidate, cost?: RoundCost): ExpectedRun[] {
  const prepared = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params })
  if (parallelDrafting(candidate.method, prepared.params)) return parallelRuns(trace, candidate, prepared.gamma, cost)
  return trace.prompts.map((prompt) => expectedRun(prompt.tokens.length, proposerOf(trace, prompt, candidate, prepared.params, prepared.gamma), cost))
}
