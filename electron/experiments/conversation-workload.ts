/**
 * A chat conversation as a workload for the advisor: each user message of the conversation (as shown: hidden
 * alternatives left out) becomes one prompt, written as a `turns` line of a JSONL prompt file (MT-Bench's shape).
 * Like every run's prompt it is decoded as its text, without the chat template Chat wraps it in: the advice is about
 * the content users send, and a template adds the same few tokens to every configuration's prompt.
 *
 * Why a file rather than prompts held in memory: a run records where its prompts came from (config.prompts.file),
 * so the advice stays reproducible (`speclab advise --prompts FILE`) and `show` names the source. Each user message
 * is its own prompt, not the conversation so far: the advisor predicts how a reply to such a message decodes, and
 * earlier turns would make every prompt longer without changing which configuration is fastest.
 */
import fs from 'node:fs'
import path from 'node:path'
import { UserInputError } from '../engine/errors'

export interface ConversationTurn {
  role: 'user' | 'assistant'
  text: string
}

/** The JSONL lines of the conversation's user messages; one line each, empty ones left out. */
export function conversationPromptLines(messages: readonly ConversationTurn[]): string[] {
  return messages.filter((m) => m.role === 'user' && m.text.trim() !== '').map((m) => JSON.stringify({ turns: [m.text] }))
}

/**
 * Writes the conversation's prompts to `directory` (created if needed) and returns the file; one line when the
 * conversation holds no user message.
 */
export function writeConversationWorkload(directory: string, conversation: { id: number; title: string }, messages: readonly ConversationTurn[]): string {
  const lines = conversationPromptLines(messages)
  if (lines.length === 0) throw new UserInputError(`conversation "${conversation.title}" has no message of yours to advise on`)
  fs.mkdirSync(directory, { recursive: true })
  const file = path.join(directory, `conversation-${conversation.id}-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`)
  fs.writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}
