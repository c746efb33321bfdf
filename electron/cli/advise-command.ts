/**
 * `speclab advise`: which method, draft model and draft length to deploy on a workload — predicted from one trace
 * (experiments/advise.ts: the target decodes the prompts once, each draft reads them teacher-forced, every candidate
 * is replayed and priced with the measured cost curve), then the best few, `ar` and llama-server's default
 * speculation measured in one interleaved run with repeats (experiments/advise-verify.ts), stored as a run of suite
 * 'advise', and the recommendation drawn from those measurements (engine/replay/recommend.ts). The workflow itself
 * is experiments/advise-run.ts, which the app's Advisor screen runs too; this file is the options and the text.
 * A draft of another vocabulary than the target's is a candidate with the cross-vocabulary methods (sd-tli, sd-uad);
 * refused with one line only when --methods leaves it none.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Command, InvalidArgumentError, Option } from 'commander'
import { draftChain } from '../api/advice'
import { DEPLOY_TARGETS } from '../api/advisor'
import { assertGgufFile } from '../engine/model/llama-cpp-model'
import { describeInterval, type Interval } from '../engine/replay/recommend'
import { crossVocabularyMethods, findMethod } from '../engine/methods/prepare'
import { GRID_METHODS, prepareAdvice, runAdvice, type AdviseOptions as AdviseRunOptions } from '../experiments/advise-run'
import type { AdviceResult, CandidateResult, Recommendation } from '../experiments/advice-result'
import { loadTrio } from '../experiments/models'
import { defaultDatabasePath } from '../store/default-path'
import { RunStore } from '../store/run-store'
import { formatFixed, formatTable } from './format'
import { integerIn } from './run-command'
import { createProgressBar } from './progress'
import { settingOption } from './setting-options'

interface AdviseOptions extends AdviseRunOptions {
  save?: string
  db?: string
  json?: boolean
}

/** "1,2": thread counts to compare. */
function parseCounts(value: string): number[] {
  const counts = value.split(',').map((c) => c.trim())
  if (counts.some((c) => !/^\d+$/.test(c) || Number(c) < 1 || Number(c) > 512)) throw new InvalidArgumentError('expected comma-separated thread counts from 1 to 512, e.g. 1,2')
  return [...new Set(counts.map(Number))]
}

/** `--draft a.gguf,b.gguf --draft c.gguf`: every file, in order. */
function collectDrafts(value: string, previous: string[]): string[] {
  return [...previous, ...value.split(',').map((file) => file.trim()).filter(Boolean)]
}

function parseBudget(value: string): number {
  const seconds = Number(value)
  if (!Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('expected a positive number of seconds')
  return seconds
}

export function adviseCommand(): Command {
  return new Command('advise')
    .description('predict the fastest method / draft / draft length on a workload from one trace, measure the best beside ar with intervals, and recommend one (stored as a run)')
    .requiredOption('--target <file>', 'target model (GGUF)')
    .option('--draft <files>', `candidate draft models (GGUF): comma-separated or repeated; one of another vocabulary than the target's is tried with ${crossVocabularyMethods().join(' and ')} (greedy only)`, collectDrafts, [])
    .option('--mid <file>', "mid model M_q2 (GGUF, the target's vocabulary): a draft candidate itself, and with each --draft the hierarchy hier-chen (the draft's guesses, then the mid model's, all verified by the target)")
    .option('--prompts <file>', 'JSONL prompts (as `run`)')
    .option('--dataset <id>', 'built-in prompt set (default stories)')
    .addOption(settingOption('limit'))
    .addOption(settingOption('maxTokens'))
    .addOption(settingOption('temperature'))
    .addOption(settingOption('topK'))
    .addOption(settingOption('topP'))
    .addOption(settingOption('seed', { note: 'printed when drawn' }))
    .addOption(settingOption('repeats', { default: 3, note: 'of the verification run' }))
    .addOption(settingOption('threads'))
    .addOption(settingOption('batchThreads'))
    .addOption(settingOption('calibration'))
    .addOption(settingOption('gpuLayers'))
    .addOption(settingOption('contextSize'))
    .option('--methods <ids>', `only these methods of the candidate grid (${GRID_METHODS.join(', ')})`)
    .option('--verify <n>', 'measure the best n predicted candidates beside ar (0 = predict only, nothing stored)', integerIn(0, 50), 3)
    .option('--budget <seconds>', 'time for the verification run: fewer repeats, then fewer candidates, to fit; refused when nothing fits', parseBudget)
    .addOption(new Option('--deploy <where>', 'where the pick will run: llama-server keeps the candidates llama-server can run').choices([...DEPLOY_TARGETS]).default('any'))
    .option('--batch <n>', "tokens per call of the drafts' teacher-forced pass", integerIn(1, 4096), 16)
    .option('--try-threads <counts>', "compare thread plans: each model's costs measured at each count (e.g. 1,2), every candidate priced with its fastest (target single/batch, draft) plan and measured with it", parseCounts)
    .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
    .option('--json', 'print one JSON object on stdout; progress stays on stderr')
    .option('--save <file>', 'also write the JSON object to this file')
    .action(async (options: AdviseOptions) => {
      await adviseAction(options)
    })
}

async function adviseAction(options: AdviseOptions): Promise<void> {
  // Every method the grid may hold validates the request; the grid itself is decided per draft once the models
  // are loaded (a draft of another vocabulary gets the cross-vocabulary methods: experiments/advise-run.ts).
  const prepared = prepareAdvice(options)
  for (const file of [options.target, ...(options.mid ? [options.mid] : []), ...options.draft]) await assertGgufFile(path.resolve(file))
  const store = options.verify > 0 ? RunStore.open(options.db ?? defaultDatabasePath()) : null
  try {
    const trio = await loadTrio(prepared.preliminary.config.models, prepared.load)
    if (options.seed === undefined) process.stderr.write(`seed ${prepared.seed}\n`)
    let result: AdviceResult
    const bar: { current: ReturnType<typeof createProgressBar> | null } = { current: null }
    try {
      result = await runAdvice(prepared, trio, store, {
        onStage: (stage, detail) => {
          if (stage !== 'verify') process.stderr.write(`${stage === 'draft-pass' ? 'trace' : stage}${detail ? ` ${detail.model} ${detail.prompt + 1}/${detail.prompts}` : ''}\n`)
        },
        onVerifyPlan: ({ arms, repeats, estimatedSeconds }) => {
          process.stderr.write(`verify: ${arms.join(', ')} × ${repeats} repeats (about ${estimatedSeconds.toFixed(0)} s)\n`)
          bar.current = createProgressBar(prepared.prompts.length * arms.length * repeats)
        },
        onVerifyProgress: (p) => bar.current?.update(p)
      })
    } finally {
      bar.current?.stop()
      await trio.dispose()
    }
    if (options.save) fs.writeFileSync(options.save, `${JSON.stringify(result, null, 2)}\n`)
    process.stdout.write(options.json ? `${JSON.stringify(result)}\n` : `${adviceText(result)}\n`)
  } finally {
    store?.close()
  }
}

const describeCandidate = (c: CandidateResult): string => {
  if (c.label !== null) return c.label
  const params = Object.entries(c.params).map(([k, value]) => `${k}=${value}`)
  const gamma = findMethod(c.method)?.gamma ? [`γ=${c.gamma}`] : []
  return [c.method, ...gamma, ...params].join(' ')
}

const intervalText = (i: Interval | null | undefined, digits: number, unit = '') =>
  i ? `${formatFixed(i.median, digits)}${unit} [${formatFixed(i.low, digits)}, ${formatFixed(i.high, digits)}]` : '–'

function recommendationText(r: Recommendation): string[] {
  const lines = [
    r.speculate ? `recommendation: ${r.method}${r.draft ? ` with ${r.draft}` : ''}${r.mid ? ` and the mid model ${r.mid}` : ''} — ${r.speedup ? describeInterval(r.speedup) : '–'} against ar` : 'recommendation: no speculation (ar)',
    `  why: ${r.reason}`,
    `  speclab:      ${r.speclabCommand}`,
    `  llama-server: ${r.llamaServerCommand ?? `none — ${r.llamaServerNote}`}`,
    ...(r.llamaServerCommand && r.llamaServerNote ? [`                (${r.llamaServerNote})`] : []),
    ...(r.lmStudio ? [`  LM Studio:    ${r.lmStudio}`] : []),
    `  threads: target ${r.threads.threads}/${r.threads.batchThreads}, draft ${r.threads.draftThreads}`,
    `  note: ${r.note}`
  ]
  return lines
}

/** What the text shows of an advice: as `advise` just ran it, or as a stored run holds it (storedAdvice). */
type AdviceView = Pick<AdviceResult, 'candidates' | 'mode' | 'profile' | 'seed' | 'prompts' | 'tokens' | 'runId' | 'recommendation' | 'llamaServerNote'> & {
  verification?: AdviceResult['verification']
  llamaServerCosts?: AdviceResult['llamaServerCosts']
}

/** Which curve priced the llama-server rows, and llama-server's own costs where they were measured. */
function pricingNotes(result: AdviceView): string[] {
  const costs = (result.llamaServerCosts ?? []).map(
    (c) =>
      `llama-server c_T(k) ms at target ${c.threads.threads}/${c.threads.batchThreads}, draft ${c.threads.draftThreads} (${c.source}): ${c.targetMs.map((ms) => formatFixed(ms, 2)).join(' ')}` +
      Object.entries(c.draftMs).map(([name, ms]) => `; draft ${name} ${formatFixed(ms, 2)} ms/token`).join('')
  )
  const priced = result.candidates.some((c) => c.pricedWith === 'llama-server') ? ["llama-server:* rows: predicted with llama-server's own costs (the same replayed rounds)"] : []
  return [...costs, ...priced, ...(result.llamaServerNote ? [result.llamaServerNote] : [])]
}

export function adviceText(result: AdviceView): string {
  const plans = result.candidates.some((c) => c.plan !== null)
  const rows = result.candidates.map((c, i) => [
    String(i + 1),
    describeCandidate(c),
    draftChain(c) ?? '–',
    ...(plans ? [c.plan ?? '–'] : []),
    formatFixed(c.predicted?.tokensPerSecond, 1),
    c.predicted ? `${formatFixed(c.predicted.speedup, 2)}×` : '–',
    intervalText(c.measured?.tokensPerSecond, 1),
    intervalText(c.measured?.speedup, 2, '×'),
    c.error ?? ''
  ])
  const mode = result.mode === 'expected' ? 'expected values (sampling)' : 'replayed rounds (greedy)'
  const profile = result.profile
  const notes = [
    `seed ${result.seed} · ${result.prompts} prompts, ${result.tokens} tokens · ${mode}`,
    `target c_T(k) ms, k = 1…${profile.targetMs.length}: ${profile.targetMs.map((ms) => formatFixed(ms, 2)).join(' ')} (c_T(k)/c_T(1): ${profile.verifyCost.map((v) => formatFixed(v, 2)).join(' ')})` +
      (profile.decodeOutsideMs === undefined ? '' : `; each decode ${formatFixed(profile.decodeOutsideMs, 2)} ms outside its rounds and prompt`),
    ...Object.entries(profile.drafts).map(([name, d]) => `draft ${name}: ${formatFixed(d.msPerToken, 2)} ms/token (c_D/c_T(1) ${formatFixed(d.relativeCost, 2)}), acceptance per position ${d.acceptance.map((a) => formatFixed(a, 2)).join(' ')}${d.acceptanceFrom === 'rounds' ? ' (another vocabulary: from its replayed sd-tli rounds)' : ''}`),
    ...pricingNotes(result),
    ...(result.verification ? [`measured: ${result.verification.arms} arms × ${result.verification.repeats} repeats, interleaved; medians with 95 % intervals, speedups paired with ar`] : [])
  ]
  const stored = result.runId === null ? ['nothing measured (--verify 0): no recommendation'] : [`stored as run ${result.runId} (speclab show ${result.runId})`]
  const table = formatTable(['#', 'candidate', 'draft', ...(plans ? ['threads'] : []), 'pred tok/s', 'pred speedup', 'measured tok/s [95 %]', 'measured speedup [95 %]', 'not replayable'], rows)
  return [table, ...notes, ...(result.recommendation ? recommendationText(result.recommendation) : []), ...stored].join('\n')
}
