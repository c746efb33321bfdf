/**
 * `sd-heuristic`: Hugging Face's "heuristic" draft-length schedule (transformers,
 * `generation/candidate_generator.py`, `AssistedCandidateGenerator.update_candidate_strategy`):
 *
 *   if num_matches == len(candidates):  num_assistant_tokens += 2          (every draft token was accepted)
 *   else:                               num_assistant_tokens = max(1, num_assistant_tokens − 1)
 *
 * "All accepted" compares with the tokens actually proposed (HF: `num_matches == len(scores[0]) − 1`), so a draft
 * cut short by an end-of-generation token or the --max-tokens budget counts as all accepted when it all passed.
 * There is no upper bound in HF (the engine bounds each round by the remaining --max-tokens budget), and none by
 * default here (`heuristic.maxDraft=0`). SVIP's "heuristics" baseline is the same rule with a cap of 40 (§3.1: "we
 * limit the maximum draft length to 40 in both heuristics and SVIP scenarios"; its public code,
 * vanilla-sd/eval_specbench.py: `num_assistant_tokens = min(num_assistant_tokens + 2, 40)`, and every draft is cut
 * at `min(40, …)`): `--set heuristic.maxDraft=40`. With a cap M the schedule is γ ← min(M, γ + 2) after an
 * all-accepted round, and the starting γ is min(M, --gamma).
 *
 * Two schedules, as in HF (`generation/utils.py`, end of `_assisted_decoding`):
 * - "heuristic" (default): the value reached at the end of a generation is written back to the assistant's
 *   generation config, so the next prompt of the run starts from it (persistent across prompts; the state lives in
 *   the policy that the catalog's newRun creates once per run);
 * - "heuristic_transient" (`--set heuristic.transient=true`): every prompt starts again from the initial value.
 * The initial value is --gamma (HF's default num_assistant_tokens is 20; SpecLab uses the run's γ).
 *
 * explain(): threshold null (no threshold); decision {gamma: the cap of the round just verified, proposed,
 * accepted, rule '+2' | '-1', next: γ of the coming round, reason 'cap' | 'eos', transient}. reason 'eos' means the
 * engine ended the draft before the cap (an end-of-generation token, or the last tokens of the --max-tokens budget).
 */
import { STOP_REASONS, type DraftStop, type DraftLengthPolicy, type PolicyExplanation, type VerificationOutcome } from './types'

export interface HeuristicOptions {
  /** num_assistant_tokens at the start (--gamma), ≥ 1. */
  initialGamma: number
  /** true: HF "heuristic_transient" (reset at each prompt); false: HF "heuristic" (carries over). */
  transient: boolean
  /** Upper bound on the draft length (SVIP's baseline: 40); 0 or absent = none (HF). */
  maxDraft?: number
}


export interface HeuristicPolicy extends DraftLengthPolicy {
  /** The draft length the next round will use. */
  readonly gamma: number
}

export function heuristicPolicy({ initialGamma, transient, maxDraft = 0 }: HeuristicOptions): HeuristicPolicy {
  if (!Number.isInteger(initialGamma) || initialGamma < 1) throw new RangeError(`initial γ must be an integer ≥ 1, got ${initialGamma}`)
  if (!Number.isInteger(maxDraft) || maxDraft < 0) throw new RangeError(`the draft length cap must be an integer ≥ 0, got ${maxDraft}`)
  const ceiling = maxDraft > 0 ? maxDraft : Infinity
  const start = Math.min(initialGamma, ceiling)
  let gamma = start
  let cap = gamma
  let last: { cap: number; proposed: number; accepted: number; rule: '+2' | '-1'; stoppedBy: DraftStop } | null = null
  return {
    id: transient ? 'heuristic-transient' : 'heuristic',
    get gamma() {
      return gamma
    },
    startPrompt() {
      if (transient) gamma = start
      last = null
    },
    draftLength() {
      cap = gamma
      return gamma
    },
    shouldStop: () => false,
    update(outcome: VerificationOutcome) {
      // A target-only round proposed nothing: no evidence either way (never happens here, γ ≥ 1).
      if (outcome.proposed === 0) return
      const allAccepted = outcome.accepted === outcome.proposed
      gamma = allAccepted ? Math.min(ceiling, gamma + 2) : Math.max(1, gamma - 1)
      last = { cap, proposed: outcome.proposed, accepted: outcome.accepted, rule: allAccepted ? '+2' : '-1', stoppedBy: outcome.stoppedBy }
    },
    explain(): PolicyExplanation {
      if (!last) return { threshold: null, decision: { gamma: cap, next: gamma, transient } }
      return {
        threshold: null,
        decision: {
          gamma: last.cap,
          proposed: last.proposed,
          accepted: last.accepted,
          rule: last.rule,
          next: gamma,
          reason: last.stoppedBy && STOP_REASONS[last.stoppedBy],
          transient
        }
      }
    }
  }
}

