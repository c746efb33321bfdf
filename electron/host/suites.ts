/**
 * Experiment suites from the app: the same `runSuite` as `speclab suite <id>` (experiments/suite-runner.ts), on
 * library models or the suite's default files, holding the host's one-model-job lock for the whole suite. The trio
 * the Models screen holds is lent to the suite when it is the same files, and freed otherwise (never two copies) and
 * loaded again when the suite ends, so the user's Chat and Models screen find it as they left it. Progress
 * (cell, token-budget units, ETA) is pushed as `suite:progress`; cancel aborts the cell in progress (finished cells
 * stay, a resume skips them). Reports are re-rendered from the store with the CLI's renderer on every request.
 */
import type { HostEvent } from '../api/events'
import type { SuiteJobProgress, SuiteRunInfo, SuiteStart } from '../api/suites'
import type { ApiHandlers } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { renderSuiteReport } from '../experiments/reports/index'
import { LOADING_PROGRESS, runSuite, type SuiteProgress, type SuiteRunRequest } from '../experiments/suite-runner'
import { findSuite } from '../experiments/suites'
import type { RunStore } from '../store/run-store'
import { SuiteStore } from '../store/suite-store'
import { loadTrio } from '../experiments/models'
import type { JobLock } from './job-lock'
import { JobSlot, type Job } from './job-slot'
import type { HeldTrio, LoadedModels } from './loaded-models'
import type { ModelLibrary } from './model-library'

/** Progress events at most this often (phase and cell changes are always sent). */
const PROGRESS_MS = 150

export class SuiteService {
  private readonly jobs: JobSlot<SuiteJobProgress>

  constructor(
    private readonly store: () => RunStore,
    private readonly library: ModelLibrary,
    private readonly loaded: LoadedModels,
    private readonly lock: JobLock,
    private readonly emit: (event: HostEvent) => void
  ) {
    this.jobs = new JobSlot({
      intervalMs: PROGRESS_MS,
      emit,
      progressEvent: (progress) => ({ type: 'suite:progress', progress }),
      isBoundary: (previous, next) => previous.phase !== next.phase || previous.cellKey !== next.cellKey || previous.suiteRunId !== next.suiteRunId
    })
  }

  handlers(): ApiHandlers<'suites:start' | 'suites:cancel' | 'suites:status' | 'suites:runs' | 'suites:report'> {
    return {
      'suites:start': (request) => this.start(request),
      'suites:cancel': ({ jobId }) => this.jobs.cancel(jobId),
      'suites:status': () => this.jobs.status(),
      'suites:runs': ({ limit }) => this.list(limit ?? 200),
      'suites:report': ({ suiteRunId }) => {
        const suites = new SuiteStore(this.store().database)
        if (!suites.getSuiteRun(suiteRunId)) throw new UserInputError(`no suite run with id ${suiteRunId}`)
        const { report, html, markdown } = renderSuiteReport(this.store(), suiteRunId)
        return { suiteRunId, suite: report.suite, baseName: `${report.suite}-${suiteRunId}`, markdown, html }
      }
    }
  }

  private list(limit: number): SuiteRunInfo[] {
    const suites = new SuiteStore(this.store().database)
    return suites.listSuiteRuns<unknown, unknown[]>({ limit }).map((r) => ({
      id: r.id,
      suite: r.suite,
      name: findSuite(r.suite)?.name ?? r.suite,
      createdAt: r.createdAt,
      finishedAt: r.finishedAt,
      quick: r.quick,
      status: r.status,
      error: r.error,
      cells: Array.isArray(r.plan) ? r.plan.length : 0,
      finishedCells: suites.finishedCells(r.id).size
    }))
  }

  private async start(request: SuiteStart): Promise<{ jobId: string }> {
    const suite = findSuite(request.suite)
    if (!suite) throw new UserInputError(`unknown suite '${request.suite}'`)
    let models: SuiteRunRequest['models']
    if (request.models) {
      const { target, mid, draft } = request.models
      models = {
        target: (await this.library.get(target)).path,
        mid: mid === null ? undefined : (await this.library.get(mid)).path,
        draft: draft === null ? undefined : (await this.library.get(draft)).path
      }
    }
    const release = await this.lock.acquireSoon(`the suite ${suite.id}`, this.lock.busy === 'computing perplexities' ? 15_000 : 0)
    const job = this.jobs.start(
      release,
      (jobId) => ({ ...LOADING_PROGRESS, jobId, suite: suite.id, suiteRunId: request.resume, quick: request.quick, method: null, error: null }),
      { announce: true }
    )
    void this.run(job, { suite: suite.id, quick: request.quick, models, resume: request.resume ?? undefined, repeats: request.repeats })
    return { jobId: job.id }
  }

  private update(job: Job<SuiteJobProgress>, p: SuiteProgress): void {
    const previous = job.progress
    this.jobs.update(job, {
      suiteRunId: p.suiteRunId > 0 ? p.suiteRunId : previous.suiteRunId,
      phase: p.phase === 'finished' ? previous.phase : p.phase, // 'finished' goes out once, from run()
      cellKey: p.cellKey,
      cellIndex: p.cellIndex,
      cellCount: p.cellCount,
      cellsSkipped: p.cellsSkipped,
      unitsDone: p.unitsDone,
      unitsTotal: p.unitsTotal,
      elapsedMs: p.elapsedMs,
      etaMs: p.etaMs === null ? null : Math.max(0, p.etaMs),
      method: p.phase === 'scoring' ? 'scoring outputs' : (p.run?.method ?? null)
    })
  }

  private async run(job: Job<SuiteJobProgress>, request: SuiteRunRequest): Promise<void> {
    /** The user's trio when the suite had to free it for other files: loaded again once the suite ends. */
    let freed: Pick<HeldTrio, 'entries' | 'settings' | 'sequences'> | null = null
    try {
      const result = await runSuite(this.store(), request, {
        signal: job.abort.signal,
        onProgress: (p) => this.update(job, p),
        onSuiteRunCreated: () => this.emit({ type: 'runs:changed' }),
        loadModels: async (paths, options) => {
          const held = this.loaded.current
          const lent = await this.loaded.lendOrFree(paths, options)
          if (!lent && held) freed = { entries: held.entries, settings: held.settings, sequences: held.sequences }
          this.emit({ type: 'models:changed' }) // lent or freed: the Models screen re-reads what is loaded
          return lent ?? (await loadTrio(paths, options))
        }
      })
      job.progress = { ...job.progress, suiteRunId: result.suiteRunId, phase: 'finished', status: result.status, etaMs: null }
    } catch (error) {
      const cancelled = job.abort.signal.aborted
      job.progress = {
        ...job.progress,
        phase: 'finished',
        status: cancelled ? 'cancelled' : 'failed',
        error: cancelled ? null : error instanceof Error ? error.message : String(error),
        etaMs: null
      }
    } finally {
      const notRestored = await this.restore(freed)
      if (notRestored) job.progress = { ...job.progress, error: job.progress.error ? `${job.progress.error}; ${notRestored}` : notRestored }
      this.jobs.finish(job, { announce: true }) // the one 'finished' progress
    }
  }

  /**
   * Loads the user's trio again after a suite that freed it; a failure is returned as the job's message, not thrown
   * (the suite itself is over).
   */
  private async restore(freed: Pick<HeldTrio, 'entries' | 'settings' | 'sequences'> | null): Promise<string | null> {
    if (!freed || this.loaded.current) return null
    try {
      await this.loaded.load(freed.entries, freed.settings, (p) => this.emit({ type: 'models:load-progress', ...p }), freed.sequences)
      return null
    } catch (error) {
      return `the models loaded before the suite could not be loaded again: ${error instanceof Error ? error.message : String(error)}`
    } finally {
      this.emit({ type: 'models:changed' })
    }
  }

  stopAll(): void {
    this.jobs.stopAll()
  }
}
