/**
 * Adding a prompt file to the prompt sets a screen offers (the Workbench and the Advisor): the engine checks and
 * registers it (`workbench:import-dataset`), and the list gets it once, replacing an earlier import of the same file.
 */
import type { DatasetInfo } from '../../../electron/api/workbench'
import { api } from '../api'

/** The updated list and the new set's key (`kind:id`, as the screens' selects use). */
export async function addPromptFile(file: string, datasets: readonly DatasetInfo[]): Promise<{ datasets: DatasetInfo[]; chosen: string }> {
  const d = await api.call('workbench:import-dataset', { path: file })
  return { datasets: [...datasets.filter((x) => !(x.kind === d.kind && x.id === d.id)), d], chosen: `${d.kind}:${d.id}` }
}
