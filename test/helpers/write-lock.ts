/**
 * Another process holding a SQLite file's write lock for a while, as the app writing a chat reply or a CLI run
 * writing its steps does: `holdWriteLock(file, ms)` resolves once the lock is held; `released` resolves when the
 * process has committed and ended.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'

export async function holdWriteLock(file: string, ms: number): Promise<{ released: Promise<void> }> {
  const script = `const db = new (require('better-sqlite3'))(${JSON.stringify(file)}); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => db.exec('COMMIT'), ${ms})`
  const holder = spawn(process.execPath, ['-e', script], { cwd: path.resolve(__dirname, '../..'), stdio: ['ignore', 'pipe', 'inherit'] })
  const released = new Promise<void>((resolve) => holder.once('close', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once('data', () => resolve())
    holder.once('close', (code) => reject(new Error(`the lock holder ended (exit ${code}) before taking the lock`)))
  })
  return { released }
}
