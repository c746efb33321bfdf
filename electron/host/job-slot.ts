/**
 * The one-job-at-a-time scaffold shared by the Workbench and suite jobs (workbench.ts, suites.ts): the job in
 * progress (id, abort, progress), the last job's final progress so a reopened view shows how it ended, cancel by job
 * id, status, throttled progress events (always sent on the service's boundaries) and the wrap-up that releases the
 * job lock and tells the UI the runs changed. Each service keeps what is its own: the progress shape, its event, what
 * counts as a boundary.
 */
import { randomUUID } from 'node:crypto'
import type { HostEvent } from '../api/events'

export interface Job<P> {
  readonly id: string
  readonly abort: AbortController
  progress: P
  /** performance.now() when the job started. */
  readonly started: number
  /** When the last throttled progress event went out. */
  sent: number
  /** Releases the job lock; called once, by finish(). */
  readonly release: () => void
}

export interface JobSlotOptions<P> {
  /** Progress events at most this often, except on boundaries. */
  intervalMs: number
  emit: (event: HostEvent) => void
  /** The service's progress event. */
  progressEvent: (progress: P) => HostEvent
  /** Changes that always go out at once (a phase, a cell). */
  isBoundary: (previous: P, next: P) => boolean
}

export class JobSlot<P extends { jobId: string }> {
  private job: Job<P> | null = null
  /** The last job's final state, so a reopened view shows how it ended. */
  private last: P | null = null

  constructor(private readonly options: JobSlotOptions<P>) {}

  get current(): Job<P> | null {
    return this.job
  }

  /** Makes the job in progress; `announce` sends its first progress at once (not counted by the throttle). */
  start(release: () => void, progress: (jobId: string) => P, { announce = false } = {}): Job<P> {
    const id = randomUUID()
    const job: Job<P> = { id, abort: new AbortController(), progress: progress(id), started: performance.now(), sent: 0, release }
    this.job = job
    if (announce) this.options.emit(this.options.progressEvent(job.progress))
    return job
  }

  cancel(jobId: string): { cancelled: boolean } {
    if (this.job?.id !== jobId) return { cancelled: false }
    this.job.abort.abort()
    return { cancelled: true }
  }

  status(): P | null {
    return this.job?.progress ?? this.last
  }

  /** Merges `patch` into the job's progress and sends it on a boundary, when forced, or when the throttle allows. */
  update(job: Job<P>, patch: Partial<P>, force = false): void {
    const previous = job.progress
    job.progress = { ...previous, ...patch }
    const now = performance.now()
    if (force || this.options.isBoundary(previous, job.progress) || now - job.sent >= this.options.intervalMs) {
      job.sent = now
      this.options.emit(this.options.progressEvent(job.progress))
    }
  }

  /** The job is over: keep its final progress, free the slot and the lock (`announce` then sends that progress), runs changed. */
  finish(job: Job<P>, { announce = false } = {}): void {
    this.last = job.progress
    this.job = null
    job.release()
    if (announce) this.options.emit(this.options.progressEvent(job.progress))
    this.options.emit({ type: 'runs:changed' })
  }

  stopAll(): void {
    this.job?.abort.abort()
  }
}
