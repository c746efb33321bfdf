/**
 * A pure-TS language model with explicit conditional distributions, for exact statistical tests: the output
 * distribution of a decoder can be compared with the target's warped distribution computed in closed form.
 * Logits go through the same `warp` as node-llama-cpp's, so tests exercise the production warping.
 */
import { softmaxEntropy, type Distribution } from '../sampling/distribution'
import { warp, type WarpConfig } from '../sampling/warp'
import type { LanguageModel, ModelInfo, ModelSession, SessionOptions, TokenKind } from './types'

/**
 * Next-token logits for a context (BOS included), one per vocabulary entry. Ids of another model of the trio that
 * this vocabulary lacks (padded vocabularies) reach it as the stand-in token, as llama-cpp-model.ts evaluates them.
 */
export type ToyLogits = (context: readonly number[]) => ArrayLike<number>

export interface ToyModelOptions {
  name: string
  vocabulary: readonly string[]
  logits: ToyLogits
  bos?: number
  eos?: number | null
  /** What an id beyond the vocabulary is evaluated as (default 0), like llama-cpp-model.ts's stand-in. */
  standIn?: number
  /**
   * A tokenizer of its own (test/helpers/toy-tokenizers.ts: SentencePiece- and byte-level-style toys for the
   * cross-vocabulary methods): GGUF's tokenizer.ggml.model it imitates, the kind of each entry, and text → ids.
   * Absent: 'toy', every entry normal except BOS / EOS, one token per character.
   */
  tokenizerModel?: string
  tokenKinds?: readonly TokenKind[]
  tokenize?: (text: string) => number[]
}

export class ToyModel implements LanguageModel {
  readonly info: ModelInfo
  /** Forward calls made on this model (each `append` counts once, like one batched decode). */
  calls = 0
  private readonly sessions = new WeakSet<ModelSession>()

  constructor(private readonly options: ToyModelOptions) {
    this.info = {
      path: options.name,
      name: options.name,
      architecture: 'toy',
      vocabularySize: options.vocabulary.length,
      bos: options.bos ?? 0,
      eos: options.eos ?? null,
      vocabularyType: 'toy',
      tokenizerModel: options.tokenizerModel ?? 'toy',
      addBos: true,
      addEos: false,
      parameters: null,
      quantization: null,
      sizeBytes: null
    }
  }

  tokenize(text: string): number[] {
    if (this.options.tokenize) return this.options.tokenize(text)
    return [...text].map((ch) => {
      const id = this.options.vocabulary.indexOf(ch)
      if (id < 0) throw new Error(`toy vocabulary has no token for ${JSON.stringify(ch)}`)
      return id
    })
  }

  detokenize(tokens: readonly number[]): string {
    return tokens.map((t) => this.tokenText(t)).join('')
  }

  tokenText(token: number): string {
    return this.options.vocabulary[token] ?? ''
  }

  tokenKind(token: number): TokenKind {
    return this.options.tokenKinds?.[token] ?? (token === this.info.bos || token === this.info.eos ? 'control' : 'normal')
  }

  isEndOfGeneration(token: number): boolean {
    return token === this.info.eos
  }

  /** The warped distribution after `context` — the reference the statistical tests compare against. */
  distribution(context: readonly number[], warpConfig: WarpConfig): Distribution {
    const logits = this.logitsAfter(context)
    return warp(
      Int32Array.from({ length: logits.length }, (_, i) => i),
      logits,
      warpConfig
    )
  }

  /** H of the softmax of the raw logits after `context` over the whole vocabulary (temperature 1): `fullEntropy`. */
  fullEntropy(context: readonly number[]): number {
    return softmaxEntropy(this.logitsAfter(context))
  }

  /** The raw logits after `context`, ids beyond the vocabulary evaluated as the stand-in. */
  private logitsAfter(context: readonly number[]): ArrayLike<number> {
    const size = this.options.vocabulary.length
    const standIn = this.options.standIn ?? 0
    return this.options.logits(context.every((t) => t < size) ? context : context.map((t) => (t >= 0 && t < size ? t : standIn)))
  }

  async logProbabilities(tokens: readonly number[]): Promise<number[]> {
    return tokens.slice(1).map((next, i) => {
      const logits = Array.from(this.logitsAfter(tokens.slice(0, i + 1)))
      const maxLogit = Math.max(...logits)
      const logTotal = Math.log(logits.reduce((sum, l) => sum + Math.exp(l - maxLogit), 0))
      return (logits[next] ?? -Infinity) - maxLogit - logTotal
    })
  }

  async createSession(warpConfig: WarpConfig, options: SessionOptions = {}): Promise<ModelSession> {
    const tokens: number[] = []
    const session: ModelSession = {
      tokens,
      append: async (appended, distributionsFrom) => {
        this.calls += 1
        const out: Distribution[] = []
        appended.forEach((token, i) => {
          tokens.push(token)
          if (i < distributionsFrom) return
          const distribution = this.distribution(tokens, warpConfig)
          if (options.fullEntropy) distribution.fullEntropy = this.fullEntropy(tokens)
          out.push(distribution)
        })
        return out
      },
      truncate: async (length) => {
        tokens.length = Math.min(tokens.length, length)
      },
      // A "KV copy" is free here; only sessions of this model can be copied (like sequences of one context).
      copyFrom: async (source, length) => {
        if (!this.sessions.has(source)) return false
        const copied = source.tokens.slice(0, Math.min(length, source.tokens.length))
        tokens.length = 0
        tokens.push(...copied)
        return true
      },
      dispose: async () => {}
    }
    this.sessions.add(session)
    return session
  }

  async dispose(): Promise<void> {}
}
