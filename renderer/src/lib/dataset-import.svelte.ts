/**
 * Adding a prompt file to the prompt sets a screen offers (the Workbench and the Advisor): the engine checks and
 * registers it (`workbench:import-dataset`), and the list gets it once, replacing an earlier import of the same file.
 * A refused file's reason is shown only until the screen's choice of prompt set changes: once the user picks a
 * built-in set or a good file, a sentence about the refused one would describe nothing on the screen.
 */
import type { DatasetInfo } from '../../../electron/api/workbench'
import { api, errorMessage } from '../api'

export class PromptFileImport {
  readonly #choice: () => string
  /**
   * Why the last file was refused. A writable $derived of the choice: `add` sets it, and any change of the chosen
   * set (the select, a file added, a form filled from a stored run) recomputes it to null.
   */
  refusal: string | null = $derived.by(() => (this.#choice(), null))

  /** `choice`: the screen's chosen prompt set, as its select's value (`kind:id`). */
  constructor(choice: () => string) {
    this.#choice = choice
  }

  /** The list with the file in it once and the new set's key, or null when the engine refused the file (see `refusal`). */
  async add(file: string, datasets: readonly DatasetInfo[]): Promise<{ datasets: DatasetInfo[]; chosen: string } | null> {
    this.refusal = null
    try {
      const d = await api.call('workbench:import-dataset', { path: file })
      return { datasets: [...datasets.filter((x) => !(x.kind === d.kind && x.id === d.id)), d], chosen: `${d.kind}:${d.id}` }
    } catch (e) {
      this.refusal = errorMessage(e)
      return null
    }
  }
}
