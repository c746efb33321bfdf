/**
 * The engine host: owns the run store, the model library, the loaded trio and every running job (chat generation,
 * workbench run, suite run, advice, downloads), and serves the api contract — requests in, pushed events out. Plain Node: Electron
 * runs it in a utilityProcess (./utility-entry.ts), browser mode in the server's own process (./server.ts), tests
 * in-process. Every request goes through `handleApiRequest`, which validates the payload with the contract.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import type { AppInfo } from '../api/app'
import type { ApiChannel } from '../api/contract'
import type { HostEvent } from '../api/events'
import type { CatalogTrio } from '../api/models'
import { createRunsService, handleApiRequest, type ApiService } from '../api/runs-service'
import { UserInputError } from '../engine/errors'
import { defaultThreads } from '../engine/model/llama-cpp-model'
import { resourcesDirectory } from '../experiments/prompts'
import { SUITES } from '../experiments/suites'
import { AppStore } from '../store/app-store'
import { RunStore } from '../store/run-store'
import { ChatService } from './chat'
import { CpuBuildService, type CpuBuildDeps } from './cpu-build-job'
import { DownloadManager, type CreateDownloader } from './downloads'
import { JobLock } from './job-lock'
import { LoadedModels, refuseFailedLoads } from './loaded-models'
import { methodInfos } from '../engine/methods/docs'
import { findLlamaServer } from '../engine/peers/llama-server-binary'
import { GRID_METHODS } from '../experiments/advise-run'
import { ModelLibrary } from './model-library'
import { RunsBrowser } from './runs-browser'
import { RunMover } from './run-mover'
import { SuiteService } from './suites'
import { WorkbenchService } from './workbench'
import { AdvisorService } from './advisor'

export const HostOptions = z.object({
  databasePath: z.string().min(1),
  /** better-sqlite3 built for Electron's ABI (npm start); null = the installed build. */
  nativeBinding: z.string().nullable(),
  downloadDirectory: z.string().min(1),
  version: z.string(),
  mode: z.enum(['electron', 'browser']),
  /**
   * What ended the previous engine process, when its supervisor saw it die (e.g. the llama.cpp assertion on its
   * stderr): recorded as the load error of any model it died loading.
   */
  lastCrash: z.string().nullable().optional()
})
export type HostOptions = z.infer<typeof HostOptions>

export interface HostExtras {
  /** Substitute for node-llama-cpp's createModelDownloader (tests). */
  createDownloader?: CreateDownloader
  /** Substitutes for the CPU backend build and what it asks of the machine (tests). */
  cpuBuild?: Partial<CpuBuildDeps>
}

const CatalogFile = z.object({
  trios: z.array(
    z.object({
      id: z.string(),
      family: z.string(),
      tokenizer: z.string(),
      license: z.string(),
      notes: z.string(),
      models: z.array(
        z.object({ role: z.enum(['target', 'mid', 'draft']), label: z.string(), uri: z.string(), approxSizeMB: z.number() })
      )
    })
  )
})

export function readCatalog(): CatalogTrio[] {
  const file = path.join(resourcesDirectory(), 'catalog.json')
  return CatalogFile.parse(JSON.parse(fs.readFileSync(file, 'utf8'))).trios
}

const DATABASE_FILE = /\.(sqlite|sqlite3|db)$/i

/** The llama-server binary the peer methods would start (a `llamaserver.url` parameter needs none). */
function llamaServerAvailability(): AppInfo['llamaServer'] {
  const found = findLlamaServer()
  return found.path !== null ? { available: true, reason: null } : { available: false, reason: found.reason }
}

export class EngineHost {
  private runStore: RunStore
  private appStore: AppStore
  private databasePath: string
  private readonly lock = new JobLock()
  private readonly loaded: LoadedModels
  private readonly library: ModelLibrary
  private readonly chat: ChatService
  private readonly workbench: WorkbenchService
  private readonly suites: SuiteService
  private readonly advisor: AdvisorService
  private readonly downloads: DownloadManager
  private readonly cpuBuild: CpuBuildService
  private readonly service: ApiService

  /** Opens the database (throws with a clear message when it cannot). */
  static open(options: HostOptions, emit: (event: HostEvent) => void, extras: HostExtras = {}): EngineHost {
    return new EngineHost(HostOptions.parse(options), emit, extras)
  }

  private constructor(
    private readonly options: HostOptions,
    private readonly emit: (event: HostEvent) => void,
    extras: HostExtras
  ) {
    this.databasePath = path.resolve(options.databasePath)
    this.runStore = RunStore.open(this.databasePath, { nativeBinding: options.nativeBinding ?? undefined })
    this.appStore = new AppStore(this.runStore.database)
    try {
      this.appStore.recordCrashedLoads(`the engine process died while loading it${options.lastCrash ? ` (${options.lastCrash})` : ''}`)
    } catch {
      // a read-only or full database: the marks stay and are read on the next start that can write them
    }
    this.loaded = new LoadedModels({
      starting: (paths) => this.appStore.markLoading(paths),
      finished: (paths) => this.appStore.clearLoading(paths)
    })
    const runs = () => this.runStore
    const app = () => this.appStore
    this.library = new ModelLibrary(app)
    this.chat = new ChatService(app, this.loaded, this.lock, emit)
    this.workbench = new WorkbenchService(runs, this.library, this.loaded, this.lock, emit)
    this.suites = new SuiteService(runs, this.library, this.loaded, this.lock, emit)
    this.advisor = new AdvisorService(runs, this.library, this.loaded, this.lock, emit, {
      app,
      // Beside the database, so the advice run's recorded prompt file stays with the runs that name it.
      directory: () => path.join(path.dirname(this.databasePath), 'advice-workloads')
    })
    this.downloads = new DownloadManager(options.downloadDirectory, this.library, emit, extras.createDownloader)
    this.cpuBuild = new CpuBuildService(this.lock, emit, extras.cpuBuild)
    const browser = new RunsBrowser(runs, app, this.loaded, this.lock, () => this.workbench.activeRunId ?? this.advisor.activeRunId)
    const mover = new RunMover(runs, () => this.databasePath, emit)
    this.service = {
      ...createRunsService({
        listRuns: (limit) => this.runStore.listRuns(limit),
        getRun: (runId) => this.runStore.getRun(runId),
        getOutcomes: (runId) => this.runStore.getOutcomes(runId)
      }),
      'app:info': () => this.info(),
      'app:open-database': ({ path: file }) => this.openDatabase(file),
      ...this.modelHandlers(),
      ...this.downloads.handlers(),
      ...this.cpuBuild.handlers(),
      ...this.chat.handlers(),
      ...this.workbench.handlers(),
      ...this.suites.handlers(),
      ...this.advisor.handlers(),
      ...browser.handlers(),
      ...mover.handlers()
    }
  }

  /** Validates `payload` for `channel` and runs its handler. */
  request(channel: string, payload: unknown): Promise<unknown> {
    return handleApiRequest(this.service, channel, payload)
  }

  private async info(): Promise<AppInfo> {
    return {
      version: this.options.version,
      mode: this.options.mode,
      databasePath: this.databasePath,
      downloadDirectory: this.options.downloadDirectory,
      methods: methodInfos(),
      datasets: this.workbench.datasets(),
      suites: SUITES.map(({ id, name, description, preset, estimate }) => ({ id, name, description, preset, estimate })),
      cpuCount: os.cpus().length,
      enginePid: process.pid,
      defaultThreads: defaultThreads() ?? null,
      llamaServer: llamaServerAvailability(),
      adviseMethods: GRID_METHODS,
      native: await this.cpuBuild.info()
    }
  }

  private openDatabase(file: string): Promise<AppInfo> {
    const absolute = path.resolve(file)
    if (!DATABASE_FILE.test(absolute)) throw new UserInputError(`${absolute}: a SpecLab database ends in .sqlite, .sqlite3 or .db`)
    if (this.lock.busy) throw new UserInputError(`cannot switch databases while ${this.lock.busy} is in progress`)
    const next = RunStore.open(absolute, { nativeBinding: this.options.nativeBinding ?? undefined })
    this.runStore.close()
    this.runStore = next
    this.appStore = new AppStore(next.database)
    this.databasePath = absolute
    this.emit({ type: 'runs:changed' })
    this.emit({ type: 'models:changed' })
    return this.info()
  }

  private modelHandlers(): Pick<
    ApiService,
    Extract<ApiChannel, 'models:list' | 'models:add' | 'models:remove' | 'models:inspect' | 'models:check-trio' | 'models:load' | 'models:unload' | 'models:calibrate' | 'models:catalog'>
  > {
    return {
      'models:list': async () => ({ models: await this.library.list(), loaded: this.loaded.describe(), loading: this.loaded.loading }),
      'models:add': async ({ path: file }) => {
        const entry = await this.library.add(file)
        this.emit({ type: 'models:changed' })
        return entry
      },
      'models:remove': ({ modelId }) => {
        const held = this.loaded.describe()
        if (held && [held.target, held.mid, held.draft].some((m) => m?.id === modelId))
          throw new UserInputError('this model is loaded; unload it before removing it from the library')
        const removed = this.library.remove(modelId)
        this.emit({ type: 'models:changed' })
        return { removed }
      },
      'models:inspect': ({ modelId }) => this.library.inspect(modelId),
      'models:check-trio': (request) => this.library.checkTrio(request, { reclaimableVramBytes: this.loaded.vramBytes() }),
      'models:load': async ({ trio, settings, retryFailed }) => {
        const entries = {
          target: await this.library.get(trio.target),
          mid: trio.mid === null ? null : await this.library.get(trio.mid),
          draft: trio.draft === null ? null : await this.library.get(trio.draft)
        }
        if (!retryFailed) refuseFailedLoads(entries)
        const release = this.lock.acquire('loading models')
        try {
          // Asked to try again, and the load is really starting (the lock was free): forget the recorded failure.
          for (const entry of [entries.target, entries.mid, entries.draft]) if (entry?.loadError) this.appStore.clearLoadError(entry.id)
          await this.loaded.load(entries, settings, (progress) => this.emit({ type: 'models:load-progress', ...progress }))
        } finally {
          release()
          this.emit({ type: 'models:changed' })
        }
        return this.loaded.describe()!
      },
      'models:calibrate': async () => {
        const release = this.lock.acquire('measuring threads')
        try {
          await this.loaded.recalibrate()
          return this.loaded.describe()!
        } finally {
          release()
          this.emit({ type: 'models:changed' })
        }
      },
      'models:unload': async () => {
        const release = this.lock.acquire('unloading models')
        try {
          const unloaded = await this.loaded.unload()
          return { unloaded }
        } finally {
          release()
          this.emit({ type: 'models:changed' })
        }
      },
      'models:catalog': () => readCatalog()
    }
  }

  /** Stops jobs, frees the models and closes the database. */
  async close(): Promise<void> {
    this.chat.stopAll()
    this.cpuBuild.stopAll()
    this.workbench.stopAll()
    this.suites.stopAll()
    this.advisor.stopAll()
    await this.downloads.stopAll()
    // Give running decoders a moment to see the abort and finish their rows.
    for (let i = 0; i < 50 && this.lock.busy; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    await this.loaded.unload()
    this.runStore.close()
  }
}
