/**
 * Chat conversations in the app store (migration 10): Regenerate keeps a reply's alternatives and the one chosen is
 * what the conversation shows and the next turn follows (precedingMessages, the context chat:send builds); a
 * database of the previous schema opens with its conversations intact and its replies regenerate; conversations
 * rename, search (literally: % and _ are text) and export as Markdown and JSON.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ChatMessage } from '../../electron/api/chat'
import { conversationMarkdown, exportConversation } from '../../electron/host/chat-export'
import { precedingMessages } from '../../electron/host/chat'
import { AppStore, type NewAssistantMessage } from '../../electron/store/app-store'
import { MIGRATIONS } from '../../electron/store/migrations'
import { RunStore } from '../../electron/store/run-store'

const stats = { tokens: 2, elapsedMs: 10, tokensPerSecond: 200, acceptanceRate: 0.5, sigma: 0.5, eta: 0.5, meanAcceptedLength: 1, targetCalls: 1, gammas: [2] }
const settings = { method: 'sd' as const, maxTokens: 8, temperature: 1, topK: 64, topP: 1, gamma: 2, seed: 3, params: {} }
const reply = (text: string, seed = 3): NewAssistantMessage => ({
  text,
  segments: [{ text, provenance: 'draft' }],
  settings: { ...settings, seed },
  stats,
  stopReason: 'max-tokens',
  format: 'completion',
  models: { target: '/t.gguf', mid: null, draft: '/d.gguf' },
  promptTokens: [1, 2]
})
const texts = (messages: readonly ChatMessage[]) => messages.map((m) => m.text)

let dir: string
let runs: RunStore
let app: AppStore
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-chat-comfort-'))
})
afterEach(() => {
  runs?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})
const openStore = (file = path.join(dir, 'db.sqlite')) => {
  runs = RunStore.open(file)
  app = new AppStore(runs.database)
}

describe('reply alternatives', () => {
  it('Regenerate keeps the earlier reply; the chosen one is shown, counted and followed by the next turn', () => {
    openStore()
    const c = app.createConversation('Tell me a story')
    const asked = app.addUserMessage(c, 'Tell me a story')
    const first = app.addAssistantMessage(c, reply('Once upon a time', 1), asked.id)
    expect(first.alternatives).toEqual([first.id])

    // Regenerate: the context is the conversation up to the user message, without its reply.
    const regenerate = { conversationId: c, regenerate: asked.id, text: 'Tell me a story' }
    expect(texts(precedingMessages(app.getMessages(c), regenerate))).toEqual(['Tell me a story'])
    const second = app.addAssistantMessage(c, reply('There was a dog', 2), asked.id)
    expect(second.alternatives).toEqual([first.id, second.id])
    expect(texts(app.getMessages(c))).toEqual(['Tell me a story', 'There was a dog'])
    expect(app.getMessages(c)[1].alternatives).toEqual([first.id, second.id])
    expect(app.listConversations()[0].messages).toBe(2)

    // Switching back shows the first reply; the second stays stored.
    expect(app.selectAlternative(first.id)).toMatchObject({ id: first.id, text: 'Once upon a time', alternatives: [first.id, second.id] })
    expect(texts(app.getMessages(c))).toEqual(['Tell me a story', 'Once upon a time'])
    expect(app.getMessage(second.id)!.text).toBe('There was a dog')

    // The next turn follows the reply shown.
    const next = precedingMessages(app.getMessages(c), { conversationId: c, text: 'And then?' })
    expect(texts(next)).toEqual(['Tell me a story', 'Once upon a time'])
    const then = app.addUserMessage(c, 'And then?')
    app.addAssistantMessage(c, reply('They played'), then.id)
    expect(texts(app.getMessages(c))).toEqual(['Tell me a story', 'Once upon a time', 'And then?', 'They played'])
    // Only the last user message regenerates, and only with its own text.
    expect(() => precedingMessages(app.getMessages(c), regenerate)).toThrow(/only the last reply regenerates/)
    expect(() => precedingMessages(app.getMessages(c), { conversationId: c, regenerate: then.id, text: 'And now?' })).toThrow(/edit the message/)
    expect(() => precedingMessages([], { conversationId: null, regenerate: then.id, text: 'And then?' })).toThrow(/saved conversation/)

    // Editing a message drops it, what follows and the alternatives among them.
    app.truncateFrom(c, asked.id, 'Tell me a poem')
    expect(runs.database.prepare('SELECT COUNT(*) AS n FROM messages').get()).toEqual({ n: 0 })
  })

  it('opens a database of the previous schema with its conversations; an old reply becomes the first alternative', () => {
    const file = path.join(dir, 'old.sqlite')
    // The schema as the previous release left it (migrations 1–9), with a conversation written by that release.
    const old = new Database(file)
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
    for (const m of MIGRATIONS.filter((m) => m.version <= 9)) {
      old.exec(m.sql)
      old.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, '2026-11-01T00:00:00.000Z')
    }
    old.pragma('user_version = 9')
    const at = '2026-11-01T10:00:00.000Z'
    old.prepare('INSERT INTO conversations (id, created_at, updated_at, title) VALUES (1, ?, ?, ?)').run(at, at, 'An old chat')
    const insert = old.prepare('INSERT INTO messages (conversation_id, role, text, segments, settings, stats, stop_reason, format, created_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)')
    insert.run('user', 'Hello', null, null, null, null, null, at)
    insert.run('assistant', 'Hi there', JSON.stringify([{ text: 'Hi there', provenance: 'target' }]), JSON.stringify(settings), JSON.stringify(stats), 'eos', 'completion', at)
    old.close()

    openStore(file)
    const [asked, oldReply] = app.getMessages(1)
    expect(oldReply).toMatchObject({ text: 'Hi there', alternatives: [oldReply.id] })
    const regenerated = app.addAssistantMessage(1, reply('Good day'), asked.id)
    expect(regenerated.alternatives).toEqual([oldReply.id, regenerated.id])
    expect(texts(app.getMessages(1))).toEqual(['Hello', 'Good day'])
    app.selectAlternative(oldReply.id)
    expect(texts(app.getMessages(1))).toEqual(['Hello', 'Hi there'])
  })
})

describe('conversations', () => {
  it('rename (trimmed, never empty) and search names and shown messages, taking % and _ literally', () => {
    openStore()
    const a = app.createConversation('Tell me a story')
    const asked = app.addUserMessage(a, 'Tell me a story')
    const hiddenReply = app.addAssistantMessage(a, reply('a dragon appears'), asked.id)
    app.addAssistantMessage(a, reply('a cat sleeps'), asked.id)
    const b = app.createConversation('Sums')
    app.addUserMessage(b, 'what is 50% of 10_000?')

    expect(app.renameConversation(a, '  Bedtime\n story ')).toMatchObject({ id: a, title: 'Bedtime story' })
    expect(() => app.renameConversation(a, '   ')).toThrow(/needs a name/)
    expect(app.renameConversation(999, 'x')).toBeNull()

    const found = (query: string) => app.listConversations(query).map((c) => c.id)
    expect(found('')).toEqual([b, a])
    expect(found('bedtime')).toEqual([a])
    expect(found('CAT')).toEqual([a])
    expect(found('dragon')).toEqual([]) // the alternative not shown
    expect(found('50%')).toEqual([b])
    expect(found('0_0')).toEqual([b])
    expect(found('5%1')).toEqual([]) // % is not a wildcard
    expect(found('story')).toEqual([a])
    expect(app.getMessage(hiddenReply.id)!.text).toBe('a dragon appears')
  })

  it('exports as Markdown (the conversation as shown) and as JSON (with the other alternatives)', () => {
    openStore()
    const c = app.createConversation('Tell me: a story!')
    const asked = app.addUserMessage(c, 'Tell me a story')
    const first = app.addAssistantMessage(c, reply('a dragon appears', 11), asked.id)
    const second = app.addAssistantMessage(c, reply('a cat sleeps', 12), asked.id)
    const conversation = { summary: app.getConversation(c)!, messages: app.getMessages(c) }

    const markdown = conversationMarkdown(conversation)
    expect(markdown).toMatch(/^# Tell me: a story!\n/)
    expect(markdown).toContain('## You\n\nTell me a story\n')
    expect(markdown).toContain('## Model\n\n*sd · completion · seed 12 · 2 tokens · 200.0 tok/s · acceptance 50.0 % · reply 2 of 2*\n\na cat sleeps\n')
    expect(markdown).not.toContain('dragon')

    const file = exportConversation(conversation, 'json', (id) => app.getMessage(id))
    expect(file).toMatchObject({ fileName: `speclab-chat-${c}-Tell-me-a-story.json`, mimeType: 'application/json' })
    const parsed = JSON.parse(file.content)
    expect(parsed.conversation).toMatchObject({ id: c, title: 'Tell me: a story!', messages: 2 })
    expect(parsed.messages.map((m: ChatMessage) => m.text)).toEqual(['Tell me a story', 'a cat sleeps'])
    expect(parsed.messages[1].otherAlternatives.map((m: ChatMessage) => [m.id, m.text, m.settings!.seed])).toEqual([[first.id, 'a dragon appears', 11]])
    expect(parsed.messages[1].id).toBe(second.id)
    expect(exportConversation(conversation, 'markdown', () => null)).toMatchObject({ fileName: `speclab-chat-${c}-Tell-me-a-story.md`, mimeType: 'text/markdown' })
  })
})
