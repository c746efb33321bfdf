/**
 * `npm run profile:decode`: where the time of a decode goes on the JS thread. Runs `speclab run`
 * under V8's sampling profiler (node --cpu-prof) and sums the self time of the decoding process by where it was
 * spent: idle (the JS thread waits while llama.cpp evaluates on a libuv worker thread), node-llama-cpp's JS (batch
 * assembly, sampler set-up, locks), SpecLab's engine (sessions, warping, decoders), the store, garbage collection,
 * and the rest (module loading, CLI). The whole process is counted, loading included (seconds of a minute-long run).
 *
 * Usage: npm run profile:decode [-- <speclab run options>]   (default: sd on the inflated target ← 260K, 4 prompts ×
 * 128 tokens × 3 repeats, greedy). --top N lists the N functions with the most self time (default 12).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sharedModelsDirectory } from '../electron/experiments/shared-paths'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}
interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const CATEGORIES: [string, (frame: ProfileNode['callFrame']) => boolean][] = [
  ['idle: waiting for llama.cpp (libuv worker) or I/O', (f) => f.functionName === '(idle)'],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['node-llama-cpp JS (batches, samplers, locks)', (f) => f.url.includes('node-llama-cpp')],
  ['SpecLab engine (sessions, warping, decoders)', (f) => f.url.includes('/electron/engine/')],
  ['SpecLab store (SQLite writes)', (f) => f.url.includes('/electron/store/') || f.url.includes('better-sqlite3')],
  ['SpecLab runner, CLI, progress', (f) => f.url.includes('/electron/')],
  ['V8 / native (program)', (f) => f.functionName === '(program)'],
  ['module loading and the rest', () => true]
]

function summarize(profile: CpuProfile, top: number): string {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
  const byCategory = new Map<string, number>()
  const byFunction = new Map<string, number>()
  let total = 0
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)!.callFrame
    const micros = profile.timeDeltas[i] ?? 0
    total += micros
    const category = CATEGORIES.find(([, test]) => test(frame))![0]
    byCategory.set(category, (byCategory.get(category) ?? 0) + micros)
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}${frame.url ? `:${frame.lineNumber + 1}` : ''}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros)
  })
  const row = (label: string, micros: number) => `${(micros / 1000).toFixed(0).padStart(9)} ms ${((100 * micros) / total).toFixed(1).padStart(5)} %  ${label}`
  return [
    `self time of the decoding process, ${(total / 1e6).toFixed(1)} s sampled:`,
    ...CATEGORIES.map(([label]) => row(label, byCategory.get(label) ?? 0)),
    '',
    `top ${top} functions by self time:`,
    ...[...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, micros]) => row(name, micros))
  ].join('\n')
}

function main(): void {
  const args = process.argv.slice(2)
  const topAt = args.indexOf('--top')
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 12
  const models = sharedModelsDirectory()
  const runArgs =
    args.length > 0
      ? args
      : ['--target', path.join(models, 'family/stories-target5M-inflated-78M-f16.gguf'), '--draft', path.join(models, 'stories260K-f32.gguf'), '--methods', 'sd', '--limit', '4', '--max-tokens', '128', '--repeats', '3', '--temperature', '0', '--seed', '1']
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-profile-'))
  const root = path.resolve(import.meta.dirname, '..')
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--cpu-prof', '--cpu-prof-dir', directory, path.join(root, 'electron/cli.ts'), 'run', ...runArgs, '--db', path.join(directory, 'runs.sqlite')], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit']
  })
  if (result.status !== 0) process.exit(result.status ?? 1)
  // The CLI runs the work in a child process (cli/supervise.ts): its profile is the largest.
  const profiles = fs.readdirSync(directory).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(directory, f))
  const largest = profiles.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0]
  if (!largest) throw new Error(`no CPU profile written to ${directory}`)
  process.stdout.write(`\n${summarize(JSON.parse(fs.readFileSync(largest, 'utf8')) as CpuProfile, top)}\n\nprofile: ${largest} (open it in Chrome DevTools → Performance)\n`)
}

main()
