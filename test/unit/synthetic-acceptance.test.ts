/**
 * Synthetic acceptance (llama.cpp --spec-synth-rates): verification accepts draft position i with
 * probability r_i. The measured acceptance per position must match the requested rates within sampling error, the
 * target still scores every round, and only methods whose verification is the speculative decoder's accept it.
 */
import { describe, expect, it } from 'vitest'
import { parseRates } from '../../electron/cli/run-command'
import { acceptanceByPosition } from '../../electron/engine/metrics/positions'
import { decodeOnce } from '../../electron/engine/methods/decode-once'
import { CATALOG } from '../../electron/engine/methods/catalog'
import { prepare, prepareRun } from '../../electron/engine/methods/prepare'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { PLAIN } from '../helpers/decode'
import { TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'

const RATES = [0.9, 0.6, 0.3]

async function stepsWith(rates: readonly number[] | null, gamma: number, tokens: number): Promise<StepRecord[]> {
  const steps: StepRecord[] = []
  const decoder = prepare('sd', { gamma, params: {} }).newRun()()
  await decodeOnce({
    decoder,
    models: { target: toyTarget(), draft: toyDraft() },
    promptTokens: [TOY_BOS],
    maxTokens: tokens,
    warp: PLAIN,
    seed: 3,
    stream: 0,
    syntheticAcceptance: rates,
    onEvent: (event) => {
      if (event.type === 'step') steps.push(event.record)
    }
  })
  return steps
}

describe('synthetic acceptance', () => {
  it('accepts position i with probability r_i (the last rate beyond the list), within 4 standard errors', async () => {
    const steps = await stepsWith(RATES, 4, 6000)
    const positions = acceptanceByPosition(steps)
    expect(positions).toHaveLength(4)
    for (const p of positions) {
      const rate = RATES[Math.min(p.position - 1, RATES.length - 1)]!
      const standardError = Math.sqrt((rate * (1 - rate)) / p.reached)
      expect(p.reached, `position ${p.position}`).toBeGreaterThan(200)
      expect(Math.abs(p.conditionalRate! - rate), `position ${p.position}: ${p.conditionalRate} vs ${rate}`).toBeLessThan(4 * standardError)
    }
    // The target still verifies every round in one call: the cost being measured is real.
    expect(steps.every((s) => s.targetCalls === 1)).toBe(true)
  })

  it('differs from real verification, whose acceptance follows the models (this toy draft disagrees often)', async () => {
    const real = acceptanceByPosition(await stepsWith(null, 4, 3000))
    expect(real[0]!.conditionalRate!).toBeLessThan(0.75)
    const allAccepted = acceptanceByPosition(await stepsWith([1], 4, 400))
    expect(allAccepted.every((p) => p.conditionalRate === 1)).toBe(true)
  })

  it('is refused for methods it does not apply to, and for rates outside [0, 1]', () => {
    expect(() => prepareRun(['ar', 'sd', 'svip'], { gamma: 4, params: {}, syntheticAcceptance: RATES })).not.toThrow()
    expect(() => prepareRun(['ar', 'hsddw'], { gamma: 4, params: {}, syntheticAcceptance: RATES })).toThrow(/applies to ar and to the methods that verify one draft position by position \(sd, .*the draft-length policies\), not hsddw$/)
    expect(() => prepareRun(['sd', 'sd-tree', 'sd-tree+ngram'], { gamma: 4, params: {}, syntheticAcceptance: RATES })).toThrow(/, not sd-tree, sd-tree\+ngram$/)
    expect(() => prepareRun(['sd'], { gamma: 4, params: {}, syntheticAcceptance: [] })).toThrow(/needs 1 to 128 rates/)
    expect(() => prepareRun(['sd'], { gamma: 4, params: {}, syntheticAcceptance: [1.5] })).toThrow(/in \[0, 1\], got 1.5/)
    expect(parseRates('0.9, 0.5,0')).toEqual([0.9, 0.5, 0])
    expect(() => parseRates('0.9,,0.5')).toThrow(/comma-separated rates in \[0, 1\]/)
    expect(() => parseRates('2')).toThrow(/comma-separated rates/)
  })

  // A method that lets the rates through but verifies for real would label a real run synthetic. At r = 0 every
  // draft must be rejected, whatever the models say (the close draft agrees with the target often).
  it('every method that accepts the rates honours them: at r = 0 no drafted token is accepted', async () => {
    const accepting = CATALOG.filter((d) => !d.needs.mid && d.family !== 'baseline').filter((d) => {
      try {
        prepareRun([d.id], { gamma: 3, params: {}, syntheticAcceptance: [0] })
        return true
      } catch {
        return false
      }
    })
    expect(accepting.map((d) => d.id)).toEqual(expect.arrayContaining(['sd', 'pearl', 'sd+ngram', 'sd-tli', 'sd-uad', 'svip']))
    for (const definition of accepting) {
      const steps: StepRecord[] = []
      await decodeOnce({
        decoder: prepare(definition.id, { gamma: 3, params: {} }).newRun()(),
        models: { target: toyTarget(), draft: toyDraftClose() },
        promptTokens: [TOY_BOS],
        maxTokens: 40,
        warp: PLAIN,
        seed: 5,
        stream: 0,
        syntheticAcceptance: [0],
        onEvent: (event) => {
          if (event.type === 'step') steps.push(event.record)
        }
      })
      expect(steps.reduce((n, s) => n + s.proposed, 0), definition.id).toBeGreaterThan(0)
      expect(steps.reduce((n, s) => n + s.accepted, 0), definition.id).toBe(0)
    }
  })
})
