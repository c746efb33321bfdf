/**
 * Writes a copy of a GGUF file with one more string metadata key (e.g. `tokenizer.chat_template`), so tests can
 * turn the shared base models into "instruct" models without shipping another file. GGUF v2/v3 layout
 * (ggml/docs/gguf.md): magic, version, tensor count, KV count, the KVs, the tensor infos, padding to
 * `general.alignment` (default 32), then the tensor data, whose offsets are relative to the data section — so the
 * data is copied verbatim and only the header grows.
 */
import fs from 'node:fs'

const GGUF_MAGIC = 0x46554747 // "GGUF" little-endian
const TYPE_STRING = 8
const TYPE_ARRAY = 9
const TYPE_UINT32 = 4
/** Byte sizes of the fixed-size GGUF value types by type id. */
const FIXED_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 }

class Reader {
  offset = 0
  constructor(readonly buffer: Buffer) {}
  u32(): number {
    const value = this.buffer.readUInt32LE(this.offset)
    this.offset += 4
    return value
  }
  u64(): number {
    const value = Number(this.buffer.readBigUInt64LE(this.offset))
    this.offset += 8
    return value
  }
  string(): string {
    const length = this.u64()
    const text = this.buffer.toString('utf8', this.offset, this.offset + length)
    this.offset += length
    return text
  }
  skipValue(type: number): void {
    if (type === TYPE_STRING) {
      const length = this.u64() // read first: `this.offset += this.u64()` would add to the offset before the read
      this.offset += length
    } else if (type === TYPE_ARRAY) {
      const itemType = this.u32()
      const count = this.u64()
      if (itemType in FIXED_SIZES) this.offset += FIXED_SIZES[itemType] * count
      else for (let i = 0; i < count; i++) this.skipValue(itemType)
    } else if (type in FIXED_SIZES) this.offset += FIXED_SIZES[type]
    else throw new Error(`unknown GGUF value type ${type} at byte ${this.offset}`)
  }
}

function ggufString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8')
  const length = Buffer.alloc(8)
  length.writeBigUInt64LE(BigInt(bytes.length))
  return Buffer.concat([length, bytes])
}

/** Copies `source` to `target` with the string key `key` = `value` added (the key must not exist yet). */
export function writeGgufWithStringKey(source: string, target: string, key: string, value: string): void {
  const buffer = fs.readFileSync(source)
  const reader = new Reader(buffer)
  if (reader.u32() !== GGUF_MAGIC) throw new Error(`${source}: not a GGUF file`)
  const version = reader.u32()
  if (version < 2) throw new Error(`${source}: GGUF v${version} is not supported`)
  const tensorCount = reader.u64()
  const kvCountOffset = reader.offset
  const kvCount = reader.u64()
  let alignment = 32
  for (let i = 0; i < kvCount; i++) {
    const name = reader.string()
    if (name === key) throw new Error(`${source}: already has ${key}`)
    const type = reader.u32()
    if (name === 'general.alignment' && type === TYPE_UINT32) alignment = buffer.readUInt32LE(reader.offset)
    reader.skipValue(type)
  }
  const kvsEnd = reader.offset
  for (let i = 0; i < tensorCount; i++) {
    reader.string()
    const dims = reader.u32()
    reader.offset += 8 * dims + 4 + 8 // dimensions, ggml type, data offset
  }
  const tensorInfosEnd = reader.offset
  const dataStart = Math.ceil(tensorInfosEnd / alignment) * alignment

  const header = Buffer.from(buffer.subarray(0, kvsEnd))
  header.writeBigUInt64LE(BigInt(kvCount + 1), kvCountOffset)
  const type = Buffer.alloc(4)
  type.writeUInt32LE(TYPE_STRING)
  const head = Buffer.concat([header, ggufString(key), type, ggufString(value), buffer.subarray(kvsEnd, tensorInfosEnd)])
  const padding = Buffer.alloc(Math.ceil(head.length / alignment) * alignment - head.length)
  fs.writeFileSync(target, Buffer.concat([head, padding, buffer.subarray(dataStart)]))
}
