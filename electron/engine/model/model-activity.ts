/**
 * What this process is doing with llama.cpp, for whoever has to explain its death: loading a file (named), holding
 * loaded models (evaluating them), or neither. A native abort is a model's fault only in the first two cases; one
 * while no model is loaded (reading input, running out of memory elsewhere) must not send the user after a model
 * file. loadLlamaModel and LlamaCppModel.dispose report here; the CLI's model process forwards every change to its
 * supervisor (cli/supervise.ts).
 */
export type ModelActivity = { state: 'idle' } | { state: 'loading'; file: string } | { state: 'evaluating'; models: number }

let loadingFile: string | null = null
let loadedModels = 0
const listeners = new Set<(activity: ModelActivity) => void>()

export function currentModelActivity(): ModelActivity {
  if (loadingFile !== null) return { state: 'loading', file: loadingFile }
  return loadedModels > 0 ? { state: 'evaluating', models: loadedModels } : { state: 'idle' }
}

/** Calls `listener` on every change; returns the unsubscribe. */
export function onModelActivity(listener: (activity: ModelActivity) => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

export function modelLoadStarted(file: string): void {
  loadingFile = file
  notify()
}

/** The load of the file named by modelLoadStarted ended: with a model now held, or without one. */
export function modelLoadEnded(loaded: boolean): void {
  loadingFile = null
  if (loaded) loadedModels++
  notify()
}

export function modelDisposed(): void {
  loadedModels = Math.max(0, loadedModels - 1)
  notify()
}

function notify(): void {
  const activity = currentModelActivity()
  for (const listener of listeners) listener(activity)
}
