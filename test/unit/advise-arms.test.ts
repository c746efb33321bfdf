/**
 * Which configurations the advisor's verification measures (experiments/advise-verify.ts chooseArms): the best
 * predicted candidates beside ar; with llama-server available each of their llama-server equivalents (so the command
 * the recommendation prints is measured) and llama-server's default speculation; under `--deploy llama-server` the
 * candidates as llama-server runs them; each configuration once.
 */
import { describe, expect, it } from 'vitest'
import type { Verdict } from '../../electron/engine/replay/advise'
import type { Candidate } from '../../electron/engine/replay/replay'
import { chooseArms, gridAsServed, type ArmChoice } from '../../electron/experiments/advise-verify'

const verdict = (candidate: Candidate, tokensPerSecond: number): Verdict => ({
  candidate,
  mode: 'replayed',
  error: null,
  prediction: { tokens: 100, rounds: 40, tokensPerRound: 2.5, proposed: 120, accepted: 60, ms: 100_000 / tokensPerSecond, arMs: 1000, tokensPerSecond, arTokensPerSecond: 100, speedup: tokensPerSecond / 100 }
})

const VERDICTS: Verdict[] = [
  verdict({ method: 'sd', gamma: 4, params: {}, draft: 'd' }, 160),
  verdict({ method: 'svip', gamma: 5, params: { 'svip.h': 0.3 }, draft: 'd' }, 150),
  verdict({ method: 'sd', gamma: 3, params: {}, draft: 'd' }, 140),
  verdict({ method: 'pld', gamma: 3, params: {}, draft: null }, 110),
  verdict({ method: 'ar', gamma: 1, params: {}, draft: null }, 100)
]

const choice = (over: Partial<ArmChoice>): ArmChoice => ({
  top: 3,
  deploy: 'any',
  serverAvailable: true,
  severalDrafts: false,
  threadsOf: () => ({ threads: 1, batchThreads: 2, draftThreads: 1 }),
  ...over
})

const configurations = (arms: ReturnType<typeof chooseArms>) => arms.map((a) => [a.candidate.method, a.candidate.gamma, a.candidate.params])

describe('the arms the advisor measures', () => {
  it('any: the top candidates, each as llama-server runs it where it can, and llama-server\'s default once', () => {
    // svip has no llama-server equivalent; sd γ3's is llama-server's default, measured once.
    expect(configurations(chooseArms(VERDICTS, choice({})))).toEqual([
      ['ar', 1, {}],
      ['sd', 4, {}],
      ['svip', 5, { 'svip.h': 0.3 }],
      ['sd', 3, {}],
      ['llama-server:draft', 4, { 'llamaserver.nMax': 4, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0 }],
      ['llama-server:draft', 3, { 'llamaserver.nMax': 3, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0 }]
    ])
    // Whichever top candidate the measurement makes the pick, its llama-server command is among the arms.
    const other = [VERDICTS[2]!, VERDICTS[0]!, VERDICTS[1]!, ...VERDICTS.slice(3)]
    expect(configurations(chooseArms(other, choice({}))).filter(([method]) => method === 'llama-server:draft').map(([, gamma]) => gamma)).toEqual([3, 4])
  })

  it('llama-server: the servable candidates (not svip, not pld) measured on llama-server; its default (= sd γ3 there) once', () => {
    const arms = chooseArms(VERDICTS, choice({ deploy: 'llama-server' }))
    expect(configurations(arms)).toEqual([
      ['ar', 1, {}],
      ['llama-server:draft', 4, { 'llamaserver.nMax': 4, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0 }],
      ['llama-server:draft', 3, { 'llamaserver.nMax': 3, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0 }]
    ])
    // The server arm keeps its SpecLab twin's prediction: the same rounds.
    expect(arms[1].predicted?.tokensPerSecond).toBe(160)
  })

  it('speclab, or no llama-server binary: SpecLab\'s own candidates only', () => {
    for (const c of [choice({ deploy: 'speclab' }), choice({ serverAvailable: false })])
      expect(chooseArms(VERDICTS, c).map((a) => a.candidate.method)).toEqual(['ar', 'sd', 'svip', 'sd'])
  })
})

describe('the grid as llama-server runs it (gridAsServed)', () => {
  const grid: Candidate[] = [
    { method: 'sd', gamma: 3, params: {}, draft: 'd' },
    { method: 'sd', gamma: 5, params: {}, draft: 'd' },
    { method: 'sd-pmin', gamma: 5, params: { 'pmin.p': 0.5, 'pmin.max': 8 }, draft: 'd' },
    { method: 'ngram-simple', gamma: 5, params: {}, draft: null }
  ]
  const SAMPLING = { temperature: 1, topK: 0, topP: 1 }

  it("under sampling with --deploy llama-server, draft-model candidates become llama-server's own (its rounds differ)", () => {
    const served = gridAsServed(grid, 'llama-server', SAMPLING)
    expect(served.map((c) => [c.method, c.gamma, c.params])).toEqual([
      ['llama-server:draft', 3, { 'llamaserver.nMax': 3, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0 }],
      ['llama-server:draft', 5, { 'llamaserver.nMax': 5, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0 }],
      ['llama-server:draft', 8, { 'llamaserver.nMax': 8, 'llamaserver.nMin': 0, 'llamaserver.pMin': 0.5 }],
      ['ngram-simple', 5, {}]
    ])
    // Each configuration once: sd γ=5 and sd-pmin with p 0 and n_max 5 are the same llama-server command.
    expect(gridAsServed([...grid, { method: 'sd-pmin', gamma: 5, params: { 'pmin.p': 0, 'pmin.max': 5 }, draft: 'd' }], 'llama-server', SAMPLING)).toHaveLength(4)
  })

  it('under greedy decoding, or deployed anywhere, the grid is kept', () => {
    expect(gridAsServed(grid, 'llama-server', { temperature: 0, topK: 0, topP: 1 })).toEqual(grid)
    expect(gridAsServed(grid, 'any', SAMPLING)).toEqual(grid)
    expect(gridAsServed(grid, 'speclab', SAMPLING)).toEqual(grid)
  })
})
