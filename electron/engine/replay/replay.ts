/**
 * Greedy replay: a candidate configuration (method, γ, parameters, draft model) decoded against a recorded trace
 * instead of the models (terms: replay/trace.ts). The catalog's own run is built (methods/prepare.ts) and decoded
 * through methods/decode-once.ts on the trace's recorded target and draft (replay/trace-models.ts), so the real
 * draft-length policy (draftLength / shouldStop / update), the real lookup drafters and chain, the real greedy
 * verifier and the output buffer's EOS / budget rules make every decision; nothing about a method is re-stated here.
 *
 * Why this is exact under greedy decoding: a greedy run's output is the target's greedy continuation (lossless),
 * i.e. the trace; a draft token is accepted iff it equals the target's token at its position; and every context
 * whose distribution a decision reads is recorded — the trace's own (p_i, q_i) or a draft rollout after a
 * divergence. Contexts nobody reads (the target after a rejected draft token) answer OFF_TRACE, so should a method
 * read one the replayed output leaves the trace and `replayGreedy` throws. Methods that need contexts the trace
 * lacks (sampled drafts, trees, a mid model whose decisions read off-trace contexts) throw TraceGapError;
 * `hier-chen`'s rounds do not read them (HIERARCHY_REPLAYABLE says why), nor do parallel drafting's (`pearl`,
 * `sd.parallel`: draftsInParallel says why).
 *
 * A draft of ANOTHER vocabulary (TracedModel.foreign) has no recorded distributions: its ids are not the target's, so
 * the teacher-forced pass cannot feed it the target's tokens. The cross-vocabulary methods (sd-tli, sd-uad) map
 * text between the vocabularies themselves, so they are replayed with the LIVE draft model (`live`) beside the
 * recorded target, which lends the live target's tokenizer: the decoder re-tokenises, drafts, restricts and
 * proposes exactly as in a real run, and the greedy verifier reads only the trace's p_i (the output is the target's
 * greedy continuation again). Exact for the same reasons; it costs the draft's real time per candidate (no target
 * forward call), and the draft evaluates the shapes a real run evaluates.
 *
 * What stays approximate against a real run on llama.cpp: the trace's distributions come from other batch shapes
 * than the run's (draft-trace.ts `batch`; the target's `ar` pass is single-token, its verification batched), and the
 * two round differently (~1e-2 in logits), which can flip a near-tie (test/integration/replay-gguf.test.ts counts
 * these).
 */
import type { StepRecord } from '../decoders/types'
import { decodeOnce } from '../methods/decode-once'
import { needsSharedVocabulary, prepare } from '../methods/prepare'
import type { RawParams } from '../methods/param-spec'
import { isGreedy } from '../sampling/warp'
import type { LanguageModel } from '../model/types'
import { recordedDraft, recordedTarget, type RecordedModel } from './trace-models'
import type { PromptTrace, Trace } from './trace'

/** One configuration to replay: the catalog's method id, --gamma, --set parameters, and which traced draft drafts. */
export interface Candidate {
  method: string
  gamma: number
  params: RawParams
  /** A key of trace.drafts; null for target-only methods (lookups). */
  draft: string | null
  /** The mid model M_q2 of a three-model method (a key of trace.drafts, `--mid`); absent or null for the others. */
  mid?: string | null
}

export interface ReplayedPrompt {
  /** The step records the method's decoder emitted, one per round. */
  steps: StepRecord[]
  tokens: number[]
  /** Whether the method's draft asked for the whole-vocabulary entropy (svip's default; it prices draft calls higher). */
  draftFullEntropy: boolean
}

/** The replayed output left the trace: a method read a context that only a real model can answer. */
export class ReplayDivergedError extends Error {}

/** The live models a foreign draft's candidates replay with: the target (its tokenizer alone) and the drafts by name. */
export interface LiveModels {
  target: LanguageModel
  drafts: Readonly<Record<string, LanguageModel>>
}

/**
 * Recorded targets that lend the live tokenizer, one per prompt and shared by every candidate: the vocabulary maps
 * (model/vocabulary-bytes.ts) are cached per model object, and building them walks the whole vocabulary.
 */
const tokenizedTargets = new WeakMap<PromptTrace, RecordedModel>()

function tokenizedTarget(trace: Trace, prompt: PromptTrace, tokenizer: LanguageModel): RecordedModel {
  let target = tokenizedTargets.get(prompt)
  if (!target) tokenizedTargets.set(prompt, (target = recordedTarget(trace.target, trace.warp, prompt, tokenizer)))
  return target
}

/**
 * Three-model methods whose greedy rounds the trace decides: `hier-chen` proposes a fixed m(n + 1) guesses (fewer only
 * at an end-of-generation guess or the budget), and the greedy verifier accepts the leading guesses equal to the
 * target's tokens, so a guess made after the round's first divergence changes nothing but, through an end of
 * generation, the round's length. Those contexts are not recorded; they are answered with a filler that is never an
 * end of generation (trace-models.ts `lenient`), so a real run whose off-trace guess ends the text proposes fewer
 * tokens than the replay counts. `hsddw` and `pre-verify` stop drafting on the entropies of those off-trace contexts:
 * not replayed.
 */
export const HIERARCHY_REPLAYABLE: ReadonlySet<string> = new Set(['hier-chen'])

/**
 * Whether the candidate drafts while the target verifies (decoders/parallel-drafting.ts): `pearl`, or a method with
 * its `parallel` option on. Such a round drafts its look-ahead after the waiting drafts before their verdict, so
 * after a waiting draft that leaves the trace it drafts past the recorded rollout; those tokens are dropped with the
 * rejection and no decision reads them (at a fixed window; a policy's stop would read them and only changes the
 * dropped look-ahead's length), so they are answered with the lenient filler (trace-models.ts): the replay's draft
 * calls can exceed a real run's only where a real look-ahead off the trace ends the text early.
 */
export const draftsInParallel = (candidate: Candidate): boolean =>
  parallelDrafting(candidate.method, prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }).params)

/** draftsInParallel for a method whose parameters are already resolved (prepare's `params`). */
export const parallelDrafting = (method: string, params: Readonly<Record<string, unknown>>): boolean =>
  method === 'pearl' || Object.entries(params).some(([key, value]) => key.endsWith('.parallel') && value === true)

export async function replayGreedy(trace: Trace, candidate: Candidate, live?: LiveModels): Promise<ReplayedPrompt[]> {
  if (!isGreedy(trace.warp)) throw new Error('replayGreedy needs a greedy trace (temperature 0); sampling traces give expected values (replay/expected.ts)')
  const draftModel = candidate.draft === null ? null : trace.drafts[candidate.draft]
  if (candidate.draft !== null && !draftModel) throw new Error(`the trace has no draft '${candidate.draft}' (it has ${Object.keys(trace.drafts).join(', ') || 'none'})`)
  const foreign = draftModel?.foreign === true
  const liveDraft = foreign && candidate.draft !== null ? live?.drafts[candidate.draft] : undefined
  if (foreign && (!live || !liveDraft)) throw new Error(`${candidate.draft} has another vocabulary than the target: its candidates replay with the live draft model, and none was given`)
  const midModel = candidate.mid ? trace.drafts[candidate.mid] : null
  if (candidate.mid && !midModel) throw new Error(`the trace has no mid model '${candidate.mid}'`)
  if (midModel && !HIERARCHY_REPLAYABLE.has(candidate.method)) throw new Error(`${candidate.method}: no greedy replay with a mid model (replayed: ${[...HIERARCHY_REPLAYABLE].join(', ')})`)
  const prepared = prepare(candidate.method, { gamma: candidate.gamma, params: candidate.params }, { draft: draftModel !== null, mid: midModel !== null })
  if (foreign && needsSharedVocabulary(prepared.definition)) throw new Error(`${candidate.method} compares token ids, and ${candidate.draft} has another vocabulary than the target`)
  // One run per candidate: state a method keeps across prompts (prepare's newRun) persists as in a real run.
  // A hierarchy's models, and a draft drafting in parallel, answer contexts after a round's first divergence with
  // a filler (trace-models.ts `lenient`).
  const lenient = midModel !== null || parallelDrafting(candidate.method, prepared.params)
  const run = prepared.newRun()
  const replayed: ReplayedPrompt[] = []
  for (const [index, prompt] of trace.prompts.entries()) {
    const target = liveDraft ? tokenizedTarget(trace, prompt, live!.target) : recordedTarget(trace.target, trace.warp, prompt)
    const draft = liveDraft ?? (draftModel && candidate.draft ? recordedDraft(draftModel, trace.warp, prompt, prompt.drafts[candidate.draft], { lenient }) : undefined)
    const mid = midModel && candidate.mid ? recordedDraft(midModel, trace.warp, prompt, prompt.drafts[candidate.mid], { lenient }) : undefined
    const steps: StepRecord[] = []
    const outcome = await decodeOnce({
      decoder: run(),
      models: { target, ...(draft ? { draft } : {}), ...(mid ? { mid } : {}) },
      promptTokens: prompt.promptTokens,
      maxTokens: trace.maxTokens,
      warp: trace.warp,
      seed: trace.seed,
      stream: index,
      onEvent: (event) => {
        if (event.type === 'step') steps.push(event.record)
      }
    })
    const at = firstDifference(outcome.tokens, prompt.tokens)
    if (at !== null) throw new ReplayDivergedError(`${candidate.method}: prompt ${index}: the replayed output leaves the trace at output token ${at}`)
    replayed.push({ steps, tokens: outcome.tokens, draftFullEntropy: draft && 'fullEntropyAsked' in draft ? draft.fullEntropyAsked : false })
  }
  return replayed
}

function firstDifference(a: readonly number[], b: readonly number[]): number | null {
  const n = Math.max(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i
  return null
}
