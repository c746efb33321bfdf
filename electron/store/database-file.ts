/**
 * Which files SpecLab opens as its database, and how. Another application's SQLite file must come out of an open
 * byte-identical — no tables added, no switch to WAL — so a file is looked at (its header, then its schema through a
 * read-only connection or an in-memory copy) before anything may write to it:
 *
 *   file                                              | open for writing             | open for reading
 *   --------------------------------------------------|------------------------------|------------------------------
 *   missing or empty (0 bytes, or SQLite w/o tables)  | created                      | an empty in-memory store
 *   SpecLab's (application_id, or legacy: its tables) | migrated, stamped            | read-only (older schema: an
 *                                                     |                              |   in-memory migrated copy)
 *   newer schema than this build                      | refused: one line            | refused: one line
 *   any other SQLite database                         | refused: "not a SpecLab database: F has tables a, b, …"
 *   not SQLite, truncated, a directory, unreadable,   | refused: one line naming the file
 *   under /proc, /sys or /dev, read-only (writing)    |
 *
 * Every refusal is a UserInputError (the CLI's exit 2 and one line; the app shows the message).
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { UserInputError } from '../engine/errors'
import { LATEST_VERSION, MIGRATIONS, SPECLAB_APPLICATION_ID, migrate, newerSchemaError, schemaVersion } from './migrations'

export interface OpenDatabaseOptions {
  /** better-sqlite3 built for another runtime's ABI (Electron). */
  nativeBinding?: string
  /** Reading only: no migration, no WAL switch, no write at all — works on a full disk and on read-only files. */
  readonly?: boolean
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1')
const HEADER_BYTES = 100
/** Pseudo-filesystems: reading /proc/…/fd or a character device hangs or means nothing as a database. */
const SYSTEM_ROOTS = ['/proc', '/sys', '/dev']
const LISTED_TABLES = 8
/** A WAL-mode file no connection has open is inspected from an in-memory copy up to this size (no -wal/-shm made). */
const COPY_LIMIT_BYTES = 64 * 1024 * 1024

interface Header {
  walMode: boolean
  applicationId: number
}

type Kind = { kind: 'empty' } | { kind: 'speclab' } | { kind: 'foreign'; reason: string }

/**
 * Opens `file` as a SpecLab database (see the table above). For writing the connection is in WAL mode, migrated
 * and stamped; for reading it holds the current schema (read-only on the file, or a migrated in-memory copy).
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database.Database {
  const absolute = path.resolve(file)
  refuseSystemPath(file, absolute)
  const stat = statOf(file, absolute)
  if (stat && !stat.isFile())
    throw new UserInputError(
      stat.isDirectory() ? `${file} is a directory, not a SpecLab database` : `${file} is not a regular file, so not a SpecLab database`
    )
  const header = stat && stat.size > 0 ? readHeader(file, absolute, stat.size) : null
  const kind: Kind = header ? inspect(file, absolute, header, options) : { kind: 'empty' }
  if (kind.kind === 'foreign') throw new UserInputError(`not a SpecLab database: ${file} ${kind.reason}`)
  return options.readonly
    ? openForReading(file, absolute, header, kind, options)
    : openForWriting(file, absolute, stat !== null, options)
}

/** A SQLite error while opening, as one line naming the file. Anything else is returned as is. */
export function describeOpenError(file: string, error: unknown): unknown {
  if (error instanceof UserInputError) return error
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error
  const message = (error as Error).message
  if (code === 'SQLITE_NOTADB') return new UserInputError(`not a SpecLab database: ${file} is not a SQLite database`, { cause: error })
  if (code.startsWith('SQLITE_CORRUPT')) return new UserInputError(`${file} is damaged: ${message}`, { cause: error })
  if (code.startsWith('SQLITE_READONLY')) return new UserInputError(`cannot write the SpecLab database ${file}: ${message}`, { cause: error })
  if (code.startsWith('SQLITE_BUSY')) return new UserInputError(`${file} is locked by another process: ${message}`, { cause: error })
  return new UserInputError(`cannot open the SpecLab database ${file}: ${message}`, { cause: error })
}

function refuseSystemPath(file: string, absolute: string): void {
  if (process.platform === 'win32') return
  const paths = [absolute]
  try {
    paths.push(fs.realpathSync(absolute))
  } catch {
    // does not exist (yet): the path as given is what would be created
  }
  for (const p of paths)
    for (const root of SYSTEM_ROOTS)
      if (p === root || p.startsWith(`${root}/`)) throw new UserInputError(`${file} is under ${root}, which cannot hold a SpecLab database`)
}

function statOf(file: string, absolute: string): fs.Stats | null {
  try {
    return fs.statSync(absolute)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new UserInputError(`cannot open the SpecLab database ${file}: ${reasonOf(error)}`, { cause: error })
  }
}

/** The first 100 bytes: "SQLite format 3", a sane page size, and a file at least as long as its header says. */
function readHeader(file: string, absolute: string, size: number): Header {
  const bytes = Buffer.alloc(HEADER_BYTES)
  let read: number
  try {
    const fd = fs.openSync(absolute, 'r')
    try {
      read = fs.readSync(fd, bytes, 0, HEADER_BYTES, 0)
    } finally {
      fs.closeSync(fd)
    }
  } catch (error) {
    throw new UserInputError(`cannot read the SpecLab database ${file}: ${reasonOf(error)}`, { cause: error })
  }
  const prefix = Math.min(read, SQLITE_MAGIC.length)
  if (!bytes.subarray(0, prefix).equals(SQLITE_MAGIC.subarray(0, prefix)))
    throw new UserInputError(`not a SpecLab database: ${file} is not a SQLite database`)
  if (read < HEADER_BYTES) throw new UserInputError(`${file} is truncated: ${size} bytes, shorter than a SQLite header`)
  const rawPageSize = bytes.readUInt16BE(16)
  const pageSize = rawPageSize === 1 ? 65536 : rawPageSize
  if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0) throw new UserInputError(`${file} is damaged: its SQLite header is invalid`)
  // The in-header page count is valid when "version-valid-for" equals the change counter (SQLite file format §1.3).
  const pages = bytes.readUInt32BE(28)
  const expected = pages * pageSize
  const walMode = bytes[18] === 2 || bytes[19] === 2
  // A checkpoint that a full disk stopped half-way leaves page 1 (with the new count) written and the file short; the
  // committed pages are still in the -wal file, where SQLite reads them. Only a file without one is truly short.
  const shortIsTruncated = !(walMode && hasLiveWal(absolute))
  if (pages > 0 && bytes.readUInt32BE(24) === bytes.readUInt32BE(92) && size < expected && shortIsTruncated)
    throw new UserInputError(`${file} is truncated: ${size} bytes where its SQLite header says ${expected}`)
  return { walMode, applicationId: bytes.readInt32BE(68) }
}

/** Stamped files are SpecLab's at once; any other is classified by its schema without writing a byte. */
function inspect(file: string, absolute: string, header: Header, options: OpenDatabaseOptions): Kind {
  if (header.applicationId === SPECLAB_APPLICATION_ID) return { kind: 'speclab' }
  let db: Database.Database | undefined
  try {
    db = openUntouched(absolute, header, options)
    return classify(db)
  } catch (error) {
    throw describeOpenError(file, error)
  } finally {
    db?.close()
  }
}

/**
 * A connection that cannot change the file: read-only, or — for a WAL-mode file no connection has open, where a
 * read-only connection would still create the -wal and -shm files beside it — a copy of the file in memory.
 */
function openUntouched(absolute: string, header: Header, options: OpenDatabaseOptions): Database.Database {
  if (header.walMode && !hasLiveWal(absolute) && fs.statSync(absolute).size <= COPY_LIMIT_BYTES) return memoryCopy(absolute, options)
  return new Database(absolute, { readonly: true, fileMustExist: true, ...binding(options) })
}

function classify(db: Database.Database): Kind {
  const tables = (
    db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid`).all() as {
      name: string
    }[]
  ).map((t) => t.name)
  const applicationId = db.pragma('application_id', { simple: true }) as number
  const userVersion = db.pragma('user_version', { simple: true }) as number
  if (applicationId === SPECLAB_APPLICATION_ID) return { kind: 'speclab' }
  if (applicationId !== 0)
    return { kind: 'foreign', reason: `belongs to another application (application_id 0x${(applicationId >>> 0).toString(16)})` }
  if (tables.length === 0) return userVersion === 0 ? { kind: 'empty' } : { kind: 'foreign', reason: `has no tables but user_version ${userVersion}` }
  if (isLegacySpecLab(db, tables)) return { kind: 'speclab' }
  const listed = tables.slice(0, LISTED_TABLES).join(', ')
  return { kind: 'foreign', reason: `has tables ${listed}${tables.length > LISTED_TABLES ? ', …' : ''}` }
}

/** A database of a build before the stamp: SpecLab's migration table, whose first migration is SpecLab's first. */
function isLegacySpecLab(db: Database.Database, tables: string[]): boolean {
  if (!tables.includes('schema_migrations') || !tables.includes('runs')) return false
  try {
    const first = db.prepare('SELECT name FROM schema_migrations WHERE version = 1').get() as { name?: unknown } | undefined
    return first?.name === MIGRATIONS[0].name
  } catch {
    return false
  }
}

function openForWriting(file: string, absolute: string, exists: boolean, options: OpenDatabaseOptions): Database.Database {
  checkWritable(file, absolute, exists)
  let db: Database.Database | undefined
  try {
    db = new Database(absolute, binding(options))
    const version = schemaVersion(db)
    if (version > LATEST_VERSION) throw newerSchemaError(version)
    // SQLite quietly opens a file it may not write read-only; find out now, not after the models are loaded.
    db.exec('BEGIN IMMEDIATE')
    db.exec('ROLLBACK')
    switchToWal(db)
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    migrate(db)
    return db
  } catch (error) {
    db?.close()
    throw describeOpenError(file, error)
  }
}

/** How long the WAL switch is retried: better-sqlite3's own busy timeout, which every other statement waits. */
const WAL_SWITCH_PATIENCE_MS = 5000
const WAL_SWITCH_RETRY_MS = 10

/**
 * Puts the file in WAL mode. Two processes that open one new file together both read its header, then both ask
 * to write it; SQLite refuses the second at once with SQLITE_BUSY instead of calling its busy handler (waiting
 * while holding a read lock could deadlock), so the switch is retried here. The retry usually finds the file
 * switched by the other process, which makes the pragma a no-op.
 */
export function switchToWal(db: Database.Database): void {
  const deadline = Date.now() + WAL_SWITCH_PATIENCE_MS
  for (;;) {
    try {
      db.pragma('journal_mode = WAL')
      return
    } catch (error) {
      const busy = String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY')
      if (!busy || Date.now() >= deadline) throw error
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, WAL_SWITCH_RETRY_MS)
    }
  }
}

function checkWritable(file: string, absolute: string, exists: boolean): void {
  const directory = path.dirname(absolute)
  try {
    if (!exists) fs.mkdirSync(directory, { recursive: true })
    // WAL keeps two files beside the database, so its folder must be writable too.
    fs.accessSync(directory, fs.constants.W_OK)
  } catch (error) {
    throw new UserInputError(`cannot write the SpecLab database ${file}: its folder ${directory}: ${reasonOf(error)}`, { cause: error })
  }
  if (!exists) return
  try {
    fs.accessSync(absolute, fs.constants.R_OK | fs.constants.W_OK)
  } catch (error) {
    throw new UserInputError(`cannot write the SpecLab database ${file}: ${reasonOf(error)}`, { cause: error })
  }
}

function openForReading(
  file: string,
  absolute: string,
  header: Header | null,
  kind: Kind,
  options: OpenDatabaseOptions
): Database.Database {
  if (!header || kind.kind === 'empty') return migrated(new Database(':memory:', binding(options)))
  let db: Database.Database | undefined
  try {
    db = openReadOnly(absolute, header, options)
    const version = schemaVersion(db)
    if (version > LATEST_VERSION) throw newerSchemaError(version)
    if (version === LATEST_VERSION) return db
    // An older schema is read through a migrated copy in memory: the file itself is upgraded by a writing open.
    const copy = inMemory(db.serialize(), options)
    db.close()
    db = undefined
    return migrated(copy)
  } catch (error) {
    db?.close()
    throw describeOpenError(file, error)
  }
}

/**
 * Read-only; when even that fails (a WAL file no one has open needs a -shm file, which a full disk may refuse), a
 * copy in memory.
 */
function openReadOnly(absolute: string, header: Header, options: OpenDatabaseOptions): Database.Database {
  try {
    const db = new Database(absolute, { readonly: true, fileMustExist: true, ...binding(options) })
    db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get() // the WAL index is opened on the first read
    return db
  } catch (error) {
    if (header.walMode && !hasLiveWal(absolute)) return memoryCopy(absolute, options)
    throw error
  }
}

function migrated(db: Database.Database): Database.Database {
  try {
    migrate(db)
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

function memoryCopy(absolute: string, options: OpenDatabaseOptions): Database.Database {
  return inMemory(fs.readFileSync(absolute), options)
}

/** An image of a database in memory, marked as a rollback-journal one (an in-memory database cannot use WAL). */
function inMemory(bytes: Buffer, options: OpenDatabaseOptions): Database.Database {
  if (bytes.length >= HEADER_BYTES) {
    bytes[18] = 1
    bytes[19] = 1
  }
  return new Database(bytes, binding(options))
}

/** A -wal file with frames in it: a connection has the file open, or one ended without checkpointing. */
function hasLiveWal(absolute: string): boolean {
  try {
    return fs.statSync(`${absolute}-wal`).size > 0
  } catch {
    return false
  }
}

function binding(options: OpenDatabaseOptions): { nativeBinding?: string } {
  return options.nativeBinding ? { nativeBinding: options.nativeBinding } : {}
}

function reasonOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied'
  if (code === 'EROFS') return 'read-only file system'
  if (code === 'ENOSPC') return 'no space left on device'
  if (code === 'ENOTDIR') return 'a part of the path is not a folder'
  return error instanceof Error ? error.message : String(error)
}
