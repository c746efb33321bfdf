/**
 * speclab peer-bench's pieces without models: arm specs (METHOD[+key=value…]@T[/B[/D]]) and their refusals, the
 * threads an arm sets on the models before each decode, paired ratios with intervals, and the interleaved order of
 * the cells (on toy models).
 */
import { describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { defaultArms } from '../../electron/cli/peer-bench-command'
import { applyThreads, best, pairedRatio, parseArm,
  withCalibratedThreads, prepareArms, runPeerBench, sameOutputs, type ArmResult } from '../../electron/experiments/peer-bench'
import { defaultThreads, targetThreadsFor } from '../../electron/engine/model/llama-cpp-model'
import { TOY_BOS, toyDraftClose, toyTarget } from '../helpers/toy-models'

const refusal = (fn: () => unknown): string => {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(UserInputError)
    return (error as Error).message
  }
  throw new Error('expected a refusal')
}

function result(label: string, side: ArmResult['side'], values: number[][]): ArmResult {
  const cells = values.flatMap((repeats, prompt) =>
    repeats.map((tokensPerSecond, repeat) => ({ prompt, repeat, tokens: 10, wallMs: 1000, tokensPerSecond, proposed: 0, accepted: 0, targetCalls: 10 }))
  )
  return { label, side, method: label.split('@')[0]!, threads: { threads: 1, batchThreads: 1, draftThreads: 1 }, cells, tokensPerSecond: null, acceptance: null, tokensPerCall: null, outputs: [] }
}

describe('peer-bench arms', () => {
  it('parses METHOD[+key=value…]@T[/B[/D]] with B = T and D = 1 by default', () => {
    expect(parseArm('ar@1')).toEqual({ label: 'ar@1', method: 'ar', params: {}, threads: { threads: 1, batchThreads: 1, draftThreads: 1 } })
    expect(parseArm('sd+sd.parallel=true@1/2/1').params).toEqual({ 'sd.parallel': true })
    expect(parseArm('llama-server:draft+llamaserver.nMax=8@2/2/1')).toMatchObject({ method: 'llama-server:draft', params: { 'llamaserver.nMax': 8 }, threads: { threads: 2, batchThreads: 2, draftThreads: 1 } })
    expect(parseArm('sd-pmin+pmin.p=0.6@1/2').threads).toEqual({ threads: 1, batchThreads: 2, draftThreads: 1 })
    // An arm's own γ: not a parameter of the method, and the prepared arm drafts with it.
    const own = parseArm('pearl+gamma=6@2/1/1')
    expect(own).toMatchObject({ method: 'pearl', params: {}, gamma: 6 })
    expect(prepareArms([own, parseArm('pearl@2/1/1')], 5).map((arm) => arm.method.gamma)).toEqual([6, 5])
    // @auto: the calibrated threads, filled in after the load.
    const auto = parseArm('sd@auto')
    expect(auto).toMatchObject({ method: 'sd', calibrated: true })
    const [resolved, kept] = withCalibratedThreads([auto, parseArm('ar@2')], { threads: 1, batchThreads: 2, draftThreads: 1 })
    expect(resolved!.threads).toEqual({ threads: 1, batchThreads: 2, draftThreads: 1 })
    expect(kept!.threads).toEqual({ threads: 2, batchThreads: 2, draftThreads: 1 })
  })

  it('refuses a malformed arm, a bad thread count, an unknown method, a bad parameter and a duplicate — naming the arm', () => {
    expect(refusal(() => parseArm('sd'))).toMatch(/^arm 'sd': write METHOD/)
    expect(refusal(() => parseArm('sd@0'))).toMatch(/^arm 'sd@0': threads must be T\[\/B\[\/D\]\]/)
    expect(refusal(() => parseArm('sd@1/2/3/4'))).toMatch(/threads must be/)
    expect(refusal(() => parseArm('sd+parallel@1'))).toBe("arm 'sd+parallel@1': 'parallel' is not key=value")
    expect(refusal(() => parseArm('sd+gamma=0@1'))).toBe("arm 'sd+gamma=0@1': gamma must be a positive integer, got '0'")
    expect(refusal(() => prepareArms([parseArm('warp@1')], 5))).toMatch(/^arm 'warp@1': unknown method 'warp'/)
    expect(refusal(() => prepareArms([parseArm('sd+sd.parallel=maybe@1')], 5))).toMatch(/^arm 'sd\+sd\.parallel=maybe@1': sd\.parallel \(sd\) must be true or false/)
    expect(refusal(() => prepareArms([parseArm('ar@1'), parseArm('ar@1')], 5))).toBe("arm 'ar@1' is listed twice")
  })

  it('the default arms cover ar, sd, the best policy, pearl, sd.parallel and llama-server AR / draft at 1 and all cores', () => {
    expect(defaultArms(2)).toEqual([
      'ar@1', 'ar@1/2', 'ar@2', 'sd@1', 'sd@1/2', 'sd@2', 'sd-pmin@1/2', 'pearl@1/1/1', 'sd+sd.parallel=true@1/1/1',
      'llama-server:ar@1', 'llama-server:ar@2', 'llama-server:draft@1/1/1', 'llama-server:draft@2/2/1'
    ])
    // On one core there is one thread setting.
    expect(defaultArms(1)).toEqual(['ar@1', 'sd@1', 'sd-pmin@1', 'pearl@1/1/1', 'sd+sd.parallel=true@1/1/1', 'llama-server:ar@1', 'llama-server:draft@1/1/1'])
  })

  it('sets the arm’s threads on target and draft before each decode (and only on models that have phase threads)', () => {
    const target = { phaseThreads: { threads: 1, batchThreads: 1 } }
    const draft = { phaseThreads: { threads: 1, batchThreads: 1 } }
    applyThreads({ target, draft } as never, { threads: 2, batchThreads: 3, draftThreads: 4 })
    expect(target.phaseThreads).toEqual({ threads: 2, batchThreads: 3 })
    expect(draft.phaseThreads).toEqual({ threads: 4, batchThreads: 4 })
    expect(() => applyThreads({ target: {} } as never, { threads: 2, batchThreads: 2, draftThreads: 1 })).not.toThrow()
  })
})

describe('the target’s single-token threads per binary (targetThreadsFor)', () => {
  it('every core of a ≤ 2-core machine with an OpenMP build and no threads given; otherwise the threads given', () => {
    const defaultCount = defaultThreads()
    expect(targetThreadsFor(undefined, true, 2)).toBe(2)
    // A given count is the user's, even when it equals the default: --threads 1 runs one thread.
    expect(targetThreadsFor(defaultCount, true, 2)).toBe(defaultCount)
    expect(targetThreadsFor(undefined, false, 2)).toBeUndefined()
    expect(targetThreadsFor(1, null, 2)).toBe(1)
    expect(targetThreadsFor(undefined, true, 8)).toBeUndefined()
    // An explicit count that is not the default is kept.
    expect(targetThreadsFor(3, true, 2)).toBe(3)
  })
})

describe('peer-bench ratios', () => {
  it('pairs the cells of one (prompt, repeat) and gives the median ratio with a bootstrap interval', () => {
    const a = result('sd@1', 'speclab', [[120, 110, 130], [200, 190, 210]])
    const b = result('llama-server:ar@1', 'llama.cpp', [[100, 100, 100], [100, 100, 100]])
    const ratio = pairedRatio(a, b)!
    expect(ratio.median).toBeCloseTo(1.6, 5) // ratios 1.1 1.2 1.3 | 1.9 2.0 2.1
    expect(ratio.low).toBeGreaterThanOrEqual(1.1)
    expect(ratio.high).toBeLessThanOrEqual(2.1)
    expect(ratio.low).toBeLessThan(ratio.high)
    expect(ratio.cells).toBe(6)
    // Unpaired cells are left out, not matched to a neighbour.
    expect(pairedRatio(a, result('x@1', 'speclab', [[50]]))!.cells).toBe(1)
  })

  it('best picks the highest median tok/s of a side; sameOutputs counts identical repeat-0 outputs', () => {
    const slow = { ...result('a@1', 'speclab', []), tokensPerSecond: { median: 90, low: 80, high: 95, cells: 3, prompts: 1, repeats: 3 } }
    const fast = { ...result('b@1', 'speclab', []), tokensPerSecond: { median: 120, low: 110, high: 125, cells: 3, prompts: 1, repeats: 3 } }
    const peer = { ...result('llama-server:ar@1', 'llama.cpp', []), tokensPerSecond: { median: 500, low: 400, high: 600, cells: 3, prompts: 1, repeats: 3 } }
    expect(best([slow, fast, peer], (r) => r.side === 'speclab')?.label).toBe('b@1')
    expect(sameOutputs({ ...slow, outputs: [[1, 2], [3, 4]] }, { ...fast, outputs: [[1, 2], [3, 5]] })).toEqual({ same: 1, prompts: 2, first: [1] })
  })
})

describe('peer-bench schedule (toy models)', () => {
  it('interleaves the arms within each repeat, rotating their order, and records every cell with its counts', async () => {
    const target = toyTarget()
    const draft = toyDraftClose()
    const arms = prepareArms([parseArm('ar@1'), parseArm('sd@1/2')], 3)
    const order: string[] = []
    const results = await runPeerBench(arms, {
      models: { target, draft },
      promptTokens: [[TOY_BOS, 1, 2], [TOY_BOS, 2, 1]],
      maxTokens: 8,
      warp: { temperature: 0, topK: 0, topP: 1 },
      seed: 1,
      repeats: 2,
      onCell: (p) => order.push(`${p.prompt}/${p.repeat}/${p.label}`)
    })
    // Every arm once per repeat, the order rotating from one repeat to the next (no arm always first).
    expect(order).toEqual(['0/0/ar@1', '0/0/sd@1/2', '0/1/sd@1/2', '0/1/ar@1', '1/0/ar@1', '1/0/sd@1/2', '1/1/sd@1/2', '1/1/ar@1'])
    expect(results.map((r) => r.cells.length)).toEqual([4, 4])
    expect(results[1]!.cells.every((c) => c.proposed > 0 && c.targetCalls > 0)).toBe(true)
    expect(sameOutputs(results[1]!, results[0]!).same).toBe(2)
  })
})
