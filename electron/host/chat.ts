/**
 * Chat: one generation at a time on the loaded trio with any available method. Tokens stream to the UI with their
 * provenance (which model's token survived verification) and live statistics; conversations and every assistant
 * message (text in provenance runs, settings incl. the seed, final statistics) are stored in SQLite.
 */
import { randomUUID } from 'node:crypto'
import type { ChatMessage, TokenPiece } from '../api/chat'
import type { ApiRequest } from '../api/contract'
import type { HostEvent } from '../api/events'
import type { ApiHandlers } from '../api/runs-service'
import type { DecodeEvent, StopReason } from '../engine/decoders/types'
import { UserInputError } from '../engine/errors'
import { decodeOnce } from '../engine/methods/decode-once'
import { assertVocabularyFits, prepare, type PreparedMethod } from '../engine/methods/prepare'
import type { AppStore } from '../store/app-store'
import { resolveDecode, warpOfSettings } from '../experiments/run-request'
import { measureBaseline } from './chat-baseline'
import { exportConversation } from './chat-export'
import { buildPrompt, type Turn } from './chat-prompt'
import { IncrementalText } from './incremental-text'
import type { JobLock } from './job-lock'
import { LiveStatsFold } from './live-stats'
import type { HeldTrio, LoadedModels } from './loaded-models'

/** Tokens are sent in batches at most this often (and at the end). */
const FLUSH_MS = 40

interface Generation {
  id: string
  conversationId: number
  abort: AbortController
}

/** Checks the method exists, its models are loaded and its parameters are valid (the catalog's one prepare). */
export function chatMethod(held: HeldTrio | null, method: string, gamma: number, params: Record<string, number | string | boolean>): PreparedMethod {
  if (!held) throw new UserInputError('no model is loaded: load a trio on the Models screen first')
  try {
    const prepared = prepare(method, { gamma, params }, { draft: held.models.draft !== undefined, mid: held.models.mid !== undefined })
    // A trio of different vocabularies (loaded with a warning) runs only sd-tli / sd-uad.
    assertVocabularyFits([prepared.definition], held.vocabularyMismatch)
    return prepared
  } catch (error) {
    if (error instanceof UserInputError && / needs a (draft|mid) model$/.test(error.message))
      throw new UserInputError(`${error.message}: load a trio with one on the Models screen`)
    throw error
  }
}

/** Merges consecutive pieces of one provenance. */
function appendPiece(segments: TokenPiece[], piece: TokenPiece): void {
  const last = segments.at(-1)
  if (last && last.provenance === piece.provenance) last.text += piece.text
  else if (piece.text !== '') segments.push({ ...piece })
}

/** Cuts the text (and its segments) at the first stop string; null when none occurs. */
export function cutAtStopString(segments: TokenPiece[], stopStrings: readonly string[]): TokenPiece[] | null {
  const text = segments.map((s) => s.text).join('')
  const cut = Math.min(...stopStrings.map((s) => text.indexOf(s)).filter((i) => i >= 0))
  if (!Number.isFinite(cut)) return null
  const kept: TokenPiece[] = []
  let length = 0
  for (const segment of segments) {
    if (length >= cut) break
    const piece = segment.text.slice(0, cut - length)
    length += piece.length
    if (piece !== '') kept.push({ text: piece, provenance: segment.provenance })
  }
  return kept
}

/**
 * The messages a new turn follows, from the conversation as shown (each reply's chosen alternative): all of them;
 * with replaceFrom (edit) those before that user message; with regenerate those up to the user message asked again,
 * ending with it (its reply is left out, kept as an alternative).
 */
export function precedingMessages(
  messages: readonly ChatMessage[],
  { conversationId, replaceFrom, regenerate, text }: Pick<ApiRequest<'chat:send'>, 'conversationId' | 'replaceFrom' | 'regenerate' | 'text'>
): ChatMessage[] {
  if (conversationId === null && (replaceFrom !== undefined || regenerate !== undefined))
    throw new UserInputError('only a message of a saved conversation can be edited or regenerated')
  if (regenerate !== undefined) {
    const at = messages.findIndex((m) => m.id === regenerate)
    const asked = messages[at]
    // Only the last user message: a later turn was answered with this reply in its context.
    if (!asked || asked.role !== 'user' || messages.slice(at + 1).some((m) => m.role === 'user'))
      throw new UserInputError(`message ${regenerate} is not the last of your messages in this conversation: only the last reply regenerates`)
    if (asked.text !== text) throw new UserInputError('regenerate asks the same message again: to change it, edit the message')
    return messages.slice(0, at + 1)
  }
  if (replaceFrom === undefined) return [...messages]
  const at = messages.findIndex((m) => m.id === replaceFrom)
  if (at < 0 || messages[at]!.role !== 'user')
    throw new UserInputError(`message ${replaceFrom} is not one of your messages in this conversation (it may have been replaced already)`)
  return messages.slice(0, at)
}

export class ChatService {
  private generation: Generation | null = null

  constructor(
    private readonly store: () => AppStore,
    private readonly models: LoadedModels,
    private readonly lock: JobLock,
    private readonly emit: (event: HostEvent) => void
  ) {}

  handlers(): ApiHandlers<
    | 'chat:conversations'
    | 'chat:conversation'
    | 'chat:delete-conversation'
    | 'chat:rename-conversation'
    | 'chat:export'
    | 'chat:select-alternative'
    | 'chat:send'
    | 'chat:stop'
    | 'chat:baseline'
  > {
    return {
      'chat:conversations': ({ query }) => this.store().listConversations(query),
      'chat:conversation': ({ conversationId }) => {
        const summary = this.store().getConversation(conversationId)
        return summary ? { summary, messages: this.store().getMessages(conversationId) } : null
      },
      'chat:delete-conversation': ({ conversationId }) => {
        if (this.generation?.conversationId === conversationId)
          throw new UserInputError('this conversation is generating; stop it before deleting')
        return { deleted: this.store().deleteConversation(conversationId) }
      },
      'chat:rename-conversation': ({ conversationId, title }) => {
        const renamed = this.store().renameConversation(conversationId, title)
        if (!renamed) throw new UserInputError(`conversation ${conversationId} does not exist any more`)
        return renamed
      },
      'chat:export': ({ conversationId, format }) => {
        const summary = this.store().getConversation(conversationId)
        if (!summary) throw new UserInputError(`conversation ${conversationId} does not exist any more`)
        return exportConversation({ summary, messages: this.store().getMessages(conversationId) }, format, (id) => this.store().getMessage(id))
      },
      'chat:select-alternative': ({ messageId }) => this.selectAlternative(messageId),
      'chat:send': (request) => this.send(request),
      'chat:stop': ({ generationId }) => {
        if (this.generation?.id !== generationId) return { stopped: false }
        this.generation.abort.abort()
        return { stopped: true }
      },
      'chat:baseline': ({ messageId }) => this.baseline(messageId)
    }
  }

  /** A reply's speedup over ar on its own prompt tokens, with the trio that generated it (chat-baseline.ts). */
  private async baseline(messageId: number): Promise<ChatMessage> {
    const reply = this.store().getMessage(messageId)
    const promptTokens = this.store().promptTokensOf(messageId)
    if (!reply || reply.role !== 'assistant' || !reply.settings) throw new UserInputError(`message ${messageId} is not a reply of the model`)
    if (!promptTokens || !reply.models) throw new UserInputError('this reply was generated before SpecLab kept prompts, so its speedup cannot be measured')
    const held = this.models.current
    const loaded = held && { target: held.entries.target.path, mid: held.entries.mid?.path ?? null, draft: held.entries.draft?.path ?? null }
    if (!held || JSON.stringify(loaded) !== JSON.stringify(reply.models))
      throw new UserInputError(`load the trio this reply was generated with to measure its speedup (target ${reply.models.target})`)
    const release = this.lock.acquire('measuring a chat reply against ar')
    try {
      const method = chatMethod(held, reply.settings.method, reply.settings.gamma, reply.settings.params)
      const trio = await this.withSequencesFor(held, method.sessions)
      const baseline = await measureBaseline(trio.models, { ...reply, settings: reply.settings }, promptTokens)
      return this.store().setBaseline(messageId, baseline)
    } finally {
      release()
    }
  }

  /**
   * Shows another of a reply's alternatives. Only the conversation's last reply switches: a later turn was answered
   * with the reply shown before it in its context.
   */
  private selectAlternative(messageId: number): ChatMessage {
    const reply = this.store().getMessage(messageId)
    if (!reply || reply.role !== 'assistant') throw new UserInputError(`message ${messageId} is not a reply of the model`)
    if (this.generation?.conversationId === reply.conversationId) throw new UserInputError('this conversation is generating; stop it before switching replies')
    const last = this.store().getMessages(reply.conversationId).at(-1)
    if (!last || !last.alternatives.includes(messageId))
      throw new UserInputError('only the last reply switches between its alternatives: later messages followed the reply shown')
    return this.store().selectAlternative(messageId)!
  }

  private send(request: ApiRequest<'chat:send'>) {
    const held = this.models.current
    const { settings } = request
    const method = chatMethod(held, settings.method, settings.gamma, settings.params)
    const earlier = this.earlierMessages(request)
    const release = this.lock.acquire(`chat generation with ${settings.method}`)
    try {
      const history: Turn[] = earlier.map((m) => ({ role: m.role, text: m.text }))
      if (request.regenerate === undefined) history.push({ role: 'user', text: request.text })
      const prompt = buildPrompt(held!.models.target, history, request.systemPrompt, request.format, held!.contextSize - settings.maxTokens)
      const conversationId = request.conversationId ?? this.store().createConversation(request.text)
      if (request.replaceFrom !== undefined) this.store().truncateFrom(conversationId, request.replaceFrom, request.text)
      // Regenerate asks the same user message again (its earlier replies stay, as alternatives).
      const userMessage = request.regenerate !== undefined ? earlier.at(-1)! : this.store().addUserMessage(conversationId, request.text)
      const generation: Generation = { id: randomUUID(), conversationId, abort: new AbortController() }
      this.generation = generation
      // The decode's settings with the catalog's defaults and a seed drawn when none was given (run-request.ts).
      const { seed } = resolveDecode(settings)
      void this.generate(held!, method, generation, prompt, { ...settings, params: method.params, seed }, userMessage.id, release)
      return { conversationId, generationId: generation.id, userMessage }
    } catch (error) {
      release()
      throw error
    }
  }

  /** The messages of the conversation the new one follows (precedingMessages), as stored now. */
  private earlierMessages(request: ApiRequest<'chat:send'>): ChatMessage[] {
    if (request.conversationId === null) return precedingMessages([], request)
    if (!this.store().getConversation(request.conversationId)) throw new UserInputError(`conversation ${request.conversationId} does not exist any more`)
    return precedingMessages(this.store().getMessages(request.conversationId), request)
  }

  /** The held trio, reloaded (same files and settings, with progress) when the method needs more KV sequences. */
  private async withSequencesFor(held: HeldTrio, needed: number): Promise<HeldTrio> {
    if (held.sequences >= needed) return held
    const reloaded = await this.models.load(held.entries, held.settings, (p) => this.emit({ type: 'models:load-progress', ...p }), needed)
    this.emit({ type: 'models:changed' })
    return reloaded
  }

  private async generate(
    held: HeldTrio,
    method: PreparedMethod,
    generation: Generation,
    prompt: ReturnType<typeof buildPrompt>,
    settings: ApiRequest<'chat:send'>['settings'] & { seed: number },
    replyTo: number,
    release: () => void
  ): Promise<void> {
    // held may be replaced below (more KV sequences): detokenize with whichever trio is decoding.
    const text = new IncrementalText((tokens) => held.models.target.detokenize(tokens))
    const stats = new LiveStatsFold()
    const segments: TokenPiece[] = []
    let pending: TokenPiece[] = []
    let lastFlush = 0
    const end: { reason: StopReason | 'stop-string' } = { reason: 'max-tokens' }
    const flush = () => {
      lastFlush = performance.now()
      this.emit({ type: 'chat:tokens', generationId: generation.id, conversationId: generation.conversationId, tokens: pending, stats: stats.snapshot() })
      pending = []
    }
    const onEvent = (event: DecodeEvent) => {
      if (event.type === 'token') {
        stats.token()
        const piece = { text: text.push(event.token), provenance: event.provenance }
        pending.push(piece)
        appendPiece(segments, piece)
      } else if (event.type === 'step') {
        stats.addStep(event.record)
        if (prompt.stopStrings.length > 0 && cutAtStopString(segments, prompt.stopStrings)) {
          end.reason = 'stop-string'
          generation.abort.abort()
        }
        if (performance.now() - lastFlush >= FLUSH_MS) flush()
      } else if (end.reason !== 'stop-string') end.reason = event.stopReason
    }
    let message: ChatMessage | null = null
    let error: string | null = null
    try {
      held = await this.withSequencesFor(held, method.sessions)
      await decodeOnce({
        decoder: method.newRun()(),
        models: held.models,
        promptTokens: prompt.tokens,
        maxTokens: settings.maxTokens,
        warp: warpOfSettings(settings),
        seed: settings.seed,
        stream: 0,
        signal: generation.abort.signal,
        onEvent
      })
      flush()
      const finalSegments = (end.reason === 'stop-string' ? cutAtStopString(segments, prompt.stopStrings) : null) ?? segments
      const { entries } = held
      message = this.store().addAssistantMessage(generation.conversationId, {
        text: finalSegments.map((s) => s.text).join(''),
        segments: finalSegments,
        settings,
        stats: stats.snapshot(),
        stopReason: end.reason,
        format: prompt.format,
        models: { target: entries.target.path, mid: entries.mid?.path ?? null, draft: entries.draft?.path ?? null },
        promptTokens: prompt.tokens
      }, replyTo)
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught)
    } finally {
      this.generation = null
      release()
      this.emit({ type: 'chat:done', generationId: generation.id, conversationId: generation.conversationId, message, error })
    }
  }

  /** Stops a generation in progress (used when the host shuts down). */
  stopAll(): void {
    this.generation?.abort.abort()
  }
}
