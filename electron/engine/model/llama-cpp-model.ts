/**
 * node-llama-cpp adapter for the model-session seam.
 *
 * - One context per model with a few sequences (sessions). Threads per PHASE (measured on a 2-core machine with
 *   the inflated 78M-compute target, docs/performance.md): `threads` for single-token evaluations, `batchThreads` for
 *   evaluations of several tokens (verification, prefill, several sequences at once). One thread decodes a token in
 *   7.1 ms, two in 8.4 ms once JS work runs between decodes (llama.cpp's worker threads spin and take the core the JS
 *   thread needs); a 6-token batch takes 23.6 ms on one thread, 13.6–15.7 ms on two. A tiny draft on two threads is
 *   ~35× slower (5 tokens 1.6 → 60 ms). So targets take `batchThreads` = all cores on ≤ 2-core machines, drafts 1.
 *   node-llama-cpp fixes a context's thread count at creation and re-applies it before every decode (its threads
 *   splitter), so the runtime is created with `maxThreads: 0` (no splitting between contexts, no async allocation per
 *   decode) and the wanted count is set on the context per evaluation (`setPhaseThreads`: node-llama-cpp 3.22.1
 *   internals, pinned; test/integration/threads-gguf.test.ts fails if they change).
 * - `append` is ONE evaluation — through node-llama-cpp's addon when it is alone on the context (direct-evaluation.ts),
 *   else one `controlledEvaluate` call, which batches it with the others; for every requested position it asks for
 *   the raw logits of the top-k tokens (or the whole vocabulary) and warps them in JS (sampling/warp.ts), so draft and
 *   target are warped by the same code. (node-llama-cpp's own `probabilities` output is taken after its sampler picked a token and
 *   collapses to that token at temperature > 0, so it cannot serve as q or p.)
 * - A session created with `{ fullEntropy: true }` (the draft of svip / self-verify) transfers every logit: the
 *   entropy of the whole-vocabulary softmax needs Σ p·log p over the tail too, and node-llama-cpp offers only
 *   `totalLogitWeight` (Σ e^{l − max}, i.e. the tail's mass, not its entropy). llama.cpp returns the full list
 *   sorted by logit, so its first k entries are exactly what `includeTop: k` returns and the warped distribution
 *   is the same either way.
 * - Rollback is `eraseContextTokenRanges`. Sequences start with BOS (raw evaluation does not add it).
 * - Vocabularies of a trio may differ in size by padding (model/vocabulary-check.ts). An id this model lacks — the
 *   target's padded id fed to the draft, or a padded draft's proposal fed to the target for verification — would
 *   make llama_decode fail ("invalid token"), so it is evaluated as the model's stand-in token (its unknown token,
 *   else padding, else EOS, else 0) while the session's `tokens` keep the id as given. The stand-in only changes
 *   what a drafter proposes next (any proposal is exact, since q is what the token was drawn from) or the target's
 *   distributions after a token it rejects anyway (p = 0 for ids it lacks).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  getLlama,
  getLlamaGpuTypes,
  GgufFileType,
  LlamaLogLevel,
  type ControlledEvaluateInputItem,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token
} from 'node-llama-cpp'
import { softmaxEntropy, type Distribution } from '../sampling/distribution'
import { warp, type WarpConfig } from '../sampling/warp'
import { UnencodableTextError, UserInputError } from '../errors'
import { validateGgufFile } from './gguf-validate'
import { chooseLlamaBackend, requestedGpu, type BackendChoice, type GpuBackend } from './llama-backend-choice'
import { cpuBuildInstalled, smallBatchMatmulActive } from './native-cpu-build'
import { DirectEvaluation, directEvaluationEnabled, jsThreadEvaluationOf, topLogitsReadOf, type LogitsRequest, type PositionLogits, type SessionSamplers } from './direct-evaluation'
import { libuvWorkers, singleLibuvWorker } from './libuv-workers'
import { modelDisposed, modelLoadEnded, modelLoadStarted } from './model-activity'
import type { LanguageModel, ModelInfo, ModelSession, SessionOptions, TokenKind } from './types'

export interface LlamaLoadOptions {
  /** Threads of single-token evaluations (default: defaultThreads()). */
  threads?: number
  /** Threads of evaluations of more than one token, or of several sequences at once (default: `threads`). */
  batchThreads?: number
  contextSize?: number
  /** How many sessions (KV sequences) may be open at once on this model. */
  sequences?: number
  gpuLayers?: number | 'auto'
  /** Transfer all logits instead of the top-k (exact for any warp, ~10 ms per position at 32k vocab). */
  fullVocabulary?: boolean
  /** Loading progress of the weights, 0…1 (node-llama-cpp's onLoadProgress). */
  onLoadProgress?: (fraction: number) => void
  /**
   * llama.cpp starts on the file now (after the header check, once the activity says so): a load shown as started
   * is one a crash would be blamed on, never earlier.
   */
  onLoadStarted?: () => void
}

export function defaultThreads(): number | undefined {
  return os.cpus().length <= 2 ? 1 : undefined
}

/**
 * A target's threads for batched evaluations when none are given: every core on ≤ 2-core machines if `threads` is
 * the default there (see the file comment), else `threads` (an explicit --threads N means N everywhere).
 */
export function targetBatchThreadsFor(threads: number | undefined): number | undefined {
  return os.cpus().length <= 2 && (threads === undefined || threads === defaultThreads()) ? os.cpus().length : threads
}

/**
 * A target's threads for single tokens when none are given. With node-llama-cpp's prebuilt binary (no OpenMP) a
 * second thread makes a token slower, so `threads` (1 on ≤ 2 cores); with a llama.cpp built with OpenMP (`npm run
 * build:native`) every core on ≤ 2-core machines when `threads` is the default — measured on 2 cores, inflated target,
 * peer-bench: `ar` 145 tok/s on 2 threads vs 103 on 1 (prebuilt: 61 vs 99). Drafts keep `threads` (a tiny draft on
 * two threads is slower in every build). An explicit --threads N means N everywhere.
 */
export function targetThreadsFor(threads: number | undefined, openmp: boolean | null, cores = os.cpus().length): number | undefined {
  // Only an absent count is the default: a given --threads 1 is 1, even where the default would be 1 too.
  return openmp === true && cores <= 2 && threads === undefined ? cores : threads
}

let llamaInstance: Promise<Llama> | undefined
let chosenBackend: BackendChoice | null = null
/**
 * One llama.cpp runtime per process (it owns the backend and its threads). Its binary: a GPU backend wherever one can
 * run, else SpecLab's OpenMP CPU build when installed, else node-llama-cpp's prebuilt CPU binary
 * (llama-backend-choice.ts: the CPU build never takes the place of CUDA, Vulkan or Metal).
 */
export function sharedLlama(): Promise<Llama> {
  if (!llamaInstance) preferSpinningOpenMpThreads()
  llamaInstance ??= createLlama()
  return llamaInstance
}

async function createLlama(): Promise<Llama> {
  const gpuBackends = (await getLlamaGpuTypes('supported')).filter((gpu): gpu is GpuBackend => gpu !== false)
  chosenBackend = chooseLlamaBackend({ requested: requestedGpu(), gpuBackends, cpuBuildInstalled: cpuBuildInstalled() })
  // maxThreads 0: each context uses the threads it is told (no splitting between contexts, no wait per decode).
  return getLlama({ gpu: chosenBackend.gpu, logLevel: LlamaLogLevel.error, maxThreads: 0 })
}

/** Why the runtime has the binary it has; null before the runtime is created. */
export function llamaBackendChoice(): BackendChoice | null {
  return chosenBackend
}

/** The OpenMP settings as this process found them, before preferSpinningOpenMpThreads (what child processes get). */
export const inheritedOpenMpSettings: Readonly<Record<'OMP_WAIT_POLICY' | 'GOMP_SPINCOUNT', string | undefined>> = {
  OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY,
  GOMP_SPINCOUNT: process.env.GOMP_SPINCOUNT
}

/**
 * OMP_WAIT_POLICY=active unless the user chose a policy; it matters only to a llama.cpp built with OpenMP (`npm run
 * build:native`) and must be set before the runtime loads libgomp. node-llama-cpp evaluates on libuv's worker
 * threads, each of which becomes an OpenMP master of its own, so libgomp sees more threads than cores and by default
 * barely spins: the second thread of a token then sleeps and wakes at every op. Measured (2 cores, inflated target,
 * `ar`, 3 prompts × 128 tokens × 3 rounds, medians): 2 threads 132 tok/s by default, 150–154 active, 88 passive
 * (1 thread: 107–111 in all three); an idle process still uses no CPU (3 s idle after a decode: 0.00 s of CPU).
 *
 * With it GOMP_SPINCOUNT=1000 (unless set): libgomp spins `active`'s count only while its threads outnumber the cores
 * ("throttled": 1,000 spins, the arrangement measured above), and otherwise about five minutes before sleeping. An
 * engine whose evaluations run on the JS thread (direct-evaluation.ts) has one OpenMP master until a libuv worker
 * decodes too, so which of the two it got would depend on what ran before — and an idle engine would hold a core.
 * 1,000 makes both the same: the spinning of the arrangement measured above, whatever ran before, and no CPU when
 * idle (test/integration/direct-evaluation-gguf.test.ts). libgomp's own default, 300,000 with one master, is
 * llama-server's arrangement: a few percent faster on a quiet machine and fragile when two OpenMP processes share
 * the cores (docs/performance.md, "OpenMP builds and the second thread"). In SpecLab's own CPU build the count
 * decides only how a team waits between graphs: between the ops of a graph its threads wait at ggml's own barrier,
 * which yields instead of sleeping (ggml-barrier-patch.ts).
 */
function preferSpinningOpenMpThreads(): void {
  // One libuv worker (UV_THREADPOOL_SIZE=1, libuv-workers.ts) means one OpenMP master: libgomp's default spinning
  // is llama-server's there, and `active` would spin without end — an idle engine holding a core (measured:
  // llama-server beside it fell from 124 to 35 tok/s).
  if (singleLibuvWorker() || process.env.OMP_WAIT_POLICY !== undefined) return
  process.env.OMP_WAIT_POLICY = 'active'
  process.env.GOMP_SPINCOUNT ??= '1000'
}

/**
 * Which llama.cpp binary node-llama-cpp loaded, and whether its CPU backend runs its threads on OpenMP. This decides
 * what a second thread is worth (measured on 2 cores, inflated target; docs/performance.md): node-llama-cpp's prebuilt binaries
 * are built with GGML_OPENMP=OFF and it attaches no ggml threadpool, so every graph spins up threads of its own — one
 * token costs 8.2 ms on 1 thread and 10–16 ms on 2; a source build (`npm run build:native`) links OpenMP, as
 * llama-server does, and one token then costs 6.5–6.7 ms on 2. Linux tells through /proc/self/maps; elsewhere null.
 */
export function nativeBackend(): Promise<NativeBackend> {
  // Asked at every load (the thread rule, the calibration cache key, the Models screen): the binary of a process
  // does not change, so it is told once.
  nativeBackendOnce ??= detectNativeBackend()
  return nativeBackendOnce
}
let nativeBackendOnce: Promise<NativeBackend> | undefined
let nativeBackendKnown: NativeBackend | null = null

/** The binary of this process's runtime if it has been created, else null (never creates it; for run records). */
export function knownNativeBackend(): NativeBackend | null {
  return nativeBackendKnown
}

async function detectNativeBackend(): Promise<NativeBackend> {
  const llama = await sharedLlama()
  let openmp: boolean | null = null
  try {
    openmp = /lib(g|i)?omp/.test(fs.readFileSync('/proc/self/maps', 'utf8'))
  } catch {
    // Not Linux.
  }
  nativeBackendKnown = {
    build: llama.buildType,
    openmp,
    release: llama.llamaCppRelease.release,
    gpu: llama.gpu === false ? 'cpu' : llama.gpu,
    libuvWorkers: libuvWorkers(),
    directEvaluation: directEvaluationEnabled(),
    jsThreadEvaluation: jsThreadEvaluationOf(llama),
    topLogitsRead: topLogitsReadOf(llama),
    smallBatchMatmul: smallBatchMatmulActive(llama.buildType, llama.gpu)
  }
  return nativeBackendKnown
}

export interface NativeBackend {
  /** node-llama-cpp's 'prebuilt' binary or a 'localBuild' (npm run build:native). */
  build: string
  /** Whether its CPU backend runs threads on OpenMP; null where this cannot be told. */
  openmp: boolean | null
  /** The llama.cpp release it was built from. */
  release: string
  /** 'cpu', or the GPU backend it loaded (cuda, vulkan, metal). */
  gpu: string
  /** libuv's workers in this process, on which node-llama-cpp evaluates (libuv-workers.ts). */
  libuvWorkers?: number
  /** Whether sessions alone on a context evaluate through the addon (direct-evaluation.ts) or all through controlledEvaluate. */
  directEvaluation?: boolean
  /** Whether an evaluation alone in the process runs on the JS thread (SpecLab's addon patch; direct-evaluation.ts). */
  jsThreadEvaluation?: boolean
  /**
   * Whether the direct path reads a position's top-k with SpecLab's one-pass read instead of node-llama-cpp's sampler
   * chain (addon patch; direct-evaluation.ts). The same k logits; it changes speed, and the order of exactly equal logits.
   */
  topLogitsRead?: boolean
  /**
   * Whether batches of up to 16 positions against large f16 weights run on ggml's own kernel instead of tinyBLAS
   * (SpecLab's CPU build; ggml-small-batch-patch.ts). It changes verification's speed, and the order of a batch's sums.
   */
  smallBatchMatmul?: boolean
}

/**
 * Missing files, non-GGUF files and crafted or corrupt headers get one clear error naming the file (and the field),
 * before node-llama-cpp or llama.cpp see them (gguf-validate.ts). Returns the file size.
 */
export async function assertGgufFile(file: string): Promise<number> {
  return (await validateGgufFile(file)).sizeBytes
}

export async function loadLlamaModel(file: string, options: LlamaLoadOptions = {}): Promise<LlamaCppModel> {
  const modelPath = path.resolve(file)
  const sizeBytes = await assertGgufFile(modelPath)
  const llama = await sharedLlama()
  // From here until the context exists llama.cpp works on this file: a native abort now is this file's doing.
  modelLoadStarted(modelPath)
  options.onLoadStarted?.()
  let loaded: LlamaCppModel | null = null
  try {
    let model: LlamaModel
    try {
      model = await llama.loadModel({ modelPath, gpuLayers: options.gpuLayers ?? 'auto', onLoadProgress: options.onLoadProgress })
    } catch (error) {
      throw new UserInputError(`${modelPath}: not a valid GGUF model (${(error as Error).message})`)
    }
    const context = await model.createContext({
      contextSize: Math.min(options.contextSize ?? 2048, model.trainContextSize),
      sequences: options.sequences ?? 4,
      threads: options.threads ?? defaultThreads()
    })
    const threads = context.idealThreads
    loaded = new LlamaCppModel(model, context, modelPath, sizeBytes, options.fullVocabulary ?? false, { threads, batchThreads: options.batchThreads ?? threads })
    return loaded
  } finally {
    modelLoadEnded(loaded !== null)
  }
}

/**
 * The SentencePiece pieces of a vocabulary without `<0xNN>` byte fallback (tinystories-656k); null for any other
 * tokenizer. llama.cpp's SentencePiece tokenizer falls back to byte tokens for a character it has no piece for, and
 * aborts the process when the vocabulary has none.
 */
export function spmPiecesWithoutByteFallback(
  vocabulary: readonly string[],
  tokenizerModel: string | null | undefined,
  vocabularyType: string | null | undefined
): Set<string> | null {
  const spm = tokenizerModel === 'llama' || vocabularyType === 'spm'
  const byteFallback = vocabulary.includes('<0x00>') && vocabulary.includes('<0xFF>')
  return spm && !byteFallback ? new Set(vocabulary) : null
}

/**
 * Throws UnencodableTextError naming the characters of `text` that such a vocabulary (`pieces`, null = any text is
 * fine) cannot encode: a character that is a piece of its own is always safe, so those are required (conservative:
 * a character that only occurs inside longer pieces is refused too).
 */
export function assertEncodableBy(pieces: ReadonlySet<string> | null, text: string, what: string): void {
  if (!pieces) return
  const missing = new Set<string>()
  for (const char of text) if (!pieces.has(char === ' ' ? '\u2581' : char)) missing.add(char)
  if (missing.size > 0)
    throw new UnencodableTextError(
      `${what}: its tokenizer has no token for ${[...missing].map((c) => JSON.stringify(c)).join(', ')} and no byte ` +
        'fallback (llama.cpp would abort on this text): remove those characters or use another model'
    )
}

/**
 * Evaluations in flight in this process, over every model: one alone may run on the JS thread (direct-evaluation.ts),
 * two or more may overlap (PEARL's draft beside the target's verification) and so go to libuv's workers.
 */
let evaluationsInProcess = 0

export class LlamaCppModel implements LanguageModel {
  readonly info: ModelInfo
  /** dispose() was called (it reports the model gone once). */
  private released = false
  private readonly vocabulary: readonly string[]
  /** tokenizer.ggml.token_type per id (llama_token_type), empty when the file has none. */
  private readonly tokenTypes: ArrayLike<number>
  /** What an id beyond this vocabulary is evaluated as (see the file comment). */
  private readonly standIn: number
  /** Sessions evaluate through the addon where they can (direct-evaluation.ts); null: node-llama-cpp lacks its internals. */
  readonly direct: DirectEvaluation | null

  constructor(
    readonly model: LlamaModel,
    readonly context: LlamaContext,
    modelPath: string,
    sizeBytes: number,
    readonly fullVocabulary: boolean,
    /** Threads per phase (the file comment); `threads` = the context's creation count. */
    readonly phaseThreads: { threads: number; batchThreads: number } = { threads: context.idealThreads, batchThreads: context.idealThreads }
  ) {
    const metadata = model.fileInfo.metadata
    const tokenizer = metadata.tokenizer?.ggml
    this.vocabulary = (tokenizer?.tokens as string[] | undefined) ?? []
    this.tokenTypes = (tokenizer?.token_type as ArrayLike<number> | undefined) ?? []
    const standIn = tokenizer?.unknown_token_id ?? tokenizer?.padding_token_id ?? model.tokens.eos ?? 0
    this.standIn = standIn >= 0 && standIn < this.vocabulary.length ? standIn : 0
    this.direct = DirectEvaluation.of(context, model)
    this.info = {
      path: modelPath,
      name: metadata.general?.name ?? path.basename(modelPath),
      architecture: String(metadata.general?.architecture ?? 'unknown'),
      vocabularySize: this.vocabulary.length,
      bos: model.tokens.bos,
      eos: model.tokens.eos,
      vocabularyType: model.vocabularyType,
      tokenizerModel: typeof tokenizer?.model === 'string' ? tokenizer.model : null,
      addBos: model.tokens.shouldPrependBosToken,
      addEos: model.tokens.shouldAppendEosToken,
      parameters: (metadata.general as { parameter_count?: number } | undefined)?.parameter_count ?? null,
      quantization: fileTypeName(metadata.general?.file_type),
      sizeBytes
    }
  }

  tokenize(text: string): number[] {
    this.assertEncodable(text)
    return this.model.tokenize(text) as number[]
  }

  /** Throws UnencodableTextError for text this tokenizer would abort llama.cpp on (callers that tokenize LlamaText). */
  assertEncodable(text: string): void {
    this.spmPiecesWithoutBytes ??= spmPiecesWithoutByteFallback(this.vocabulary, this.info.tokenizerModel, this.info.vocabularyType)
    assertEncodableBy(this.spmPiecesWithoutBytes, text, this.info.path)
  }

  /** The SentencePiece pieces of this vocabulary, when it has no `<0xNN>` byte fallback; null otherwise. */
  private spmPiecesWithoutBytes: Set<string> | null | undefined

  detokenize(tokens: readonly number[]): string {
    return this.model.detokenize(tokens as Token[])
  }

  tokenText(token: number): string {
    return this.vocabulary[token] ?? ''
  }

  tokenKind(token: number): TokenKind {
    return tokenKindOf(this.tokenTypes[token], token, this.info)
  }

  isEndOfGeneration(token: number): boolean {
    return this.model.isEogToken(token as Token)
  }

  async createSession(warpConfig: WarpConfig, options: SessionOptions = {}): Promise<ModelSession> {
    const fullEntropy = options.fullEntropy ?? false
    const generateNext: GenerateNext = fullEntropy ? { logits: true } : this.generateNextFor(warpConfig)
    const sequence = this.context.getSequence()
    const samplers = this.direct?.samplersFor(sequence, logitsRequestOf(generateNext)) ?? null
    const direct = this.direct && samplers ? { evaluation: this.direct, samplers } : null
    return new LlamaCppSession(sequence, warpConfig, generateNext, this.info.path, fullEntropy, (token) => this.evaluable(token), this.phases, direct)
  }

  /** Runs `evaluate` (an evaluation of `tokens` tokens on this context) with its phase's threads (raw timings). */
  async inPhase<T>(tokens: number, evaluate: () => Promise<T>): Promise<T> {
    this.phases.starting(tokens)
    try {
      return await evaluate()
    } finally {
      this.phases.finished()
    }
  }

  /**
   * Evaluations that node-llama-cpp drives itself (its token predictors, nlc-draft / nlc-lookup) run with one fixed
   * count, as node-llama-cpp would configure them: `threads`, whatever phase ran last.
   */
  useSingleTokenThreads(): void {
    this.setPhaseThreads(this.phaseThreads.threads)
  }

  /** Evaluations in flight on this context: two or more are decoded together, a batch. */
  private inFlight = 0

  /** What a session tells its model around each evaluation, so the context runs it with the phase's threads. */
  private readonly phases: EvaluationPhases = {
    starting: (tokens) => {
      this.inFlight++
      evaluationsInProcess++
      const batched = tokens > 1 || this.inFlight > 1
      const threads = batched ? this.phaseThreads.batchThreads : this.phaseThreads.threads
      this.setPhaseThreads(threads)
      return threads
    },
    alone: () => this.inFlight === 1,
    aloneInProcess: () => evaluationsInProcess === 1,
    finished: () => {
      this.inFlight--
      evaluationsInProcess--
    }
  }

  /**
   * The thread count of the context's next decode. node-llama-cpp 3.22.1 re-applies `_idealThreads` (through its
   * threads-splitter consumer's `_wantedThreads`, which `getAllocationToConsume` returns at once when the runtime's
   * maxThreads is 0) before every decode.
   */
  private setPhaseThreads(threads: number): void {
    const context = this.context as unknown as { _idealThreads: number; _threadSplitterConsumer?: { _wantedThreads: number } }
    context._idealThreads = threads
    if (context._threadSplitterConsumer) context._threadSplitterConsumer._wantedThreads = threads
  }

  /** `token` when this vocabulary has it, else the stand-in (an id of a larger, padded vocabulary of the trio). */
  evaluable(token: number): number {
    return Number.isInteger(token) && token >= 0 && token < this.info.vocabularySize ? token : this.standIn
  }

  sessionsLeft(): number {
    return this.context.sequencesLeft
  }

  async logProbabilities(tokens: readonly number[]): Promise<number[]> {
    const sequence = this.context.getSequence()
    try {
      // Per position: the next token's raw logit, the max logit and Σ exp(logit − max), so
      // log p(x) = logit_x − max − log Σ — exact over the whole vocabulary without transferring it. An id this
      // vocabulary lacks is evaluated as the stand-in and has log p = −∞.
      const known = (token: number) => this.evaluable(token) === token
      const input: ControlledEvaluateInputItem[] = tokens.map((token, i) =>
        i + 1 < tokens.length
          ? [
              this.evaluable(token) as Token,
              {
                generateNext: {
                  logits: { filter: { tokens: [this.evaluable(tokens[i + 1]) as Token], includeMax: true } },
                  totalLogitWeight: true
                }
              }
            ]
          : (this.evaluable(token) as Token)
      )
      const output = await this.inPhase(tokens.length, () => sequence.controlledEvaluate(input))
      return tokens.slice(1).map((next, i) => {
        const { logits, totalLogitWeight } = output[i]?.next ?? {}
        if (!logits || totalLogitWeight === undefined) throw new Error(`node-llama-cpp returned no logits at position ${i}`)
        const maxLogit = Math.max(...logits.values())
        const logit = known(next) ? logits.get(next as Token) ?? -Infinity : -Infinity
        const logProbability = logit - maxLogit - Math.log(totalLogitWeight)
        if (Number.isNaN(logProbability)) throw unusableLogits(this.info.path, i, 'NaN logits')
        return logProbability
      })
    } finally {
      sequence.dispose()
    }
  }

  /**
   * What to transfer per position: the top-k logits suffice for top-k warping; otherwise all of them.
   *
   * node-llama-cpp answers a logits request through its sampler chain and then std::sorts the whole vocabulary
   * unless the chain left it sorted; with no sampling options its chain is greedy, which leaves it unsorted. So a
   * top-k request also asks for llama.cpp's top-k sampler (then temperature 1 and a seeded `dist`, whose token is
   * ignored): llama.cpp selects the k best in O(n) and hands back exactly those k raw logits, sorted — the same k
   * entries the full sort gave (ties at the k-th place aside, as before; test/integration/logits-topk-gguf.test.ts).
   * Measured (npm run bench:vocab, target5M padded to 131,072 entries): one target token + top-64 15.6 → 6.9 ms
   * (llama.cpp's own evaluation 6.4–7.2), a 260K draft token 10.7 → 2.3 ms, a 6-position verification 71 → 16 ms.
   */
  private generateNextFor(warpConfig: WarpConfig): GenerateNext {
    if (this.fullVocabulary || warpConfig.topK <= 0) return { logits: true }
    const topK = warpConfig.topK
    return { logits: { filter: { tokens: [], includeTop: topK } }, options: { topK, temperature: 1, topP: 1, minP: 0, seed: 0 } }
  }

  async dispose(): Promise<void> {
    if (!this.released) modelDisposed()
    this.released = true
    await this.context.dispose()
    await this.model.dispose()
  }
}

type GenerateNext = {
  logits: true | { filter: { tokens: Token[]; includeTop: number } }
  options?: { topK: number; temperature: number; topP: number; minP: number; seed: number }
}
/** A session's evaluation starts (with this many tokens) / finishes: the model picks the phase's threads. */
interface EvaluationPhases {
  /** Returns the threads the evaluation runs with. */
  starting(tokens: number): number
  /** Whether the evaluation that asks is the only one in flight on the context. */
  alone(): boolean
  /** Whether it is the only one in flight in this process, of any model (nothing it could overlap with). */
  aloneInProcess(): boolean
  finished(): void
}

/** The direct path's request for what `generateNext` asks node-llama-cpp for (the same logits, the same sampler). */
function logitsRequestOf(generateNext: GenerateNext): LogitsRequest {
  if (generateNext.logits === true) return { all: true }
  return { includeTop: generateNext.logits.filter.includeTop, options: generateNext.options ?? {} }
}
type InternalSequenceCopy = (other: LlamaContextSequence, upToTokenIndex: number) => Promise<boolean>

class LlamaCppSession implements ModelSession {
  private readonly mirror: number[] = []

  constructor(
    readonly sequence: LlamaContextSequence,
    private readonly warpConfig: WarpConfig,
    private readonly generateNext: GenerateNext,
    private readonly modelPath: string,
    private readonly fullEntropy: boolean,
    /** The id llama.cpp evaluates for a token (a stand-in for ids beyond this model's vocabulary). */
    private readonly evaluable: (token: number) => number,
    private readonly phases: EvaluationPhases,
    /** The addon path (direct-evaluation.ts) and this session's samplers for it; null: node-llama-cpp's path only. */
    private readonly direct: { evaluation: DirectEvaluation; samplers: SessionSamplers } | null = null
  ) {}

  get tokens(): readonly number[] {
    return this.mirror
  }

  /** node-llama-cpp keeps the id internal (`_sequenceId`); undefined if that ever changes. */
  get sequenceId(): number | undefined {
    const id = (this.sequence as unknown as { _sequenceId?: unknown })._sequenceId
    return typeof id === 'number' ? id : undefined
  }

  async append(tokens: readonly number[], distributionsFrom: number): Promise<Distribution[]> {
    const threads = this.phases.starting(tokens.length)
    let logits: (PositionLogits | null)[]
    try {
      logits = await this.evaluate(tokens, distributionsFrom, threads)
    } finally {
      this.phases.finished()
    }
    this.mirror.push(...tokens)
    const distributions: Distribution[] = []
    for (let i = distributionsFrom; i < tokens.length; i++) {
      const position = logits[i - distributionsFrom]
      if (!position) throw new Error(`node-llama-cpp returned no logits at position ${i}`)
      const { ids, values } = position
      if (!this.fullEntropy) {
        distributions.push(this.warpChecked(ids, values, i))
        continue
      }
      // Every logit is here: the entropy over all of them, and the warp from the top-k only when it is a prefix.
      if (values.some(Number.isNaN)) throw unusableLogits(this.modelPath, i, 'NaN logits')
      const k = this.warpConfig.topK
      const prefix = k > 0 && k < values.length && sortedDescending(values) ? k : values.length
      const distribution = this.warpChecked(ids.subarray(0, prefix), values.subarray(0, prefix), i)
      distribution.fullEntropy = softmaxEntropy(values)
      distributions.push(distribution)
    }
    return distributions
  }

  /**
   * The logits of positions `from`… after evaluating `tokens`: through the addon when this evaluation is alone on
   * the context (direct-evaluation.ts), else through `controlledEvaluate`, which decodes concurrent evaluations as one
   * batch. Evaluations issued together (Promise.all) have all started before the check, one microtask later.
   */
  private async evaluate(tokens: readonly number[], from: number, threads: number): Promise<(PositionLogits | null)[]> {
    const evaluable = tokens.map((token) => this.evaluable(token))
    if (this.direct) {
      await null
      if (this.phases.alone() && this.direct.evaluation.usable(this.sequence, tokens.length)) {
        return this.direct.evaluation.evaluate(this.sequence, evaluable, from, this.direct.samplers, threads, this.phases.aloneInProcess())
      }
    }
    const input: ControlledEvaluateInputItem[] = evaluable.map((token, i) => (i >= from ? [token as Token, { generateNext: this.generateNext }] : (token as Token)))
    const output = await this.sequence.controlledEvaluate(input)
    return input.slice(from).map((_, i) => {
      const logits = output[from + i]?.next.logits
      return logits ? { ids: Int32Array.from(logits.keys()), values: Float64Array.from(logits.values()) } : null
    })
  }

  /** NaN logits (corrupt weights) or no mass after warping end the decode with an error naming the model file. */
  private warpChecked(ids: Int32Array, values: Float64Array, position: number): Distribution {
    if (values.some(Number.isNaN)) throw unusableLogits(this.modelPath, position, 'NaN logits')
    try {
      return warp(ids, values, this.warpConfig)
    } catch (error) {
      throw unusableLogits(this.modelPath, position, (error as Error).message)
    }
  }

  async truncate(length: number): Promise<void> {
    if (length >= this.mirror.length) return
    await this.sequence.eraseContextTokenRanges([{ start: length, end: this.sequence.nextTokenIndex }])
    this.mirror.length = length
  }

  /**
   * KV copy between two sequences of one context: node-llama-cpp 3.22.1's internal
   * `LlamaContextSequence._copyStateFromOtherSequence` (what its LlamaDecisionContext uses) → llama_memory_seq_cp.
   * The addon creates contexts with kv_unified = false, so every sequence has its own KV stream and llama.cpp copies
   * the WHOLE stream buffer (context size × layers, not just `length` cells) at the next decode, then the tail is
   * erased. Not part of the typed API: feature-detected, and false (→ the caller re-evaluates) when absent.
   */
  async copyFrom(source: ModelSession, length: number): Promise<boolean> {
    if (!(source instanceof LlamaCppSession) || source === this || source.sequence.context !== this.sequence.context) return false
    const copy = (this.sequence as unknown as { _copyStateFromOtherSequence?: InternalSequenceCopy })._copyStateFromOtherSequence
    const upTo = Math.min(length, source.mirror.length)
    if (typeof copy !== 'function' || upTo <= 0) return false
    let copied = false
    try {
      copied = await copy.call(this.sequence, source.sequence, upTo)
    } finally {
      // Whatever happened, mirror what the sequence now holds.
      this.mirror.length = 0
      this.mirror.push(...(copied ? source.mirror.slice(0, upTo) : this.sequence.contextTokens))
    }
    return copied
  }

  async dispose(): Promise<void> {
    this.direct?.samplers.dispose()
    this.sequence.dispose()
  }
}

/** llama_token_type → TokenKind; a file without types: BOS / EOS are control, the rest normal. */
function tokenKindOf(type: number | undefined, token: number, info: ModelInfo): TokenKind {
  switch (type) {
    case 2:
      return 'unknown'
    case 3:
      return 'control'
    case 4:
      return 'user-defined'
    case 5:
      return 'unused'
    case 6:
      return 'byte'
    case 1:
      return 'normal'
    default:
      return token === info.bos || token === info.eos ? 'control' : 'normal'
  }
}

function sortedDescending(values: Float64Array): boolean {
  for (let i = 1; i < values.length; i++) if (values[i] > values[i - 1]) return false
  return true
}

function unusableLogits(modelPath: string, position: number, what: string): UserInputError {
  return new UserInputError(
    `${modelPath}: the model produced unusable logits at position ${position} (${what}); its tensor data may be corrupt`
  )
}

function fileTypeName(fileType: unknown): string | null {
  if (typeof fileType !== 'number') return null
  const name = (GgufFileType as unknown as Record<number, string>)[fileType]
  return name ? name.replace(/^MOSTLY_/, '') : String(fileType)
}
