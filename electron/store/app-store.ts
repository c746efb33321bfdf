/**
 * The app's own tables beside the runs (migration 5): chat conversations and messages, the model library, and
 * the filtered run list of the Runs screen. Shares the RunStore's connection (one file, one WAL).
 */
import os from 'node:os'
import type Database from 'better-sqlite3'
import { ChatBaseline, ChatMessage, GenerationSettings, LiveStats, TokenPiece, type ConversationSummary } from '../api/chat'
import type { RunFilter, RunListItem } from '../api/runs'
import { z } from 'zod'
import { UserInputError } from '../engine/errors'
import { isOwnerAlive, type OwnedRow } from './owner'
import { toRunSummary, type RunRow } from './run-store'

/** A previous process of this pid that marked a load is gone, whatever it had in progress. */
const NOTHING_IN_PROGRESS: ReadonlySet<number> = new Set()

export interface ModelRow {
  id: number
  path: string
  source: 'file' | 'download'
  uri: string | null
  addedAt: string
  /** Set while llama.cpp loads the file, with the process loading it (migration 7). */
  loadingSince: string | null
  loadingOwner: OwnedRow
  /** Why the file failed to load last time (the engine process died loading it); null = no known failure. */
  loadError: string | null
}

export interface NewAssistantMessage {
  text: string
  segments: TokenPiece[]
  settings: GenerationSettings
  stats: LiveStats
  stopReason: string | null
  format: 'chat' | 'completion'
  models: { target: string; mid: string | null; draft: string | null }
  /** The prompt the reply was generated from, so its baseline can be measured on the same tokens. */
  promptTokens: readonly number[]
}

interface MessageDbRow {
  id: number
  conversation_id: number
  role: 'user' | 'assistant'
  text: string
  segments: string | null
  settings: string | null
  stats: string | null
  stop_reason: string | null
  format: 'chat' | 'completion' | null
  created_at: string
  models: string | null
  /** Migration 9: the prompt token ids of an assistant reply (JSON) and its measured baseline (JSON). */
  prompt_tokens?: string | null
  baseline?: string | null
  /** Migration 10: the user message a reply answers (NULL in older rows) and whether it is an alternative not shown. */
  reply_to?: number | null
  hidden?: number
}

const now = (): string => new Date().toISOString()
const TITLE_LENGTH = 60

/** JSON columns are read back through the contract's schemas, so a damaged row reads as null, not as garbage. */
function parseJson<T>(schema: z.ZodType<T>, text: string | null): T | null {
  if (text === null) return null
  try {
    const parsed = schema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : null
  } catch {
    return null
  }
}

/** A conversation is titled by the start of its first message. */
const conversationTitle = (firstMessage: string): string => firstMessage.replace(/\s+/g, ' ').trim().slice(0, TITLE_LENGTH) || 'Conversation'

export class AppStore {
  constructor(private readonly db: Database.Database) {}

  // ── conversations ──

  createConversation(firstMessage: string): number {
    const title = conversationTitle(firstMessage)
    const at = now()
    const info = this.db
      .prepare('INSERT INTO conversations (created_at, updated_at, title) VALUES (?, ?, ?)')
      .run(at, at, title)
    return Number(info.lastInsertRowid)
  }

  /**
   * Newest first. With a query: the conversations whose title or any shown message contains it (case-insensitive
   * for ASCII letters, as SQLite's LIKE), the query taken literally (% and _ are not wildcards).
   */
  listConversations(query = ''): ConversationSummary[] {
    const pattern = `%${query.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    const rows = this.db
      .prepare(
        `SELECT c.id, c.title, c.created_at, c.updated_at,
           (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id AND m.hidden = 0) AS messages
         FROM conversations c
         WHERE @pattern = '%%' OR c.title LIKE @pattern ESCAPE '\\'
           OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.hidden = 0 AND m.text LIKE @pattern ESCAPE '\\')
         ORDER BY c.updated_at DESC, c.id DESC`
      )
      .all({ pattern }) as { id: number; title: string; created_at: string; updated_at: string; messages: number }[]
    return rows.map((r) => ({ id: r.id, title: r.title, createdAt: r.created_at, updatedAt: r.updated_at, messages: r.messages }))
  }

  getConversation(conversationId: number): ConversationSummary | null {
    return this.listConversations().find((c) => c.id === conversationId) ?? null
  }

  /** Renames a conversation (whitespace runs collapse to one space); null when it does not exist. */
  renameConversation(conversationId: number, title: string): ConversationSummary | null {
    const clean = title.replace(/\s+/g, ' ').trim()
    if (clean === '') throw new UserInputError('a conversation needs a name: type at least one character')
    const changed = this.db.prepare('UPDATE conversations SET title = ? WHERE id = ?').run(clean, conversationId).changes
    return changed > 0 ? this.getConversation(conversationId) : null
  }

  deleteConversation(conversationId: number): boolean {
    return this.db.prepare('DELETE FROM conversations WHERE id = ?').run(conversationId).changes > 0
  }

  /** The conversation as shown: every message but the alternatives not chosen, each reply with its alternatives' ids. */
  getMessages(conversationId: number): ChatMessage[] {
    const rows = this.db
      .prepare('SELECT * FROM messages WHERE conversation_id = ? AND hidden = 0 ORDER BY id')
      .all(conversationId) as MessageDbRow[]
    const replies = this.db
      .prepare(`SELECT id, reply_to FROM messages WHERE conversation_id = ? AND role = 'assistant' AND reply_to IS NOT NULL ORDER BY id`)
      .all(conversationId) as { id: number; reply_to: number }[]
    const byQuestion = new Map<number, number[]>()
    for (const reply of replies) byQuestion.set(reply.reply_to, [...(byQuestion.get(reply.reply_to) ?? []), reply.id])
    return rows.map((row) => toMessage(row, alternativeIds(row, (question) => byQuestion.get(question) ?? [])))
  }

  /**
   * Shows this reply instead of the other replies to the same user message (they stay stored). Returns the reply,
   * or null when it is not a stored reply.
   */
  selectAlternative(messageId: number): ChatMessage | null {
    const row = this.db.prepare(`SELECT * FROM messages WHERE id = ? AND role = 'assistant'`).get(messageId) as MessageDbRow | undefined
    if (!row) return null
    if (row.reply_to != null) {
      this.db.transaction(() => {
        this.db.prepare('UPDATE messages SET hidden = 1 WHERE reply_to = ? AND id <> ?').run(row.reply_to, messageId)
        this.db.prepare('UPDATE messages SET hidden = 0 WHERE id = ?').run(messageId)
      })()
    }
    return this.getMessage(messageId)
  }

  /**
   * Drops a user message and everything after it (edit and regenerate replace the tail of a conversation); a
   * conversation left empty takes its title from the text that replaces its first message.
   */
  truncateFrom(conversationId: number, messageId: number, replacement: string): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM messages WHERE conversation_id = ? AND id >= ?').run(conversationId, messageId)
      const left = this.db.prepare('SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?').get(conversationId) as { n: number }
      if (left.n === 0) this.db.prepare('UPDATE conversations SET title = ? WHERE id = ?').run(conversationTitle(replacement), conversationId)
    })()
  }

  addUserMessage(conversationId: number, text: string): ChatMessage {
    return this.insertMessage(conversationId, {
      role: 'user',
      text,
      segments: null,
      settings: null,
      stats: null,
      stop_reason: null,
      format: null,
      models: null
    })
  }

  /**
   * Stores a reply to the user message `replyTo` and shows it: an earlier reply to the same message (Regenerate) is
   * kept as a hidden alternative. A reply stored before replies named their user message is adopted first, so it
   * stays one of the alternatives.
   */
  addAssistantMessage(conversationId: number, message: NewAssistantMessage, replyTo: number): ChatMessage {
    return this.db.transaction(() => {
      this.db
        .prepare(
          `UPDATE messages SET reply_to = @replyTo
           WHERE role = 'assistant' AND reply_to IS NULL
             AND id = (SELECT MIN(id) FROM messages WHERE conversation_id = @conversationId AND id > @replyTo)`
        )
        .run({ conversationId, replyTo })
      this.db.prepare('UPDATE messages SET hidden = 1 WHERE reply_to = ?').run(replyTo)
      return this.insertAssistant(conversationId, message, replyTo)
    })()
  }

  private insertAssistant(conversationId: number, message: NewAssistantMessage, replyTo: number): ChatMessage {
    return this.insertMessage(conversationId, {
      reply_to: replyTo,
      role: 'assistant',
      text: message.text,
      segments: JSON.stringify(message.segments),
      settings: JSON.stringify(message.settings),
      stats: JSON.stringify(message.stats),
      stop_reason: message.stopReason,
      format: message.format,
      models: JSON.stringify(message.models),
      prompt_tokens: JSON.stringify(message.promptTokens)
    })
  }

  /** One message, or null. */
  getMessage(messageId: number): ChatMessage | null {
    const row = this.db.prepare('SELECT * FROM messages WHERE id = ?').get(messageId) as MessageDbRow | undefined
    if (!row) return null
    const repliesTo = (question: number) =>
      (this.db.prepare(`SELECT id FROM messages WHERE reply_to = ? AND role = 'assistant' ORDER BY id`).all(question) as { id: number }[]).map((r) => r.id)
    return toMessage(row, alternativeIds(row, repliesTo))
  }

  /** The prompt token ids an assistant reply was generated from; null for user messages and older replies. */
  promptTokensOf(messageId: number): number[] | null {
    const row = this.db.prepare('SELECT prompt_tokens FROM messages WHERE id = ?').get(messageId) as { prompt_tokens: string | null } | undefined
    return row?.prompt_tokens ? parseJson(z.array(z.number().int()), row.prompt_tokens) : null
  }

  setBaseline(messageId: number, baseline: ChatBaseline): ChatMessage {
    this.db.prepare('UPDATE messages SET baseline = ? WHERE id = ?').run(JSON.stringify(baseline), messageId)
    return this.getMessage(messageId)!
  }

  private insertMessage(
    conversationId: number,
    row: Omit<MessageDbRow, 'id' | 'conversation_id' | 'created_at' | 'baseline' | 'hidden'>
  ): ChatMessage {
    const at = now()
    const info = this.db
      .prepare(
        `INSERT INTO messages (conversation_id, role, text, segments, settings, stats, stop_reason, format, models, prompt_tokens, reply_to, created_at)
         VALUES (@conversationId, @role, @text, @segments, @settings, @stats, @stop_reason, @format, @models, @prompt_tokens, @reply_to, @at)`
      )
      .run({ conversationId, at, prompt_tokens: null, reply_to: null, ...row })
    this.db.prepare('UPDATE conversations SET updated_at = ? WHERE id = ?').run(at, conversationId)
    return this.getMessage(Number(info.lastInsertRowid))!
  }

  // ── model library ──

  listModels(): ModelRow[] {
    const rows = this.db.prepare('SELECT * FROM models ORDER BY id').all() as {
      id: number
      path: string
      source: 'file' | 'download'
      uri: string | null
      added_at: string
      loading_since: string | null
      loading_pid: number | null
      loading_host: string | null
      load_error: string | null
    }[]
    return rows.map((r) => ({
      id: r.id,
      path: r.path,
      source: r.source,
      uri: r.uri,
      addedAt: r.added_at,
      loadingSince: r.loading_since,
      loadingOwner: { id: r.id, pid: r.loading_pid, host: r.loading_host },
      loadError: r.load_error
    }))
  }

  /** llama.cpp is about to read these files: if the process dies now, the next start knows which. */
  markLoading(paths: readonly string[]): void {
    const mark = this.db.prepare('UPDATE models SET loading_since = ?, loading_pid = ?, loading_host = ? WHERE path = ?')
    const at = now()
    this.db.transaction(() => paths.forEach((p) => mark.run(at, process.pid, os.hostname(), p)))()
  }

  /** The load ended (loaded, or refused with an error this process survived): the files are no longer suspects. */
  clearLoading(paths: readonly string[]): void {
    const clear = this.db.prepare('UPDATE models SET loading_since = NULL, loading_pid = NULL, loading_host = NULL WHERE path = ?')
    this.db.transaction(() => paths.forEach((p) => clear.run(p)))()
  }

  /**
   * An engine process starts: a file still marked loading by a process that is gone killed that process (another
   * live process — the CLI or a second app on this database — may be loading it right now: left alone). Records
   * `reason` as the load error, so it is not loaded again without the user asking, and returns the paths.
   */
  recordCrashedLoads(reason: string): string[] {
    const crashed = this.listModels().filter((m) => m.loadingSince !== null && !isOwnerAlive(m.loadingOwner, NOTHING_IN_PROGRESS))
    const record = this.db.prepare('UPDATE models SET loading_since = NULL, loading_pid = NULL, loading_host = NULL, load_error = ? WHERE id = ?')
    this.db.transaction(() => crashed.forEach((m) => record.run(reason, m.id)))()
    return crashed.map((m) => m.path)
  }

  /** The user asked to load it anyway: forget the recorded failure. */
  clearLoadError(modelId: number): void {
    this.db.prepare('UPDATE models SET load_error = NULL WHERE id = ?').run(modelId)
  }

  /** Adds the path (or returns the existing row for it, updating a download's URI). */
  addModel(path: string, source: 'file' | 'download', uri: string | null): ModelRow {
    const existing = this.listModels().find((m) => m.path === path)
    if (existing) {
      if (source === 'download' && uri && existing.uri !== uri) {
        this.db.prepare(`UPDATE models SET source = 'download', uri = ? WHERE id = ?`).run(uri, existing.id)
        return { ...existing, source, uri }
      }
      return existing
    }
    const info = this.db
      .prepare('INSERT INTO models (path, source, uri, added_at) VALUES (?, ?, ?, ?)')
      .run(path, source, uri, now())
    return this.listModels().find((m) => m.id === Number(info.lastInsertRowid))!
  }

  removeModel(modelId: number): boolean {
    return this.db.prepare('DELETE FROM models WHERE id = ?').run(modelId).changes > 0
  }

  // ── runs, filtered ──

  /** Step rows per prompt result of a run (one query). */
  stepCounts(runId: number): Map<number, number> {
    const rows = this.db
      .prepare(
        `SELECT s.result_id AS id, COUNT(*) AS n FROM steps s JOIN prompt_results p ON p.id = s.result_id
         WHERE p.run_id = ? GROUP BY s.result_id`
      )
      .all(runId) as { id: number; n: number }[]
    return new Map(rows.map((r) => [r.id, r.n]))
  }

  /** The Runs screen's list: every filter is optional and they combine with AND; newest first. */
  searchRuns(filter: RunFilter): RunListItem[] {
    const where: string[] = []
    const args: (string | number)[] = []
    if (filter.status) {
      where.push('r.status = ?')
      args.push(filter.status)
    }
    if (filter.suite) {
      where.push('r.suite = ?')
      args.push(filter.suite)
    }
    if (filter.method) {
      where.push('EXISTS (SELECT 1 FROM json_each(r.methods) WHERE json_each.value = ?)')
      args.push(filter.method)
    }
    if (filter.model) {
      where.push(
        `(instr(lower(coalesce(json_extract(r.config, '$.models.target'), '')), lower(?)) > 0
          OR instr(lower(coalesce(json_extract(r.config, '$.models.mid'), '')), lower(?)) > 0
          OR instr(lower(coalesce(json_extract(r.config, '$.models.draft'), '')), lower(?)) > 0)`
      )
      args.push(filter.model, filter.model, filter.model)
    }
    if (filter.from) {
      where.push('r.created_at >= ?')
      args.push(filter.from)
    }
    if (filter.to) {
      // A bare date means the whole day.
      where.push('r.created_at <= ?')
      args.push(/^\d{4}-\d{2}-\d{2}$/.test(filter.to) ? `${filter.to}T23:59:59.999Z` : filter.to)
    }
    if (filter.search?.trim()) {
      const text = filter.search.trim()
      where.push(
        `(CAST(r.id AS TEXT) = ? OR instr(lower(coalesce(r.suite, '')), lower(?)) > 0
          OR instr(lower(r.methods), lower(?)) > 0 OR instr(lower(r.config), lower(?)) > 0
          OR instr(lower(coalesce(r.error, '')), lower(?)) > 0
          OR instr(lower(coalesce(r.name, '')), lower(?)) > 0 OR instr(lower(coalesce(r.notes, '')), lower(?)) > 0)`
      )
      args.push(text.replace(/^#/, ''), text, text, text, text, text, text)
    }
    const rows = this.db
      .prepare(
        `SELECT r.*, (SELECT COUNT(*) FROM prompt_results p WHERE p.run_id = r.id) AS prompt_count
         FROM runs r ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY r.id DESC LIMIT ?`
      )
      .all(...args, filter.limit ?? 500) as RunRow[]
    return rows.map(toRunListItem)
  }
}

/** A reply's alternatives in the order they were generated (itself alone for a reply of an older build); none for a user message. */
function alternativeIds(row: MessageDbRow, repliesTo: (question: number) => number[]): number[] {
  if (row.role !== 'assistant') return []
  return row.reply_to == null ? [row.id] : repliesTo(row.reply_to)
}

function toMessage(row: MessageDbRow, alternatives: number[]): ChatMessage {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    role: row.role,
    text: row.text,
    segments: parseJson(z.array(TokenPiece), row.segments),
    settings: parseJson(GenerationSettings, row.settings),
    stats: parseJson(LiveStats, row.stats),
    stopReason: row.stop_reason,
    format: row.format,
    createdAt: row.created_at,
    models: parseJson(MessageModels, row.models),
    baseline: parseJson(ChatBaseline, row.baseline ?? null),
    alternatives
  }
}

const MessageModels = z.object({ target: z.string(), mid: z.string().nullable(), draft: z.string().nullable() })

function toRunListItem(row: RunRow): RunListItem {
  let config: Record<string, unknown> = {}
  try {
    config = JSON.parse(row.config) as Record<string, unknown>
  } catch {
    // An unreadable config still lists the run; `show` reports the damage.
  }
  const models = (config.models ?? {}) as { target?: string; mid?: string; draft?: string }
  const prompts = (config.prompts ?? {}) as { dataset?: string; file?: string }
  return {
    ...toRunSummary(row),
    models: { target: models.target ?? '', mid: models.mid ?? null, draft: models.draft ?? null },
    dataset: prompts.dataset ?? prompts.file ?? null,
    gamma: typeof config.gamma === 'number' ? config.gamma : 0,
    maxTokens: typeof config.maxTokens === 'number' ? config.maxTokens : 0
  }
}
