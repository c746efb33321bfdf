/**
 * Workbench runs: methods × a prompt set on a trio from the library, through the same executor as the CLI
 * (experiments/runner.ts), so every row lands in the run store as it happens. Progress (overall cells, the current
 * prompt's tokens) streams to the UI; cancel aborts between tokens and marks the run `cancelled`.
 */
import path from 'node:path'
import type { HostEvent } from '../api/events'
import { describeLoadProgress, type LoadSettings } from '../api/models'
import type { RunConfig } from '../api/runs'
import type { DatasetInfo, WorkbenchProgress, WorkbenchStart } from '../api/workbench'
import type { ApiHandlers } from '../api/runs-service'
import { assertVocabularyFits, type PreparedRun } from '../engine/methods/prepare'
import { METHOD_IDS } from '../engine/methods/ids'
import { UserInputError } from '../engine/errors'
import { BUILTIN_DATASETS, loadBuiltinDataset, loadPromptFile, type PromptItem } from '../experiments/prompts'
import { executeRun } from '../experiments/runner'
import { buildRunRequest, withLoadedTrio, type BuiltRun } from '../experiments/run-request'
import { findSuite } from '../experiments/suites'
import type { RunStore } from '../store/run-store'
import type { JobLock } from './job-lock'
import { JobSlot, type Job } from './job-slot'
import { refuseFailedLoads, type LoadedModels, type TrioEntries } from './loaded-models'
import type { ModelLibrary } from './model-library'

/** Progress events at most this often while a cell decodes (cell boundaries are always sent). */
const PROGRESS_MS = 100

const DATASET_LABELS: Record<string, string> = {
  stories: 'Stories (short story openings)',
  chat: 'Chat (instructions and questions)',
  code: 'Code (programming tasks)',
  math: 'Math (word problems)',
  mixed: 'Mixed (every built-in set)'
}

function describeDataset(kind: 'builtin' | 'file', id: string, prompts: PromptItem[]): DatasetInfo {
  return {
    kind,
    id,
    label: kind === 'builtin' ? (DATASET_LABELS[id] ?? id) : path.basename(id),
    prompts: prompts.length,
    categories: [...new Set(prompts.map((p) => p.category).filter((c): c is string => c !== null))],
    preview: prompts.slice(0, 3).map((p) => (p.text.length > 160 ? `${p.text.slice(0, 160)}…` : p.text))
  }
}

/** An imported prompt file: an existing .jsonl whose every line parses (loadPromptFile names the bad line). */
export function importPromptFile(file: string): { path: string; prompts: PromptItem[] } {
  const absolute = path.resolve(file.trim())
  if (!/\.jsonl$/i.test(absolute)) throw new UserInputError(`${absolute}: a prompt file must be a .jsonl file`)
  const prompts = loadPromptFile(absolute)
  if (prompts.length === 0) throw new UserInputError(`${absolute}: no prompts in the file`)
  return { path: absolute, prompts }
}

export class WorkbenchService {
  private readonly jobs: JobSlot<WorkbenchProgress>
  private readonly imported = new Map<string, DatasetInfo>()

  constructor(
    private readonly store: () => RunStore,
    private readonly library: ModelLibrary,
    private readonly models: LoadedModels,
    private readonly lock: JobLock,
    private readonly emit: (event: HostEvent) => void
  ) {
    this.jobs = new JobSlot({
      intervalMs: PROGRESS_MS,
      emit,
      progressEvent: (progress) => ({ type: 'workbench:progress', progress }),
      isBoundary: (previous, next) => previous.cellsDone !== next.cellsDone || previous.phase !== next.phase
    })
  }

  /** The run id of the run in progress, if any (it must not be deleted under the executor). */
  get activeRunId(): number | null {
    return this.jobs.current?.progress.runId ?? null
  }

  datasets(): DatasetInfo[] {
    const builtin = BUILTIN_DATASETS.map((id) => describeDataset('builtin', id, loadBuiltinDataset(id)))
    return [...builtin, ...this.imported.values()]
  }

  handlers(): ApiHandlers<'workbench:datasets' | 'workbench:import-dataset' | 'workbench:start' | 'workbench:cancel' | 'workbench:status'> {
    return {
      'workbench:datasets': () => this.datasets(),
      'workbench:import-dataset': ({ path: file }) => {
        const { path: absolute, prompts } = importPromptFile(file)
        const info = describeDataset('file', absolute, prompts)
        this.imported.set(absolute, info)
        return info
      },
      'workbench:start': (request) => this.start(request),
      'workbench:cancel': ({ jobId }) => this.jobs.cancel(jobId),
      'workbench:status': () => this.jobs.status()
    }
  }

  private async start(request: WorkbenchStart): Promise<{ jobId: string }> {
    if (request.suite !== null && !findSuite(request.suite)) throw new UserInputError(`unknown suite '${request.suite}'`)
    const entries: TrioEntries = {
      target: await this.library.get(request.models.target),
      mid: request.models.mid === null ? null : await this.library.get(request.models.mid),
      draft: request.models.draft === null ? null : await this.library.get(request.models.draft)
    }
    refuseFailedLoads(entries)
    const prompts =
      request.dataset.kind === 'builtin' ? loadBuiltinDataset(request.dataset.id) : importPromptFile(request.dataset.path).prompts
    const limited = request.limit ? prompts.slice(0, request.limit) : prompts
    // Unknown or duplicate methods, missing models and bad parameters are refused before anything loads.
    const { config, prepared } = this.buildRun(request, entries)
    // These very files already loaded with different vocabularies: refuse id-comparing methods at once.
    const held = this.models.current
    if (held && held.entries.target.path === entries.target.path && held.entries.mid?.path === entries.mid?.path && held.entries.draft?.path === entries.draft?.path)
      assertVocabularyFits(prepared.methods.map((m) => m.definition), held.vocabularyMismatch)
    const release = await this.lock.acquireSoon('a workbench run', this.lock.busy === 'computing perplexities' ? 15_000 : 0)
    const job = this.jobs.start(release, (jobId) => ({
      jobId,
      runId: null,
      phase: 'loading',
      message: 'Preparing…',
      promptIndex: 0,
      promptCount: limited.length,
      method: request.methods[0],
      repeat: 0,
      repeats: config.repeats,
      tokens: 0,
      maxTokens: request.settings.maxTokens,
      cellsDone: 0,
      cellsTotal: limited.length * request.methods.length * config.repeats,
      elapsedMs: 0,
      status: null,
      error: null
    }))
    void this.run(job, config, prepared, entries, request.load, limited)
    return { jobId: job.id }
  }

  /** The Workbench's request as a run request (run-request.ts): the same builder as the CLI's. */
  private buildRun(request: WorkbenchStart, entries: TrioEntries): BuiltRun {
    const { settings, load } = request
    return buildRunRequest({
      suite: request.suite,
      methods: [...request.methods].sort((a, b) => METHOD_IDS.indexOf(a) - METHOD_IDS.indexOf(b)),
      models: { target: entries.target.path, mid: entries.mid?.path, draft: entries.draft?.path },
      prompts:
        request.dataset.kind === 'builtin'
          ? { dataset: request.dataset.id, limit: request.limit ?? undefined }
          : { file: request.dataset.path, limit: request.limit ?? undefined },
      decode: settings,
      load,
      repeats: request.repeats,
      params: settings.params
    })
  }

  private update(job: Job<WorkbenchProgress>, patch: Partial<WorkbenchProgress>, force = false): void {
    this.jobs.update(job, { ...patch, elapsedMs: performance.now() - job.started }, force)
  }

  private async run(
    job: Job<WorkbenchProgress>,
    config: RunConfig,
    prepared: PreparedRun,
    entries: TrioEntries,
    load: LoadSettings,
    prompts: PromptItem[]
  ): Promise<void> {
    try {
      this.update(job, { phase: 'loading', message: 'Loading models…' }, true)
      const held = await this.models.load(
        entries,
        load,
        (p) => {
          this.emit({ type: 'models:load-progress', ...p })
          this.update(job, { message: describeLoadProgress(p) })
        },
        prepared.sessions
      )
      this.emit({ type: 'models:changed' })
      if (job.abort.signal.aborted) throw new UserInputError('cancelled before the run started')
      assertVocabularyFits(prepared.methods.map((m) => m.definition), held.vocabularyMismatch)
      const ran = withLoadedTrio(config, { contextSize: held.contextSize, fingerprints: held.fingerprints, threadPlan: held.threadPlan })
      this.update(job, { phase: 'running', message: 'Warming up…' }, true)
      const report = await executeRun(this.store(), ran, held.models, prompts, {
        prepared,
        signal: job.abort.signal,
        onRunCreated: (runId) => {
          this.update(job, { runId }, true)
          this.emit({ type: 'runs:changed' })
        },
        onProgress: (p) =>
          this.update(job, {
            message: `Prompt ${p.promptIndex + 1}/${p.promptCount}${p.repeats > 1 ? ` · repeat ${p.repeat + 1}/${p.repeats}` : ''} · ${p.method}`,
            promptIndex: p.promptIndex,
            promptCount: p.promptCount,
            method: p.method,
            repeat: p.repeat,
            repeats: p.repeats,
            tokens: p.tokens,
            cellsDone: p.cellsDone,
            cellsTotal: p.cellsTotal
          })
      })
      const message = report.status === 'cancelled' ? 'Cancelled: finished prompts are stored.' : 'Done.'
      this.update(job, { phase: 'finished', status: report.status, message }, true)
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error)
      const cancelled = job.abort.signal.aborted
      this.update(job, { phase: 'finished', status: cancelled ? 'cancelled' : 'failed', error: cancelled ? null : text, message: cancelled ? 'Cancelled.' : `Failed: ${text}` }, true)
    } finally {
      this.jobs.finish(job)
    }
  }

  stopAll(): void {
    this.jobs.stopAll()
  }
}
