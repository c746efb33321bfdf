/**
 * A cache of measurements in one JSON file, `{ version: 1, entries: { key: entry } }`, shared by the thread
 * calibration cache and llama-server's cost cache. Entries are checked one by one against their schema (an entry
 * another version wrote is dropped, the rest kept); an unreadable, foreign or corrupt file reads as empty. Writes go
 * to a temporary file renamed into place (a reader sees the old file or the new one, never half of one) and keep the
 * `maxEntries` most recently used entries.
 */
import fs from 'node:fs'
import path from 'node:path'
import { z } from 'zod'

const CacheFile = z.object({ version: z.literal(1), entries: z.record(z.string(), z.unknown()) })

/** The entries of `file` that `entry` accepts; {} when the file cannot be read or is not such a cache. */
export function readCacheEntries<T>(file: string, entry: z.ZodType<T>): Record<string, T> {
  try {
    const { entries } = CacheFile.parse(JSON.parse(fs.readFileSync(file, 'utf8')))
    return Object.fromEntries(
      Object.entries(entries).flatMap(([key, value]) => {
        const parsed = entry.safeParse(value)
        return parsed.success ? [[key, parsed.data] as const] : []
      })
    )
  } catch {
    return {}
  }
}

/** Writes `entries` (each with its `usedAt` ISO time), the newest `maxEntries` only; false when it cannot be written. */
export function writeCacheEntries(file: string, entries: Record<string, { usedAt: string }>, maxEntries: number): boolean {
  const newest = Object.entries(entries)
    .sort(([, a], [, b]) => b.usedAt.localeCompare(a.usedAt))
    .slice(0, maxEntries)
  const temporary = `${file}.${process.pid}.tmp`
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(temporary, JSON.stringify({ version: 1, entries: Object.fromEntries(newest) }))
    fs.renameSync(temporary, file)
    return true
  } catch {
    try {
      fs.rmSync(temporary, { force: true })
    } catch {
      // nothing was written
    }
    return false
  }
}
