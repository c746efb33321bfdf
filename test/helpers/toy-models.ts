/**
 * Toy language models for exact tests of the decoders. Logits depend on the last token AND on the context length,
 * so the conditionals differ across positions; the draft disagrees with the target on purpose (roughly half of
 * its tokens get rejected), so every branch of Verify/Correct runs often.
 */
import { ToyModel } from '../../electron/engine/model/toy-model'
import type { WarpConfig } from '../../electron/engine/sampling/warp'

/** Effectively −∞ but finite, so the warp's sort and softmax stay well defined: never sampled. */
export const NEVER = -1e9

export const TOY_VOCABULARY = ['<s>', 'a', 'b', 'c', 'd', 'e'] as const
export const TOY_BOS = 0

/** Target logits for tokens 1..5, by last token. */
const TARGET_TABLE = [
  [1.0, 0.2, -0.45, 0.6, -1.0],
  [-0.3, 1.2, 0.1, -1.0, 0.5],
  [0.8, -0.6, 1.1, 0.0, -0.2],
  [-1.0, 0.4, -0.2, 1.3, 0.3],
  [0.2, 0.9, -0.8, -0.4, 1.05],
  [1.1, -0.1, 0.5, 0.3, -0.7]
]

/** Draft logits: roughly the target's preferences inverted, plus a different positional term. */
const DRAFT_TABLE = [
  [-0.4, 1.1, 0.3, -0.2, 0.9],
  [0.9, -0.5, 0.4, 1.0, -0.6],
  [-0.3, 1.0, -0.7, 0.6, 0.45],
  [0.8, -0.2, 0.7, -0.9, 0.1],
  [0.5, -0.6, 1.2, 0.35, -0.8],
  [-0.7, 0.6, 0.0, 0.8, 1.15]
]

function tableLogits(table: number[][], positional: number) {
  return (context: readonly number[]): number[] => {
    const last = context[context.length - 1]
    const phase = context.length % 3
    return [NEVER, ...table[last].map((logit, j) => logit + positional * phase * (j % 2 === 0 ? 1 : -1))]
  }
}

export function toyTarget(): ToyModel {
  return new ToyModel({ name: 'toy-target', vocabulary: TOY_VOCABULARY, logits: tableLogits(TARGET_TABLE, 0.35) })
}

export function toyDraft(): ToyModel {
  return new ToyModel({ name: 'toy-draft', vocabulary: TOY_VOCABULARY, logits: tableLogits(DRAFT_TABLE, -0.25) })
}

/**
 * A draft close to the target (its logits plus a context-dependent perturbation): its argmax agrees with the
 * target's often but not always, which greedy tests need (the inverted `toyDraft` almost never agrees).
 */
export function toyDraftClose(): ToyModel {
  const target = tableLogits(TARGET_TABLE, 0.35)
  return new ToyModel({
    name: 'toy-draft-close',
    vocabulary: TOY_VOCABULARY,
    logits: (context) => {
      const salt = context.length * 3 + context[context.length - 1] * 7
      return target(context).map((logit, j) => (j === 0 ? logit : logit + 0.9 * Math.sin(salt + 5 * j)))
    }
  })
}

/**
 * A pair with an end-of-sequence token (id 1) that the target emits with probability ≈ 0.3 after the first token
 * (never as the very first token), and that the draft proposes too.
 */
export const EOS_VOCABULARY = ['<s>', '</s>', 'x', 'y', 'z'] as const
export const EOS_TOKEN = 1

export function eosTarget(eosLogit = 0.3): ToyModel {
  return new ToyModel({
    name: 'eos-target',
    vocabulary: EOS_VOCABULARY,
    eos: EOS_TOKEN,
    logits: (context) => {
      const last = context[context.length - 1]
      return [NEVER, context.length > 1 ? eosLogit : NEVER, last === 2 ? 0.2 : 0.9, last === 3 ? -0.3 : 0.4, 0.1]
    }
  })
}

export function eosDraft(): ToyModel {
  return new ToyModel({
    name: 'eos-draft',
    vocabulary: EOS_VOCABULARY,
    eos: EOS_TOKEN,
    logits: (context) => {
      const last = context[context.length - 1]
      return [NEVER, context.length > 1 ? -0.5 : NEVER, 0.5, last === 4 ? 1.0 : 0.0, last === 2 ? 0.8 : -0.2]
    }
  })
}

/**
 * The exact joint law of the next `depth` tokens after `prefix`, under `model`'s warped distribution, keyed by the
 * token ids joined with ','. Every node of the tree is evaluated once.
 */
export function exactSequenceDistribution(
  model: ToyModel,
  prefix: readonly number[],
  depth: number,
  warp: WarpConfig
): Map<string, number> {
  const out = new Map<string, number>()
  const visit = (context: number[], generated: number[], mass: number): void => {
    if (generated.length === depth) {
      out.set(generated.join(','), mass)
      return
    }
    const d = model.distribution(context, warp)
    d.ids.forEach((id, i) => {
      if (d.probs[i] > 0) visit([...context, id], [...generated, id], mass * d.probs[i])
    })
  }
  visit([...prefix], [], 1)
  return out
}

/**
 * The exact law of a whole output of at most `maxTokens` tokens after `prefix`, when `model`'s end-of-generation
 * token ends it: keys are the output's ids joined with ',', those ending in EOS shorter than `maxTokens`.
 */
export function exactOutputDistribution(model: ToyModel, prefix: readonly number[], maxTokens: number, warp: WarpConfig): Map<string, number> {
  const out = new Map<string, number>()
  const visit = (context: number[], generated: number[], mass: number): void => {
    if (generated.length === maxTokens || (generated.length > 0 && model.isEndOfGeneration(generated[generated.length - 1]))) {
      out.set(generated.join(','), (out.get(generated.join(',')) ?? 0) + mass)
      return
    }
    const d = model.distribution(context, warp)
    d.ids.forEach((id, i) => {
      if (d.probs[i] > 0) visit([...context, id], [...generated, id], mass * d.probs[i])
    })
  }
  visit([...prefix], [], 1)
  return out
}

/** Marginalises a sequence law onto the tokens at `positions` (0-based), keyed the same way. */
export function marginal(law: ReadonlyMap<string, number>, positions: readonly number[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const [key, p] of law) {
    const tokens = key.split(',')
    const sub = positions.map((i) => tokens[i]).join(',')
    out.set(sub, (out.get(sub) ?? 0) + p)
  }
  return out
}
