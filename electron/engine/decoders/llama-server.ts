/**
 * The `llama-server:*` peer methods: llama.cpp's own server decodes each prompt, so its autoregressive and
 * speculative decoding (common/speculative.cpp: the draft model, the n-gram types, the n-gram cache) run on the same
 * prompts, models and llama.cpp commit as SpecLab's methods and are stored next to them.
 *
 * Per prompt: one `/completion` with the prompt's token ids (peers/llama-server-process.ts). What the server
 * reports per request becomes ONE step record whose `decision.requestTotals` is true: the tokens, its draft and
 * accepted counts (`draft_n`, `draft_n_accepted`), target calls = emitted − accepted (each target evaluation yields
 * exactly one token that was not an accepted draft), its own prompt and generation times. The server does not say
 * which tokens were drafted, so every token's provenance is `target`, and there is no acceptance per position.
 * tokens/s is SpecLab's wall clock around the request, as for every method (the server's start is not timed; its
 * own tokens/s is in the record).
 *
 * Lossless as llama.cpp is; greedy output must equal `ar`'s (same llama.cpp) — test/integration/llama-server-gguf.
 * At temperature > 0 the server samples with its own sampler and RNG (seeded from the run's PRNG), so its text is a
 * different draw from the same law.
 * Not round.ts's loop: the server decodes the whole request, and one record sums it.
 */
import type { LlamaCppModel } from '../model/llama-cpp-model'
import { localServer, remoteServer, type PeerServer } from '../peers/llama-server-process'
import { findLlamaServer } from '../peers/llama-server-binary'
import { UserInputError } from '../errors'
import { llamaModel } from './nlc-predictor'
import { OutputBuffer } from './output'
import { now } from './session-sync'
import { stepRecord, REQUEST_TOTALS } from './step-record'
import type { DecodeEvent, DecodeRequest, Decoder, DecoderModels, StopReason } from './types'

export interface LlamaServerPeerOptions {
  /** The method id: the step records' stage. */
  method: string
  /** The server's speculative arguments (`--spec-type …`; none for `llama-server:ar`). */
  speculative: readonly string[]
  /** Whether the server gets the run's draft model (`-md`). */
  usesDraft: boolean
  /** A server the user runs; '' = start one with the run's models. */
  url: string
}

/** The server a run's prompts go to, found once per run. */
function serverFor(options: LlamaServerPeerOptions, models: DecoderModels): Promise<PeerServer> {
  const target = llamaModel(models.target, options.method, 'target')
  if (options.url) return remoteServer(options.url, { path: target.info.path, tokenize: (text) => target.tokenize(text) })
  const binary = findLlamaServer()
  if (binary.path === null) throw new UserInputError(`${options.method}: ${binary.reason}`)
  const draft: LlamaCppModel | null = options.usesDraft ? llamaModel(models.draft, options.method, 'draft') : null
  return localServer({
    binary: binary.path,
    target: target.info.path,
    draft: draft?.info.path ?? null,
    // The counts the models evaluate with now (the run's thread plan; a peer-bench arm sets its own), so SpecLab's
    // decoders and llama-server run on the same threads.
    threads: target.phaseThreads.threads,
    batchThreads: target.phaseThreads.batchThreads,
    draftThreads: draft?.phaseThreads.threads ?? target.phaseThreads.threads,
    contextSize: target.context.contextSize,
    speculative: options.speculative
  })
}

const STOP_TYPES: Record<string, StopReason> = { eos: 'eos', limit: 'max-tokens' }

/** A run of a peer method: the prompts share one server (`newRun` of the catalog). */
export function llamaServerRun(options: LlamaServerPeerOptions): () => Decoder {
  let server: Promise<PeerServer> | null = null
  return () =>
    async function* llamaServer(models: DecoderModels, request: DecodeRequest): AsyncGenerator<DecodeEvent> {
      server ??= serverFor(options, models)
      server.catch(() => (server = null))
      const peer = await server
      const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
      const started = now()
      let completion
      try {
        completion = await peer.complete(
          {
            prompt: request.promptTokens,
            nPredict: request.maxTokens,
            temperature: request.warp.temperature,
            topK: request.warp.topK,
            topP: request.warp.topP,
            seed: Math.floor(request.rng.next() * 0xffffffff)
          },
          request.signal
        )
      } catch (error) {
        if (request.signal?.aborted) {
          yield { type: 'done', stopReason: 'cancelled' }
          return
        }
        throw error
      }
      const totalMs = now() - started
      const events = output.commit(
        completion.tokens.map((token) => ({ token, provenance: 'target' as const })),
        0
      )
      const { timings } = completion
      const accepted = timings.draftAccepted ?? 0
      yield* events
      yield {
        type: 'step',
        record: stepRecord({
          index: 0,
          stage: options.method,
          proposed: timings.draftN ?? 0,
          accepted,
          emitted: events.length,
          draftTokens: timings.draftN ?? 0,
          acceptedDraftTokens: accepted,
          targetCalls: Math.max(0, events.length - accepted),
          verifyMs: timings.promptMs + timings.predictedMs,
          totalMs,
          decision: {
            [REQUEST_TOTALS]: true,
            server: options.url ? 'url' : 'local',
            serverTokensPerSecond: timings.predictedPerSecond,
            serverPromptMs: timings.promptMs,
            serverPredictedMs: timings.predictedMs,
            stopType: completion.stopType
          }
        })
      }
      yield { type: 'done', stopReason: output.stopReason ?? STOP_TYPES[completion.stopType] ?? 'max-tokens' }
    }
}
