/**
 * The soak benchmark's judgement (scripts/soak/flatness.ts, verdict.ts), on made-up series: a flat one with noise
 * and spikes passes, a warm-up climb is cut, and the negative controls — a steady leak of memory and a descriptor
 * leak — fail; the verdict names every miss (unanswered requests, a stuck run, a restart).
 */
import { describe, expect, it } from 'vitest'
import { flatness, MIN_SAMPLES, type SeriesPoint } from '../../scripts/soak/flatness'
import { soakFailures, type SoakOutcome } from '../../scripts/soak/verdict'

const DURATION_S = 600
/** One sample every 5 s over the soak; `value(t)` plus a deterministic wobble of ±`noise`. */
function seriesOf(value: (t: number) => number, noise = 0): SeriesPoint[] {
  const points: SeriesPoint[] = []
  for (let t = 0; t <= DURATION_S; t += 5) points.push({ t, value: value(t) + noise * Math.sin(t * 1.7) })
  return points
}

describe('flatness after the warm-up', () => {
  it('a flat series with noise and a few spikes is flat', () => {
    const points = seriesOf(() => 100e6, 3e6).map((p, i) => (i % 17 === 0 ? { ...p, value: p.value * 1.3 } : p))
    const result = flatness(points, DURATION_S)
    expect(result.flat).toBe(true)
    expect(Math.abs(result.changePercent)).toBeLessThan(5)
    expect(result.max).toBeGreaterThan(125e6) // the spikes are reported, not judged
  })

  it('cuts the warm-up: memory that doubles in the first 20 % does not count', () => {
    const points = seriesOf((t) => (t < 115 ? 50e6 : 100e6), 1e6)
    expect(flatness(points, DURATION_S).flat).toBe(true)
    expect(flatness(points, DURATION_S, { warmupFraction: 0 }).flat).toBe(false)
  })

  it('negative control: memory that grows 30 % over the soak is not flat', () => {
    const result = flatness(seriesOf((t) => 100e6 * (1 + (0.3 * t) / DURATION_S), 1e6), DURATION_S)
    expect(result.flat).toBe(false)
    expect(result.changePercent).toBeGreaterThan(10)
    expect(result.slopePerMinute / ((100e6 * 0.3) / 10)).toBeCloseTo(1, 2)
  })

  it('negative control: one descriptor more per minute from 30 is not flat; a shrink is judged alike', () => {
    expect(flatness(seriesOf((t) => 30 + Math.floor(t / 60)), DURATION_S).flat).toBe(false)
    expect(flatness(seriesOf((t) => 100 - (30 * t) / DURATION_S), DURATION_S).flat).toBe(false)
  })

  it('the tolerance is the limit: a 6 % change passes at 10 and fails at 5', () => {
    const points = seriesOf((t) => 100 * (1 + (0.12 * t) / DURATION_S))
    const at10 = flatness(points, DURATION_S)
    expect(at10.changePercent).toBeGreaterThan(5)
    expect(at10.changePercent).toBeLessThan(10)
    expect(at10.flat).toBe(true)
    expect(flatness(points, DURATION_S, { tolerancePercent: 5 }).flat).toBe(false)
  })

  it('too few samples after the warm-up are no verdict of flat', () => {
    const few = seriesOf(() => 1).filter((p) => p.t >= 120).slice(0, MIN_SAMPLES - 1)
    expect(flatness(few, DURATION_S).flat).toBe(false)
    expect(flatness([], DURATION_S)).toMatchObject({ samples: 0, flat: false })
  })
})

describe('the soak verdict', () => {
  const flat = flatness(seriesOf(() => 100), DURATION_S)
  const passing: SoakOutcome = {
    tolerancePercent: 10,
    engineRss: flat,
    engineFds: flat,
    requests: { sent: 10, answered: 10, failedAsExpected: 2, failedUnexpectedly: 0, unanswered: 0 },
    jobs: { downloads: { started: 4, endedAsExpected: 4, endedOtherwise: 0, neverEnded: 0 } },
    runsLeftRunning: 0,
    engineRestarts: 0
  }

  it('passes when every target is met', () => {
    expect(soakFailures(passing)).toEqual([])
  })

  it('names each miss', () => {
    const leak = flatness(seriesOf((t) => 100 + t / 10), DURATION_S)
    const failures = soakFailures({
      ...passing,
      engineRss: leak,
      requests: { ...passing.requests, unanswered: 1, failedUnexpectedly: 2 },
      jobs: { downloads: { started: 4, endedAsExpected: 2, endedOtherwise: 1, neverEnded: 1 } },
      runsLeftRunning: 1,
      engineRestarts: 1
    })
    expect(failures).toEqual([
      expect.stringMatching(/^engine resident memory changed \d+\.\d % after the warm-up .*limit ±10 %/),
      '1 request(s) never answered',
      '2 request(s) failed unexpectedly',
      '1 downloads never ended',
      '1 downloads ended otherwise than meant',
      "1 run row(s) left 'running' in the database",
      'the engine process restarted 1 time(s)'
    ])
  })
})
