/**
 * Who owns a `running` row (a run or a suite run): the process id and host name recorded when it started
 * (migration "run owner process"). The app and the CLI may share one database, so a row is only orphaned when the
 * process that owns it is gone. One rule for runs (run-store.ts) and suite runs (suite-store.ts).
 */
import os from 'node:os'

export interface OwnedRow {
  id: number
  pid: number | null
  host: string | null
}

/**
 * True when the row's owner still runs it: a live process on this host, or — when the owner is this process — a
 * row it is still executing (`inProgressHere`; a store closed mid-run leaves its rows orphaned). Rows from another
 * host or from before owners were recorded cannot be checked and count as ended.
 */
export function isOwnerAlive(row: OwnedRow, inProgressHere: ReadonlySet<number>): boolean {
  if (row.host !== os.hostname() || row.pid === null) return false
  return row.pid === process.pid ? inProgressHere.has(row.id) : isProcessAlive(row.pid)
}

/** Signal 0 checks existence without touching the process (EPERM: it exists but belongs to another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM'
  }
}
