/**
 * `npm run bench:load-cycles`: resident memory of a model process over repeated load/unload cycles, to tell what
 * SpecLab keeps per load from what llama.cpp and the C allocator keep. Each variant runs in a fresh process with the
 * environment the engine host gets (the caller's, as the app passes it on), loads the pair and unloads it `--cycles` times, and
 * reports after each unload: VmRSS, its anonymous part (RssAnon: the heap and malloc arenas — the model files are
 * mmapped and count as RssFile while loaded), V8's heap and external memory.
 *
 * Variants (--variants, comma-separated):
 *   speclab      the Models screen's path (host/loaded-models.ts LoadedModels: loadTrio, fingerprints, vocabulary
 *                check, dispose), no forced GC — as the engine runs
 *   speclab-gc   the same, with a full GC (node --expose-gc) before each sample: what is left is not garbage JS
 *   raw-gc       node-llama-cpp alone (loadModel + createContext, dispose), GC before each sample: SpecLab's
 *                layers left out
 *   arena2-gc    speclab-gc with MALLOC_ARENA_MAX=2 (glibc: fewer per-thread arenas)
 *   arena2       the same without forced GC — as the engine would run with it
 *   mmap-gc      speclab-gc with MALLOC_MMAP_THRESHOLD_=131072 (glibc: a fixed threshold, so blocks ≥ 128 KiB are
 *                mmapped and returned to the system on free, instead of glibc raising the threshold after the
 *                first free and serving later large blocks from the heap, where they fragment)
 *   mmap         the same threshold without forced GC — as the engine would run with it
 *   mmap1m       a fixed threshold of 1 MiB instead, without forced GC
 *
 * Usage: npm run bench:load-cycles -- [--cycles 30] [--variants speclab,raw-gc] [--target F] [--draft F]
 * (default pair: the shared stories-target5M-f32 ← stories260K-f32; contextSize 512, 1 thread, as the soak loads).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command, InvalidArgumentError } from 'commander'
import type { ModelEntry } from '../electron/api/models'
import { sharedModelsDirectory } from '../electron/experiments/shared-paths'

const VARIANTS = {
  speclab: { gc: false, raw: false, env: {} },
  'speclab-gc': { gc: true, raw: false, env: {} },
  'raw-gc': { gc: true, raw: true, env: {} },
  'arena2-gc': { gc: true, raw: false, env: { MALLOC_ARENA_MAX: '2' } },
  arena2: { gc: false, raw: false, env: { MALLOC_ARENA_MAX: '2' } },
  'mmap-gc': { gc: true, raw: false, env: { MALLOC_MMAP_THRESHOLD_: '131072' } },
  mmap: { gc: false, raw: false, env: { MALLOC_MMAP_THRESHOLD_: '131072' } },
  mmap1m: { gc: false, raw: false, env: { MALLOC_MMAP_THRESHOLD_: '1048576' } }
} as const
type Variant = keyof typeof VARIANTS

interface CycleSample {
  cycle: number
  rssMiB: number
  anonMiB: number
  heapMiB: number
  externalMiB: number
  ms: number
}

const MiB = 1024 * 1024
const round1 = (x: number) => Math.round(x * 10) / 10

/** VmRSS and RssAnon of this process (Linux), MiB. */
function residentMemory(): { rssMiB: number; anonMiB: number } {
  const status = fs.readFileSync('/proc/self/status', 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMiB: round1(kib('VmRSS') / 1024), anonMiB: round1(kib('RssAnon') / 1024) }
}

const positive = (value: string) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number')
  return n
}

const program = new Command('load-cycles')
  .option('--cycles <n>', 'load/unload cycles per variant', positive, 30)
  .option('--variants <list>', `comma-separated, of: ${Object.keys(VARIANTS).join(', ')}`, Object.keys(VARIANTS).join(','))
  .option('--target <file>', 'target GGUF', path.join(sharedModelsDirectory(), 'family/stories-target5M-f32.gguf'))
  .option('--draft <file>', 'draft GGUF', path.join(sharedModelsDirectory(), 'stories260K-f32.gguf'))
  .option('--child <variant>', '(internal) run one variant in this process')
  .parse()
const options = program.opts<{ cycles: number; variants: string; target: string; draft: string; child?: Variant }>()

// ── One variant, in its own process ─────────────────────────────────────────────────────────────────────────

const entry = (file: string) => ({ path: path.resolve(file), fileName: path.basename(file) }) as ModelEntry
const LOAD = { contextSize: 512, gpuLayers: 0, threads: 1, batchThreads: null, fullVocabulary: false } as const

/** One cycle's load and unload, as the variant does it. */
async function cycleFunction(raw: boolean): Promise<() => Promise<void>> {
  // The runtime first, in every variant, so the first sample already counts llama.cpp's backend.
  const { sharedLlama } = await import('../electron/engine/model/llama-cpp-model')
  const llama = await sharedLlama()
  if (raw) {
    return async () => {
      for (const file of [options.target, options.draft]) {
        const model = await llama.loadModel({ modelPath: path.resolve(file), gpuLayers: 0 })
        const context = await model.createContext({ contextSize: LOAD.contextSize, sequences: 4, threads: LOAD.threads })
        await context.dispose()
        await model.dispose()
      }
    }
  }
  const { LoadedModels } = await import('../electron/host/loaded-models')
  const loaded = new LoadedModels()
  const entries = { target: entry(options.target), mid: null, draft: entry(options.draft) }
  return async () => {
    await loaded.load(entries, LOAD, () => {})
    await loaded.unload()
  }
}

async function runChild(variant: Variant): Promise<void> {
  const { gc, raw } = VARIANTS[variant]
  const collect = (globalThis as { gc?: () => void }).gc
  if (gc && !collect) throw new Error('run with node --expose-gc')
  const cycle = await cycleFunction(raw)
  const sample = (n: number, ms: number): CycleSample => {
    if (gc) collect!()
    const { heapUsed, external } = process.memoryUsage()
    return { cycle: n, ...residentMemory(), heapMiB: round1(heapUsed / MiB), externalMiB: round1(external / MiB), ms: Math.round(ms) }
  }
  process.stdout.write(JSON.stringify(sample(0, 0)) + '\n')
  for (let n = 1; n <= options.cycles; n++) {
    const t0 = performance.now()
    await cycle()
    process.stdout.write(JSON.stringify(sample(n, performance.now() - t0)) + '\n')
  }
}

// ── The parent: each variant in a fresh process, then a summary ─────────────────────────────────────────────

function runVariant(variant: Variant): CycleSample[] {
  const { gc, env } = VARIANTS[variant]
  const args = [...(gc ? ['--expose-gc'] : []), '--import', 'tsx', fileURLToPath(import.meta.url), '--child', variant]
  args.push('--cycles', String(options.cycles), '--target', options.target, '--draft', options.draft)
  const child = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * MiB })
  if (child.status !== 0) throw new Error(`${variant} failed (exit ${child.status}): ${child.stderr.trim().split('\n').slice(-5).join(' | ')}`)
  return child.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as CycleSample)
}

/** RSS at a few points of the run: after the first cycle, a quarter, half, three quarters, the last, and the largest. */
function summary(variant: Variant, samples: CycleSample[]): string {
  const at = (fraction: number) => samples[Math.max(1, Math.round(fraction * (samples.length - 1)))]!
  const points = [at(0), at(0.25), at(0.5), at(0.75), at(1)]
  const peak = Math.max(...samples.map((s) => s.rssMiB))
  const last = samples[samples.length - 1]!
  const cycleMs = samples.slice(1).map((s) => s.ms).sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)]
  return [
    variant.padEnd(11),
    `start ${samples[0]!.rssMiB}`,
    `RSS after cycle ${points.map((p) => `${p.cycle}: ${p.rssMiB}`).join(', ')}; peak ${peak}`,
    `anon ${at(0).anonMiB} → ${last.anonMiB}`,
    `heap ${at(0).heapMiB} → ${last.heapMiB}`,
    `external ${at(0).externalMiB} → ${last.externalMiB}`,
    `cycle ${cycleMs} ms`
  ].join(' | ')
}

async function main(): Promise<void> {
  if (options.child) return runChild(options.child)
  const variants = options.variants.split(',').map((v) => v.trim()) as Variant[]
  const unknown = variants.find((v) => !(v in VARIANTS))
  if (unknown) {
    process.stderr.write(`load-cycles: unknown variant ${unknown} (known: ${Object.keys(VARIANTS).join(', ')})\n`)
    process.exit(2)
  }
  for (const file of [options.target, options.draft])
    if (!fs.existsSync(file)) {
      process.stderr.write(`load-cycles: ${file} not found\n`)
      process.exit(2)
    }
  process.stdout.write(`${options.cycles} load/unload cycles of ${path.basename(options.target)} ← ${path.basename(options.draft)}, MiB after each unload\n`)
  for (const variant of variants) {
    const samples = runVariant(variant)
    process.stdout.write(summary(variant, samples) + '\n')
    process.stdout.write(`  RSS per cycle: ${samples.map((s) => s.rssMiB).join(' ')}\n`)
  }
}

await main()
