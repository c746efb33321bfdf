/**
 * `npm run bench:advise`: the setup advisor against the exhaustive grid it saves the user from.
 *
 * 1. `speclab advise` on the workload (timed): its recommendation, and every verified candidate's prediction beside
 *    its measurement (a llama-server arm's predicted with llama-server's own costs, where they were measured).
 * 2. The same candidate grid measured with `speclab run` (timed): the candidates packed into as few runs as their
 *    parameters allow (one run per γ, a method at most once per run, since `--gamma` and `--set` apply to a whole
 *    run), each run with `ar` so every speedup is paired with ar on the same prompt and repeat, as the advisor's.
 * 3. The comparison the advisor is held to: the recommendation's measured tok/s and speedup against the interval of
 *    the grid's best configuration; the advisor's time against the grid's; the median |predicted − measured| /
 *    measured over the verified candidates; and, where the verification measured llama-server, the pick against
 *    llama-server's default speculative configuration.
 *
 * The grid is the advisor's own (engine/replay/candidates.ts candidateGrid), restricted by --methods as the advisor is.
 * Every process runs one after the other: never two measurements at once on a shared machine.
 *
 * With `--mid M` the advisor gets the mid model too, and the grid holds its candidates as the advisor's does (M as
 * a draft, and the hierarchy hier-chen of D and M); each `speclab run` names the draft its candidates draft with.
 *
 * Usage: npm run bench:advise -- --target T --draft D [--mid M] [--dataset stories|--prompts F] [--limit 4] [--max-tokens 128]
 *        [--repeats 3] [--temperature 0] [--methods ...] [--deploy any|speclab|llama-server] [--seed s] [--skip-grid] [--out FILE]
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { candidateGrid } from '../electron/engine/replay/candidates'
import type { Candidate } from '../electron/engine/replay/replay'
import type { AdviceResult, CandidateResult } from '../electron/experiments/advice-result'
import { draftNames } from '../electron/experiments/advise-run'

interface Interval {
  median: number
  low: number
  high: number
}

const ROOT = path.resolve(import.meta.dirname, '..')

const argument = (name: string, fallback?: string): string | undefined => {
  const index = process.argv.indexOf(name)
  return index >= 0 ? process.argv[index + 1] : fallback
}
const flag = (name: string) => process.argv.includes(name)

const target = argument('--target')
const draft = argument('--draft')
const mid = argument('--mid')
/** Each model's name in the advice (the mid model's last), as the advisor names them. */
const modelFiles = [draft, mid].filter((f): f is string => !!f)
const names = draftNames(modelFiles)
const draftFiles: Record<string, string> = Object.fromEntries(names.map((name, i) => [name, modelFiles[i]]))
if (!target || !draft) {
  process.stderr.write('usage: npm run bench:advise -- --target T --draft D [--mid M] [--dataset stories] [--limit 4] [--max-tokens 128] [--repeats 3]\n')
  process.exit(2)
}
const dbFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-advise-bench-')), 'runs.db')
const seed = argument('--seed', '1234')!
const workload = [
  ...(argument('--prompts') ? ['--prompts', argument('--prompts')!] : ['--dataset', argument('--dataset', 'stories')!]),
  '--limit', argument('--limit', '4')!,
  '--max-tokens', argument('--max-tokens', '128')!,
  '--repeats', argument('--repeats', '3')!,
  '--temperature', argument('--temperature', '0')!,
  '--seed', seed,
  '--db', dbFile
]
const methods = argument('--methods')

/** Runs the CLI; its stderr passes through (progress), its stdout is the one JSON object `--json` prints. */
function speclab(args: string[]): { json: unknown; seconds: number } {
  const started = performance.now()
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'electron/cli.ts'), ...args, '--json'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 256 * 1024 * 1024
  })
  const seconds = (performance.now() - started) / 1000
  if (result.status !== 0) throw new Error(`speclab ${args.join(' ')} exited ${result.status}`)
  return { json: JSON.parse(result.stdout.trim().split('\n').at(-1)!), seconds }
}

/**
 * `speclab run` groups: one γ and one draft model per run, each method at most once (its `--set` keys are its own
 * namespace); a lookup (no draft) joins any run.
 */
export function gridRuns(candidates: readonly Candidate[]): Candidate[][] {
  const runs: Candidate[][] = []
  const draftOf = (r: readonly Candidate[]) => r.find((c) => c.draft !== null)?.draft ?? null
  for (const candidate of candidates) {
    const run = runs.find(
      (r) => r[0].gamma === candidate.gamma && !r.some((c) => c.method === candidate.method) && (candidate.draft === null || draftOf(r) === null || draftOf(r) === candidate.draft)
    )
    if (run) run.push(candidate)
    else runs.push([candidate])
  }
  return runs
}

const sameConfiguration = (a: { method: string; gamma: number; params: Record<string, unknown>; draft: string | null; mid?: string | null }, b: typeof a) =>
  a.method === b.method && a.gamma === b.gamma && a.draft === b.draft && (a.mid ?? null) === (b.mid ?? null) && JSON.stringify(Object.entries(a.params).sort()) === JSON.stringify(Object.entries(b.params).sort())

interface GridCell {
  candidate: Candidate
  run: number
  tokensPerSecond: Interval
  speedup: Interval | null
}

interface MethodSummaryJson {
  method: string
  tokensPerSecond: number
  tokensPerSecondInterval: Interval | null
  speedup: number | null
  speedupInterval: Interval | null
}

function measureGrid(candidates: readonly Candidate[]): { cells: GridCell[]; seconds: number } {
  const cells: GridCell[] = []
  let seconds = 0
  for (const run of gridRuns(candidates)) {
    const sets = run.flatMap((c) => Object.entries(c.params).flatMap(([key, value]) => ['--set', `${key}=${value}`]))
    const drafting = run.find((c) => c.draft !== null)?.draft
    const midArgs = run.some((c) => c.mid) ? ['--mid', mid!] : []
    const args = ['run', '--target', target!, ...midArgs, '--draft', drafting ? draftFiles[drafting] : draft!, '--methods', ['ar', ...run.map((c) => c.method)].join(','), '--gamma', String(run[0].gamma), ...sets, ...workload]
    process.stderr.write(`grid: ${args.slice(3).join(' ')}\n`)
    const { json, seconds: s } = speclab(args)
    seconds += s
    const report = json as { runId: number; methods: MethodSummaryJson[] }
    for (const candidate of run) {
      const m = report.methods.find((x) => x.method === candidate.method)!
      cells.push({
        candidate,
        run: report.runId,
        tokensPerSecond: m.tokensPerSecondInterval ?? { median: m.tokensPerSecond, low: m.tokensPerSecond, high: m.tokensPerSecond },
        speedup: m.speedupInterval
      })
    }
  }
  return { cells, seconds }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const fixed = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? '–' : x.toFixed(digits))
const intervalText = (i: Interval | null | undefined, digits = 2) => (i ? `${fixed(i.median, digits)} [${fixed(i.low, digits)}, ${fixed(i.high, digits)}]` : '–')
const label = (c: { method: string; gamma: number; params: Record<string, unknown>; draft?: string | null; mid?: string | null }) =>
  [c.method, `γ=${c.gamma}`, ...Object.entries(c.params).map(([k, v]) => `${k}=${v}`), ...(mid && c.draft ? [`← ${c.draft}`] : []), ...(c.mid ? [`← ${c.mid}`] : [])].join(' ')

function main(): void {
  const deploy = argument('--deploy', 'any')!
  const adviseArgs = ['advise', '--target', target!, '--draft', draft!, ...(mid ? ['--mid', mid] : []), '--deploy', deploy, ...(methods ? ['--methods', methods] : []), ...workload]
  process.stderr.write(`advise: ${adviseArgs.slice(1).join(' ')}\n`)
  const advised = speclab(adviseArgs)
  const advice = advised.json as AdviceResult
  const measured = advice.candidates.filter((c): c is CandidateResult & { measured: NonNullable<CandidateResult['measured']> } => c.measured !== undefined)
  const errors = measured
    // A llama-server arm counts where llama-server's own costs priced it; priced with SpecLab's (no costs measured) it
    // predicts SpecLab's speed of the configuration, not llama-server's, and is left out.
    .filter((c) => c.predicted && c.method !== 'ar' && (!c.method.startsWith('llama-server:') || c.pricedWith === 'llama-server'))
    .map((c) => Math.abs(c.predicted!.tokensPerSecond - (c.measured.tokensPerSecond?.median ?? NaN)) / (c.measured.tokensPerSecond?.median ?? NaN))
  const recommendation = advice.recommendation!
  const picked = measured.find((c) => sameConfiguration(c, recommendation))

  const lines: string[] = []
  lines.push(`advisor: ${fixed(advised.seconds, 0)} s · run ${advice.runId} · ${advice.prompts} prompts, ${advice.tokens} tokens, ${advice.mode}`)
  for (const c of measured)
    lines.push(`  ${(c.label ?? label(c)).padEnd(44)} predicted ${fixed(c.predicted?.tokensPerSecond, 1).padStart(6)} tok/s${c.pricedWith === 'llama-server' ? ' (llama-server costs)' : ''}  measured ${intervalText(c.measured.tokensPerSecond, 1)} tok/s, ${intervalText(c.measured.speedup)}×`)
  lines.push(`  recommendation: ${recommendation.speculate ? label(recommendation) : 'ar (no speculation)'} — ${intervalText(recommendation.speedup)}× · ${recommendation.reason}`)
  lines.push(`  llama-server: ${recommendation.llamaServerCommand ?? `none (${recommendation.llamaServerNote})`}`)
  lines.push(`  median |predicted − measured| / measured over ${errors.length} verified candidates: ${fixed(errors.length ? median(errors) * 100 : null, 1)} %`)
  if (advice.llamaServerNote) lines.push(`  ${advice.llamaServerNote}`)
  const serverDefault = measured.find((c) => c.method === 'llama-server:draft' && Object.keys(c.params).length === 0)
  const servers = measured.filter((c) => c.method.startsWith('llama-server:'))
  for (const s of servers) {
    const ratio = picked && (s.measured.tokensPerSecond?.median ?? NaN) ? (picked.measured.tokensPerSecond?.median ?? NaN) / (s.measured.tokensPerSecond?.median ?? NaN) : null
    lines.push(`  pick / ${s.label}: ${fixed(ratio)}× (tok/s medians)${s === serverDefault ? ' ← llama-server default' : ''}`)
  }
  const output: Record<string, unknown> = { advisor: { seconds: advised.seconds, advice }, medianRelativeError: errors.length ? median(errors) : null }

  if (!flag('--skip-grid')) {
    const candidates = candidateGrid(names, new Set(), mid ? names[names.length - 1] : null).filter((c) => !methods || methods.split(',').includes(c.method))
    const grid = measureGrid(candidates)
    const best = grid.cells.reduce((a, b) => (b.tokensPerSecond.median > a.tokensPerSecond.median ? b : a))
    const bestBySpeedup = grid.cells.reduce((a, b) => ((b.speedup?.median ?? 0) > (a.speedup?.median ?? 0) ? b : a))
    lines.push(`grid: ${grid.cells.length} candidates in ${gridRuns(candidates).length} runs, ${fixed(grid.seconds, 0)} s · advisor/grid time ${fixed(advised.seconds / grid.seconds)}`)
    for (const cell of [...grid.cells].sort((a, b) => b.tokensPerSecond.median - a.tokensPerSecond.median))
      lines.push(`  ${label(cell.candidate).padEnd(44)} ${intervalText(cell.tokensPerSecond, 1)} tok/s, ${intervalText(cell.speedup)}× (run ${cell.run})`)
    const pick = picked?.measured
    const within = (value: number | undefined, i: Interval | null) => (value === undefined || i === null ? '–' : value >= i.low ? 'yes' : 'no')
    lines.push(`  best by tok/s: ${label(best.candidate)} ${intervalText(best.tokensPerSecond, 1)}; the pick's ${fixed(pick?.tokensPerSecond?.median, 1)} within or above: ${within(pick?.tokensPerSecond?.median, best.tokensPerSecond)}`)
    lines.push(`  best by speedup: ${label(bestBySpeedup.candidate)} ${intervalText(bestBySpeedup.speedup)}×; the pick's ${fixed(pick?.speedup?.median)}× within or above: ${within(pick?.speedup?.median, bestBySpeedup.speedup)}`)
    output.grid = grid
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  const out = argument('--out')
  if (out) fs.writeFileSync(out, `${JSON.stringify(output, null, 2)}\n`)
}

main()
