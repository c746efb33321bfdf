/**
 * Method id → decoder. Which models each method needs is declared here, so the CLI and the app can reject a run
 * that lacks them with one clear message before loading anything.
 */
import type { MethodId } from '../../api/contract'
import { adaptiveAnalyticPolicy, analyticOptions } from '../policies/adaptive-analytic'
import { adaptiveCacheFsmPolicy } from '../policies/adaptive-cache-fsm'
import { adaptiveFsmPolicy } from '../policies/adaptive-fsm'
import { gammaMaxOf } from '../params'
import { adaptiveRlPolicy, rlOptions } from '../policies/adaptive-rl'
import { fixedLengthPolicy } from '../policies/fixed'
import { heuristicOptions, heuristicPolicy } from '../policies/heuristic'
import { pMinOptions, pMinPolicy } from '../policies/p-min'
import { selfVerifyOptions, selfVerifyPolicy } from '../policies/self-verify'
import { svipOptions, svipPolicy } from '../policies/svip'
import { autoregressive } from './autoregressive'
import { beamDecoder, beamOptions } from './beam'
import { dsbdDecoder, dsbdOptions, dsbdSessions } from './dsbd'
import { chenDecoder, chenOptions } from './hierarchical-chen'
import { hsddwDecoder, hsddwOptions } from './hsddw'
import { preVerifyDecoder, preVerifyOptions } from './pre-verify'
import { nlcDraft } from './nlc-draft'
import { speculativeDecoder } from './speculative'
import type { Decoder, MethodParams } from './types'

export interface MethodSettings {
  /** --gamma: the draft length of fixed-window methods, the cap or starting point of adaptive ones. */
  gamma: number
  /** --set key=value pairs (method parameters, e.g. svip.h). */
  params: MethodParams
}

export interface MethodDefinition {
  id: MethodId
  summary: string
  needs: { draft: boolean; mid: boolean }
  /**
   * Called once per run and method; returns the decoder for each prompt. State that must persist across prompts
   * (e.g. the persistent HF heuristic) lives in this closure; per-prompt state resets in policy.startPrompt.
   */
  forRun(settings: MethodSettings): () => Decoder
  /**
   * KV sequences (sessions) the method wants open at once per model to evaluate a step in one batched decode;
   * absent = the default 4 of loadLlamaModel suffices. Beam methods (one sequence per beam / tree path) declare more.
   */
  sessions?(settings: MethodSettings): number
}

const METHODS: MethodDefinition[] = [
  {
    id: 'ar',
    summary: 'autoregressive decoding with the target alone (the speedup baseline)',
    needs: { draft: false, mid: false },
    forRun: () => () => autoregressive
  },
  {
    id: 'sd',
    summary: 'speculative decoding with a constant draft length γ (--gamma)',
    needs: { draft: true, mid: false },
    forRun: ({ gamma }) => {
      const policy = fixedLengthPolicy(gamma)
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'nlc-draft',
    summary: "node-llama-cpp's DraftSequenceTokenPredictor (peer baseline; maxTokens = γ)",
    needs: { draft: true, mid: false },
    forRun: () => () => nlcDraft
  },
  {
    id: 'sd-heuristic',
    summary:
      "speculative decoding with Hugging Face's heuristic draft length: start at --gamma, +2 after a round whose\n" +
      '             drafts were all accepted, else −1 (floor 1); carries over across the prompts of a run (HF "heuristic").\n' +
      '             --set heuristic.transient=true: back to --gamma at each prompt (HF "heuristic_transient")',
    needs: { draft: true, mid: false },
    forRun: ({ gamma, params }) => {
      // One policy per run: the persistent schedule carries γ from prompt to prompt; the transient one resets it.
      const policy = heuristicPolicy(heuristicOptions(gamma, params))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'sd-pmin',
    summary:
      "speculative decoding with llama.cpp's confidence floor: stop drafting after a token whose draft top-1\n" +
      '             probability < p_min, never before n_min tokens, at most n_max tokens (not --gamma).\n' +
      "             --set pmin.p=0.75 pmin.min=0 pmin.max=16 (llama.cpp's common_params_speculative defaults)",
    needs: { draft: true, mid: false },
    forRun: ({ params }) => {
      const policy = pMinPolicy(pMinOptions(params))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'svip',
    summary:
      'SVIP (Alg. 1): stop drafting after a token whose draft entropy H (nats) gives √(c·H) > h; at most maxDraft.\n' +
      '             --set svip.h=0.3 (§3.1, grid 0.2–0.5) svip.maxDraft=40 svip.c=0.15. The authors\' public code scales\n' +
      '             the entropy by a constant (0.15) before the root; the paper absorbs √c into h, and its h values\n' +
      '             are for c = 0.15. svip.c=1 is Algorithm 1 as printed (√H > h)',
    needs: { draft: true, mid: false },
    forRun: ({ params }) => {
      const policy = svipPolicy(svipOptions(params))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'self-verify',
    summary:
      'HSDDW self-verify (App. C Alg. 1): stop drafting after a token with H(q) > τ, τ = mean entropy of the draft\n' +
      "             tokens rejected so far in this prompt (τ = 0 until the first rejection: one-token drafts).\n" +
      '             --set selfverify.maxDraft=10 (window K, App. A.1)',
    needs: { draft: true, mid: false },
    forRun: ({ params }) => {
      // τ is per prompt (reset in startPrompt), so one policy per run is enough.
      const policy = selfVerifyPolicy(selfVerifyOptions(params))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'adaptive-analytic',
    summary:
      'on-the-fly adaptation, Method 1 (Liu et al. §4.1): before each round γ = argmax over [1, --gamma] of\n' +
      '             (1 − Acc^{γ+1}) / ((1 − Acc)(γ·a_q + b_p(γ))) (Eq 1); Acc = ΣV/(ΣV + #rejections) over the last h rounds\n' +
      '             (Eq 2, the exact MLE of the censored geometric of App. B.1), capped at accMax; a_q = draft ms/token and\n' +
      '             b_p(γ) = b0 + b1·γ (non-negative least squares on verify ms) over recent rounds, prefill rounds\n' +
      '             excluded; γ = --gamma until timed. State persists across prompts.\n' +
      '             --set analytic.history=6 (App. D.6) analytic.accMax=0.98 analytic.timingHistory=32',
    needs: { draft: true, mid: false },
    forRun: ({ gamma, params }) => {
      // Acc history and timings persist across the prompts of a run (one policy per run).
      const policy = adaptiveAnalyticPolicy(analyticOptions(gamma, params))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'adaptive-fsm',
    summary:
      'on-the-fly adaptation, Method 2 (Liu et al. §4.2): saturating counter, γ −1 after a rejection, +1 when all\n' +
      '             drafts were accepted, within [0, --gamma], starting at --gamma; at γ = 0 the target decodes one\n' +
      '             token alone and, nothing having been rejected, γ returns to 1. γ persists across prompts',
    needs: { draft: true, mid: false },
    forRun: ({ gamma }) => {
      const policy = adaptiveFsmPolicy(gammaMaxOf(gamma, 'adaptive-fsm'))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'adaptive-cache-fsm',
    summary:
      'on-the-fly adaptation, Method 3 (Liu et al. §4.2): token-id cache seeded with the prompt, grown with the\n' +
      '             emitted tokens; γ += (accepted draft tokens already cached) + 1 if all accepted − 1 if none cached,\n' +
      '             within [1, --gamma], starting at --gamma. Cache per prompt, γ persists across prompts',
    needs: { draft: true, mid: false },
    forRun: ({ gamma }) => {
      const policy = adaptiveCacheFsmPolicy(gammaMaxOf(gamma, 'adaptive-cache-fsm'))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'adaptive-rl',
    summary:
      'on-the-fly adaptation, Method 4 (Liu et al. App. B.4 Alg. 2): tabular Q-learning, state = previous γ,\n' +
      '             action = next γ in [1, --gamma], reward = accepted/proposed, ε-greedy after rl.warmup uniformly\n' +
      '             random decisions (own PRNG, rl.seed); Q-table persists across prompts.\n' +
      '             --set rl.epsilon=0.1 rl.alpha=0.1 rl.discount=0.9 rl.warmup=25 rl.seed=0',
    needs: { draft: true, mid: false },
    forRun: ({ gamma, params }) => {
      const policy = adaptiveRlPolicy(rlOptions(gamma, params))
      return () => speculativeDecoder(policy)
    }
  },
  {
    id: 'pre-verify',
    summary:
      'three models (HSDDW Fig. 5a): M_q1 (--draft) drafts --gamma tokens, M_q2 (--mid) pre-verifies them by exact\n' +
      '             rejection sampling, M_p verifies the M_q2-level tokens (q = q2) once pre.window of them wait.\n' +
      '             --set pre.window=<--gamma>',
    needs: { draft: true, mid: true },
    forRun: ({ gamma, params }) => {
      const options = preVerifyOptions(gamma, params, false)
      return () => preVerifyDecoder(options)
    }
  },
  {
    id: 'pre-self-verify',
    summary:
      'pre-verify + self-verify at both levels (HSDDW Fig. 5b): M_q1 stops after H(q1) > τ_q1, the M_q2 level hands\n' +
      '             over after the first token with H(q2) > τ_q2 (τ = mean entropy of the rejected tokens), within\n' +
      '             --gamma and pre.window. --set pre.window=<--gamma>',
    needs: { draft: true, mid: true },
    forRun: ({ gamma, params }) => {
      const options = preVerifyOptions(gamma, params, true)
      return () => preVerifyDecoder(options)
    }
  },
  {
    id: 'hsddw',
    summary:
      'HSDDW (App. D Alg. 2): Draft+Self-verify by M_q1 (τ_q1, window --gamma), Pre-verify+Self-verify by M_q2\n' +
      '             (back to drafting while every new token has H(q2) ≤ τ_q2), then M_p verifies all n_tot tokens',
    needs: { draft: true, mid: true },
    forRun: ({ gamma, params }) => {
      const options = hsddwOptions(gamma, params)
      return () => hsddwDecoder(options)
    }
  },
  {
    id: 'hier-chen',
    summary:
      "Chen's hierarchical SD (Alg. 2): per target call m mid guesses, each after n small guesses, all verified by\n" +
      '             M_p; correction from p as printed — NOT lossless (chen.residual=true: exact residual).\n' +
      '             --set chen.m=2 chen.n=2 chen.residual=false',
    needs: { draft: true, mid: true },
    forRun: ({ params }) => {
      const options = chenOptions(params)
      return () => chenDecoder(options)
    }
  },
  {
    id: 'beam',
    summary:
      'beam sampling (DSBD Eq 1) with the target alone: W beams drawn i.i.d. from T∘p_beam (warp on the joint over\n' +
      '             beams × vocabulary); W = 1 is multinomial sampling; output = the final beam with the lowest perplexity.\n' +
      '             --set beam.width=3 beam.deterministic=false (true: keep the top W, i.e. beam search)',
    needs: { draft: false, mid: false },
    forRun: ({ params }) => {
      const options = beamOptions(params)
      return () => beamDecoder(options)
    },
    sessions: ({ params }) => beamOptions(params).width
  },
  {
    id: 'dsbd',
    summary:
      'DSBD (Alg. 1, App. A direction): the draft beam-samples a forest of --gamma layers × dsbd.ws beams, the target\n' +
      '             scores it in one batched decode, layers verified with min(1, p\'/q_beam) and residuals; width per layer\n' +
      '             W_L = max(W_min, W̃(t)) (Eq 2–7). --set dsbd.ws=4 dsbd.t=0.9 dsbd.wmin=1 dsbd.fixedWidth=0 (0 = dynamic)',
    needs: { draft: true, mid: false },
    forRun: ({ gamma, params }) => {
      const options = dsbdOptions(gamma, params, false)
      return () => dsbdDecoder(options)
    },
    sessions: ({ gamma, params }) => {
      const sizes = dsbdSessions(dsbdOptions(gamma, params, false))
      return Math.max(sizes.target, sizes.draft)
    }
  },
  {
    id: 'dsbd-1beam',
    summary:
      'DSBD memory mode (§3.4): as dsbd, but only the output beam with the lowest perplexity becomes the next input,\n' +
      '             so one KV sequence per model is kept between iterations. Same dsbd.* parameters',
    needs: { draft: true, mid: false },
    forRun: ({ gamma, params }) => {
      const options = dsbdOptions(gamma, params, true)
      return () => dsbdDecoder(options)
    },
    sessions: ({ gamma, params }) => {
      const sizes = dsbdSessions(dsbdOptions(gamma, params, true))
      return Math.max(sizes.target, sizes.draft)
    }
  }
]

/** The default context sequences of loadLlamaModel. */
export const DEFAULT_SEQUENCES = 4
/** Sequences above this are not opened (memory: sequences × context size × KV cell size); the beam pool then splits a step into several decodes. */
export const MAX_SEQUENCES = 16

/** Context sequences to open per model for a run of `methods` (at least the default 4, at most MAX_SEQUENCES). */
export function sessionsNeeded(methods: readonly string[], settings: MethodSettings): number {
  let needed = DEFAULT_SEQUENCES
  for (const id of methods) needed = Math.max(needed, findMethod(id)?.sessions?.(settings) ?? 0)
  return Math.min(needed, MAX_SEQUENCES)
}

export function findMethod(id: string): MethodDefinition | undefined {
  return METHODS.find((method) => method.id === id)
}

export function availableMethods(): readonly MethodDefinition[] {
  return METHODS
}
