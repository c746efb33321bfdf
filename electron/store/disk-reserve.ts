/**
 * Room kept beside a database for the one write that must not fail: marking a run failed when its disk fills up.
 * On a full disk every SQLite write fails — the mark's included, since WAL appends it — so the run would be left
 * `running` (read as `interrupted`), without the error that ended it. While a run is in progress its store keeps a
 * small file, `<database>-reserve`; when a write fails, the store deletes it, which frees just the room the marks
 * need, and writes them at once. It is best effort: on a disk too full to create the reserve there is none.
 */
import fs from 'node:fs'

/** A few pages of WAL frames are all the marks take (a run's row and its prompt results' pages), with margin. */
export const RESERVE_BYTES = 64 * 1024

export class DiskReserve {
  readonly file: string

  constructor(database: string) {
    this.file = `${database}-reserve`
  }

  /** Creates the reserve unless it is there; a disk without room for it simply has none. */
  keep(): void {
    try {
      if (fs.statSync(this.file).size >= RESERVE_BYTES) return
    } catch {
      // missing: created below
    }
    try {
      // Written, not just sized: a sparse file would free no blocks when it is deleted.
      fs.writeFileSync(this.file, Buffer.alloc(RESERVE_BYTES))
    } catch {
      this.release() // a part-written reserve would only take room
    }
  }

  /** Deletes the reserve, freeing its room; true when there was one. */
  release(): boolean {
    try {
      fs.unlinkSync(this.file)
      return true
    } catch {
      return false
    }
  }
}
