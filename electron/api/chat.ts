/**
 * Chat: the settings of a generation and its prompt format, the tokens and live statistics pushed while it runs,
 * and the stored conversations and messages (with a reply's measured baseline).
 */
import { z } from 'zod'
import { IntervalSummary as IntervalSummarySchema } from '../engine/metrics/summary'
import { DecodeSettings } from './decode'
import { Id } from './fields'
import { MethodId } from './methods'

/** Where an output token came from (the provenance a TokenPiece carries). */
export const PROVENANCES = ['draft', 'ngram', 'branch', 'mid', 'resampled', 'bonus', 'target'] as const
export const ProvenanceName = z.enum(PROVENANCES)

/** A chat generation's settings: the shared decoding settings and its one method. */
export const GenerationSettings = DecodeSettings.extend({ method: MethodId })
export type GenerationSettings = z.infer<typeof GenerationSettings>

export const PromptFormat = z.enum(['auto', 'chat', 'completion'])
export type PromptFormat = z.infer<typeof PromptFormat>

// ── Pushed while a generation runs (chat:tokens), and the message it leaves (chat:done) ──

export const TokenPiece = z.object({ text: z.string(), provenance: ProvenanceName })
export type TokenPiece = z.infer<typeof TokenPiece>

/** Live statistics of one generation: folds over its step records (engine/metrics/fold.ts). */
export const LiveStats = z.object({
  tokens: z.number().int().min(0),
  elapsedMs: z.number().min(0),
  tokensPerSecond: z.number().min(0),
  acceptanceRate: z.number().nullable(),
  sigma: z.number().nullable(),
  eta: z.number().nullable(),
  meanAcceptedLength: z.number().nullable(),
  targetCalls: z.number().int().min(0),
  /** γ of the verification rounds so far (the last 200). */
  gammas: z.array(z.number()),
  /** From the request to the first generated token (prompt processing included); absent in older messages. */
  timeToFirstTokenMs: z.number().min(0).nullable().optional()
})
export type LiveStats = z.infer<typeof LiveStats>

export const ChatMessage = z.object({
  id: Id,
  conversationId: Id,
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  /** Assistant messages: the text in runs of one provenance. */
  segments: z.array(TokenPiece).nullable(),
  settings: GenerationSettings.nullable(),
  stats: LiveStats.nullable(),
  stopReason: z.string().nullable(),
  /** 'chat' (the model's chat template) or 'completion' (plain continuation). */
  format: z.enum(['chat', 'completion']).nullable(),
  createdAt: z.string(),
  /** Assistant messages: the model files that generated it (null for user messages and older replies). */
  models: z.object({ target: z.string(), mid: z.string().nullable(), draft: z.string().nullable() }).nullable().default(null),
  /** The reply's speedup over ar, measured on request on the same prompt tokens (chat:baseline); null until then. */
  baseline: z.lazy(() => ChatBaseline).nullable().default(null),
  /**
   * Replies: the ids of every reply to the same user message, oldest first, this one included (Regenerate keeps the
   * earlier ones; the one shown is the one the next turn follows). Empty for user messages.
   */
  alternatives: z.array(Id).default([])
})
export type ChatMessage = z.infer<typeof ChatMessage>

/**
 * A reply's baseline: `ar` and the reply's own method re-run on the reply's prompt tokens with its settings and seed,
 * interleaved over `repeats`; tokens/s of each and the paired speedup as medians with 95 % intervals.
 */
export const ChatBaseline = z.object({
  repeats: z.number().int().min(1),
  arTokensPerSecond: IntervalSummarySchema,
  methodTokensPerSecond: IntervalSummarySchema,
  speedup: IntervalSummarySchema,
  measuredAt: z.string()
})
export type ChatBaseline = z.infer<typeof ChatBaseline>

// ── Stored conversations (plain types: the host produces them, the UI renders them) ──

export interface ConversationSummary {
  id: number
  title: string
  createdAt: string
  updatedAt: string
  messages: number
}
export interface Conversation {
  summary: ConversationSummary
  messages: ChatMessage[]
}

/** Formats a conversation is exported in: Markdown to read, JSON with every setting, statistic and alternative. */
export const ConversationExportFormat = z.enum(['markdown', 'json'])
export type ConversationExportFormat = z.infer<typeof ConversationExportFormat>
export interface ConversationExport {
  fileName: string
  mimeType: string
  content: string
}
