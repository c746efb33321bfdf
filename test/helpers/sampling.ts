/**
 * The sampling side of the chi-square losslessness tests: many seeded decodes from the toy BOS, tallied so that
 * the counts can be set against an exact law (toy-models.ts) with chi-square.ts.
 */
import { expect } from 'vitest'
import type { Decoder, DecoderModels } from '../../electron/engine/decoders/types'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { tally, type ChiSquareResult } from './chi-square'
import { decode, type DecodeResult } from './decode'
import { TOY_BOS } from './toy-models'

export interface SamplingRun {
  /** Called once per decode: a fresh decoder, or the same run's next one where state must carry over. */
  decoder: () => Decoder
  models: DecoderModels
  warp: WarpConfig
  maxTokens: number
  /** Token positions (0-based) tallied jointly, one count table per group: the laws are compared per group. */
  groups: readonly (readonly number[])[]
  samples: number
  /** Decode i draws from PRNG stream (seed, i), so every decode is independent and the whole test reproducible. */
  seed: number
}

/**
 * Decodes `samples` times from [TOY_BOS] and returns, per group, the counts keyed by the tokens at its positions
 * joined with ',' (the keys of exactSequenceDistribution/marginal). Every output must have exactly `maxTokens`
 * tokens: the toy models sampled here have no end of sequence, so a short output is a decoder bug. `onResult` sees
 * each decode's full result, for the statistics that show a branch really ran (rejections, γ, provenance…).
 */
export async function sampleTokenGroups(
  run: SamplingRun,
  onResult?: (result: DecodeResult) => void
): Promise<Map<string, number>[]> {
  const counts = run.groups.map(() => new Map<string, number>())
  for (let i = 0; i < run.samples; i++) {
    const result = await decode(run.decoder(), run.models, {
      promptTokens: [TOY_BOS],
      maxTokens: run.maxTokens,
      warp: run.warp,
      rng: createPrng(run.seed, i),

    })
    expect(result.tokens.length).toBe(run.maxTokens)
    run.groups.forEach((positions, g) => tally(counts[g], positions.map((p) => result.tokens[p]).join(',')))
    onResult?.(result)
  }
  return counts
}

/**
 * Decodes `samples` times from [TOY_BOS] with a target that has an end of sequence and counts whole outputs (keys of
 * exactOutputDistribution): each must end at its first EOS or have exactly `maxTokens` tokens.
 */
export async function sampleOutputs(run: Omit<SamplingRun, 'groups'>, onResult?: (result: DecodeResult) => void): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  const target = run.models.target
  for (let i = 0; i < run.samples; i++) {
    const result = await decode(run.decoder(), run.models, { promptTokens: [TOY_BOS], maxTokens: run.maxTokens, warp: run.warp, rng: createPrng(run.seed, i) })
    const eos = result.tokens.findIndex((token) => target.isEndOfGeneration(token))
    if (eos >= 0) expect(eos, 'nothing after EOS').toBe(result.tokens.length - 1)
    else expect(result.tokens.length).toBe(run.maxTokens)
    expect(result.stopReason).toBe(eos >= 0 ? 'eos' : 'max-tokens')
    tally(counts, result.tokens.join(','))
    onResult?.(result)
  }
  return counts
}

/** One line per chi-square test, so a marginal p-value can be read in the log of a passing run. */
export function report(label: string, result: ChiSquareResult): void {
  console.log(
    `${label}: χ² = ${result.statistic.toFixed(2)}, df = ${result.df}, p = ${result.pValue.toExponential(3)} ` +
      `(${result.samples} samples, ${result.bins} bins)`
  )
}
