/** `diff` of two advice runs names the configurations measured, not every re-measured cost and prediction. */
import { expect, it } from 'vitest'
import { diffConfigs } from '../../electron/api/run-diff'

const advice = (costMs: number, gamma: number) => ({
  advice: {
    trace: { prompts: 2, tokens: 64, mode: 'replayed' },
    profile: { targetMs: [costMs], verifyCost: [1], drafts: {} },
    predictions: [{ method: 'sd', gamma, tokensPerSecond: 1000 / costMs }],
    arms: [{ label: `sd γ=${gamma}`, method: 'sd', gamma, predicted: { tokensPerSecond: 1000 / costMs, speedup: 1 } }]
  }
})

it('leaves out the advice profile and predictions, keeps the arms', () => {
  expect(diffConfigs(advice(10, 4), advice(11, 4))).toEqual([])
  expect(diffConfigs(advice(10, 4), advice(10, 5)).map((d) => d.key)).toEqual(['advice.arms.0.gamma', 'advice.arms.0.label'])
})
