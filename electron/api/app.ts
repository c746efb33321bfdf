/**
 * The app around the screens: what the app is and offers (AppInfo), its views, and the commands Electron main's
 * menu sends the UI.
 */
import { z } from 'zod'
import { Text } from './fields'
import type { MethodInfo } from './methods'
import type { SuiteInfo } from './suites'
import type { DatasetInfo } from './workbench'

export const VIEWS = ['chat', 'workbench', 'advisor', 'runs', 'diff', 'models'] as const
export const View = z.enum(VIEWS)
export type View = z.infer<typeof View>

/** What Electron main's menu asks the UI to do (pushed as `ui:command`). */
export const UiCommand = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('navigate'), view: View }),
  z.object({ kind: z.literal('add-model') }),
  z.object({ kind: z.literal('start-suite'), suiteId: Text(100) }),
  z.object({ kind: z.literal('database-opened'), path: Text(4096) })
])
export type UiCommand = z.infer<typeof UiCommand>

/** The app and what it offers: its mode and files, every method, prompt set and suite, and the cores. */
export interface AppInfo {
  version: string
  mode: 'electron' | 'browser'
  databasePath: string
  downloadDirectory: string
  /** Every method of the catalog, with its parameters (the UI's knobs) — generated from engine/methods/catalog.ts. */
  methods: MethodInfo[]
  datasets: DatasetInfo[]
  suites: SuiteInfo[]
  cpuCount: number
  /**
   * The process the engine runs in (Electron's utility process, browser mode's child): diagnostics read its memory
   * and open descriptors from /proc/<pid> (`npm run soak`). A new id after a crash names the restarted engine.
   */
  enginePid: number
  defaultThreads: number | null
  /** Whether the llama-server:* methods can start a server here (a built binary), and if not, why and what to do. */
  llamaServer: { available: boolean; reason: string | null }
  /** The methods of the advisor's candidate grid (engine/replay/candidates.ts), in grid order. */
  adviseMethods: string[]
  /** node-llama-cpp's llama.cpp binary: the one in use (or about to be), and SpecLab's OpenMP CPU build. */
  native: NativeBackendInfo
}

/** The Models screen's CPU build (host/cpu-build-job.ts): node-llama-cpp's build with OpenMP, ~6 minutes. */
export const CpuBuildJob = z.object({
  state: z.enum(['running', 'done', 'failed', 'cancelled']),
  /** 0…1 (cloning the source, then the compiler's own count). */
  fraction: z.number().min(0).max(1),
  stage: z.string(),
  error: z.string().nullable(),
  /** How long the build took, once done. */
  seconds: z.number().nullable()
})
export type CpuBuildJob = z.infer<typeof CpuBuildJob>

export interface NativeBackendInfo {
  /** The binary of the engine's llama.cpp runtime; null until the first model load creates it. */
  inUse: {
    build: string
    openmp: boolean | null
    release: string
    gpu: string
    /** What SpecLab's CPU build adds where it is the binary (engine/model/llama-cpp-model.ts NativeBackend). */
    jsThreadEvaluation?: boolean
    topLogitsRead?: boolean
    smallBatchMatmul?: boolean
  } | null
  /** Which binary models load on (or will): a GPU backend, SpecLab's OpenMP CPU build, or the prebuilt CPU binary. */
  binary: 'gpu' | 'cpu-openmp-build' | 'cpu-prebuilt'
  /** Why (engine/model/llama-backend-choice.ts), one line. */
  reason: string
  /** SpecLab's CPU build: installed where node-llama-cpp loads it (or another local build is), kept in the cache. */
  cpuBuild: { installed: 'speclab' | 'other' | null; cached: boolean; cacheDir: string | null }
  /** The CPU runs the models on the prebuilt binary: the Build button applies. */
  offerBuild: boolean
  /** Why this machine cannot build (missing tools, a packaged app), or null. */
  cannotBuild: string | null
  /** The build is installed but the runtime already runs the prebuilt binary: it is used from the next start. */
  restartNeeded: boolean
  /** The build started from the Models screen (the latest one), if any. */
  job: CpuBuildJob | null
}

/** SpecLab's additions in the CPU build that runs, as a sentence ('' when none is in). */
function speclabPatchesInWords(inUse: NonNullable<NativeBackendInfo['inUse']>): string {
  const parts = [
    inUse.jsThreadEvaluation ? "evaluations on the engine's own thread" : null,
    inUse.topLogitsRead ? 'the one-pass top-k read' : null,
    inUse.smallBatchMatmul ? "small f16 batches (verification) on ggml's single-token kernel" : null
  ].filter((part) => part !== null)
  return parts.length > 0 ? ` SpecLab's additions in use: ${parts.join(', ')}.` : ''
}

/** What the Models screen says about the llama.cpp binary: the one in use, else the one models will load on. */
export function nativeBackendInWords(info: NativeBackendInfo): string {
  const inUse = info.inUse
  if (inUse) {
    if (inUse.gpu !== 'cpu') return `llama.cpp runs on ${inUse.gpu} (node-llama-cpp's ${inUse.build === 'prebuilt' ? 'prebuilt' : 'locally built'} binary).`
    const openmp = inUse.openmp === null ? '' : inUse.openmp ? ' with OpenMP' : ' without OpenMP'
    return inUse.build === 'prebuilt'
      ? `llama.cpp runs on the CPU: node-llama-cpp's prebuilt binary${openmp}.`
      : `llama.cpp runs on the CPU: built on this machine${openmp}.${speclabPatchesInWords(inUse)}`
  }
  if (info.binary === 'gpu') return `Models will load on the GPU: ${info.reason}.`
  return info.binary === 'cpu-openmp-build'
    ? 'Models will load on the CPU build made on this machine with OpenMP.'
    : "Models will load on node-llama-cpp's prebuilt CPU binary (without OpenMP)."
}
