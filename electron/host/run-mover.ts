/**
 * The Runs screen's export and import of runs (store/run-transfer.ts, what `speclab runs export` / `import` do):
 * export answers the file's bytes (the page saves them as a download); import reads a path (the desktop app's open
 * dialog) or an upload in chunks (browser mode, whose page cannot name files on the machine the server runs on).
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { RunsFile, RunsImport } from '../api/runs'
import type { ApiHandlers } from '../api/runs-service'
import type { HostEvent } from '../api/events'
import { UserInputError } from '../engine/errors'
import type { RunStore } from '../store/run-store'
import { exportRuns, importRuns } from '../store/run-transfer'

/** An upload larger than this is refused (a runs file of that size is better moved with `speclab runs import`). */
const MAX_UPLOAD_BYTES = 512 * 1024 * 1024
/** An upload with no chunk for this long is dropped (the page was closed half-way). */
const STALE_UPLOAD_MS = 10 * 60 * 1000

interface Upload {
  fileName: string
  chunks: Buffer[]
  bytes: number
  next: number
  touched: number
}

export class RunMover {
  private readonly uploads = new Map<string, Upload>()

  constructor(
    private readonly runs: () => RunStore,
    private readonly databasePath: () => string,
    private readonly emit: (event: HostEvent) => void
  ) {}

  handlers(): ApiHandlers<'runs:export-runs' | 'runs:import' | 'runs:import-upload'> {
    return {
      'runs:export-runs': ({ runIds }) => this.exportFile(runIds),
      'runs:import': ({ path: file }) => this.importFile(file, file),
      'runs:import-upload': (chunk) => this.receive(chunk)
    }
  }

  exportFile(runIds: readonly number[]): RunsFile {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-export-'))
    const fileName = runIds.length === 1 ? `speclab-run-${runIds[0]}.speclab-runs` : `speclab-${runIds.length}-runs.speclab-runs`
    try {
      const file = path.join(folder, fileName)
      const summary = exportRuns(this.runs().database, this.databasePath(), runIds, file)
      return { fileName, mimeType: 'application/vnd.sqlite3', base64: fs.readFileSync(file).toString('base64'), runs: summary.transferred.length }
    } finally {
      fs.rmSync(folder, { recursive: true, force: true })
    }
  }

  /** Imports `file`; messages name it as `shownAs` (an upload's own name, not the temporary copy's path). */
  private importFile(file: string, shownAs: string): RunsImport {
    let summary: RunsImport
    try {
      summary = importRuns(this.runs().database, file)
    } catch (error) {
      if (error instanceof UserInputError && file !== shownAs) throw new UserInputError(error.message.split(file).join(shownAs))
      throw error
    }
    if (summary.transferred.length > 0) this.emit({ type: 'runs:changed' })
    return { ...summary, file: shownAs }
  }

  private receive(chunk: { uploadId: string; fileName: string; index: number; last: boolean; data: string }): { received: number; imported: RunsImport | null } {
    this.dropStale()
    const upload = this.uploads.get(chunk.uploadId) ?? { fileName: chunk.fileName, chunks: [], bytes: 0, next: 0, touched: Date.now() }
    if (chunk.index !== upload.next) {
      this.uploads.delete(chunk.uploadId)
      throw new UserInputError(`the upload of ${chunk.fileName} lost a piece (got part ${chunk.index + 1}, expected ${upload.next + 1}): try again`)
    }
    const bytes = Buffer.from(chunk.data, 'base64')
    upload.chunks.push(bytes)
    upload.bytes += bytes.length
    upload.next += 1
    upload.touched = Date.now()
    if (upload.bytes > MAX_UPLOAD_BYTES) {
      this.uploads.delete(chunk.uploadId)
      throw new UserInputError(`${chunk.fileName} is larger than ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB: import it with \`speclab runs import\` on the server`)
    }
    if (!chunk.last) {
      this.uploads.set(chunk.uploadId, upload)
      return { received: upload.bytes, imported: null }
    }
    this.uploads.delete(chunk.uploadId)
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-import-'))
    try {
      const file = path.join(folder, `${randomUUID()}.speclab-runs`)
      fs.writeFileSync(file, Buffer.concat(upload.chunks))
      return { received: upload.bytes, imported: this.importFile(file, upload.fileName) }
    } finally {
      fs.rmSync(folder, { recursive: true, force: true })
    }
  }

  private dropStale(): void {
    const now = Date.now()
    for (const [id, upload] of this.uploads) if (now - upload.touched > STALE_UPLOAD_MS) this.uploads.delete(id)
  }
}
