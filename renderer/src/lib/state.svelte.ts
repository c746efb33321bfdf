/**
 * State shared by the screens: the current view, app info (methods, datasets, suites), the model library with
 * the loaded trio, load progress and the connection. Host events arrive once (App.svelte subscribes) and are
 * fanned out to screens through `onHostEvent`.
 */
import type { AppInfo, View } from '../../../electron/api/app'
import type { HostEvent } from '../../../electron/api/events'
import type { ModelLibrary } from '../../../electron/api/models'
import type { RunConfig } from '../../../electron/api/runs'
import { api, errorMessage, type ConnectionState } from '../api'

export type LoadProgress = Extract<HostEvent, { type: 'models:load-progress' }>

export const ui = $state({
  view: 'chat' as View,
  info: null as AppInfo | null,
  library: null as ModelLibrary | null,
  loadProgress: null as LoadProgress | null,
  connection: 'connecting' as ConnectionState,
  connectionDetail: null as string | null,
  hostMessage: null as string | null,
  /** Runs chosen for the Diff screen: A and B, and further runs side by side (`more`, up to six). */
  diff: { a: null as number | null, b: null as number | null, more: [] as number[] },
  /** A stored run's config the Workbench should fill its form with ("Run again with these settings"). */
  rerun: null as { runId: number; config: RunConfig } | null,
  /** A suite the menu asked the Workbench to prepare. */
  pendingSuite: null as string | null,
  /** A run the Runs screen should open. */
  openRun: null as number | null,
  /** A suite run whose report the Runs screen should open. */
  openSuiteRun: null as number | null,
  /** Models the Advisor should start from (the Models screen's "Recommend a setup"). */
  advisorModels: null as { target: number; drafts: number[]; mid: number | null } | null,
  /** A stored advice run the Advisor should show (Runs' "Open in Advisor"). */
  openAdvice: null as number | null,
  /** A method with its γ and parameters that Chat should take over (the Advisor's "Use in Chat"). */
  chatPreset: null as { method: string; gamma: number; params: Record<string, string | number | boolean> } | null,
  globalError: null as string | null
})

const listeners = new Set<(event: HostEvent) => void>()

export function onHostEvent(listener: (event: HostEvent) => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

export function dispatchHostEvent(event: HostEvent): void {
  for (const listener of listeners) listener(event)
}

export async function refreshInfo(): Promise<void> {
  try {
    ui.info = await api.call('app:info', {})
  } catch (error) {
    ui.globalError = errorMessage(error)
  }
}

export async function refreshLibrary(): Promise<void> {
  try {
    ui.library = await api.call('models:list', {})
  } catch (error) {
    ui.globalError = errorMessage(error)
  }
}

export function navigate(view: View): void {
  ui.view = view
}
