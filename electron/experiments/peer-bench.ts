/**
 * `speclab peer-bench`: SpecLab's methods and llama.cpp's own server on the same prompts, models and
 * llama.cpp commit, each at the thread settings given, interleaved in the runner's schedule (prompt-major, then
 * A B C, B C A, C A B, … per repeat — never all repeats of one arm in a row, no arm always first), so drifts of a shared machine hit every arm
 * alike. An ARM is a method with its parameters and its threads:
 *
 *     METHOD[+key=value…]@T[/B[/D]]     e.g.  ar@1  sd@1/2  sd+sd.parallel=true@1/1/1  llama-server:draft@2/2/1
 *     METHOD[+key=value…]@auto          e.g.  sd@auto
 *
 * T = the target's threads for one token, B = its threads for a batch (verification, prefill; default T), D = the
 * draft's threads (default 1). For a llama-server arm they are the server's `-t`, `-tb` and `-td`/`-tbd`. `auto` =
 * what SpecLab runs by default: the counts the thread calibration measured for these models (cached).
 *
 * Every ratio pairs the cells of one (prompt, repeat) — decoded next to each other — and is the median of those
 * per-cell ratios with its 95 % hierarchical bootstrap interval (stats/bootstrap.ts), as every speedup in SpecLab.
 * "Best" of a side is the arm with the highest median tok/s; the interval of a ratio between bests does not
 * account for having picked them (with ≥ 5 repeats and clear gaps this matters little; the table shows every arm).
 */
import type { DecoderModels } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { isLlamaServerMethod } from '../engine/methods/catalog'
import { prepare, type PreparedMethod } from '../engine/methods/prepare'
import type { RawParams } from '../engine/methods/param-spec'
import type { DecodeOutcome } from '../engine/methods/decode-once'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'
import type { LanguageModel } from '../engine/model/types'
import type { WarpConfig } from '../engine/sampling/warp'
import { medianInterval, type Cell, type Interval } from '../engine/stats/bootstrap'
import { runInterleaved, type Arm } from './runner'

export interface ArmThreads {
  /** Target: one token. */
  threads: number
  /** Target: a batch of tokens. */
  batchThreads: number
  /** Draft, and a mid model where the trio has one: every evaluation. */
  draftThreads: number
}

export interface ArmSpec {
  /** As written: `sd+sd.parallel=true@1/1/1`. */
  label: string
  method: string
  params: RawParams
  threads: ArmThreads
  /** The arm's own γ (`+gamma=N`); absent: the bench's. */
  gamma?: number
  /** `@auto`: the threads loadTrio measured for these models (withCalibratedThreads); `threads` is a stand-in until then. */
  calibrated?: boolean
}

export type Side = 'speclab' | 'llama.cpp'

export interface PeerArm extends Arm {
  spec: ArmSpec
  side: Side
}

const MAX_THREADS = 256

function parseValue(raw: string): string | number | boolean {
  if (raw === 'true' || raw === 'false') return raw === 'true'
  const number = Number(raw)
  return raw.trim() !== '' && Number.isFinite(number) ? number : raw
}

/** An arm's threads as its label writes them and parseArm reads them back: `T/B/D`. */
export const threadsText = (t: ArmThreads): string => `${t.threads}/${t.batchThreads}/${t.draftThreads}`

function parseThreads(label: string, text: string): ArmThreads {
  const parts = text.split('/')
  const counts = parts.map(Number)
  if (parts.length > 3 || counts.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_THREADS))
    throw new UserInputError(`arm '${label}': threads must be T[/B[/D]], integers in [1, ${MAX_THREADS}]`)
  const [threads, batchThreads = threads, draftThreads = 1] = counts
  return { threads: threads!, batchThreads, draftThreads }
}

/**
 * `METHOD[+key=value…]@T[/B[/D]]` → an arm's spec (the method and its parameters are validated by prepareArms);
 * `+gamma=N` gives the arm its own γ.
 */
export function parseArm(label: string): ArmSpec {
  const at = label.lastIndexOf('@')
  if (at <= 0) throw new UserInputError(`arm '${label}': write METHOD[+key=value…]@THREADS, e.g. sd@1/2`)
  const [method, ...settings] = label.slice(0, at).split('+')
  const params: Record<string, string | number | boolean> = {}
  let gamma: number | undefined
  for (const setting of settings) {
    const eq = setting.indexOf('=')
    if (eq <= 0) throw new UserInputError(`arm '${label}': '${setting}' is not key=value`)
    const value = parseValue(setting.slice(eq + 1))
    if (setting.slice(0, eq) !== 'gamma') params[setting.slice(0, eq)] = value
    else if (typeof value === 'number' && Number.isInteger(value) && value >= 1) gamma = value
    else throw new UserInputError(`arm '${label}': gamma must be a positive integer, got '${setting.slice(eq + 1)}'`)
  }
  const own = gamma === undefined ? {} : { gamma }
  const threadsText = label.slice(at + 1)
  if (threadsText === 'auto') return { label, method: method!, params, ...own, threads: { threads: 1, batchThreads: 1, draftThreads: 1 }, calibrated: true }
  return { label, method: method!, params, ...own, threads: parseThreads(label, threadsText) }
}

/** The `@auto` arms with the threads the trio's calibration chose (target: one token / batch; the draft's). */
export function withCalibratedThreads(specs: readonly ArmSpec[], threads: ArmThreads): ArmSpec[] {
  return specs.map((spec) => (spec.calibrated ? { ...spec, threads } : spec))
}

/**
 * Runs `decoder` with the arm's threads (and, where given, its own draft model swapped in): set on the models just
 * before it starts, so the warm-up and every cell run with them, and a llama-server arm starts its server with them
 * (its pool key includes them).
 */
export function withThreads(method: PreparedMethod, threads: ArmThreads, draft?: LanguageModel): PreparedMethod {
  return {
    ...method,
    newRun: () => {
      const run = method.newRun()
      return () => {
        const decoder = run()
        return (models, request) => {
          const trio: DecoderModels = draft ? { ...models, draft } : models
          applyThreads(trio, threads)
          return decoder(trio, request)
        }
      }
    }
  }
}

/** Sets the phase threads of the GGUF models of a trio (models/llama-cpp-model.ts phaseThreads). */
export function applyThreads(models: DecoderModels, threads: ArmThreads): void {
  const phases = (model: unknown) => (model as Partial<LlamaCppModel> | undefined)?.phaseThreads
  const target = phases(models.target)
  if (target) {
    target.threads = threads.threads
    target.batchThreads = threads.batchThreads
  }
  // A mid model drafts too (it runs at the drafts' threads, as the advisor's thread plans price it).
  for (const drafting of [phases(models.draft), phases(models.mid)]) {
    if (!drafting) continue
    drafting.threads = threads.draftThreads
    drafting.batchThreads = threads.draftThreads
  }
}

/** The arms, each prepared and validated (unknown method, bad parameter, duplicate label: one line each). */
export function prepareArms(specs: readonly ArmSpec[], gamma: number): PeerArm[] {
  const seen = new Set<string>()
  return specs.map((spec) => {
    if (seen.has(spec.label)) throw new UserInputError(`arm '${spec.label}' is listed twice`)
    seen.add(spec.label)
    let method: PreparedMethod
    try {
      method = prepare(spec.method, { gamma: spec.gamma ?? gamma, params: spec.params })
    } catch (error) {
      if (error instanceof UserInputError) throw new UserInputError(`arm '${spec.label}': ${error.message}`)
      throw error
    }
    return { label: spec.label, spec, side: isLlamaServerMethod(method.definition) ? 'llama.cpp' : 'speclab', method: withThreads(method, spec.threads) }
  })
}

/** One timed decode of an arm. */
export interface PeerCell {
  prompt: number
  repeat: number
  tokens: number
  wallMs: number
  tokensPerSecond: number
  proposed: number
  accepted: number
  targetCalls: number
}

export interface ArmResult {
  label: string
  side: Side
  method: string
  threads: ArmThreads
  cells: PeerCell[]
  tokensPerSecond: Interval | null
  /** Accepted / proposed draft tokens over all cells (null without drafts). */
  acceptance: number | null
  /** Output tokens per target call (null for peers, which count calls as tokens − accepted). */
  tokensPerCall: number | null
  /** Repeat-0 outputs per prompt, for the greedy check. */
  outputs: number[][]
}

/** The median per-(prompt, repeat) ratio a / b with its interval; null when the arms share no cell. */
export function pairedRatio(a: ArmResult, b: ArmResult): Interval | null {
  const other = new Map(b.cells.map((cell) => [`${cell.prompt}/${cell.repeat}`, cell]))
  const cells: Cell[] = []
  for (const cell of a.cells) {
    const paired = other.get(`${cell.prompt}/${cell.repeat}`)
    if (paired && paired.tokensPerSecond > 0) cells.push({ prompt: cell.prompt, repeat: cell.repeat, value: cell.tokensPerSecond / paired.tokensPerSecond })
  }
  return medianInterval(cells)
}

export interface PeerBenchInput {
  models: DecoderModels
  promptTokens: readonly (readonly number[])[]
  maxTokens: number
  warp: WarpConfig
  seed: number
  repeats: number
  signal?: AbortSignal
  /** After every timed cell: how many are done of how many, and which. */
  onCell?(progress: { done: number; total: number; label: string; prompt: number; repeat: number }): void
}

/** Runs every arm on every prompt, interleaved; per arm its cells and summary. */
export async function runPeerBench(arms: readonly PeerArm[], input: PeerBenchInput): Promise<ArmResult[]> {
  const cells = arms.map(() => [] as PeerCell[])
  const outputs = arms.map(() => [] as number[][])
  const total = arms.length * input.promptTokens.length * input.repeats
  let done = 0
  await runInterleaved(arms, input, {
    cell: async (arm, place, decode) => {
      const index = arms.indexOf(arm)
      const counts = { proposed: 0, accepted: 0, targetCalls: 0 }
      const outcome: DecodeOutcome = { tokens: [], provenance: '', stopReason: 'max-tokens' }
      const started = performance.now()
      await decode((event) => {
        if (event.type !== 'step') return
        counts.proposed += event.record.proposed
        counts.accepted += event.record.accepted
        counts.targetCalls += event.record.targetCalls
      }, outcome)
      const wallMs = performance.now() - started
      if (outcome.stopReason === 'cancelled') return
      const tokens = outcome.tokens.length
      cells[index]!.push({ prompt: place.promptIndex, repeat: place.repeat, tokens, wallMs, tokensPerSecond: wallMs > 0 ? (tokens * 1000) / wallMs : 0, ...counts })
      if (place.repeat === 0) outputs[index]![place.promptIndex] = outcome.tokens
      input.onCell?.({ done: ++done, total, label: arm.label, prompt: place.promptIndex, repeat: place.repeat })
    }
  })
  return arms.map((arm, i) => summarizeArm(arm, cells[i]!, outputs[i]!))
}

function summarizeArm(arm: PeerArm, cells: PeerCell[], outputs: number[][]): ArmResult {
  const sum = (key: 'proposed' | 'accepted' | 'targetCalls' | 'tokens') => cells.reduce((n, c) => n + c[key], 0)
  const proposed = sum('proposed')
  const calls = sum('targetCalls')
  return {
    label: arm.label,
    side: arm.side,
    method: arm.spec.method,
    threads: arm.spec.threads,
    cells,
    tokensPerSecond: medianInterval(cells.map((c) => ({ prompt: c.prompt, repeat: c.repeat, value: c.tokensPerSecond }))),
    acceptance: proposed > 0 ? sum('accepted') / proposed : null,
    tokensPerCall: arm.side === 'speclab' && calls > 0 ? sum('tokens') / calls : null,
    outputs
  }
}

/** The arm of `results` with the highest median tok/s among those `which` keeps. */
export function best(results: readonly ArmResult[], which: (r: ArmResult) => boolean): ArmResult | null {
  let top: ArmResult | null = null
  for (const r of results) if (which(r) && (r.tokensPerSecond?.median ?? 0) > (top?.tokensPerSecond?.median ?? 0)) top = r
  return top
}

/** Prompts whose repeat-0 output equals the reference arm's (the greedy check: same llama.cpp, same tokens). */
export function sameOutputs(arm: ArmResult, reference: ArmResult): { same: number; prompts: number; first: number[] } {
  const first: number[] = []
  let same = 0
  reference.outputs.forEach((tokens, prompt) => {
    const mine = arm.outputs[prompt] ?? []
    if (mine.length === tokens.length && mine.every((t, i) => t === tokens[i])) same++
    else first.push(prompt)
  })
  return { same, prompts: reference.outputs.length, first }
}
