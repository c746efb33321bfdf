/**
 * Losslessness where the output can end early: a target with an end-of-sequence token (toy-models.ts eosTarget, EOS
 * ≈ 0.3 from the second token on) and a draft that proposes it too. The law compared is that of the WHOLE output —
 * up to 4 tokens, or fewer ending in EOS (toy-models.ts exactOutputDistribution) — so a decoder must stop at the first
 * EOS, keep nothing after it, and reach it with the target's probability whether the draft proposed it (accepted or
 * rejected), a correction drew it or a bonus did. Chi-square, 20k decodes per case, for `sd` (two warps), `pearl`
 * (an EOS ends a window without look-ahead) and `sd-tree` (an EOS child is a leaf); the draft's own decoding fails
 * the same test (negative control).
 */
import { describe, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import type { DecodeResult } from '../helpers/decode'
import { prepare } from '../../electron/engine/methods/prepare'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { chiSquareGoodnessOfFit } from '../helpers/chi-square'
import { PLAIN } from '../helpers/decode'
import { report, sampleOutputs } from '../helpers/sampling'
import { eosDraft, eosTarget, EOS_TOKEN, exactOutputDistribution, TOY_BOS } from '../helpers/toy-models'

const SAMPLES = 20_000
const SEED = 20260601
const P_MIN = 0.001
const MAX_TOKENS = 4

interface Case {
  label: string
  id: string
  warp: WarpConfig
}

const CASES: Case[] = [
  { label: 'sd γ=3, T=1', id: 'sd', warp: PLAIN },
  // Top-p keeps the draft's EOS (its least likely token) in its nucleus here.
  { label: 'sd γ=3, T=1.3 top-p 0.95', id: 'sd', warp: { temperature: 1.3, topK: 0, topP: 0.95 } },
  { label: 'pearl γ=3, T=1', id: 'pearl', warp: PLAIN },
  { label: 'sd-tree depth 3, T=1', id: 'sd-tree', warp: PLAIN }
]

/** How the outputs' EOS tokens came: drafted and accepted, or the target's own (correction, bonus, target-only). */
function eosOrigins(result: DecodeResult, into: Record<string, number>): void {
  const at = result.tokens.indexOf(EOS_TOKEN)
  if (at < 0) return
  const drafted = ['draft', 'branch'].includes(result.provenances[at]!)
  const key = drafted ? 'drafted' : 'target'
  into[key] = (into[key] ?? 0) + 1
}

describe('lossless with an end of sequence: chi-square of the whole output against the exact law (20k decodes each)', () => {
  const models = { target: eosTarget(), draft: eosDraft() }

  it.each(CASES)('$label', async ({ label, id, warp }) => {
    const run = prepare(id, { gamma: 3, params: {} }).newRun()
    const origins: Record<string, number> = {}
    const counts = await sampleOutputs({ decoder: () => run(), models, warp, maxTokens: MAX_TOKENS, samples: SAMPLES, seed: SEED }, (result) =>
      eosOrigins(result, origins)
    )
    console.log(`${label}: outputs ending in EOS ${JSON.stringify(origins)}`)
    const law = exactOutputDistribution(models.target, [TOY_BOS], MAX_TOKENS, warp)
    // Outputs of 2, 3 and 4 tokens all have mass: the test spans early stops and the budget.
    expect(new Set([...law.keys()].map((key) => key.split(',').length))).toEqual(new Set([2, 3, 4]))
    const fit = chiSquareGoodnessOfFit(counts, law)
    report(`${label} with EOS`, fit)
    expect(fit.df).toBeGreaterThanOrEqual(30)
    expect(fit.pValue).toBeGreaterThan(P_MIN)
    // Both ways to EOS really ran: the draft's EOS accepted, and the target's own.
    expect(origins.drafted ?? 0).toBeGreaterThan(SAMPLES / 50)
    expect(origins.target ?? 0).toBeGreaterThan(SAMPLES / 50)
  })

  it('negative control: the draft decoding alone (ar on the draft) fails the same test', async () => {
    const counts = await sampleOutputs({ decoder: () => autoregressive, models: { target: eosDraft() }, warp: PLAIN, maxTokens: MAX_TOKENS, samples: SAMPLES / 4, seed: SEED })
    const fit = chiSquareGoodnessOfFit(counts, exactOutputDistribution(models.target, [TOY_BOS], MAX_TOKENS, PLAIN))
    report('negative control: ar on the EOS draft vs the target law', fit)
    expect(fit.pValue).toBeLessThan(1e-6)
  })
})
