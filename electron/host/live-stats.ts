/** Live statistics of one generation, folded step by step with the same functions as stored runs (metrics/fold). */
import type { LiveStats } from '../api/chat'
import type { StepRecord } from '../engine/decoders/types'
import { acceptanceRate, addStep, emptyTotals, eta, meanAcceptedLength, sigma, tokensPerSecond } from '../engine/metrics/fold'

const GAMMA_HISTORY = 200

export class LiveStatsFold {
  private readonly totals = emptyTotals()
  private readonly started = performance.now()
  private firstTokenMs: number | null = null
  tokens = 0

  /** One generated token arrived. */
  token(): void {
    this.tokens += 1
    this.firstTokenMs ??= performance.now() - this.started
  }

  addStep(step: StepRecord): void {
    addStep(this.totals, step)
  }

  snapshot(): LiveStats {
    const elapsedMs = performance.now() - this.started
    const t = this.totals
    return {
      tokens: this.tokens,
      elapsedMs,
      tokensPerSecond: tokensPerSecond(this.tokens, elapsedMs),
      acceptanceRate: acceptanceRate(t),
      sigma: sigma(t),
      eta: eta(t),
      meanAcceptedLength: meanAcceptedLength(t),
      targetCalls: t.targetCalls,
      gammas: t.gammas.slice(-GAMMA_HISTORY),
      timeToFirstTokenMs: this.firstTokenMs
    }
  }
}
