import { describe, expect, it } from 'vitest'
import type { ArmResult, PeerCell } from '../../electron/experiments/peer-bench'
import type { Interval } from '../../electron/engine/stats/bootstrap'
import { firstDifference, isNumericalTie, noiseOf, weighDivergence, type Divergence } from '../../scripts/gpu-check/divergence'
import { adviceReport, armRows, engineRows, greedyRows, problemsOf, reportMarkdown, type GpuCheckReport, type ModelOffload } from '../../scripts/gpu-check/report'
import { armLabelOf, type AdvicePlan } from '../../scripts/gpu-check/advice'
import { parseArm } from '../../electron/experiments/peer-bench'

function cells(tokensPerSecond: number[]): PeerCell[] {
  return tokensPerSecond.map((tps, i) => ({ prompt: i % 2, repeat: Math.floor(i / 2), tokens: 64, wallMs: 64_000 / tps, tokensPerSecond: tps, proposed: 0, accepted: 0, targetCalls: 64 }))
}

function arm(label: string, method: string, side: 'speclab' | 'llama.cpp', tps: number[], outputs: number[][]): ArmResult {
  return { label, side, method, threads: { threads: 1, batchThreads: 2, draftThreads: 1 }, cells: cells(tps), tokensPerSecond: null, acceptance: null, tokensPerCall: null, outputs }
}

const offload = (gpuLayers: number): ModelOffload[] => [
  { role: 'target', file: 't.gguf', gpuLayers, totalLayers: 9 },
  { role: 'draft', file: 'd.gguf', gpuLayers: 6, totalLayers: 6 }
]

/** A passing report of `results` (the advisor's test adds its section). */
function reportOf(results: ArmResult[]): GpuCheckReport {
  return {
    date: '2026-01-01T00:00:00.000Z',
    mode: 'cuda',
    machine: { description: 'load 0.1 on 16 cores', cpus: 16, cpuModel: 'cpu', gpus: ['NVIDIA H100'] },
    native: { build: 'localBuild', gpu: 'cuda', release: 'v0.5.0', openmp: true },
    buildSeconds: {},
    models: offload(9),
    config: { prompts: 2, maxTokens: 64, repeats: 2, gamma: 4, temperature: 0, contextSize: 512, seed: 1 },
    arms: armRows(results),
    greedy: greedyRows(results),
    engines: [],
    tokenSplit: { error: 'not asked' },
    passed: true,
    problems: []
  }
}

describe('GPU check report', () => {
  const ar = arm('ar@1/2', 'ar', 'speclab', [100, 100, 100, 100], [[1, 2, 3], [4, 5]])
  const sd = arm('sd@1/2', 'sd', 'speclab', [150, 150, 150, 150], [[1, 2, 3], [4, 5]])
  const peer = arm('llama-server:draft@2/2/1', 'llama-server:draft', 'llama.cpp', [120, 120, 120, 120], [[1, 2, 3], [4, 6]])

  it('checks every arm against ar and names the prompts that differ', () => {
    expect(greedyRows([ar, sd, peer])).toEqual([
      { arm: 'sd@1/2', same: 2, prompts: 2, differing: [], divergences: [] },
      { arm: 'llama-server:draft@2/2/1', same: 1, prompts: 2, differing: [1], divergences: [] }
    ])
  })

  it('fails a differing output, and a model not wholly on the GPU only in cuda mode', () => {
    const greedy = greedyRows([ar, sd])
    expect(problemsOf(greedy, offload(9), 'cuda')).toEqual([])
    expect(problemsOf(greedy, offload(8), 'cuda')).toEqual(['target t.gguf: 8 of 9 layers on the GPU'])
    expect(problemsOf(greedy, offload(0), 'cpu')).toEqual([])
    expect(problemsOf(greedyRows([ar, peer]), offload(9), 'cuda')).toEqual(['llama-server:draft@2/2/1: greedy output differs from ar, not at a numerical tie, on prompts 1'])
  })

  const divergence = (tie: boolean): Divergence => ({ prompt: 1, position: 1, ar: 5, arm: 6, gap: 0.001, gapChunked: [tie ? -0.002 : 0.001], noise: tie ? 0.003 : 0, tie })

  it('passes a difference at a numerical tie and fails one that is not', () => {
    const [row] = greedyRows([ar, peer]).slice(0, 1)
    expect(problemsOf([{ ...row!, divergences: [divergence(true)] }], offload(9), 'cuda')).toEqual([])
    expect(problemsOf([{ ...row!, divergences: [divergence(false)] }], offload(9), 'cuda')).toHaveLength(1)
    // A tie on another prompt does not excuse this one.
    expect(problemsOf([{ ...row!, divergences: [{ ...divergence(true), prompt: 0 }] }], offload(9), 'cuda')).toHaveLength(1)
  })

  it('calls a divergence a tie only when ar’s evaluation prefers its token by no more than the noise', () => {
    expect(isNumericalTie(0.003, [0.0031], 0.004)).toBe(true)
    expect(isNumericalTie(0.003, [0.0031, -0.001], 0)).toBe(true)
    expect(isNumericalTie(0.003, [0.0031, 0.0025], 0.001)).toBe(false)
    expect(isNumericalTie(0.5, [0.49, 0.51], 0.02)).toBe(false)
    expect(isNumericalTie(-0.001, [0.002], 1)).toBe(false)
    expect(isNumericalTie(null, [0.001], 1)).toBe(false)
    expect(isNumericalTie(0, [], 0)).toBe(true)
    expect(isNumericalTie(0.001, [null], 0)).toBe(false)
    expect(firstDifference([1, 2, 3], [1, 2, 4])).toBe(2)
    expect(firstDifference([1, 2, 3], [1, 2])).toBeNull()
  })

  const dist = (entries: [number, number][]) => ({ ids: Int32Array.from(entries.map((e) => e[0])), probs: Float64Array.from(entries.map((e) => e[1])) })

  it('measures the noise as the largest change of ar’s top-two gap between histories, and weighs a divergence on it', () => {
    const output = [7, 8]
    const own = [dist([[7, 0.6], [9, 0.4]]), dist([[8, 0.5], [3, 0.49], [4, 0.01]])]
    const chunked = [dist([[7, 0.59], [9, 0.41]]), dist([[8, 0.5], [3, 0.49], [4, 0.01]])]
    const noise = noiseOf([own, chunked], output)
    expect(noise).toBeCloseTo(Math.abs(Math.log(0.6 / 0.4) - Math.log(0.59 / 0.41)), 12)
    // Position 1: ar's 8 leads 3 by ln(0.5/0.49) ≈ 0.020, within the noise (≈ 0.041): a tie; it leads 4 by 3.9: real.
    expect(weighDivergence([own, chunked], output, 1, 3, noise).tie).toBe(true)
    expect(weighDivergence([own, chunked], output, 1, 4, noise).tie).toBe(false)
    // Identical histories (the CPU): noise 0, every divergence with a positive gap is real.
    expect(noiseOf([own, own], output)).toBe(0)
    expect(weighDivergence([own, own], output, 1, 3, 0).tie).toBe(false)
  })

  it('compares the engines only on the jobs both ran, paired per cell', () => {
    const peerAr = arm('llama-server:ar@2/2', 'llama-server:ar', 'llama.cpp', [80, 80, 80, 80], [[1, 2, 3], [4, 5]])
    const rows = engineRows([ar, sd, peerAr, peer])
    expect(rows.map((r) => [r.speclab, r.llamaServer])).toEqual([['ar@1/2', 'llama-server:ar@2/2'], ['sd@1/2', 'llama-server:draft@2/2/1']])
    expect(rows[0]!.ratio?.median).toBeCloseTo(1.25, 6)
    expect(rows[1]!.ratio?.median).toBeCloseTo(1.25, 6)
    expect(engineRows([ar, sd, peer]).map((r) => r.speclab)).toEqual(['sd@1/2'])
    expect(engineRows([ar, sd])).toEqual([])
  })

  it("the advisor's section: each advised arm predicted beside measured, and the picks over llama-server's default", () => {
    const threads = { threads: 1, batchThreads: 2, draftThreads: 1 }
    const pearlLabel = armLabelOf({ method: 'pearl', gamma: 4, params: {} }, threads)
    const pminLabel = armLabelOf({ method: 'sd-pmin', gamma: 5, params: { 'pmin.p': 0.3 } }, threads)
    // The labels are arms parseArm reads back: the same method, parameters and γ.
    expect(pearlLabel).toBe('pearl+gamma=4@1/2/1')
    expect(parseArm(pminLabel)).toMatchObject({ method: 'sd-pmin', params: { 'pmin.p': 0.3 }, gamma: 5, threads })
    const withSpeed = (a: ArmResult, median: number): ArmResult => ({ ...a, tokensPerSecond: { median, low: median - 5, high: median + 5, cells: 4, prompts: 2, repeats: 2 } })
    const serverLabel = 'llama-server:draft+gamma=3@1/2/1'
    const results = [
      withSpeed(ar, 100),
      withSpeed(arm(pearlLabel, 'pearl', 'speclab', [160, 160, 160, 160], [[1, 2, 3], [4, 5]]), 160),
      withSpeed(arm(pminLabel, 'sd-pmin', 'speclab', [140, 140, 140, 140], [[1, 2, 3], [4, 5]]), 140),
      withSpeed(arm(serverLabel, 'llama-server:draft', 'llama.cpp', [125, 125, 125, 125], [[1, 2, 3], [4, 5]]), 125)
    ]
    const plan: AdvicePlan = {
      advised: [
        { label: pminLabel, method: 'sd-pmin', gamma: 5, params: { 'pmin.p': 0.3 }, predicted: { tokensPerSecond: 150, speedup: 1.5 } },
        { label: pearlLabel, method: 'pearl', gamma: 4, params: {}, predicted: { tokensPerSecond: 160, speedup: 1.6 } }
      ],
      ar: { tokensPerSecond: 100 },
      serverDefault: serverLabel,
      costs: { targetMs: [1, 1.1], draftMs: 0.2, roundScale: 1.05, overlapScale: 1.3, decodeOutsideMs: 12.5 },
      candidates: 30,
      seconds: 12
    }
    const advice = adviceReport(plan, results)
    expect(advice.rows.map((r) => [r.label, r.measured?.median, r.overAr?.median])).toEqual([
      [pminLabel, 140, 1.4],
      [pearlLabel, 160, 1.6]
    ])
    // The first choice is the fastest predicted (sd-pmin); the measured fastest is pearl.
    expect(advice.firstOverDefault?.median).toBeCloseTo(140 / 125, 6)
    expect(advice.best?.label).toBe(pearlLabel)
    expect(advice.best?.overDefault?.median).toBeCloseTo(160 / 125, 6)
    // Errors: sd-pmin 10/140, pearl 0, ar 0 → median 0.
    expect(advice.medianError).toBe(0)
    const markdown = reportMarkdown({ ...reportOf([ar]), advice })
    expect(markdown).toContain('## The setup advisor on this machine')
    expect(markdown).toContain(`| ${pminLabel} | 150.0 | 140.0 [135.0–145.0] | 1.500× | 1.400× [1.400–1.400] |`)
    expect(markdown).toContain("the advisor's first choice over llama-server's default: 1.120×")
    expect(markdown).toContain('s 1.050, s‖ 1.300; each decode 12.50 ms outside its rounds and prompt')
    expect(reportMarkdown({ ...reportOf([ar]), advice: { error: 'no SpecLab ar arm to take the threads from' } })).toContain('Not run: no SpecLab ar arm to take the threads from')
    // Sampled: no greedy column, and the advice says its rounds are expected values.
    const sampled = reportOf([ar, sd])
    const sampledMarkdown = reportMarkdown({ ...sampled, config: { ...sampled.config, temperature: 1 }, greedy: [], advice })
    expect(sampledMarkdown).toContain('| sd@1/2 | speclab | – | 1.500× [1.500–1.500] | – | – | – |')
    expect(sampledMarkdown).toContain('sampled: no greedy check')
    expect(sampledMarkdown).toContain('One sampled trace (temperature 1; expected rounds)')
  })

  it('says PASSED or FAILED and lists the problems', () => {
    const report: GpuCheckReport = {
      date: '2026-01-01T00:00:00.000Z',
      mode: 'cuda',
      machine: { description: 'load 0.1 on 16 cores', cpus: 16, cpuModel: 'cpu', gpus: ['NVIDIA H100'] },
      native: { build: 'localBuild', gpu: 'cuda', release: 'v0.5.0', openmp: true },
      buildSeconds: { configure: 20, build: 300 },
      models: offload(9),
      config: { prompts: 2, maxTokens: 64, repeats: 2, gamma: 4, temperature: 0, contextSize: 512, seed: 1 },
      arms: armRows([ar, sd]),
      greedy: greedyRows([ar, sd]),
      engines: engineRows([ar, sd, peer]),
      tokenSplit: { error: 'no SpecLab ar arm' },
      passed: true,
      problems: []
    }
    const passed = reportMarkdown(report)
    expect(passed).toContain('# SpecLab GPU check — PASSED')
    expect(passed).toContain('| sd@1/2 | speclab |')
    expect(passed).toContain('1.500× [1.500–1.500]')
    expect(passed).toContain('build: configure 20 s, build 300 s')
    expect(passed).toContain('| sd@1/2 | llama-server:draft@2/2/1 | 1.250× [1.250–1.250] |')
    const failed = reportMarkdown({ ...report, passed: false, problems: ['sd@1/2: greedy output differs from ar on prompts 0'] })
    expect(failed).toContain('FAILED')
    expect(failed).toContain('- sd@1/2: greedy output differs from ar on prompts 0')
    const tied = reportMarkdown({ ...report, greedy: [{ arm: 'sd@1/2', same: 1, prompts: 2, differing: [1], divergences: [divergence(true)] }] })
    expect(tied).toContain('| 1/2, 1 at ties |')
    expect(passed).toContain('Not measured: no SpecLab ar arm')
    const ms = (median: number): Interval => ({ median, low: median - 0.01, high: median + 0.01, cells: 4, prompts: 2, repeats: 2 })
    const split = reportMarkdown({
      ...report,
      tokenSplit: { tokens: 4, direct: 3, stepMs: ms(1.3), decodeMs: ms(0.4), readMs: ms(0.8), rereadMs: ms(0.06), engineMs: ms(0.1), serverMs: null }
    })
    expect(split).toContain("4 greedy tokens of SpecLab's target session, one evaluation each (3 through the addon path)")
    expect(split).toContain("| SpecLab's step (`append` of one token) | 1.300 [1.290–1.310] |")
    expect(split).toContain('| – awaited `sampleToken` (hand-off, the logits\' top 64, hand-back) | 0.800 [0.790–0.810] |')
    expect(split).toContain("| llama-server's own time per generated token (predicted_ms / (predicted_n − 1), HTTP excluded) | – |")
    expect(tied).toContain("- sd@1/2, prompt 1, token 1: ar 5, arm 6; gap 0.0010 under ar's evaluation, -0.0020 in chunks of 2…; the prompt's noise 0.0030 → numerical tie")
  })
})
