/**
 * The Runs and Diff screens' reads and actions on stored runs: a filtered list, one run's details (report,
 * per-prompt results, entropy histograms of accepted vs rejected draft tokens from the stored steps), the step
 * table of one result, delete, CSV/JSON export, a diff with per-prompt outputs, and output perplexities under the
 * loaded target (for PPL-vs-speed plots of the beam methods, or any run whose target is loaded).
 */
import path from 'node:path'
import type { EntropyHistogram, PerplexityPoint, PromptResultInfo, RunDetails, RunExport, RunReport, RunReportFiles, RunsDiffDetails, StepRow } from '../api/runs'
import { bestSpeedup, type BestSpeedup } from '../api/best-speedup'
import { diffManyRuns, diffRuns } from '../api/run-diff'
import { renderRunHtml, renderRunMarkdown, runReportDocument } from '../experiments/reports/run-report'
import { buildRunReport, type ApiHandlers } from '../api/runs-service'
import type { StepRecord } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { foldSteps, sigma, eta, acceptanceRate, tokensPerSecond, entropySplit } from '../engine/metrics/fold'
import type { AppStore } from '../store/app-store'
import type { PromptResultRow, RunStore } from '../store/run-store'
import type { JobLock } from './job-lock'
import type { LoadedModels } from './loaded-models'

const HISTOGRAM_BINS = 20

/**
 * Draft tokens the verifier accepted vs the first one it rejected, by the entropy of the draft's distribution
 * (HSDDW Figure 6). Only rounds whose entropies line up one-to-one with the proposed tokens are used.
 */
export function entropyHistogram(method: string, steps: readonly StepRecord[]): EntropyHistogram {
  const { accepted, rejected } = entropySplit(steps)
  const max = Math.max(0, ...accepted, ...rejected)
  const width = max > 0 ? max / HISTOGRAM_BINS : 1 / HISTOGRAM_BINS
  const bins = Array.from({ length: HISTOGRAM_BINS + 1 }, (_, i) => i * width)
  const count = (values: number[]) => {
    const counts = new Array<number>(HISTOGRAM_BINS).fill(0)
    for (const v of values) counts[Math.min(HISTOGRAM_BINS - 1, Math.floor(v / width))] += 1
    return counts
  }
  return { method, bins, accepted: count(accepted), rejected: count(rejected) }
}

/** Six significant digits: timings are not known better than that, and 1404.0636299999896 helps nobody. */
const csvNumber = (value: number): string => (Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6))))

function csvCell(value: string | number | boolean | null): string {
  if (value === null) return ''
  let text = typeof value === 'number' ? csvNumber(value) : String(value)
  // Spreadsheets run cells that start like a formula; a leading apostrophe keeps text as text.
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

export function runCsv(store: RunStore, runId: number): string {
  const header = [
    'run_id', 'method', 'prompt_index', 'prompt_id', 'category', 'status', 'stop_reason', 'output_tokens', 'wall_ms',
    'tokens_per_second', 'steps', 'proposed', 'accepted', 'acceptance_rate', 'target_calls', 'draft_tokens',
    'accepted_draft_tokens', 'sigma', 'eta', 'draft_ms', 'verify_ms', 'prompt', 'output'
  ]
  const lines = [header.join(',')]
  for (const r of store.getPromptResults(runId)) {
    const t = foldSteps(store.getSteps(r.id))
    const row = [
      runId, r.method, r.promptIndex, r.promptId, r.category, r.status, r.stopReason, r.outputCount, r.wallMs,
      r.wallMs ? tokensPerSecond(r.outputCount, r.wallMs) : null, t.steps, t.proposed, t.accepted, acceptanceRate(t),
      t.targetCalls, t.draftTokens, t.acceptedDraftTokens, sigma(t), eta(t), t.draftMs, t.verifyMs, r.promptText, r.outputText
    ]
    lines.push(row.map(csvCell).join(','))
  }
  return `${lines.join('\r\n')}\r\n`
}

function resultInfo(r: PromptResultRow, steps: number): PromptResultInfo {
  return {
    id: r.id,
    method: r.method,
    promptIndex: r.promptIndex,
    promptId: r.promptId,
    category: r.category,
    promptText: r.promptText,
    status: r.status,
    outputText: r.outputText,
    outputCount: r.outputCount,
    provenance: r.provenance,
    stopReason: r.stopReason,
    wallMs: r.wallMs,
    steps
  }
}

export class RunsBrowser {
  constructor(
    private readonly runs: () => RunStore,
    private readonly app: () => AppStore,
    private readonly models: LoadedModels,
    private readonly lock: JobLock,
    private readonly activeRunId: () => number | null
  ) {}

  /** A listed run's best speedup, from its stored results and repeats (what `speclab runs` shows too). */
  private speedOf(runId: number): { bestSpeedup: BestSpeedup | null; synthetic: boolean } {
    let synthetic = false
    try {
      synthetic = Boolean(this.runs().getRun(runId)?.config.syntheticAcceptance)
    } catch {
      // A config this version cannot read: the list still shows the run (its details say why).
    }
    return { bestSpeedup: synthetic ? null : bestSpeedup(this.runs().getPromptResults(runId), this.runs().getRepeats(runId)), synthetic }
  }

  private report(runId: number): RunReport {
    const report = buildRunReport(this.runs(), runId)
    if (!report) throw new UserInputError(`no run with id ${runId}`)
    return report
  }

  handlers(): ApiHandlers<
    'runs:search' | 'runs:details' | 'runs:steps' | 'runs:delete' | 'runs:annotate' | 'runs:export' | 'runs:diff' | 'runs:perplexity' | 'runs:report' | 'runs:diff-many'
  > {
    return {
      'runs:search': (filter) => this.app().searchRuns(filter).map((run) => ({ ...run, ...this.speedOf(run.id) })),
      'runs:details': ({ runId }) => this.details(runId),
      'runs:steps': ({ resultId }) => this.runs().getSteps(resultId).map(({ levels: _levels, ...row }): StepRow => row),
      'runs:delete': ({ runId }) => {
        if (this.activeRunId() === runId) throw new UserInputError(`run ${runId} is in progress; cancel it before deleting`)
        const run = this.runs().getRun(runId)
        if (!run) return { deleted: false }
        if (run.summary.status === 'running') throw new UserInputError(`run ${runId} is still running (in another SpecLab process?)`)
        this.runs().deleteRun(runId)
        return { deleted: true }
      },
      'runs:annotate': ({ runId, name, notes }) => {
        if (!this.runs().annotateRun(runId, { name, notes })) throw new UserInputError(`no run with id ${runId}`)
        return this.runs().getRun(runId)!.summary
      },
      'runs:export': ({ runId, format }) => this.export(runId, format),
      'runs:diff': ({ a, b }) => this.diff(a, b),
      'runs:perplexity': ({ runId }) => this.perplexity(runId),
      'runs:report': ({ runId }) => this.reportFiles(runId),
      'runs:diff-many': ({ runIds }) => this.diffMany(runIds)
    }
  }

  /** The run's report in both formats, re-rendered from the store (the renderer of `speclab show --format`). */
  reportFiles(runId: number): RunReportFiles {
    const report = this.report(runId)
    const document = runReportDocument(report, this.runs().getRun(runId)!.summary, this.runs().getPromptResults(runId))
    return { runId, baseName: `speclab-run-${runId}`, markdown: renderRunMarkdown(document), html: renderRunHtml(document) }
  }

  diffMany(runIds: readonly number[]): RunsDiffDetails {
    if (new Set(runIds).size !== runIds.length) throw new UserInputError(`a run is chosen twice: ${runIds.join(', ')}`)
    const reports = runIds.map((id) => this.report(id))
    return { ...diffManyRuns(reports), reports }
  }

  details(runId: number): RunDetails | null {
    const run = this.runs().getRun(runId)
    if (!run) return null
    const counts = this.app().stepCounts(runId)
    const outcomes = this.runs().getOutcomes(runId)
    return {
      summary: run.summary,
      report: this.report(runId),
      results: this.runs().getPromptResults(runId).map((r) => resultInfo(r, counts.get(r.id) ?? 0)),
      entropy: [...outcomes].map(([method, prompts]) => entropyHistogram(method, prompts.flatMap((p) => p.steps)))
    }
  }

  export(runId: number, format: 'csv' | 'json'): RunExport {
    const report = this.report(runId)
    if (format === 'csv') return { fileName: `speclab-run-${runId}.csv`, mimeType: 'text/csv', content: runCsv(this.runs(), runId) }
    const results = this.runs()
      .getPromptResults(runId)
      .map((r) => ({ ...r, steps: this.runs().getSteps(r.id) }))
    const content = JSON.stringify({ ...report, results, draftChoices: this.runs().getDraftChoices(runId) }, null, 2)
    return { fileName: `speclab-run-${runId}.json`, mimeType: 'application/json', content }
  }

  diff(a: number, b: number) {
    const ra = this.report(a)
    const rb = this.report(b)
    const diff = diffRuns(ra, rb)
    const rowsA = this.runs().getPromptResults(a)
    const rowsB = this.runs().getPromptResults(b)
    const keys = new Map<string, { method: string; promptIndex: number; promptText: string }>()
    for (const r of [...rowsA, ...rowsB]) keys.set(`${r.method}\u0000${r.promptIndex}`, r)
    const outputs = [...keys.values()]
      .sort((x, y) => x.promptIndex - y.promptIndex || x.method.localeCompare(y.method))
      .map(({ method, promptIndex, promptText }) => ({
        method,
        promptIndex,
        promptText,
        a: rowsA.find((r) => r.method === method && r.promptIndex === promptIndex)?.outputText ?? null,
        b: rowsB.find((r) => r.method === method && r.promptIndex === promptIndex)?.outputText ?? null
      }))
    return { a: ra, b: rb, configDifferences: diff.configDifferences, methods: diff.methods, speedComparable: diff.speedComparable, outputs }
  }

  /** Perplexity of each method's outputs under the raw target (temperature 1), with the method's tokens/s. */
  async perplexity(runId: number): Promise<PerplexityPoint[]> {
    const report = this.report(runId)
    const held = this.models.current
    const wanted = path.resolve(report.config.models.target)
    if (!held || path.resolve(held.entries.target.path) !== wanted)
      throw new UserInputError(`load the run's target model (${path.basename(wanted)}) on the Models screen to compute perplexities`)
    const release = this.lock.acquire('computing perplexities')
    try {
      const target = held.models.target
      const bos = target.info.bos
      const totals = new Map<string, { nll: number; tokens: number }>()
      for (const r of this.runs().getPromptResults(runId)) {
        if (r.status !== 'done' || r.outputTokens.length === 0) continue
        const prompt = [...(bos === null ? [] : [bos]), ...target.tokenize(r.promptText)]
        const logProbabilities = await target.logProbabilities([...prompt, ...r.outputTokens])
        const outputPart = logProbabilities.slice(prompt.length - 1)
        const total = totals.get(r.method) ?? { nll: 0, tokens: 0 }
        total.nll -= outputPart.reduce((sum, lp) => sum + lp, 0)
        total.tokens += outputPart.length
        totals.set(r.method, total)
      }
      return report.methods
        .filter((m) => totals.has(m.method))
        .map((m) => {
          const t = totals.get(m.method)!
          return { method: m.method, perplexity: Math.exp(t.nll / t.tokens), tokensPerSecond: m.tokensPerSecond }
        })
    } finally {
      release()
    }
  }
}
