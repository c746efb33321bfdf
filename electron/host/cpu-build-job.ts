/**
 * The Models screen's "Build fast CPU backend": the same build `npm install` makes (engine/model/native-cpu-build.ts),
 * for installs that could not (no cmake then, SPECLAB_NATIVE_BUILD=0, a failed build), with its progress pushed as
 * `native:build-progress`. It holds the job lock while it runs: the build keeps every core busy for minutes, so
 * nothing measured meanwhile would mean anything. A runtime already running on the prebuilt binary keeps it (a
 * process cannot swap its llama.cpp): the build is used from the next start, and `restartNeeded` says so.
 */
import { getLlamaGpuTypes } from 'node-llama-cpp'
import type { CpuBuildJob, NativeBackendInfo } from '../api/app'
import type { HostEvent } from '../api/events'
import type { ApiHandlers } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { chooseLlamaBackend, requestedGpu, type GpuBackend } from '../engine/model/llama-backend-choice'
import { knownNativeBackend, llamaBackendChoice } from '../engine/model/llama-cpp-model'
import {
  buildCpuBackend,
  buildToolsHint,
  cpuBuildStatus,
  missingBuildTools,
  nodeLlamaCppDir,
  type BuildOptions,
  type CpuBuildStatus
} from '../engine/model/native-cpu-build'
import type { JobLock } from './job-lock'

/** What the service asks of the machine (tests substitute each: the real build takes minutes and writes node_modules). */
export interface CpuBuildDeps {
  /** Builds and returns its duration in seconds. */
  build: (options: BuildOptions) => Promise<number>
  /** The build's cache and install state; null when node-llama-cpp's source cannot be read. */
  status: () => CpuBuildStatus | null
  /** The GPU backends this machine can run. */
  gpuBackends: () => Promise<GpuBackend[]>
  /** The tools the build lacks here. */
  missingTools: () => string[]
}

const machineDeps: CpuBuildDeps = {
  build: (options) => buildCpuBackend(undefined, options),
  status: safeStatus,
  gpuBackends: async () => (await getLlamaGpuTypes('supported')).filter((gpu): gpu is GpuBackend => gpu !== false),
  missingTools: missingBuildTools
}

const PROGRESS_MS = 250

export class CpuBuildService {
  private job: CpuBuildJob | null = null
  private abort: AbortController | null = null

  private readonly deps: CpuBuildDeps

  constructor(
    private readonly lock: JobLock,
    private readonly emit: (event: HostEvent) => void,
    deps: Partial<CpuBuildDeps> = {}
  ) {
    this.deps = { ...machineDeps, ...deps }
  }

  handlers(): ApiHandlers<'app:native-backend' | 'app:build-cpu-backend' | 'app:cancel-cpu-build'> {
    return {
      'app:native-backend': () => this.info(),
      'app:build-cpu-backend': () => this.start(),
      'app:cancel-cpu-build': () => ({ cancelled: this.cancel() })
    }
  }

  /** The binary in use (or about to be) and what the build would change. */
  async info(): Promise<NativeBackendInfo> {
    const status = this.deps.status()
    const choice =
      llamaBackendChoice() ??
      chooseLlamaBackend({ requested: requestedGpu(), gpuBackends: await this.deps.gpuBackends(), cpuBuildInstalled: status?.installed != null || status?.stale === true })
    const inUse = knownNativeBackend()
    const installed = status?.installed ?? null
    const cpuRunsPrebuilt = inUse ? inUse.gpu === 'cpu' && inUse.build === 'prebuilt' : choice.binary === 'cpu-prebuilt'
    return {
      inUse,
      binary: choice.binary,
      reason: choice.reason,
      cpuBuild: { installed, cached: status?.cached ?? false, cacheDir: status?.cacheDir ?? null },
      offerBuild: cpuRunsPrebuilt && installed === null,
      cannotBuild: this.cannotBuild(status),
      restartNeeded: cpuRunsPrebuilt && installed !== null && inUse !== null,
      job: this.job
    }
  }

  private async start(): Promise<NativeBackendInfo> {
    if (this.job?.state === 'running') throw new UserInputError('the CPU backend is already being built')
    const info = await this.info()
    if (info.cannotBuild) throw new UserInputError(`cannot build the CPU backend here: ${info.cannotBuild}`)
    if (!info.offerBuild) throw new UserInputError(`nothing to build: ${info.cpuBuild.installed ? 'a CPU build is already installed' : info.reason}`)
    const release = this.lock.acquire('building the CPU backend')
    const abort = new AbortController()
    this.abort = abort
    this.job = { state: 'running', fraction: 0, stage: 'starting', error: null, seconds: null }
    this.push()
    void this.run(abort.signal).finally(release)
    return { ...info, job: this.job }
  }

  private async run(signal: AbortSignal): Promise<void> {
    let lastPush = 0
    try {
      const seconds = await this.deps.build({
        signal,
        onProgress: ({ fraction, stage }) => {
          this.job = { ...this.job!, fraction, stage }
          if (Date.now() - lastPush < PROGRESS_MS) return
          lastPush = Date.now()
          this.push()
        }
      })
      this.job = { state: 'done', fraction: 1, stage: 'built', error: null, seconds }
    } catch (error) {
      const cancelled = signal.aborted
      this.job = { ...this.job!, state: cancelled ? 'cancelled' : 'failed', error: cancelled ? null : (error as Error).message }
    } finally {
      this.abort = null
      this.push()
    }
  }

  private cancel(): boolean {
    if (!this.abort) return false
    this.abort.abort()
    return true
  }

  /** Stops a running build (the engine is closing). */
  stopAll(): void {
    this.cancel()
  }

  /** Why the build cannot run here, or null. */
  private cannotBuild(status: CpuBuildStatus | null): string | null {
    if (!status) return "node-llama-cpp's llama.cpp source cannot be read"
    // A packaged app (electron-builder) has node-llama-cpp inside a read-only archive.
    if (nodeLlamaCppDir().includes('.asar')) return 'a packaged app cannot rebuild its llama.cpp; a source checkout builds it at `npm install`'
    const missing = this.deps.missingTools()
    return missing.length > 0 ? buildToolsHint(missing) : null
  }

  private push(): void {
    if (this.job) this.emit({ type: 'native:build-progress', job: { ...this.job } })
  }
}

function safeStatus(): CpuBuildStatus | null {
  try {
    return cpuBuildStatus()
  } catch {
    return null // node-llama-cpp's bundle unreadable: nothing can be cached or built for it
  }
}

