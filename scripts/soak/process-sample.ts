/**
 * What the soak samples of a process and the database, on Linux: resident memory (VmRSS of /proc/<pid>/status) and
 * open file descriptors (the entries of /proc/<pid>/fd), and the database's bytes on disk (the file and its -wal).
 */
import fs from 'node:fs'

export interface ProcessSample {
  rssBytes: number
  fds: number
}

/** null when the process is gone (or /proc is not there). */
export function sampleProcess(pid: number): ProcessSample | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
    const rssKiB = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1])
    return { rssBytes: rssKiB * 1024, fds: fs.readdirSync(`/proc/${pid}/fd`).length }
  } catch {
    return null
  }
}

/**
 * A process's open descriptors by kind (what /proc/<pid>/fd links to): sockets, pipes, anonymous inodes (eventfd,
 * epoll, timerfd…) and files by folder — what tells a leak's source from descriptors that come and go. {} when gone.
 */
export function descriptorKinds(pid: number): Record<string, number> {
  const kinds: Record<string, number> = {}
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      let target: string
      try {
        target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`)
      } catch {
        continue // closed between the listing and the read
      }
      const kind = /^(socket|pipe):/.exec(target)?.[1] ?? (target.startsWith('anon_inode:') ? target : target.replace(/\/[^/]*$/, '/…'))
      kinds[kind] = (kinds[kind] ?? 0) + 1
    }
  } catch {
    return {}
  }
  return kinds
}

const sizeOf = (file: string) => {
  try {
    return fs.statSync(file).size
  } catch {
    return 0
  }
}

export function databaseBytes(file: string): { db: number; wal: number } {
  return { db: sizeOf(file), wal: sizeOf(`${file}-wal`) }
}
