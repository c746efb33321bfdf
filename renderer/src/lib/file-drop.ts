/**
 * Files dropped on the page. The Models screen adds dropped .gguf files by path (Electron's preload tells where a
 * File lives: api.pathForFile); browser mode cannot learn a dropped file's path and uploads nothing. Anywhere else a
 * dropped file must not navigate the page to it (preventFileNavigation, installed once for the whole document;
 * Electron's will-navigate guard blocks the navigation as well).
 */

export const BROWSER_DROP_MESSAGE =
  'Browser mode cannot see where a dropped file is stored: type or paste its path above (the desktop app accepts drops).'

/** Whether a drag carries files (not text or a link dragged from the page). */
export const carriesFiles = (event: DragEvent): boolean => Array.from(event.dataTransfer?.types ?? []).includes('Files')

export const isGguf = (name: string): boolean => /\.gguf$/i.test(name)

/** "a", "a and b", "a, b and c". */
function listNames(names: readonly string[]): string {
  return names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`
}

export interface DropPlan {
  /** Paths of the .gguf files to add, in drop order. */
  paths: string[]
  /** One sentence for what is not added (other files; files without a path; browser mode); null when all are. */
  message: string | null
}

/**
 * What to do with dropped files: .gguf files with a path are added; other files are named in one sentence; with no
 * way to learn paths (browser mode: pathForFile null) the .gguf files get the browser-mode sentence instead.
 */
export function planDrop<F extends { name: string }>(files: readonly F[], pathForFile: ((file: F) => string) | null): DropPlan {
  const models = files.filter((f) => isGguf(f.name))
  const others = files.filter((f) => !isGguf(f.name)).map((f) => f.name)
  const notes: string[] = []
  if (others.length > 0)
    notes.push(`${listNames(others)} ${others.length === 1 ? 'is not a .gguf file' : 'are not .gguf files'}: only GGUF models can be added.`)
  const paths: string[] = []
  if (models.length > 0 && pathForFile === null) notes.push(BROWSER_DROP_MESSAGE)
  else if (pathForFile !== null) {
    const unplaced: string[] = []
    for (const file of models) {
      const where = pathForFile(file)
      if (where) paths.push(where)
      else unplaced.push(file.name)
    }
    if (unplaced.length > 0) notes.push(`${listNames(unplaced)}: not a file on this computer, so it cannot be added by path.`)
  }
  return { paths, message: notes.length > 0 ? notes.join(' ') : null }
}

/**
 * A file dropped where nothing takes it must not open in the window: file drags are refused (no drop effect) unless
 * a drop target accepted them first (it calls preventDefault), and a drop is always cancelled. Text drags into
 * inputs are untouched. Returns the uninstaller.
 */
export function preventFileNavigation(target: Pick<Document, 'addEventListener' | 'removeEventListener'>): () => void {
  const onDragOver = (event: DragEvent) => {
    if (!carriesFiles(event) || event.defaultPrevented) return
    event.preventDefault()
    if (event.dataTransfer) event.dataTransfer.dropEffect = 'none'
  }
  const onDrop = (event: DragEvent) => {
    if (carriesFiles(event)) event.preventDefault()
  }
  target.addEventListener('dragover', onDragOver)
  target.addEventListener('drop', onDrop)
  return () => {
    target.removeEventListener('dragover', onDragOver)
    target.removeEventListener('drop', onDrop)
  }
}
