/**
 * A chat conversation as the advisor's workload (experiments/conversation-workload.ts): its user messages, one
 * `turns` prompt each, in a file the prompt loader reads back as the same texts; a conversation without a user
 * message is refused with one line.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { conversationPromptLines, writeConversationWorkload } from '../../electron/experiments/conversation-workload'
import { loadPromptFile } from '../../electron/experiments/prompts'

const MESSAGES = [
  { role: 'user' as const, text: 'Tell me a story about a dog.' },
  { role: 'assistant' as const, text: 'Once upon a time…' },
  { role: 'user' as const, text: '  ' },
  { role: 'user' as const, text: 'Now one with "quotes"\nand two lines.' }
]

describe('a conversation as a workload', () => {
  it('keeps the user messages only, each as its own turns prompt', () => {
    expect(conversationPromptLines(MESSAGES).map((line) => JSON.parse(line))).toEqual([
      { turns: ['Tell me a story about a dog.'] },
      { turns: ['Now one with "quotes"\nand two lines.'] }
    ])
  })

  it('writes a prompt file the loader reads back as the same texts', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-conversation-'))
    const file = writeConversationWorkload(path.join(dir, 'advice-workloads'), { id: 7, title: 'Dogs' }, MESSAGES)
    expect(path.basename(file)).toMatch(/^conversation-7-.*\.jsonl$/)
    expect(loadPromptFile(file).map((p) => p.text)).toEqual(['Tell me a story about a dog.', 'Now one with "quotes"\nand two lines.'])
  })

  it('refuses a conversation without a message of the user', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-conversation-'))
    expect(() => writeConversationWorkload(dir, { id: 1, title: 'Empty' }, [{ role: 'assistant', text: 'hi' }])).toThrow(UserInputError)
    expect(() => writeConversationWorkload(dir, { id: 1, title: 'Empty' }, [{ role: 'assistant', text: 'hi' }])).toThrow(/Empty.*no message of yours/)
  })
})
