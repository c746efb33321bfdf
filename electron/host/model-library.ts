/**
 * The model library: GGUF files the user added by path (or downloaded), with what their headers say — size,
 * architecture, vocabulary, quantisation — read by node-llama-cpp's `readGgufFileInfo` without loading weights.
 * Every path is checked before it is kept: an existing regular file ending in .gguf whose first bytes are the GGUF
 * magic and whose header passes our bounded scan (engine/model/gguf-validate.ts) and parses. The engine only ever
 * loads files from this library.
 *
 * The trio check compares vocabularies from the headers by llama.cpp's rules (tokenizer model, BOS/EOS and their add
 * flags, sizes within 128, identical token texts from id 5: engine/model/vocabulary-check.ts, the one implementation
 * of the rules), so the user learns before loading whether speculative decoding can verify draft tokens by id and
 * which rule held or failed; loading runs the same rules on the loaded models again.
 */
import { createHash } from 'node:crypto'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { GgufFileType, readGgufFileInfo } from 'node-llama-cpp'
import type { LoadSettings, ModelEntry, ModelInspection, TrioCheck, TrioSelection } from '../api/models'
import { crossVocabularyMethods, DEFAULT_SEQUENCES } from '../engine/methods/prepare'
import { describeMemory, estimateTrioMemory, type EstimateOptions } from '../experiments/memory-estimate'
import { UserInputError } from '../engine/errors'
import { validateGgufFile } from '../engine/model/gguf-validate'
import {
  addFlagsOf,
  compareVocabularies,
  describeCompatible,
  vocabularyTypeOf,
  MAX_VOCABULARY_SIZE_DIFFERENCE,
  TOKEN_TEXT_CHECK_START,
  type VocabularyFacts,
  type VocabularyVerdict
} from '../engine/model/vocabulary-check'
import { assertGgufFile } from '../engine/model/llama-cpp-model'
import type { AppStore, ModelRow } from '../store/app-store'

/** What the header says, cached per (path, size, mtime). */
export interface GgufSummary
  extends Pick<ModelEntry, 'name' | 'architecture' | 'vocabularySize' | 'quantization' | 'parameters' | 'contextLength'> {
  layers: number | null
  embeddingLength: number | null
  headCount: number | null
  chatTemplate: string | null
  tokenizerModel: string | null
  /** llama.cpp's vocab type for tokenizerModel ('spm', 'bpe', …). */
  vocabularyType: string | null
  /** tokenizer.ggml.pre (BPE pre-tokenizer), which decides llama.cpp's add-BOS default. */
  tokenizerPre: string | null
  bos: number | null
  eos: number | null
  /** tokenizer.ggml.add_bos_token / add_eos_token, or llama.cpp's default when the header has none. */
  addBos: boolean | null
  addEos: boolean | null
  /** sha256 of every token's text, to compare vocabularies cheaply. */
  tokensHash: string
  tokens: readonly string[]
  metadata: { key: string; value: string }[]
}

type Metadata = Record<string, unknown>

const IGNORED_KEYS = ['tokenizer.ggml.merges', 'tokenizer.ggml.scores', 'tokenizer.ggml.token_type']

function at(metadata: Metadata, dotted: string): unknown {
  let value: unknown = metadata
  for (const part of dotted.split('.')) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Metadata)[part]
  }
  return value
}
const numberAt = (m: Metadata, key: string): number | null => {
  const v = at(m, key)
  return typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : null
}
const stringAt = (m: Metadata, key: string): string | null => {
  const v = at(m, key)
  return typeof v === 'string' ? v : null
}
const booleanAt = (m: Metadata, key: string): boolean | null => {
  const v = at(m, key)
  return typeof v === 'boolean' ? v : null
}

function quantizationName(fileType: number | null): string | null {
  if (fileType === null) return null
  const name = (GgufFileType as unknown as Record<number, string>)[fileType]
  return name ? name.replace(/^(MOSTLY|ALL)_/, '') : String(fileType)
}

/** Scalar metadata flattened to dotted keys (arrays summarised), for the inspector. */
function flattenMetadata(value: unknown, prefix: string, out: { key: string; value: string }[]): void {
  if (Array.isArray(value)) {
    out.push({ key: prefix, value: `[${value.length} values]` })
  } else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value as Metadata)) flattenMetadata(inner, prefix ? `${prefix}.${key}` : key, out)
  } else if (prefix !== 'tokenizer.chat_template') {
    const text = String(value)
    out.push({ key: prefix, value: text.length > 200 ? `${text.slice(0, 200)}…` : text })
  }
}

export async function readGgufSummary(file: string): Promise<GgufSummary> {
  // Our bounded scan first: node-llama-cpp's reader would allocate whatever array count a crafted header claims.
  await validateGgufFile(file)
  let metadata: Metadata
  try {
    const info = await readGgufFileInfo(file, {
      readTensorInfo: false,
      logWarnings: false,
      sourceType: 'filesystem',
      ignoreKeys: IGNORED_KEYS
    })
    metadata = info.metadata as unknown as Metadata
  } catch (error) {
    throw new UserInputError(`${file}: not a readable GGUF file (${error instanceof Error ? error.message : String(error)})`)
  }
  const architecture = stringAt(metadata, 'general.architecture') ?? 'unknown'
  const tokens = (at(metadata, 'tokenizer.ggml.tokens') as string[] | undefined) ?? []
  const hash = createHash('sha256')
  for (const token of tokens) hash.update(token).update('\u0000')
  const flat: { key: string; value: string }[] = []
  flattenMetadata(metadata, '', flat)
  const tokenizerModel = stringAt(metadata, 'tokenizer.ggml.model')
  const tokenizerPre = stringAt(metadata, 'tokenizer.ggml.pre')
  const flags = addFlagsOf(tokenizerModel, tokenizerPre, booleanAt(metadata, 'tokenizer.ggml.add_bos_token'), booleanAt(metadata, 'tokenizer.ggml.add_eos_token'))
  return {
    name: stringAt(metadata, 'general.name') ?? path.basename(file, path.extname(file)),
    architecture,
    vocabularySize: tokens.length,
    quantization: quantizationName(numberAt(metadata, 'general.file_type')),
    parameters: numberAt(metadata, 'general.parameter_count'),
    contextLength: numberAt(metadata, `${architecture}.context_length`),
    layers: numberAt(metadata, `${architecture}.block_count`),
    embeddingLength: numberAt(metadata, `${architecture}.embedding_length`),
    headCount: numberAt(metadata, `${architecture}.attention.head_count`),
    chatTemplate: stringAt(metadata, 'tokenizer.chat_template'),
    tokenizerModel,
    vocabularyType: vocabularyTypeOf(tokenizerModel),
    tokenizerPre,
    bos: numberAt(metadata, 'tokenizer.ggml.bos_token_id'),
    eos: numberAt(metadata, 'tokenizer.ggml.eos_token_id'),
    addBos: flags.addBos,
    addEos: flags.addEos,
    tokensHash: hash.digest('hex'),
    tokens,
    metadata: flat
  }
}

/**
 * A path the user picked or typed: resolved to an absolute path and checked to be an existing regular .gguf file
 * with the GGUF magic and a sane header (assertGgufFile → gguf-validate.ts). Returns the absolute path and size.
 */
export async function checkModelFile(file: string): Promise<{ path: string; sizeBytes: number }> {
  const trimmed = file.trim()
  if (trimmed === '' || trimmed.includes('\u0000')) throw new UserInputError('model path is empty or invalid')
  const absolute = path.resolve(trimmed)
  if (!/\.gguf$/i.test(absolute)) throw new UserInputError(`${absolute}: not a .gguf file`)
  const sizeBytes = await assertGgufFile(absolute)
  return { path: absolute, sizeBytes }
}

export class ModelLibrary {
  private readonly cache = new Map<string, { key: string; summary: GgufSummary }>()

  constructor(private readonly store: () => AppStore) {}

  /** Header summary of a file, re-read only when its size or modification time changed. */
  async summary(file: string): Promise<{ summary: GgufSummary; sizeBytes: number } | null> {
    let info
    try {
      info = await stat(file)
    } catch {
      return null
    }
    const key = `${info.size}:${info.mtimeMs}`
    const cached = this.cache.get(file)
    if (cached?.key === key) return { summary: cached.summary, sizeBytes: info.size }
    const summary = await readGgufSummary(file)
    this.cache.set(file, { key, summary })
    return { summary, sizeBytes: info.size }
  }

  private async entryOf(row: ModelRow): Promise<ModelEntry> {
    let read: Awaited<ReturnType<ModelLibrary['summary']>> = null
    try {
      read = await this.summary(row.path)
    } catch {
      read = null // unreadable now: listed as missing rather than failing the whole list
    }
    const s = read?.summary
    return {
      id: row.id,
      path: row.path,
      fileName: path.basename(row.path),
      source: row.source,
      uri: row.uri,
      addedAt: row.addedAt,
      missing: read === null,
      sizeBytes: read?.sizeBytes ?? 0,
      name: s?.name ?? path.basename(row.path),
      architecture: s?.architecture ?? 'unknown',
      vocabularySize: s?.vocabularySize ?? 0,
      quantization: s?.quantization ?? null,
      parameters: s?.parameters ?? null,
      contextLength: s?.contextLength ?? null,
      hasChatTemplate: !!s?.chatTemplate,
      loadError: row.loadError
    }
  }

  async list(): Promise<ModelEntry[]> {
    return Promise.all(this.store().listModels().map((row) => this.entryOf(row)))
  }

  async get(modelId: number): Promise<ModelEntry> {
    const row = this.store().listModels().find((m) => m.id === modelId)
    if (!row) throw new UserInputError(`no model with id ${modelId} in the library`)
    const entry = await this.entryOf(row)
    if (entry.missing) {
      await this.summary(entry.path) // a file that is there but refused (a crafted header) throws its own one line
      throw new UserInputError(`${entry.path}: the file is missing or unreadable`)
    }
    return entry
  }

  async add(file: string, source: 'file' | 'download' = 'file', uri: string | null = null): Promise<ModelEntry> {
    const checked = await checkModelFile(file)
    await readGgufSummary(checked.path) // a header that does not parse is refused here, not at load time
    return this.entryOf(this.store().addModel(checked.path, source, uri))
  }

  remove(modelId: number): boolean {
    return this.store().removeModel(modelId)
  }

  async inspect(modelId: number): Promise<ModelInspection> {
    const entry = await this.get(modelId)
    const { summary } = (await this.summary(entry.path))!
    return {
      entry,
      tokenizer: { model: summary.tokenizerModel, bos: summary.bos, eos: summary.eos, vocabularySize: summary.vocabularySize },
      layers: summary.layers,
      embeddingLength: summary.embeddingLength,
      headCount: summary.headCount,
      chatTemplate: summary.chatTemplate ? summary.chatTemplate.slice(0, 4000) : null,
      metadata: summary.metadata
    }
  }

  /** Whether the trio can decode speculatively and, with the load settings, what loading it will take. */
  async checkTrio(request: TrioSelection & { settings?: LoadSettings }, options: Pick<EstimateOptions, 'reclaimableVramBytes'> = {}): Promise<TrioCheck> {
    // get() validates each file (its header summary runs gguf-validate.ts) before the estimate reads it again.
    const target = await this.get(request.target)
    const others = { mid: request.mid === null ? null : await this.get(request.mid), draft: request.draft === null ? null : await this.get(request.draft) }
    const vocabulary = await this.vocabularyCheck(target, others)
    if (!request.settings) return { ...vocabulary, memory: null, memoryMessage: null }
    // In load order (experiments/models.ts loadTrio): each file gets the VRAM the earlier ones leave.
    const files = (['target', 'mid', 'draft'] as const).flatMap((role) => {
      const entry = role === 'target' ? target : others[role]
      return entry ? [{ ...entry, role }] : []
    })
    try {
      const memory = await estimateTrioMemory(
        files,
        { contextSize: request.settings.contextSize, sequences: DEFAULT_SEQUENCES, gpuLayers: request.settings.gpuLayers },
        options
      )
      return { ...vocabulary, memory, memoryMessage: describeMemory(memory) }
    } catch (error) {
      return { ...vocabulary, memory: null, memoryMessage: `No memory estimate (${error instanceof Error ? error.message : String(error)}).` }
    }
  }

  /** Can these models run speculative decoding together? One clear sentence, per-pair reasons. */
  private async vocabularyCheck(
    target: ModelEntry,
    others: { mid: ModelEntry | null; draft: ModelEntry | null }
  ): Promise<Omit<TrioCheck, 'memory' | 'memoryMessage'>> {
    const targetSummary = (await this.summary(target.path))!.summary
    const pairs: (TrioCheck['pairs'][number] & { identical: boolean })[] = []
    for (const role of ['mid', 'draft'] as const) {
      const other = others[role]
      if (other === null) continue
      const verdict = vocabularyCompatibility(targetSummary, (await this.summary(other.path))!.summary)
      pairs.push(
        verdict.compatible
          ? { role, compatible: true, reason: null, held: `${other.fileName}: ${describeCompatible(verdict)}`, identical: verdict.identical }
          : { role, compatible: false, reason: `${other.fileName}: ${verdict.reason}`, held: null, identical: false }
      )
    }
    const problems = pairs.filter((p) => !p.compatible)
    if (pairs.length === 0)
      return {
        compatible: true,
        message: `Only a target (${target.fileName}): methods that need a draft model are unavailable; ar runs.`,
        pairs
      }
    if (problems.length > 0)
      return {
        compatible: false,
        message:
          // It still loads (the app loads before a method is chosen); chat and the Workbench then run only these.
          `Vocabularies differ: only ${crossVocabularyMethods().join(' / ')} can run on this trio ` +
          `(${problems.map((p) => p.reason).join('; ')}). Every other method compares token ids, so its draft must use the target’s vocabulary by llama.cpp’s rule ` +
          `(same tokenizer, BOS/EOS, sizes within ${MAX_VOCABULARY_SIZE_DIFFERENCE}, identical token texts from id ${TOKEN_TEXT_CHECK_START}).`,
        pairs: pairs.map(({ identical: _identical, ...pair }) => pair)
      }
    const shared =
      `${targetSummary.tokenizerModel ?? 'tokenizer'}, ${targetSummary.vocabularySize} tokens, BOS ${targetSummary.bos}, ` +
      `EOS ${targetSummary.eos}`
    const message = pairs.every((p) => p.identical)
      ? `Compatible: ${pairs.length === 2 ? 'all three models share' : 'both models share'} one vocabulary (${shared}), ` +
        'so draft tokens can be verified by id.'
      : `Compatible by llama.cpp’s rule (same tokenizer ${targetSummary.tokenizerModel ?? '(unnamed)'}, BOS ${targetSummary.bos} / ` +
        `EOS ${targetSummary.eos}, add-BOS ${targetSummary.addBos} / add-EOS ${targetSummary.addEos}): ` +
        `${pairs.map((p) => p.held).join('; ')}. Draft tokens are verified by id; an id only one of two models has ` +
        'gets probability 0 in the other, so decoding stays exact.'
    return { compatible: true, message, pairs: pairs.map(({ identical: _identical, ...pair }) => pair) }
  }
}

/** A header summary as the vocabulary rules see it. */
export function vocabularyFactsOfSummary(summary: GgufSummary): VocabularyFacts {
  return {
    vocabularyType: summary.vocabularyType,
    tokenizerModel: summary.tokenizerModel,
    size: summary.vocabularySize,
    bos: summary.bos,
    eos: summary.eos,
    addBos: summary.addBos,
    addEos: summary.addEos,
    tokenText: (token) => summary.tokens[token] ?? ''
  }
}

/** llama.cpp's rules (engine/model/vocabulary-check.ts) on two headers: what held, or the rule that failed. */
export function vocabularyCompatibility(target: GgufSummary, other: GgufSummary): VocabularyVerdict {
  return compareVocabularies(vocabularyFactsOfSummary(target), vocabularyFactsOfSummary(other))
}

/** null when `other` can speculate for `target` by llama.cpp's rules; else the rule that failed, in words. */
export function vocabularyDifference(target: GgufSummary, other: GgufSummary): string | null {
  const verdict = vocabularyCompatibility(target, other)
  return verdict.compatible ? null : verdict.reason
}
