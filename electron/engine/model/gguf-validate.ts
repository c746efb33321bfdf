/**
 * A bounded scan of a GGUF header, run before node-llama-cpp or llama.cpp see the file, so a crafted or corrupt file
 * is refused with one line naming the file and the field instead of aborting the process (a llama.cpp GGML_ASSERT
 * on `head_count = 0`), exhausting memory (node-llama-cpp's reader allocating a 2^40-entry array) or failing with a
 * stray TypeError.
 *
 * Layout (ggml/docs/gguf.md, GGUF v2/v3, little-endian): magic "GGUF", u32 version, u64 tensor count, u64 KV count;
 * the KVs (u64-length string key, u32 value type, value; arrays are u32 item type + u64 count + items); the tensor
 * infos (name, u32 n_dims, u64 dims, u32 ggml type, u64 data offset); padding to `general.alignment` (default 32);
 * then the tensor data, whose offsets are relative to the start of the data section.
 *
 * Bounded: the file is read through one handle in chunks; every count and length from the file is checked against
 * the bytes left before it is used, and nothing is allocated by a count from the file. Arrays of fixed-size values
 * are skipped by seeking, strings are read only where their text matters. Type ids and block sizes are those of the
 * llama.cpp bundled with node-llama-cpp 3.22.1 (ggml/include/ggml.h, ggml/src/ggml.c `type_traits`).
 */
import { open, stat, type FileHandle } from 'node:fs/promises'
import { UserInputError } from '../errors'

const GGUF_MAGIC = 'GGUF'
const DEFAULT_ALIGNMENT = 32
/** GGML_MAX_DIMS, GGML_MAX_NAME − 1 and LLAMA_MAX_LAYERS of the bundled llama.cpp. */
const MAX_DIMS = 4
const MAX_TENSOR_NAME = 63
const MAX_LAYERS = 512
/** gguf.md: keys are at most 2^16 − 1 bytes. */
const MAX_KEY = 65535
const MAX_ARCHITECTURE = 256
/** The smallest tensor info (empty name, one dim) and the smallest KV (1-byte key, 1-byte value). */
const MIN_TENSOR_INFO = 8 + 4 + 8 + 4 + 8
const MIN_KV = 8 + 1 + 4 + 1
const CHUNK = 64 * 1024

// GGUF value types.
const T_UINT8 = 0, T_INT8 = 1, T_UINT16 = 2, T_INT16 = 3, T_UINT32 = 4, T_INT32 = 5, T_FLOAT32 = 6, T_BOOL = 7
const T_STRING = 8, T_ARRAY = 9, T_UINT64 = 10, T_INT64 = 11, T_FLOAT64 = 12
const VALUE_SIZES: Record<number, number> = {
  [T_UINT8]: 1, [T_INT8]: 1, [T_UINT16]: 2, [T_INT16]: 2, [T_UINT32]: 4, [T_INT32]: 4, [T_FLOAT32]: 4, [T_BOOL]: 1,
  [T_UINT64]: 8, [T_INT64]: 8, [T_FLOAT64]: 8
}
const INTEGER_TYPES = new Set([T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_UINT64, T_INT64])

/** ggml_type id → [name, elements per block, bytes per block]; ids 4, 5, 31–33, 36–38 were removed. */
const GGML_TYPES: Record<number, [string, number, number]> = {
  0: ['F32', 1, 4], 1: ['F16', 1, 2], 2: ['Q4_0', 32, 18], 3: ['Q4_1', 32, 20], 6: ['Q5_0', 32, 22], 7: ['Q5_1', 32, 24],
  8: ['Q8_0', 32, 34], 9: ['Q8_1', 32, 36], 10: ['Q2_K', 256, 84], 11: ['Q3_K', 256, 110], 12: ['Q4_K', 256, 144],
  13: ['Q5_K', 256, 176], 14: ['Q6_K', 256, 210], 15: ['Q8_K', 256, 292], 16: ['IQ2_XXS', 256, 66],
  17: ['IQ2_XS', 256, 74], 18: ['IQ3_XXS', 256, 98], 19: ['IQ1_S', 256, 50], 20: ['IQ4_NL', 32, 18],
  21: ['IQ3_S', 256, 110], 22: ['IQ2_S', 256, 82], 23: ['IQ4_XS', 256, 136], 24: ['I8', 1, 1], 25: ['I16', 1, 2],
  26: ['I32', 1, 4], 27: ['I64', 1, 8], 28: ['F64', 1, 8], 29: ['IQ1_M', 256, 56], 30: ['BF16', 1, 2],
  34: ['TQ1_0', 256, 54], 35: ['TQ2_0', 256, 66], 39: ['MXFP4', 32, 17], 40: ['NVFP4', 64, 36], 41: ['Q1_0', 128, 18],
  42: ['Q2_0', 64, 18]
}
const REMOVED_GGML_TYPES: Record<number, string> = {
  4: 'Q4_2', 5: 'Q4_3', 31: 'Q4_0_4_4', 32: 'Q4_0_4_8', 33: 'Q4_0_8_8', 36: 'IQ4_NL_4_4', 37: 'IQ4_NL_4_8', 38: 'IQ4_NL_8_8'
}
const GGML_TYPE_IDS = '0–3, 6–30, 34, 35, 39–42'

/** Recurrent and hybrid architectures (llm_arch_is_recurrent / _hybrid): attention heads may be absent or 0. */
const ATTENTION_OPTIONAL = new Set([
  'mamba', 'mamba2', 'rwkv6', 'rwkv6qwen2', 'rwkv7', 'arwkv7', 'jamba', 'falcon-h1', 'plamo2', 'granitehybrid', 'lfm2',
  'lfm2moe', 'nemotron_h', 'nemotron_h_moe', 'qwen3next', 'kimi-linear', 'bailingmoe3', 'kimi-k3', 'qwen35', 'qwen35moe',
  'qwen4exp', 'deepseek4', 'minimax-01'
])
/** Dense llama-family architectures: attention.head_count and feed_forward_length must be present and ≥ 1. */
const LLAMA_FAMILY = new Set(['llama', 'mistral3', 'granite', 'qwen2', 'qwen3', 'gemma', 'gemma2', 'gemma3', 'phi3'])
/** String values the scan reads (each at most MAX_ARCHITECTURE bytes); every other string is skipped. */
const TEXT_KEYS = new Set(['general.architecture', 'tokenizer.ggml.model'])
/** The tokenizer models llama.cpp's vocabulary loader knows (llama-vocab.cpp); any other name makes it throw. */
const TOKENIZER_MODELS = ['no_vocab', 'none', 'llama', 'bert', 'gpt2', 't5', 'rwkv', 'plamo2']
/** Architectures whose rope dimension llama.cpp requires to equal the head size (llama-model.cpp load_hparams). */
const ROPE_IS_HEAD_SIZE = new Set(['llama', 'deci', 'falcon'])
/** Integer arrays at these key suffixes (per-layer hyperparameters) are read, up to MAX_LAYERS values. */
const PER_LAYER_SUFFIXES = ['.attention.head_count', '.attention.head_count_kv', '.feed_forward_length']

type ArrayInfo = { itemType: number; count: bigint; values?: number[] }
type Value = number | string | ArrayInfo

export interface GgufHeaderScan {
  sizeBytes: number
  version: number
  tensorCount: number
  kvCount: number
  architecture: string
  vocabularySize: number
  alignment: number
  /** File offset of the tensor data section. */
  dataOffset: number
}

/** A readable name of a byte count, for messages. */
const plural = (n: bigint | number, one: string) => `${n} ${one}${n === 1 || n === 1n ? '' : 's'}`

/**
 * What the header scan refuses. Keys, tensor and architecture names come from the file: control characters in them
 * (a crafted key may hold a newline) are escaped, so the refusal stays one line.
 */
class HeaderError extends Error {
  constructor(message: string) {
    super(message.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
  }
}

/** Sequential reads through a chunk buffer; every read and skip is checked against the file size first. */
class ChunkReader {
  private buffer = Buffer.alloc(CHUNK)
  private bufferStart = 0
  private bufferEnd = 0
  position = 0

  constructor(
    private readonly handle: FileHandle,
    readonly size: number
  ) {}

  get left(): number {
    return this.size - this.position
  }

  private truncated(bytes: number | bigint, what: string): never {
    throw new HeaderError(
      `${what} at byte ${this.position} needs ${plural(bytes, 'byte')}, but the file ends at byte ${this.size} ` +
        '(a truncated GGUF: the header must fit in the file)'
    )
  }

  /** Makes [position, position + n) available in the buffer (n ≤ the bytes left, checked by the caller). */
  private async fill(n: number): Promise<void> {
    if (this.position >= this.bufferStart && this.position + n <= this.bufferEnd) return
    if (n > this.buffer.length) this.buffer = Buffer.alloc(n)
    const length = Math.min(this.buffer.length, this.size - this.position)
    const { bytesRead } = await this.handle.read(this.buffer, 0, length, this.position)
    this.bufferStart = this.position
    this.bufferEnd = this.position + bytesRead
    if (bytesRead < n) this.truncated(n, 'a read')
  }

  private async bytes(n: number, what: string): Promise<number> {
    if (n > this.left) this.truncated(n, what)
    if (this.position < this.bufferStart || this.position + n > this.bufferEnd) await this.fill(n)
    const at = this.position - this.bufferStart
    this.position += n
    return at
  }

  async u32(what: string): Promise<number> {
    return this.buffer.readUInt32LE(await this.bytes(4, what))
  }

  async u64(what: string): Promise<bigint> {
    return this.buffer.readBigUInt64LE(await this.bytes(8, what))
  }

  async scalar(type: number, what: string): Promise<number> {
    const at = await this.bytes(VALUE_SIZES[type], what)
    const b = this.buffer
    switch (type) {
      case T_UINT8: case T_BOOL: return b.readUInt8(at)
      case T_INT8: return b.readInt8(at)
      case T_UINT16: return b.readUInt16LE(at)
      case T_INT16: return b.readInt16LE(at)
      case T_UINT32: return b.readUInt32LE(at)
      case T_INT32: return b.readInt32LE(at)
      case T_FLOAT32: return b.readFloatLE(at)
      case T_UINT64: return Number(b.readBigUInt64LE(at))
      case T_INT64: return Number(b.readBigInt64LE(at))
      default: return b.readDoubleLE(at)
    }
  }

  /** A string's u64 length, checked against the bytes left after it. */
  async stringLength(what: string): Promise<number> {
    const length = await this.u64(`the length of ${what}`)
    if (length > BigInt(this.left)) this.tooLong(length, what)
    return Number(length)
  }

  private tooLong(length: bigint | number, what: string): never {
    throw new HeaderError(`${what} has a length of ${length} bytes (must be ≤ the ${this.left} bytes left in the file)`)
  }

  /** Skips `count` strings (an array of them), synchronously while their lengths are in the buffer. */
  async skipStrings(count: number, what: (index: number) => string): Promise<void> {
    for (let j = 0; j < count; j++) {
      if (this.position < this.bufferStart || this.position + 8 > this.bufferEnd) {
        if (8 > this.left) this.truncated(8, `the length of ${what(j)}`)
        await this.fill(8)
      }
      const at = this.position - this.bufferStart
      // u64 as two u32s: above 2^53 the sum is inexact but still larger than any file.
      const length = this.buffer.readUInt32LE(at) + this.buffer.readUInt32LE(at + 4) * 2 ** 32
      this.position += 8
      if (length > this.left) this.tooLong(this.buffer.readBigUInt64LE(at), what(j))
      this.position += length
    }
  }

  async string(length: number, what: string): Promise<string> {
    const at = await this.bytes(length, what)
    return this.buffer.toString('utf8', at, at + length)
  }

  skip(n: number, what: string): void {
    if (n > this.left) this.truncated(n, what)
    this.position += n
  }
}

/**
 * Scans the header of `file` and throws a UserInputError with one line `<file>: <field> … (must be …)` at the first
 * problem. Returns what it read. Missing files and files without the GGUF magic get the messages assertGgufFile uses.
 */
export async function validateGgufFile(file: string): Promise<GgufHeaderScan> {
  let size: number
  try {
    const info = await stat(file)
    if (!info.isFile()) throw new UserInputError(`${file}: not a file`)
    size = info.size
  } catch (error) {
    if (error instanceof UserInputError) throw error
    throw new UserInputError(`model file not found: ${file}`)
  }
  const handle = await open(file, 'r')
  try {
    return await scan(new ChunkReader(handle, size))
  } catch (error) {
    if (error instanceof HeaderError) throw new UserInputError(`${file}: ${error.message}`)
    if (error instanceof NotGguf) throw new UserInputError(`${file}: not a GGUF model file`)
    throw error
  } finally {
    await handle.close()
  }
}

class NotGguf extends Error {}

async function scan(r: ChunkReader): Promise<GgufHeaderScan> {
  if (r.size < 4 || (await r.string(4, 'magic')) !== GGUF_MAGIC) throw new NotGguf()
  const fail = (message: string): never => {
    throw new HeaderError(message)
  }

  const version = await r.u32('the GGUF version')
  if (version !== 2 && version !== 3) fail(`GGUF version is ${version} (must be 2 or 3)`)
  const tensorCount = await r.u64('the tensor count')
  const kvCount = await r.u64('the metadata key count')
  const maxTensors = BigInt(Math.floor(r.left / MIN_TENSOR_INFO))
  if (tensorCount > maxTensors)
    fail(
      `tensor count is ${tensorCount} (must be ≤ ${maxTensors}: each tensor info takes ≥ ${MIN_TENSOR_INFO} ` +
        `of the ${r.left} bytes left)`
    )
  const maxKvs = BigInt(Math.floor((r.left - Number(tensorCount) * MIN_TENSOR_INFO) / MIN_KV))
  if (kvCount > maxKvs)
    fail(
      `metadata key count is ${kvCount} (must be ≤ ${maxKvs}: each key takes ≥ ${MIN_KV} of the ${r.left} bytes left ` +
        `besides the tensor infos)`
    )

  // Key-value pairs: scalars and strings that matter are kept, arrays only by item type and count.
  const kv = new Map<string, Value>()
  for (let i = 0; i < Number(kvCount); i++) {
    const keyLength = await r.stringLength(`metadata key ${i}`)
    if (keyLength === 0 || keyLength > MAX_KEY) fail(`metadata key ${i} is ${keyLength} bytes long (must be 1–${MAX_KEY})`)
    const key = await r.string(keyLength, `metadata key ${i}`)
    if (kv.has(key)) fail(`${key} appears twice (each metadata key must be unique)`)
    const type = await r.u32(`the value type of ${key}`)
    if (key === 'general.alignment' && type !== T_UINT32) fail(`general.alignment has value type ${type} (must be 4, uint32)`)
    if (type === T_ARRAY) {
      const itemType = await r.u32(`the item type of ${key}`)
      if (itemType === T_ARRAY || !(itemType in VALUE_SIZES || itemType === T_STRING))
        fail(`${key} is an array of value type ${itemType} (must be 0–8 or 10–12; arrays of arrays are not supported)`)
      const count = await r.u64(`the item count of ${key}`)
      const itemBytes = itemType === T_STRING ? 8 : VALUE_SIZES[itemType]
      const maxCount = BigInt(Math.floor(r.left / itemBytes))
      if (count > maxCount)
        fail(`${key} array count is ${count} (must be ≤ ${maxCount} for the ${r.left} bytes left in the file)`)
      const info: ArrayInfo = { itemType, count }
      if (itemType === T_STRING) {
        await r.skipStrings(Number(count), (j) => `${key}[${j}]`)
      } else if (INTEGER_TYPES.has(itemType) && count <= MAX_LAYERS && PER_LAYER_SUFFIXES.some((s) => key.endsWith(s))) {
        info.values = []
        for (let j = 0; j < Number(count); j++) info.values.push(await r.scalar(itemType, `${key}[${j}]`))
      } else {
        r.skip(Number(count) * itemBytes, key)
      }
      kv.set(key, info)
    } else if (type === T_STRING) {
      const length = await r.stringLength(key)
      if (!TEXT_KEYS.has(key)) {
        r.skip(length, key)
        kv.set(key, '') // the text does not matter here, only that it is not a number
      } else if (length > MAX_ARCHITECTURE) fail(`${key} is ${length} bytes long (must be ≤ ${MAX_ARCHITECTURE})`)
      else kv.set(key, await r.string(length, key))
    } else if (type in VALUE_SIZES) {
      kv.set(key, await r.scalar(type, key))
    } else {
      fail(`${key} has value type ${type} (must be 0–12)`)
    }
  }

  const alignmentValue = kv.get('general.alignment')
  const alignment = typeof alignmentValue === 'number' ? alignmentValue : DEFAULT_ALIGNMENT
  if (alignment === 0 || (alignment & (alignment - 1)) !== 0) fail(`general.alignment is ${alignment} (must be a power of 2)`)

  // Tensor infos: shape, type and where the data lies (checked against the file once the data section is known).
  const tensors: { name: string; offset: bigint; bytes: bigint }[] = []
  const names = new Set<string>()
  for (let i = 0; i < Number(tensorCount); i++) {
    const nameLength = await r.stringLength(`the name of tensor ${i}`)
    if (nameLength > MAX_TENSOR_NAME)
      fail(`the name of tensor ${i} is ${nameLength} bytes long (must be ≤ ${MAX_TENSOR_NAME})`)
    const name = await r.string(nameLength, `the name of tensor ${i}`)
    const label = `tensor '${name}'`
    if (names.has(name)) fail(`${label} appears twice (tensor names must be unique)`)
    names.add(name)
    const nDims = await r.u32(`the dimension count of ${label}`)
    if (nDims < 1 || nDims > MAX_DIMS) fail(`${label} has ${nDims} dimensions (must be 1–${MAX_DIMS})`)
    const dims: bigint[] = []
    for (let d = 0; d < nDims; d++) {
      const dim = await r.u64(`dimension ${d} of ${label}`)
      if (dim < 1n) fail(`${label} dimension ${d} is ${dim} (must be ≥ 1)`)
      dims.push(dim)
    }
    const type = await r.u32(`the ggml type of ${label}`)
    const traits = GGML_TYPES[type]
    if (!traits) {
      const removed = REMOVED_GGML_TYPES[type] ? `${REMOVED_GGML_TYPES[type]}, removed from llama.cpp; ` : ''
      fail(`${label} has ggml type ${type} (${removed}must be one of ${GGML_TYPE_IDS})`)
    }
    const [typeName, blockSize, blockBytes] = traits
    if (dims[0] % BigInt(blockSize) !== 0n)
      fail(`${label} has rows of ${dims[0]} elements (must be a multiple of ${blockSize}, the block size of ${typeName})`)
    const elements = dims.reduce((a, b) => a * b, 1n)
    const offset = await r.u64(`the data offset of ${label}`)
    if (offset % BigInt(alignment) !== 0n)
      fail(`${label} data offset is ${offset} (must be a multiple of general.alignment, ${alignment})`)
    tensors.push({ name, offset, bytes: (elements / BigInt(blockSize)) * BigInt(blockBytes) })
  }
  const dataOffset = Math.ceil(r.position / alignment) * alignment
  if (tensors.length > 0 && dataOffset > r.size)
    fail(`the tensor data section starts at byte ${dataOffset} (must be ≤ the file size, ${r.size} bytes)`)
  for (const tensor of tensors) {
    const end = BigInt(dataOffset) + tensor.offset + tensor.bytes
    if (end > BigInt(r.size))
      fail(
        `tensor '${tensor.name}' data (offset ${tensor.offset}, ${tensor.bytes} bytes) ends at byte ${end} ` +
          `(must be ≤ the file size, ${r.size} bytes)`
      )
  }

  // Hyperparameters of the architecture and the vocabulary.
  const architecture = kv.get('general.architecture')
  if (typeof architecture !== 'string' || architecture === '')
    return fail('general.architecture is missing (must name the model architecture)')
  const count = (key: string): number | undefined => {
    const value = kv.get(key)
    if (value === undefined) return undefined
    if (typeof value !== 'number' || !Number.isInteger(value)) return fail(`${key} is not an integer (must be one)`)
    return value
  }
  const required = (key: string, min: number): number => {
    const value = count(key)
    if (value === undefined) return fail(`${key} is missing (must be ≥ ${min})`)
    if (value < min) fail(`${key} is ${value} (must be ≥ ${min})`)
    return value
  }
  /**
   * A hyperparameter that is one number or one per layer. A number must be ≥ 1; per-layer arrays are checked only
   * where `strict` (other architectures use 0 for layers without attention or feed-forward).
   */
  const positive = (key: string, mustExist: boolean, strict: boolean): number | undefined => {
    const value = kv.get(key)
    if (value === undefined) return mustExist ? fail(`${key} is missing (must be ≥ 1)`) : undefined
    if (typeof value !== 'object') return required(key, 1)
    if (!strict) return undefined
    if (!value.values)
      return fail(`${key} is an array of ${value.count} values of type ${value.itemType} (must be integers ≥ 1, one per layer)`)
    const bad = value.values.findIndex((v) => v < 1)
    if (bad >= 0) fail(`${key}[${bad}] is ${value.values[bad]} (must be ≥ 1)`)
    return undefined
  }

  /**
   * Without attention.key_length, llama.cpp takes the head size as embedding / heads: the heads must split the
   * embedding evenly, and where the rope dimension must be the head size (ROPE_IS_HEAD_SIZE), it must be that.
   */
  const checkHeadSize = (arch: string, embeddingLength: number, heads: number, ropeDimensions: number | undefined): void => {
    if (kv.has(`${arch}.attention.key_length`)) return
    if (embeddingLength % heads !== 0)
      fail(`${arch}.attention.head_count ${heads} does not divide ${arch}.embedding_length ${embeddingLength} (the embedding must split evenly into heads)`)
    const headSize = embeddingLength / heads
    if (ropeDimensions !== undefined && ROPE_IS_HEAD_SIZE.has(arch) && ropeDimensions !== headSize)
      fail(`${arch}.rope.dimension_count is ${ropeDimensions} (must be the head size, ${arch}.embedding_length / head_count = ${headSize})`)
  }

  const blockKey = `${architecture}.block_count`
  const blocks = required(blockKey, 1)
  if (blocks > tensors.length) fail(`${blockKey} is ${blocks} (must be ≤ ${tensors.length}, the file's tensor count)`)
  if (blocks > MAX_LAYERS) fail(`${blockKey} is ${blocks} (must be ≤ ${MAX_LAYERS}, llama.cpp's layer limit)`)
  const embedding = required(`${architecture}.embedding_length`, 1)
  if (kv.has(`${architecture}.context_length`)) required(`${architecture}.context_length`, 1)
  const rope = kv.has(`${architecture}.rope.dimension_count`) ? required(`${architecture}.rope.dimension_count`, 1) : undefined
  if (!ATTENTION_OPTIONAL.has(architecture)) {
    const llamaFamily = LLAMA_FAMILY.has(architecture)
    const heads = positive(`${architecture}.attention.head_count`, llamaFamily, llamaFamily)
    const kvHeads = positive(`${architecture}.attention.head_count_kv`, false, llamaFamily)
    if (typeof heads === 'number' && typeof kvHeads === 'number' && heads % kvHeads !== 0)
      fail(
        `${architecture}.attention.head_count ${heads} is not divisible by ` +
          `${architecture}.attention.head_count_kv ${kvHeads} (must be a multiple of it)`
      )
    if (llamaFamily) positive(`${architecture}.feed_forward_length`, true, true)
    if (llamaFamily && typeof heads === 'number') checkHeadSize(architecture, embedding, heads, rope)
  }
  const tokenizerModel = kv.get('tokenizer.ggml.model')
  if (tokenizerModel !== undefined && (typeof tokenizerModel !== 'string' || !TOKENIZER_MODELS.includes(tokenizerModel)))
    fail(
      `tokenizer.ggml.model is ${typeof tokenizerModel === 'string' ? JSON.stringify(tokenizerModel.slice(0, 40)) : 'not a string'} ` +
        `(must be one of llama.cpp's tokenizers: ${TOKENIZER_MODELS.join(', ')})`
    )

  const tokens = kv.get('tokenizer.ggml.tokens')
  if (tokens === undefined) fail('tokenizer.ggml.tokens is missing (must list ≥ 1 token)')
  if (typeof tokens !== 'object' || tokens.itemType !== T_STRING)
    return fail('tokenizer.ggml.tokens is not an array of strings (must list ≥ 1 token)')
  const vocabularySize = Number(tokens.count)
  if (vocabularySize < 1) fail('tokenizer.ggml.tokens has 0 entries (must list ≥ 1 token)')
  for (const key of ['tokenizer.ggml.scores', 'tokenizer.ggml.token_type']) {
    const value = kv.get(key)
    if (value === undefined) continue
    if (typeof value !== 'object') fail(`${key} is not an array (must have one entry per token, ${vocabularySize})`)
    else if (Number(value.count) !== vocabularySize)
      fail(`${key} has ${value.count} entries (must have one per token in tokenizer.ggml.tokens, ${vocabularySize})`)
  }
  for (const key of ['tokenizer.ggml.bos_token_id', 'tokenizer.ggml.eos_token_id']) {
    const id = count(key)
    if (id !== undefined && (id < 0 || id >= vocabularySize))
      fail(`${key} is ${id} (must be ≥ 0 and < the vocabulary size, ${vocabularySize})`)
  }

  return {
    sizeBytes: r.size,
    version,
    tensorCount: tensors.length,
    kvCount: Number(kvCount),
    architecture,
    vocabularySize,
    alignment,
    dataOffset
  }
}
