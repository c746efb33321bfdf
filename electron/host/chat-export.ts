/**
 * A conversation as a file: Markdown to read or share (the conversation as shown, one heading per turn, with each
 * reply's method, seed and statistics), or JSON with everything stored — every message with its settings,
 * statistics and baseline, and under each reply the alternatives Regenerate kept.
 */
import type { ChatMessage, Conversation, ConversationExport, ConversationExportFormat } from '../api/chat'

/** A file name from the conversation's title: letters, digits and dashes, never empty. */
export function exportFileName(conversation: Conversation, extension: string): string {
  const slug = conversation.summary.title
    .normalize('NFKD')
    .replace(/[^\w\s-]/g, '')
    .trim()
    .replace(/[\s_]+/g, '-')
    .slice(0, 50)
    .replace(/-+$/, '')
  return `speclab-chat-${conversation.summary.id}${slug ? `-${slug}` : ''}.${extension}`
}

/** One reply's provenance line: method, prompt format, seed, tokens and speed. */
function replyLine(m: ChatMessage): string {
  const parts = [m.settings?.method, m.format, m.settings ? `seed ${m.settings.seed}` : null]
  if (m.stats) parts.push(`${m.stats.tokens} tokens`, `${m.stats.tokensPerSecond.toFixed(1)} tok/s`)
  if (m.stats?.acceptanceRate != null) parts.push(`acceptance ${(m.stats.acceptanceRate * 100).toFixed(1)} %`)
  if (m.alternatives.length > 1) parts.push(`reply ${m.alternatives.indexOf(m.id) + 1} of ${m.alternatives.length}`)
  return parts.filter((p) => p != null).join(' · ')
}

export function conversationMarkdown(conversation: Conversation): string {
  const lines = [`# ${conversation.summary.title}`, '', `Exported from SpecLab on ${new Date().toISOString()} · started ${conversation.summary.createdAt}`, '']
  for (const m of conversation.messages) {
    if (m.role === 'user') lines.push('## You', '', m.text, '')
    else lines.push('## Model', '', `*${replyLine(m)}*`, '', m.text, '')
  }
  return lines.join('\n')
}

/**
 * The JSON export: the summary and the messages as shown, each reply with `otherAlternatives` (the replies to the
 * same user message that are not shown, full messages).
 */
export function conversationJson(conversation: Conversation, messageById: (id: number) => ChatMessage | null): string {
  const messages = conversation.messages.map((m) => {
    const others = m.alternatives.filter((id) => id !== m.id).map(messageById).filter((x): x is ChatMessage => x !== null)
    return m.role === 'assistant' ? { ...m, otherAlternatives: others } : m
  })
  return `${JSON.stringify({ format: 'speclab-conversation', version: 1, conversation: conversation.summary, messages }, null, 2)}\n`
}

export function exportConversation(
  conversation: Conversation,
  format: ConversationExportFormat,
  messageById: (id: number) => ChatMessage | null
): ConversationExport {
  return format === 'markdown'
    ? { fileName: exportFileName(conversation, 'md'), mimeType: 'text/markdown', content: conversationMarkdown(conversation) }
    : { fileName: exportFileName(conversation, 'json'), mimeType: 'application/json', content: conversationJson(conversation, messageById) }
}
