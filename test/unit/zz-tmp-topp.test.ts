import { it } from 'vitest'
import { speculativeDecoder } from '../../electron/engine/decoders/speculative'
import { fixedLengthPolicy } from '../../electron/engine/policies/fixed'
import { createPrng } from '../../electron/engine/sampling/prng'
import { chiSquareGoodnessOfFit, tally } from '../helpers/chi-square'
import { decode } from '../helpers/decode'
import { exactSequenceDistribution, marginal, TOY_BOS, toyDraft, toyTarget } from '../helpers/toy-models'
it('topp', async () => {
  const target = toyTarget(), draft = toyDraft()
  const warp = { temperature: 1.3, topK: 0, topP: 0.8 }
  const law = exactSequenceDistribution(target, [TOY_BOS], 3, warp)
  for (const [seed, n] of [[20240611, 400000], [77, 400000]]) {
    const c = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>(), new Map<string, number>()]
    for (let i = 0; i < n; i++) {
      const r = await decode(speculativeDecoder(fixedLengthPolicy(2)), { target, draft }, { promptTokens: [TOY_BOS], maxTokens: 3, warp, rng: createPrng(seed, i), params: {} })
      tally(c[0], r.tokens.slice(0, 2).join(',')); tally(c[1], String(r.tokens[0])); tally(c[2], r.tokens.join(',')); tally(c[3], r.tokens.slice(1).join(','))
    }
    const fits = [[0,1],[0],[0,1,2],[1,2]].map((pos, g) => chiSquareGoodnessOfFit(c[g], marginal(law, pos)))
    console.log('RESULT', seed, n, fits.map(f => `${f.statistic.toFixed(1)}/${f.df} p=${f.pValue.toExponential(2)}`).join('  '))
  }
}, 600000)
