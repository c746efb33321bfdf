/**
 * Reading a text file the user named (a prompt file, a corpus) without trusting what the path is. A FIFO would
 * block the read until someone writes to it, and `/dev/zero` never ends — both in a synchronous read no signal can
 * interrupt — so only regular files are read, up to a stated limit; and the bytes must be UTF-8, because Node
 * would quietly turn every invalid byte into U+FFFD and the run would decode text nobody wrote.
 */
import { isUtf8 } from 'node:buffer'
import fs from 'node:fs'
import { UserInputError } from '../engine/errors'

export interface TextFileOptions {
  /** What the file is, for messages: "prompt file", "corpus". */
  what: string
  /** The largest file read. */
  maxBytes: number
}

/** Reads `file` as UTF-8 text, or throws one line: missing, not a regular file, over the limit, or not UTF-8. */
export function readTextFile(file: string, { what, maxBytes }: TextFileOptions): string {
  const bytes = readRegularFile(file, what, maxBytes)
  if (!isUtf8(bytes)) throw notUtf8(file, what, bytes)
  return bytes.toString('utf8')
}

/** `n` bytes in words: 64 MiB, 1.5 GiB, 900 bytes. */
export function sizeInWords(n: number): string {
  for (const [unit, size] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const)
    if (n >= size) return `${Number((n / size).toFixed(1))} ${unit}`
  return `${n} bytes`
}

function readRegularFile(file: string, what: string, maxBytes: number): Buffer {
  let fd: number
  try {
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer before fstat could refuse it.
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new UserInputError(`${what} not found: ${file}`)
    if (code === 'EISDIR') throw new UserInputError(`${what} ${file} is a directory, not a file`)
    throw new UserInputError(`cannot read the ${what} ${file}: ${(error as Error).message}`)
  }
  try {
    const stat = fs.fstatSync(fd)
    if (stat.isDirectory()) throw new UserInputError(`${what} ${file} is a directory, not a file`)
    if (!stat.isFile()) throw new UserInputError(`${what} ${file} is ${kindOf(stat)}, not a regular file: save the text to a file and give that`)
    if (stat.size > maxBytes)
      throw new UserInputError(`${what} ${file} is ${sizeInWords(stat.size)}; ${what}s are limited to ${sizeInWords(maxBytes)}`)
    // Read at most one byte past the limit: a file that grows while it is read is caught too.
    const buffer = Buffer.alloc(Math.min(stat.size, maxBytes) + 1)
    let length = 0
    for (let n = -1; n !== 0 && length < buffer.length; length += n) n = fs.readSync(fd, buffer, length, buffer.length - length, null)
    if (length > maxBytes) throw new UserInputError(`${what} ${file} is over ${sizeInWords(maxBytes)}; ${what}s are limited to that`)
    return buffer.subarray(0, length)
  } finally {
    fs.closeSync(fd)
  }
}

function kindOf(stat: fs.Stats): string {
  if (stat.isFIFO()) return 'a FIFO (named pipe)'
  if (stat.isCharacterDevice()) return 'a character device'
  if (stat.isBlockDevice()) return 'a block device'
  if (stat.isSocket()) return 'a socket'
  return 'not a regular file'
}

/** The first byte that is not UTF-8, by line and file offset (a newline never occurs inside a UTF-8 sequence). */
function notUtf8(file: string, what: string, bytes: Buffer): UserInputError {
  let lineStart = 0
  for (let line = 1; lineStart <= bytes.length; line++) {
    const end = bytes.indexOf(0x0a, lineStart)
    const lineEnd = end < 0 ? bytes.length : end
    const offset = invalidUtf8Offset(bytes.subarray(lineStart, lineEnd))
    if (offset !== null) {
      const at = lineStart + offset
      return new UserInputError(
        `${file}:${line}: not UTF-8 at byte offset ${at} (0x${bytes[at]?.toString(16).padStart(2, '0') ?? '??'}); save the ${what} as UTF-8`
      )
    }
    lineStart = lineEnd + 1
  }
  return new UserInputError(`${file}: not UTF-8; save the ${what} as UTF-8`)
}

/**
 * Where `bytes` stop being UTF-8: the first byte of the character a strict decoder (fed one byte at a time) refuses,
 * or null when it refuses none. A character cut short is reported at its lead byte, not at the byte after it.
 */
function invalidUtf8Offset(bytes: Uint8Array): number | null {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let start = 0
  let continuations = 0
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]
    if (continuations > 0) continuations--
    else {
      start = i
      continuations = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : b >= 0xc0 ? 1 : 0
    }
    try {
      decoder.decode(bytes.subarray(i, i + 1), { stream: true })
    } catch {
      return start
    }
  }
  try {
    decoder.decode()
  } catch {
    return start // the line ends inside a character
  }
  return null
}
