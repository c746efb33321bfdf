/**
 * Advice from the app: the same workflow as `speclab advise` (experiments/advise-run.ts) on library models, holding
 * the host's one-model-job lock for the whole advice. The loaded trio is lent when the advice is on its target and
 * draft; other files free it while the advice runs and load it again afterwards (memory is the scarce resource, as
 * for suites). Progress per stage (load, trace, draft pass, replay, cost curve, verification cells) is pushed as
 * `advisor:progress`; cancel stops between stages and prompts, and the verification run then ends `cancelled`.
 */
import { ADVISOR_STAGES, type AdvisorProgress, type AdvisorStage, type AdvisorStart } from '../api/advisor'
import type { HostEvent } from '../api/events'
import { buildRunReport, type ApiHandlers } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { writeConversationWorkload } from '../experiments/conversation-workload'
import type { AppStore } from '../store/app-store'
import { prepareAdvice, runAdvice, type AdviseOptions, type PreparedAdvice } from '../experiments/advise-run'
import { storedAdvice, type StoredAdvice } from '../experiments/advice-result'
import { loadTrio, type LoadedTrio } from '../experiments/models'
import type { RunStore } from '../store/run-store'
import type { JobLock } from './job-lock'
import { JobSlot, type Job } from './job-slot'
import { refuseFailedLoads, type HeldTrio, type LoadedModels } from './loaded-models'
import type { ModelLibrary } from './model-library'

/** Progress events at most this often (stages and cells always go out). */
const PROGRESS_MS = 100

const STAGE_MESSAGES: Record<AdvisorStage, string> = {
  loading: 'Loading models…',
  trace: 'Recording the target’s trace…',
  'draft-pass': 'Draft pass: each draft reads the trace…',
  replay: 'Predicting every candidate from the trace…',
  costs: 'Measuring the cost curve…',
  verify: 'Verification run: the best candidates beside ar…'
}

type Trio = Pick<LoadedTrio, 'models' | 'drafts' | 'fingerprints' | 'threadPlan'>

/**
 * The held trio as the advice's trio (target, draft, and the mid model when the advice asks for one; a held mid
 * model it does not ask for is left alone), or null when it is not.
 */
function lendable(held: HeldTrio | null, target: string, drafts: readonly string[], mid: string | null): Trio | null {
  if (!held || held.vocabularyMismatch !== null || held.entries.target.path !== target) return null
  if (drafts.length > 1 || (held.entries.draft?.path ?? null) !== (drafts[0] ?? null)) return null
  if (mid !== null && held.entries.mid?.path !== mid) return null
  const files = new Set([target, ...drafts, ...(mid !== null ? [mid] : [])])
  const draft = drafts.length > 0 ? held.models.draft : undefined
  const lentMid = mid !== null ? held.models.mid : undefined
  return {
    models: { target: held.models.target, ...(draft ? { draft } : {}), ...(lentMid ? { mid: lentMid } : {}) },
    drafts: draft ? [draft] : [],
    fingerprints: held.fingerprints.filter((f) => files.has(f.path)),
    threadPlan: { ...held.threadPlan, models: held.threadPlan.models.filter((m) => files.has(m.file)) }
  }
}

export class AdvisorService {
  private readonly jobs: JobSlot<AdvisorProgress>

  constructor(
    private readonly store: () => RunStore,
    private readonly library: ModelLibrary,
    private readonly loaded: LoadedModels,
    private readonly lock: JobLock,
    private readonly emit: (event: HostEvent) => void,
    /** Chat's store and where a conversation's prompts are written (experiments/conversation-workload.ts). */
    private readonly conversations: { app: () => AppStore; directory: () => string }
  ) {
    this.jobs = new JobSlot({
      intervalMs: PROGRESS_MS,
      emit,
      progressEvent: (progress) => ({ type: 'advisor:progress', progress }),
      isBoundary: (previous, next) => previous.phase !== next.phase || previous.cellsDone !== next.cellsDone || previous.runId !== next.runId
    })
  }

  /** The run id of the verification in progress, if any (it must not be deleted under the executor). */
  get activeRunId(): number | null {
    return this.jobs.current?.progress.runId ?? null
  }

  handlers(): ApiHandlers<'advisor:start' | 'advisor:cancel' | 'advisor:status' | 'advisor:advice'> {
    return {
      'advisor:start': (request) => this.start(request),
      'advisor:cancel': ({ jobId }) => this.jobs.cancel(jobId),
      'advisor:status': () => this.jobs.status(),
      'advisor:advice': ({ runId }) => this.advice(runId)
    }
  }

  /** A stored advice run's recommendation, candidates and profile; a run that is no advice is refused. */
  private advice(runId: number): StoredAdvice {
    const report = buildRunReport(this.store(), runId)
    if (!report) throw new UserInputError(`no run with id ${runId}`)
    const advice = storedAdvice(report)
    if (!advice) throw new UserInputError(`run ${runId} is not an advice (suite ${report.config.suite ?? 'none'}): start one on the Advisor screen or with speclab advise`)
    return advice
  }

  /** The advise options' workload: a built-in set, a file, or a conversation's user turns written to a file. */
  private workloadOf(workload: AdvisorStart['dataset']): { dataset: string } | { prompts: string } {
    if (workload.kind === 'builtin') return { dataset: workload.id }
    if (workload.kind === 'file') return { prompts: workload.path }
    const app = this.conversations.app()
    const conversation = app.getConversation(workload.conversationId)
    if (!conversation) throw new UserInputError(`no conversation with id ${workload.conversationId}`)
    return { prompts: writeConversationWorkload(this.conversations.directory(), conversation, app.getMessages(workload.conversationId)) }
  }

  private async start(request: AdvisorStart): Promise<{ jobId: string }> {
    const target = await this.library.get(request.models.target)
    const drafts = await Promise.all(request.models.drafts.map((id) => this.library.get(id)))
    const mid = request.models.mid == null ? null : await this.library.get(request.models.mid)
    refuseFailedLoads({ target, mid, draft: drafts[0] ?? null })
    for (const d of drafts.slice(1)) refuseFailedLoads({ target, mid: null, draft: d })
    const held = this.loaded.current
    const lent = lendable(held, target.path, drafts.map((d) => d.path), mid?.path ?? null)
    // The loaded trio is used as loaded; other files load with the request's settings.
    const load = lent && held ? { ...held.settings, contextSize: held.contextSize } : request.load
    const options: AdviseOptions = {
      target: target.path,
      draft: drafts.map((d) => d.path),
      ...(mid ? { mid: mid.path } : {}),
      ...this.workloadOf(request.dataset),
      limit: request.limit ?? undefined,
      maxTokens: request.settings.maxTokens,
      temperature: request.settings.temperature,
      topK: request.settings.topK,
      topP: request.settings.topP,
      seed: request.settings.seed ?? undefined,
      repeats: request.repeats,
      verify: request.verify,
      deploy: request.deploy,
      budget: request.budgetSeconds ?? undefined,
      methods: request.methods?.join(','),
      contextSize: load.contextSize,
      threads: load.threads ?? undefined,
      batchThreads: load.batchThreads ?? undefined,
      calibration: load.calibration ?? 'auto',
      gpuLayers: load.gpuLayers
    }
    // Bad input (the grid, the workload, the settings) is refused here, before the lock and any load.
    const prepared = prepareAdvice(options)
    const release = await this.lock.acquireSoon('an advice', this.lock.busy === 'computing perplexities' ? 15_000 : 0)
    const job = this.jobs.start(
      release,
      (jobId) => ({
        jobId,
        runId: null,
        phase: 'loading',
        reached: 'loading',
        message: lent ? 'Using the loaded models…' : STAGE_MESSAGES.loading,
        prompt: 0,
        prompts: prepared.prompts.length,
        model: null,
        arms: [],
        repeats: 0,
        estimatedSeconds: null,
        cellsDone: 0,
        cellsTotal: 0,
        elapsedMs: 0,
        status: null,
        error: null
      }),
      { announce: true }
    )
    void this.run(job, prepared, lent)
    return { jobId: job.id }
  }

  private update(job: Job<AdvisorProgress>, patch: Partial<AdvisorProgress>, force = false): void {
    this.jobs.update(job, { ...patch, elapsedMs: performance.now() - job.started }, force)
  }

  private async run(job: Job<AdvisorProgress>, prepared: PreparedAdvice, lent: Trio | null): Promise<void> {
    /** The user's trio when other files had to replace it: loaded again once the advice ends. */
    let freed: Pick<HeldTrio, 'entries' | 'settings' | 'sequences'> | null = null
    let own: LoadedTrio | null = null
    try {
      let trio: Trio
      if (lent) trio = lent
      else {
        const held = this.loaded.current
        if (held) {
          freed = { entries: held.entries, settings: held.settings, sequences: held.sequences }
          await this.loaded.unload()
          this.emit({ type: 'models:changed' })
        }
        own = await loadTrio(prepared.preliminary.config.models, {
          ...prepared.load,
          onProgress: (p) => this.update(job, { message: `${p.stage === 'measuring' ? 'Measuring threads of' : 'Loading'} ${p.role} ${p.file.split(/[\\/]/).pop()} (${p.index + 1}/${p.count})` })
        })
        trio = own
      }
      if (job.abort.signal.aborted) throw new UserInputError('cancelled before the advice started')
      const result = await runAdvice(prepared, trio, this.store(), {
        signal: job.abort.signal,
        onStage: (stage, detail) =>
          this.update(job, {
            phase: stage,
            // The trace and the draft pass alternate per prompt: the furthest stage begun never moves back.
            reached: ADVISOR_STAGES.indexOf(stage) > ADVISOR_STAGES.indexOf(job.progress.reached) ? stage : job.progress.reached,
            message: detail ? `${stage === 'trace' ? 'Target trace' : `Draft pass (${detail.model})`}: prompt ${detail.prompt + 1}/${detail.prompts}` : STAGE_MESSAGES[stage],
            ...(detail ? { prompt: detail.prompt + 1, prompts: detail.prompts, model: detail.model } : {})
          }),
        onVerifyPlan: ({ arms, repeats, estimatedSeconds }) =>
          this.update(job, { arms, repeats, estimatedSeconds, cellsDone: 0, cellsTotal: prepared.prompts.length * arms.length * repeats }, true),
        onRunCreated: (runId) => {
          this.update(job, { runId }, true)
          this.emit({ type: 'runs:changed' })
        },
        onVerifyProgress: (p) =>
          this.update(job, {
            message: `Verification: prompt ${p.promptIndex + 1}/${p.promptCount} · repeat ${p.repeat + 1}/${p.repeats} · ${p.method}`,
            cellsDone: p.cellsDone,
            cellsTotal: p.cellsTotal
          })
      })
      const status = job.abort.signal.aborted ? 'cancelled' : 'done'
      job.progress = { ...job.progress, runId: result.runId, phase: 'finished', status, message: status === 'cancelled' ? 'Cancelled: the finished cells are stored.' : 'Done.' }
    } catch (error) {
      const cancelled = job.abort.signal.aborted
      const text = error instanceof Error ? error.message : String(error)
      job.progress = { ...job.progress, phase: 'finished', status: cancelled ? 'cancelled' : 'failed', error: cancelled ? null : text, message: cancelled ? 'Cancelled.' : `Failed: ${text}` }
    } finally {
      await own?.dispose()
      const notRestored = await this.restore(freed)
      if (notRestored) job.progress = { ...job.progress, error: job.progress.error ? `${job.progress.error}; ${notRestored}` : notRestored }
      job.progress = { ...job.progress, elapsedMs: performance.now() - job.started }
      this.jobs.finish(job, { announce: true })
    }
  }

  /** Loads the user's trio again after an advice that freed it; a failure is the job's message, not thrown. */
  private async restore(freed: Pick<HeldTrio, 'entries' | 'settings' | 'sequences'> | null): Promise<string | null> {
    if (!freed || this.loaded.current) return null
    try {
      await this.loaded.load(freed.entries, freed.settings, (p) => this.emit({ type: 'models:load-progress', ...p }), freed.sequences)
      return null
    } catch (error) {
      return `the models loaded before the advice could not be loaded again: ${error instanceof Error ? error.message : String(error)}`
    } finally {
      this.emit({ type: 'models:changed' })
    }
  }

  stopAll(): void {
    this.jobs.stopAll()
  }
}
