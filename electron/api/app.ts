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
}
