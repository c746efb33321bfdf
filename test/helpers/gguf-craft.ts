/**
 * Crafted GGUF files for the header-validation tests (engine/model/gguf-validate.ts): each is a shared model with
 * one field patched in place — a hyperparameter set to 0 or 1000, an array count of 2^40, a removed ggml type, a
 * tensor offset past the end, NaN weights — or cut short. Layout as in gguf-metadata.ts (ggml/docs/gguf.md): the
 * header is parsed once into the byte offsets of every KV value and tensor-info field, so a patch is a write at a
 * known offset and the file keeps its size unless it is meant to shrink.
 */
import fs from 'node:fs'
import path from 'node:path'

const GGUF_MAGIC = 0x46554747 // "GGUF" little-endian
const TYPE_STRING = 8
const TYPE_ARRAY = 9
const TYPE_UINT32 = 4
/** Byte sizes of the fixed-size GGUF value types by type id. */
const FIXED_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 }

export interface GgufKv {
  key: string
  type: number
  /** Offset of the value (for arrays: of the u32 item type, followed by the u64 count). */
  valueOffset: number
  itemType?: number
  countOffset?: number
}

export interface GgufTensorInfo {
  name: string
  dims: number[]
  type: number
  typeOffset: number
  /** Offset of the u64 data offset field in the header. */
  offsetFieldOffset: number
  /** Data offset relative to the data section. */
  dataOffset: number
}

export interface GgufLayout {
  kvs: Map<string, GgufKv>
  tensors: GgufTensorInfo[]
  alignment: number
  /** File offset of the data section. */
  dataStart: number
}

/** Parses the header of a well-formed GGUF buffer into field offsets (test fixtures only: trusts the file). */
export function parseGgufLayout(buffer: Buffer): GgufLayout {
  let offset = 0
  const u32 = () => ((offset += 4), buffer.readUInt32LE(offset - 4))
  const u64 = () => ((offset += 8), Number(buffer.readBigUInt64LE(offset - 8)))
  const string = () => {
    const length = u64()
    offset += length
    return buffer.toString('utf8', offset - length, offset)
  }
  const skipValue = (type: number): void => {
    if (type === TYPE_STRING) {
      const length = u64() // read first: `offset += u64()` would add to the offset from before the read
      offset += length
    } else if (type in FIXED_SIZES) offset += FIXED_SIZES[type]
    else throw new Error(`unknown GGUF value type ${type}`)
  }
  if (u32() !== GGUF_MAGIC) throw new Error('not a GGUF file')
  u32() // version
  const tensorCount = u64()
  const kvCount = u64()
  const kvs = new Map<string, GgufKv>()
  let alignment = 32
  for (let i = 0; i < kvCount; i++) {
    const key = string()
    const type = u32()
    const kv: GgufKv = { key, type, valueOffset: offset }
    if (type === TYPE_ARRAY) {
      kv.itemType = u32()
      kv.countOffset = offset
      const count = u64()
      for (let j = 0; j < count; j++) skipValue(kv.itemType)
    } else {
      if (key === 'general.alignment' && type === TYPE_UINT32) alignment = buffer.readUInt32LE(offset)
      skipValue(type)
    }
    kvs.set(key, kv)
  }
  const tensors: GgufTensorInfo[] = []
  for (let i = 0; i < tensorCount; i++) {
    const name = string()
    const nDims = u32()
    const dims = Array.from({ length: nDims }, () => u64())
    const typeOffset = offset
    const type = u32()
    const offsetFieldOffset = offset
    tensors.push({ name, dims, type, typeOffset, offsetFieldOffset, dataOffset: u64() })
  }
  return { kvs, tensors, alignment, dataStart: Math.ceil(offset / alignment) * alignment }
}

/** Writes an integer into the KV `key` in place, in the KV's own integer width. */
function setInteger(buffer: Buffer, layout: GgufLayout, key: string, value: number): void {
  const kv = layout.kvs.get(key)
  if (!kv) throw new Error(`no ${key} in the file`)
  const at = kv.valueOffset
  switch (kv.type) {
    case 0: buffer.writeUInt8(value, at); break
    case 1: buffer.writeInt8(value, at); break
    case 2: buffer.writeUInt16LE(value, at); break
    case 3: buffer.writeInt16LE(value, at); break
    case 4: buffer.writeUInt32LE(value, at); break
    case 5: buffer.writeInt32LE(value, at); break
    case 10: buffer.writeBigUInt64LE(BigInt(value), at); break
    case 11: buffer.writeBigInt64LE(BigInt(value), at); break
    default: throw new Error(`${key} is not an integer (type ${kv.type})`)
  }
}

function tensorNamed(layout: GgufLayout, name: string): GgufTensorInfo {
  const tensor = layout.tensors.find((t) => t.name === name)
  if (!tensor) throw new Error(`no tensor ${name} in the file`)
  return tensor
}

export interface CraftedGguf {
  /** Short name, also the file name (without .gguf). */
  name: string
  file: string
  /** What the validator's message must contain (the field it names), or null for a header that passes. */
  field: string | null
}

/** One crafted variant: how to patch the base file, and the field the refusal names. */
interface Recipe {
  name: string
  field: string | null
  craft: (buffer: Buffer, layout: GgufLayout) => Buffer
}

const ARCH = 'llama'

function setKv(key: string, value: number) {
  return (buffer: Buffer, layout: GgufLayout) => {
    setInteger(buffer, layout, key, value)
    return buffer
  }
}

/** Overwrites the string KV `key` in place with `value`, which must have the same length in bytes. */
function setString(key: string, value: string) {
  return (buffer: Buffer, layout: GgufLayout) => {
    const kv = layout.kvs.get(key)
    if (kv?.type !== TYPE_STRING) throw new Error(`${key} is not a string in the file`)
    const length = Number(buffer.readBigUInt64LE(kv.valueOffset))
    if (Buffer.byteLength(value) !== length) throw new Error(`${key}: ${JSON.stringify(value)} is not ${length} bytes long`)
    buffer.write(value, kv.valueOffset + 8, 'utf8')
    return buffer
  }
}

function hugeArray(key: string) {
  return (buffer: Buffer, layout: GgufLayout) => {
    const kv = layout.kvs.get(key)
    if (kv?.countOffset === undefined) throw new Error(`${key} is not an array in the file`)
    buffer.writeBigUInt64LE(2n ** 40n, kv.countOffset)
    return buffer
  }
}

/** Every crafted header the tests use; all derive from stories260K-f32 (llama, 8 heads / 4 KV heads, 5 layers). */
export const RECIPES: readonly Recipe[] = [
  { name: 'head-count-0', field: `${ARCH}.attention.head_count is 0`, craft: setKv(`${ARCH}.attention.head_count`, 0) },
  { name: 'head-count-kv-0', field: `${ARCH}.attention.head_count_kv is 0`, craft: setKv(`${ARCH}.attention.head_count_kv`, 0) },
  { name: 'feed-forward-0', field: `${ARCH}.feed_forward_length is 0`, craft: setKv(`${ARCH}.feed_forward_length`, 0) },
  { name: 'block-count-0', field: `${ARCH}.block_count is 0`, craft: setKv(`${ARCH}.block_count`, 0) },
  { name: 'block-count-1000', field: `${ARCH}.block_count is 1000`, craft: setKv(`${ARCH}.block_count`, 1000) },
  {
    name: 'heads-not-divisible',
    field: `${ARCH}.attention.head_count 8 is not divisible by ${ARCH}.attention.head_count_kv 3`,
    craft: setKv(`${ARCH}.attention.head_count_kv`, 3)
  },
  // Each of these three passed the scan once and failed inside llama.cpp's loader, after its own log lines.
  { name: 'rope-dimensions-0', field: `${ARCH}.rope.dimension_count is 0`, craft: setKv(`${ARCH}.rope.dimension_count`, 0) },
  {
    name: 'unknown-tokenizer',
    field: 'tokenizer.ggml.model is "gpt9x" (must be one of llama.cpp\'s tokenizers',
    craft: setString('tokenizer.ggml.model', 'gpt9x')
  },
  {
    name: 'heads-not-dividing-embedding',
    field: `${ARCH}.attention.head_count 288 does not divide ${ARCH}.embedding_length 64`,
    craft: setKv(`${ARCH}.attention.head_count`, 288)
  },
  {
    name: 'rope-not-head-size',
    field: `${ARCH}.rope.dimension_count is 4 (must be the head size, ${ARCH}.embedding_length / head_count = 8)`,
    craft: setKv(`${ARCH}.rope.dimension_count`, 4)
  },
  { name: 'scores-2e40', field: 'tokenizer.ggml.scores array count is 1099511627776', craft: hugeArray('tokenizer.ggml.scores') },
  { name: 'token-type-2e40', field: 'tokenizer.ggml.token_type array count is 1099511627776', craft: hugeArray('tokenizer.ggml.token_type') },
  {
    name: 'token-length-2e63',
    field: 'tokenizer.ggml.tokens[0] has a length of 9223372036854775813 bytes',
    craft: (buffer, layout) => {
      buffer.writeBigUInt64LE(2n ** 63n + 5n, layout.kvs.get('tokenizer.ggml.tokens')!.countOffset! + 8)
      return buffer
    }
  },
  { name: 'magic-only', field: 'the GGUF version at byte 4', craft: (buffer) => buffer.subarray(0, 4) },
  {
    // Cut inside the tokens array: its count no longer fits in what is left of the file.
    name: 'truncated-header',
    field: 'tokenizer.ggml.tokens array count is 512',
    craft: (buffer, layout) => buffer.subarray(0, layout.kvs.get('tokenizer.ggml.tokens')!.valueOffset + 2000)
  },
  {
    // Cut inside the tensor data: the last tensors end past the end of the file.
    name: 'truncated-data',
    field: 'ends at byte',
    craft: (buffer, layout) => buffer.subarray(0, layout.dataStart + Math.floor((buffer.length - layout.dataStart) / 2))
  },
  {
    name: 'removed-tensor-type',
    field: "tensor 'token_embd.weight' has ggml type 4 (Q4_2, removed",
    craft: (buffer, layout) => {
      buffer.writeUInt32LE(4, tensorNamed(layout, 'token_embd.weight').typeOffset)
      return buffer
    }
  },
  {
    name: 'unknown-tensor-type',
    field: "tensor 'output.weight' has ggml type 99",
    craft: (buffer, layout) => {
      buffer.writeUInt32LE(99, tensorNamed(layout, 'output.weight').typeOffset)
      return buffer
    }
  },
  {
    name: 'tensor-offset-past-end',
    field: "tensor 'output.weight' data (offset 1073741824",
    craft: (buffer, layout) => {
      buffer.writeBigUInt64LE(2n ** 30n, tensorNamed(layout, 'output.weight').offsetFieldOffset)
      return buffer
    }
  },
  {
    // Passes the header scan; decoding must fail naming the model (NaN logits).
    name: 'nan-weights',
    field: null,
    craft: (buffer, layout) => {
      for (const name of ['token_embd.weight', 'output.weight']) {
        const tensor = tensorNamed(layout, name)
        if (tensor.type !== 0) throw new Error(`${name} is not f32`)
        const start = layout.dataStart + tensor.dataOffset
        const count = tensor.dims.reduce((a, b) => a * b, 1)
        for (let i = 0; i < count; i++) buffer.writeUInt32LE(0x7fc00000, start + 4 * i) // quiet NaN
      }
      return buffer
    }
  }
]

/** Writes every crafted variant of `base` (an f32 llama GGUF, e.g. stories260K-f32) into `dir`. */
export function writeCraftedGgufs(base: string, dir: string): CraftedGguf[] {
  const original = fs.readFileSync(base)
  const layout = parseGgufLayout(original)
  return RECIPES.map((recipe) => {
    const file = path.join(dir, `${recipe.name}.gguf`)
    fs.writeFileSync(file, recipe.craft(Buffer.from(original), layout))
    return { name: recipe.name, file, field: recipe.field }
  })
}
