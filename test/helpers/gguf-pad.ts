/**
 * Padded-vocabulary fixtures: a copy of a shared f32 GGUF whose vocabulary is padded to `size` entries, as
 * conversions pad real models (Qwen2.5 7B: 151,936 → 152,064): `<pad_k>` tokens (token type UNUSED, score −1000, as
 * convert_hf_to_gguf.py writes its `[PAD…]` entries) appended to tokenizer.ggml.tokens / scores / token_type, and
 * rows appended to token_embd and output (or to token_embd alone when the output is tied to it). Unlike a real
 * model's padding, whose rows are zero or untrained, the new rows get random values of the same scale as the
 * model's own rows, so the padded ids carry real probability mass and the exactness of every decoder is tested on
 * them; `aliases` additionally makes some padded ids near-copies of real tokens, so they win the argmax (greedy
 * tests then see target tokens a draft lacks, and padded drafts propose ids a target lacks).
 *
 * GGUF layout (ggml/docs/gguf.md, as in gguf-metadata.ts / gguf-craft.ts): header, KVs, tensor infos, padding to
 * `general.alignment`, tensor data at aligned offsets relative to the data section. The file is rewritten: the
 * three tokenizer arrays and `<arch>.vocab_size` (when present) change, the two tensors grow, and every later
 * tensor's offset moves. Embedding / output tensors must be f32 or f16 (the shared *-f32 files and the inflated
 * f16 target). Test fixtures only: the source is trusted. Files go where the caller says (a temp dir), never into the repository.
 */
import fs from 'node:fs'
import { createPrng } from '../../electron/engine/sampling/prng'

const GGUF_MAGIC = 0x46554747
const TYPE_UINT32 = 4
const TYPE_INT32 = 5
const TYPE_FLOAT32 = 6
const TYPE_STRING = 8
const TYPE_ARRAY = 9
const FIXED_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 }
const GGML_F32 = 0
const GGML_F16 = 1
/** llama_token_type / gguf TokenType.UNUSED. */
const TOKEN_TYPE_UNUSED = 5

interface Kv {
  key: string
  /** Bytes of the whole KV (key included) in the source. */
  start: number
  end: number
  /** Offset of the value (for arrays: of the item type). */
  valueOffset: number
  type: number
}

interface TensorInfo {
  name: string
  dims: number[]
  type: number
  offset: number
}

class Reader {
  offset = 0
  constructor(readonly buffer: Buffer) {}
  u32(): number {
    this.offset += 4
    return this.buffer.readUInt32LE(this.offset - 4)
  }
  u64(): number {
    this.offset += 8
    return Number(this.buffer.readBigUInt64LE(this.offset - 8))
  }
  string(): string {
    const length = this.u64()
    this.offset += length
    return this.buffer.toString('utf8', this.offset - length, this.offset)
  }
  skip(type: number): void {
    if (type === TYPE_STRING) {
      const length = this.u64()
      this.offset += length
    } else if (type === TYPE_ARRAY) {
      const itemType = this.u32()
      const count = this.u64()
      if (itemType in FIXED_SIZES) this.offset += FIXED_SIZES[itemType] * count
      else for (let i = 0; i < count; i++) this.skip(itemType)
    } else if (type in FIXED_SIZES) this.offset += FIXED_SIZES[type]
    else throw new Error(`unknown GGUF value type ${type} at byte ${this.offset}`)
  }
}

function u32(value: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(value)
  return b
}
function u64(value: number): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigUInt64LE(BigInt(value))
  return b
}
function ggufString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8')
  return Buffer.concat([u64(bytes.length), bytes])
}
const pad = (n: number, alignment: number) => Math.ceil(n / alignment) * alignment

export interface PadGgufOptions {
  /** The padded vocabulary size (more than the model's). */
  size: number
  /** Seed of the random rows (default 1). */
  seed?: number
  /**
   * Standard deviation of the new rows' entries, relative to the root mean square of the tensor's own entries
   * (default 1: the padded ids get logits of the real ones' scale, so they carry mass at temperature 1).
   */
  scale?: number
  /**
   * Texts of real tokens (e.g. '▁the') whose rows the first padded ids copy, plus the random rows times
   * `aliasNoise`: such a padded id is a near-twin of its real token and takes the argmax about half of the times the
   * real token would. Default none.
   */
  aliases?: readonly string[]
  /** Scale of the noise added to an alias's copied rows, relative to `scale`'s random rows (default 0.3). */
  aliasNoise?: number
}

export interface PaddedGguf {
  file: string
  /** The source's vocabulary size and the padded one. */
  originalSize: number
  size: number
  /** Padded id → the real id it near-copies (`aliases`). */
  aliasOf: Map<number, number>
  /** Whether the output matrix is tied to token_embd (no output.weight). */
  tiedOutput: boolean
}

/** Writes `target`: `source` (an f32 llama GGUF) with its vocabulary padded to `options.size` entries. */
export function writePaddedGguf(source: string, target: string, options: PadGgufOptions): PaddedGguf {
  const buffer = fs.readFileSync(source)
  const r = new Reader(buffer)
  if (r.u32() !== GGUF_MAGIC) throw new Error(`${source}: not a GGUF file`)
  const version = r.u32()
  if (version < 2) throw new Error(`${source}: GGUF v${version} is not supported`)
  const tensorCount = r.u64()
  const kvCount = r.u64()
  const kvs: Kv[] = []
  let alignment = 32
  let architecture = 'llama'
  let tokens: string[] = []
  for (let i = 0; i < kvCount; i++) {
    const start = r.offset
    const key = r.string()
    const type = r.u32()
    const valueOffset = r.offset
    if (key === 'general.alignment' && type === TYPE_UINT32) alignment = buffer.readUInt32LE(r.offset)
    if (key === 'general.architecture' && type === TYPE_STRING) {
      architecture = r.string()
      r.offset = valueOffset
    }
    if (key === 'tokenizer.ggml.tokens') {
      r.u32()
      const count = r.u64()
      tokens = Array.from({ length: count }, () => r.string())
      r.offset = valueOffset
    }
    r.skip(type)
    kvs.push({ key, start, end: r.offset, valueOffset, type })
  }
  const tensors: TensorInfo[] = []
  for (let i = 0; i < tensorCount; i++) {
    const name = r.string()
    const nDims = r.u32()
    const dims = Array.from({ length: nDims }, () => r.u64())
    const type = r.u32()
    tensors.push({ name, dims, type, offset: r.u64() })
  }
  const dataStart = pad(r.offset, alignment)

  const originalSize = tokens.length
  const extra = options.size - originalSize
  if (!(extra > 0)) throw new Error(`${source}: padding to ${options.size} needs more than its ${originalSize} tokens`)
  const aliasIds = (options.aliases ?? []).map((text) => {
    const id = tokens.indexOf(text)
    if (id < 0) throw new Error(`${source}: no token ${JSON.stringify(text)} to alias`)
    return id
  })
  if (aliasIds.length > extra) throw new Error('more aliases than padded ids')
  const aliasOf = new Map(aliasIds.map((real, i) => [originalSize + i, real]))

  // ---- KVs: the three tokenizer arrays grow; <arch>.vocab_size follows; everything else is copied verbatim.
  const newKvs: Buffer[] = []
  for (const kv of kvs) {
    const raw = buffer.subarray(kv.start, kv.end)
    const head = buffer.subarray(kv.start, kv.valueOffset) // key + type
    const arrayOf = (itemType: number, items: Buffer[]) => {
      const at = kv.valueOffset
      if (buffer.readUInt32LE(at) !== itemType) throw new Error(`${kv.key}: unexpected item type`)
      const count = Number(buffer.readBigUInt64LE(at + 4))
      if (count !== originalSize) throw new Error(`${kv.key} has ${count} items, not ${originalSize}`)
      return Buffer.concat([head, u32(itemType), u64(count + extra), buffer.subarray(at + 12, kv.end), ...items])
    }
    const padded = Array.from({ length: extra }, (_, k) => k)
    if (kv.key === 'tokenizer.ggml.tokens') newKvs.push(arrayOf(TYPE_STRING, padded.map((k) => ggufString(`<pad_${k}>`))))
    else if (kv.key === 'tokenizer.ggml.scores')
      newKvs.push(arrayOf(TYPE_FLOAT32, padded.map(() => { const b = Buffer.alloc(4); b.writeFloatLE(-1000); return b })))
    else if (kv.key === 'tokenizer.ggml.token_type')
      newKvs.push(arrayOf(TYPE_INT32, padded.map(() => { const b = Buffer.alloc(4); b.writeInt32LE(TOKEN_TYPE_UNUSED); return b })))
    else if (kv.key === `${architecture}.vocab_size` && kv.type === TYPE_UINT32) newKvs.push(Buffer.concat([head, u32(options.size)]))
    else newKvs.push(raw)
  }

  // ---- Tensors: data sizes from the offsets (sorted), the vocabulary-sized ones grow by `extra` rows.
  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset)
  const dataLength = buffer.length - dataStart
  const sourceBytes = new Map<TensorInfo, Buffer>()
  byOffset.forEach((t, i) => {
    const end = i + 1 < byOffset.length ? byOffset[i + 1].offset : dataLength
    sourceBytes.set(t, buffer.subarray(dataStart + t.offset, dataStart + end))
  })
  const grown = new Set(['token_embd.weight', 'output.weight'])
  const tiedOutput = !tensors.some((t) => t.name === 'output.weight')
  const prng = createPrng(options.seed ?? 1, 0)
  const gaussian = () => {
    // Box–Muller from the seeded PRNG.
    const u = Math.max(prng.next(), 1e-12)
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * prng.next())
  }
  const newData = new Map<TensorInfo, Buffer>()
  for (const t of tensors) {
    if (!grown.has(t.name)) continue
    if (t.type !== GGML_F32 && t.type !== GGML_F16) throw new Error(`${source}: ${t.name} is neither f32 nor f16 (ggml type ${t.type})`)
    if (t.dims.length !== 2 || t.dims[1] !== originalSize) throw new Error(`${t.name}: dims ${t.dims} do not end in the vocabulary size`)
    const width = t.dims[0]
    const bytes = t.type === GGML_F32 ? 4 : 2
    const read = (b: Buffer, i: number) => (bytes === 4 ? b.readFloatLE(4 * i) : halfToFloat(b.readUInt16LE(2 * i)))
    const write = (b: Buffer, i: number, v: number) => (bytes === 4 ? b.writeFloatLE(v, 4 * i) : b.writeUInt16LE(floatToHalf(v), 2 * i))
    const original = sourceBytes.get(t)!.subarray(0, bytes * width * originalSize)
    let sumSquares = 0
    for (let i = 0; i < width * originalSize; i++) sumSquares += read(original, i) ** 2
    const sigma = (options.scale ?? 1) * Math.sqrt(sumSquares / (width * originalSize))
    const rows = Buffer.alloc(bytes * width * extra)
    for (let k = 0; k < extra; k++) {
      const real = aliasOf.get(originalSize + k)
      const noise = real === undefined ? 1 : options.aliasNoise ?? 0.3
      for (let j = 0; j < width; j++) {
        const base = real === undefined ? 0 : read(original, real * width + j)
        write(rows, k * width + j, base + noise * sigma * gaussian())
      }
    }
    newData.set(t, Buffer.concat([original, rows]))
    t.dims = [width, options.size]
  }

  // ---- Rewrite: header, KVs, tensor infos with new offsets, aligned data in the source's order.
  const offsets = new Map<TensorInfo, number>()
  let cursor = 0
  for (const t of byOffset) {
    offsets.set(t, cursor)
    cursor = pad(cursor + (newData.get(t) ?? sourceBytes.get(t)!).length, alignment)
  }
  const infos = tensors.map((t) =>
    Buffer.concat([ggufString(t.name), u32(t.dims.length), ...t.dims.map(u64), u32(t.type), u64(offsets.get(t)!)])
  )
  const header = Buffer.concat([u32(GGUF_MAGIC), u32(version), u64(tensorCount), u64(kvCount), ...newKvs, ...infos])
  const parts: Buffer[] = [header, Buffer.alloc(pad(header.length, alignment) - header.length)]
  let written = 0
  for (const t of byOffset) {
    const bytes = newData.get(t) ?? sourceBytes.get(t)!
    parts.push(bytes)
    written += bytes.length
    const aligned = pad(written, alignment)
    parts.push(Buffer.alloc(aligned - written))
    written = aligned
  }
  fs.writeFileSync(target, Buffer.concat(parts))
  return { file: target, originalSize, size: options.size, aliasOf, tiedOutput }
}

/** IEEE 754 half → number. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1
  const exponent = (h >> 10) & 0x1f
  const fraction = h & 0x3ff
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024)
  if (exponent === 31) return fraction ? NaN : sign * Infinity
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024)
}

/** number → IEEE 754 half (round to nearest even via Float32 bits; fixtures only need finite, small values). */
export function floatToHalf(value: number): number {
  const f32 = new Float32Array(1)
  const u32 = new Uint32Array(f32.buffer)
  f32[0] = value
  const x = u32[0]
  const sign = (x >>> 16) & 0x8000
  const exponent = ((x >>> 23) & 0xff) - 127 + 15
  let mantissa = x & 0x7fffff
  if (exponent >= 31) return sign | 0x7c00 // overflow → ±∞
  if (exponent <= 0) {
    if (exponent < -10) return sign // underflow → ±0
    mantissa |= 0x800000
    const shift = 14 - exponent
    const half = mantissa >> shift
    const rest = mantissa & ((1 << shift) - 1)
    const halfway = 1 << (shift - 1)
    return sign | (half + (rest > halfway || (rest === halfway && half & 1) ? 1 : 0))
  }
  const half = (exponent << 10) | (mantissa >> 13)
  const rest = mantissa & 0x1fff
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0))
}
