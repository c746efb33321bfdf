/**
 * The trio check's memory estimate (electron/experiments/memory-estimate.ts) without a GPU: describeMemory's sentence for
 * synthetic estimates (no GPU, all layers on a GPU, some, none, not fitting), and estimateTrioMemory's bookkeeping
 * over a stand-in GgufInsights — each file resolved against the VRAM the earlier files leave (plus what the held
 * trio frees, less node-llama-cpp's padding), refused GPU layers reported rather than thrown, and a time limit.
 * The real CPU path on GGUF files is in test/integration/host.test.ts.
 */
import { describe, expect, it, vi } from 'vitest'
import type { MemoryEstimate } from '../../electron/api/models'

/** What the stand-in insights were asked, per file path. */
const seen = vi.hoisted(() => ({ resolveFree: new Map<string, number>(), refuse: new Set<string>(), resolveOptions: [] as any[] }))

vi.mock('node-llama-cpp', async (importOriginal) => {
  const original = await importOriginal<typeof import('node-llama-cpp')>()
  const MB = 1024 * 1024
  // Per file: 10 layers; each GPU layer takes 100 MB of VRAM for the weights and 10 MB for the context.
  const fakeInsights = (path: string) => ({
    totalLayers: 10,
    trainContextSize: 1024,
    flashAttentionSupported: true,
    configurationResolver: {
      async resolveModelGpuLayersV2(gpuLayers: 'auto' | number, options: any) {
        seen.resolveOptions.push(options)
        const { free } = await options.getVramState()
        seen.resolveFree.set(path, free)
        if (!options.llamaSupportsGpuOffloading) return { gpuLayers: 0, useMmap: true }
        if (gpuLayers === 'auto') return { gpuLayers: Math.min(10, Math.floor(free / (110 * MB))), useMmap: true }
        if (seen.refuse.has(path) || gpuLayers * 110 * MB > free) throw new original.InsufficientMemoryError('Not enough VRAM')
        return { gpuLayers: Math.min(10, gpuLayers), useMmap: false }
      }
    },
    async estimateModelResourceRequirementsV2({ gpuLayers }: { gpuLayers: number }) {
      return { cpuRam: (10 - gpuLayers) * 100 * MB, gpuVram: gpuLayers * 100 * MB }
    },
    async estimateContextResourceRequirementsV2({ modelGpuLayers, contextSize }: { modelGpuLayers: number; contextSize: number }) {
      return { cpuRam: contextSize * 1024, gpuVram: modelGpuLayers * 10 * MB }
    }
  })
  return {
    ...original,
    readGgufFileInfo: async (path: string) => ({ path }),
    GgufInsights: { from: async (info: { path: string }) => fakeInsights(info.path) }
  }
})

const { assertTrioFits, describeMemory, estimateTrioMemory } = await import('../../electron/experiments/memory-estimate')

const MB = 1024 * 1024
const GB = 1024 * MB
const trio = [
  { fileName: 'target.gguf', path: '/m/target.gguf', role: 'target' as const },
  { fileName: 'mid.gguf', path: '/m/mid.gguf', role: 'mid' as const },
  { fileName: 'draft.gguf', path: '/m/draft.gguf', role: 'draft' as const }
]
const gpuRuntime = (free: number, padding = 0) => async () => ({
  llama: {} as never,
  gpu: 'cuda' as const,
  supportsGpuOffloading: true,
  vramPaddingSize: padding,
  getVramState: async () => ({ total: 8 * GB, free, unifiedSize: 0 })
})
const cpuRuntime = async () => ({
  llama: {} as never,
  gpu: false as const,
  supportsGpuOffloading: false,
  vramPaddingSize: 0,
  getVramState: async () => ({ total: 0, free: 0, unifiedSize: 0 })
})

type File = MemoryEstimate['files'][number]
const file = (role: File['role'], gpuLayers: number, totalLayers: number, vramBytes: number, fitsVram = true): File => ({
  fileName: `${role}.gguf`,
  role,
  weightsBytes: 100 * MB,
  contextBytes: 20 * MB,
  contextSize: 512,
  gpuLayers,
  totalLayers,
  vramBytes,
  fitsVram
})
const estimate = (overrides: Partial<MemoryEstimate>): MemoryEstimate => {
  const files = overrides.files ?? [file('target', 0, 26, 0), file('draft', 0, 6, 0)]
  return {
    files,
    totalBytes: files.reduce((n, f) => n + f.weightsBytes + f.contextBytes, 0),
    freeBytes: 16 * GB,
    sequences: 4,
    gpuLayersSetting: 'auto',
    gpu: null,
    vramTotalBytes: 0,
    vramFreeBytes: 0,
    totalVramBytes: files.reduce((n, f) => n + f.vramBytes, 0),
    ...overrides
  }
}
const RAM = 'Loading needs about 240 MB of RAM (weights 200 MB + context 40.0 MB at 512 tokens × 4 sequences); 16.0 GB free.'

describe('describeMemory', () => {
  it('without a GPU: every layer on the CPU, then the RAM', () => {
    expect(describeMemory(estimate({}))).toBe(`No GPU in this build: all layers run on the CPU. ${RAM}`)
  })

  it('with every layer on the GPU: layers per file and the VRAM beside what is free', () => {
    const files = [file('target', 26, 26, 1000 * MB), file('draft', 6, 6, 230 * MB)]
    expect(describeMemory(estimate({ files, gpu: 'cuda', vramTotalBytes: 24 * GB, vramFreeBytes: 7.8 * GB }))).toBe(
      `GPU (cuda): target 26/26 layers, draft 6/6 — about 1.2 GB of VRAM; 7.8 GB of 24.0 GB free. ${RAM}`
    )
  })

  it('with some layers on the GPU (a trio with a mid draft)', () => {
    const files = [file('target', 20, 33, 6 * GB), file('mid', 12, 12, 900 * MB), file('draft', 6, 6, 100 * MB)]
    expect(describeMemory(estimate({ files, gpu: 'vulkan', vramTotalBytes: 8 * GB, vramFreeBytes: 7.5 * GB }))).toMatch(
      /^GPU \(vulkan\): target 20\/33 layers, mid 12\/12, draft 6\/6 \(the other layers run on the CPU\) — about 7\.0 GB of VRAM; 7\.5 GB of 8\.0 GB free\. Loading needs/
    )
  })

  it('with GPU layers 0, or none fitting', () => {
    const free = { gpu: 'metal' as const, vramTotalBytes: 16 * GB, vramFreeBytes: 10 * GB }
    expect(describeMemory(estimate({ ...free, gpuLayersSetting: 0 }))).toBe(
      `GPU (metal) unused: GPU layers 0, so all layers run on the CPU (VRAM 10.0 GB of 16.0 GB free). ${RAM}`
    )
    expect(describeMemory(estimate({ ...free, gpuLayersSetting: 'auto' }))).toMatch(
      /^GPU \(metal\): no layer fits in the VRAM left, so all layers run on the CPU \(VRAM 10\.0 GB of 16\.0 GB free\)\. Loading/
    )
  })

  it('warns when the chosen layers do not fit the VRAM, and when the RAM does not', () => {
    const files = [file('target', 33, 33, 9 * GB, false), file('draft', 6, 6, 100 * MB)]
    const gpu = { files, gpu: 'cuda' as const, vramTotalBytes: 8 * GB, vramFreeBytes: 7.8 * GB }
    expect(describeMemory(estimate({ ...gpu, gpuLayersSetting: 40 }))).toMatch(
      /^GPU \(cuda\): target 33\/33 layers, draft 6\/6 — about 9\.1 GB of VRAM; 7\.8 GB of 8\.0 GB free — not enough: loading fails, lower the GPU layers or use auto\. /
    )
    // auto places fewer layers when it must; a total over the free VRAM can still happen (other programs).
    const autoFiles = [file('target', 30, 33, 7 * GB), file('draft', 6, 6, 1 * GB)]
    expect(describeMemory(estimate({ ...gpu, files: autoFiles }))).toMatch(/— about 8\.0 GB of VRAM; 7\.8 GB of 8\.0 GB free — not enough: loading may fail\./)
    expect(describeMemory(estimate({ freeBytes: 100 * MB }))).toMatch(/; 100 MB free — not enough: lower the context size or use smaller files\.$/)
  })
})

describe('assertTrioFits: what cannot fit is refused before llama.cpp tries', () => {
  it('passes a trio that fits, even above the free RAM (weights are memory-mapped)', () => {
    expect(() => assertTrioFits(estimate({ freeBytes: 100 * MB }), 1 * GB)).not.toThrow()
  })
  it('refuses more RAM than the machine has in all, naming the context to lower', () => {
    expect(() => assertTrioFits(estimate({}), 200 * MB)).toThrow(
      /^the models do not fit: loading needs about 240 MB of RAM and this machine has 200 MB in all — lower the context size \(512 tokens × 4 sequences\)/
    )
  })
  it('refuses GPU layers node-llama-cpp would refuse, naming the file', () => {
    const refused = estimate({ gpu: 'cuda', gpuLayersSetting: 20, vramFreeBytes: 2 * GB, files: [file('target', 20, 26, 3 * GB, false), file('draft', 0, 6, 0)] })
    expect(() => assertTrioFits(refused, 64 * GB)).toThrow(/^target\.gguf: 20 GPU layers do not fit in the 2\.0 GB of VRAM free \(cuda\) — lower the GPU layers or use auto$/)
  })
})

describe('estimateTrioMemory', () => {
  it('on the CPU: no GPU, every layer on the CPU, no VRAM', async () => {
    const result = await estimateTrioMemory(trio, { contextSize: 4096, sequences: 4, gpuLayers: 'auto' }, { runtime: cpuRuntime })
    expect(result).toMatchObject({ gpu: null, gpuLayersSetting: 'auto', vramTotalBytes: 0, vramFreeBytes: 0, totalVramBytes: 0, sequences: 4 })
    expect(result.files.map((f) => [f.role, f.gpuLayers, f.totalLayers, f.vramBytes, f.contextSize])).toEqual([
      ['target', 0, 10, 0, 1024], // the context is capped by the training context
      ['mid', 0, 10, 0, 1024],
      ['draft', 0, 10, 0, 1024]
    ])
    expect(result.totalBytes).toBe(3 * (1000 * MB + 1024 * 1024))
  })

  it('resolves each file against the VRAM the earlier files take, the held trio frees and the padding keeps', async () => {
    seen.resolveFree.clear()
    seen.resolveOptions.length = 0
    // 1.5 GB free + 0.5 GB the held trio frees - 0.1 GB padding = 1.9 GB: the target takes 10 layers (1.1 GB),
    // the mid 7 of what is left (0.8 GB), the draft none.
    const result = await estimateTrioMemory(
      trio,
      { contextSize: 512, sequences: 4, gpuLayers: 'auto' },
      { runtime: gpuRuntime(1.5 * GB, 0.1 * GB), reclaimableVramBytes: 0.5 * GB }
    )
    expect([...seen.resolveFree.values()]).toEqual([1.9 * GB, 1.9 * GB - 1100 * MB, 1.9 * GB - 1100 * MB - 770 * MB])
    expect(result.files.map((f) => [f.gpuLayers, f.vramBytes, f.fitsVram])).toEqual([
      [10, 1100 * MB, true],
      [7, 770 * MB, true],
      [0, 0, true]
    ])
    expect(result).toMatchObject({ gpu: 'cuda', vramTotalBytes: 8 * GB, vramFreeBytes: 2 * GB, totalVramBytes: 1870 * MB })
    expect(seen.resolveOptions[0]).toMatchObject({ llamaGpu: 'cuda', llamaSupportsGpuOffloading: true, defaultContextFlashAttention: 'auto' })
    expect(describeMemory(result)).toMatch(/^GPU \(cuda\): target 10\/10 layers, mid 7\/10, draft 0\/10 \(the other layers run on the CPU\) — about 1\.8 GB of VRAM; 2\.0 GB of 8\.0 GB free\. /)
  })

  it('reports GPU layers that node-llama-cpp refuses as not fitting instead of failing the check', async () => {
    seen.refuse.add('/m/mid.gguf')
    try {
      const result = await estimateTrioMemory(trio, { contextSize: 512, sequences: 4, gpuLayers: 8 }, { runtime: gpuRuntime(4 * GB) })
      expect(result.files.map((f) => [f.gpuLayers, f.fitsVram])).toEqual([
        [8, true],
        [8, false],
        [8, true]
      ])
      expect(describeMemory(result)).toMatch(/not enough: loading fails, lower the GPU layers or use auto\./)
    } finally {
      seen.refuse.clear()
    }
  })

  it('gives up after its time limit with one line', async () => {
    const never = () => new Promise<never>(() => {})
    await expect(estimateTrioMemory(trio, { contextSize: 512, sequences: 4, gpuLayers: 'auto' }, { runtime: never, budgetMs: 50 })).rejects.toThrow(
      /^the estimate took longer than 0.05 s/
    )
  })
})
