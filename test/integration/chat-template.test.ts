/**
 * Chat prompts on real GGUFs (electron/host/chat-prompt.ts): an instruct model — here a copy of stories260K with a
 * ChatML `tokenizer.chat_template` added to its metadata — is rendered through node-llama-cpp's chat wrapper with
 * the template's stop text, a base model gets plain completion (BOS + the conversation as one text), and the
 * oldest turns are dropped when the prompt would not fit.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { buildPrompt, hasChatTemplate, resolveFormat, type Turn } from '../../electron/host/chat-prompt'
import { CHATML_TEMPLATE } from '../helpers/chat-templates'
import { describeWithModels, modelPath } from '../helpers/gguf'
import { writeGgufWithStringKey } from '../helpers/gguf-metadata'

const BASE = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/chat-template.test.ts', [BASE])

withModels('chat prompts on real GGUFs', () => {
  let dir: string
  let base: LlamaCppModel
  let instruct: LlamaCppModel
  const text = (model: LlamaCppModel, tokens: number[]) => model.model.detokenize(tokens as never, true)

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-chat-template-'))
    const instructFile = path.join(dir, 'stories260K-chatml.gguf')
    writeGgufWithStringKey(modelPath(BASE), instructFile, 'tokenizer.chat_template', CHATML_TEMPLATE)
    base = await loadLlamaModel(modelPath(BASE), { threads: 1, contextSize: 256, sequences: 1 })
    instruct = await loadLlamaModel(instructFile, { threads: 1, contextSize: 256, sequences: 1 })
  })

  afterAll(async () => {
    await instruct?.dispose()
    await base?.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('the metadata copy is the same model with a template: same vocabulary, same next-token distribution', async () => {
    expect(hasChatTemplate(instruct)).toBe(true)
    expect(hasChatTemplate(base)).toBe(false)
    expect(instruct.info.vocabularySize).toBe(base.info.vocabularySize)
    const tokens = base.tokenize('Once upon a time')
    expect(await instruct.logProbabilities(tokens)).toEqual(await base.logProbabilities(tokens))
  })

  it("'auto' renders an instruct model's conversation with its template and stops at the template's end text", () => {
    expect(resolveFormat(instruct, 'auto')).toBe('chat')
    const turns: Turn[] = [
      { role: 'user', text: 'Tell me a story.' },
      { role: 'assistant', text: 'Once upon a time.' },
      { role: 'user', text: 'Another one.' }
    ]
    const prompt = buildPrompt(instruct, turns, 'You tell stories.', 'auto', 200)
    expect(prompt).toMatchObject({ format: 'chat', droppedTurns: 0, stopStrings: ['<|im_end|>'] })
    const rendered = text(instruct, prompt.tokens).replace(/ <\|im_end\|>/g, '<|im_end|>') // sentencepiece spacing
    expect(rendered).toMatch(/^<s> ?<\|im_start\|>system\nYou tell stories\.<\|im_end\|>\n<\|im_start\|>user\nTell me a story\.<\|im_end\|>\n/)
    expect(rendered).toMatch(/<\|im_start\|>assistant\nOnce upon a time\.<\|im_end\|>\n<\|im_start\|>user\nAnother one\.<\|im_end\|>\n<\|im_start\|>assistant\n$/)
  })

  it("'auto' gives a base model plain completion: BOS, then the conversation as one continuing text", () => {
    expect(resolveFormat(base, 'auto')).toBe('completion')
    const prompt = buildPrompt(base, [{ role: 'user', text: 'Once upon a time' }, { role: 'assistant', text: ', a cat sat.' }, { role: 'user', text: 'Then' }], '', 'auto', 200)
    expect(prompt).toMatchObject({ format: 'completion', stopStrings: [], droppedTurns: 0 })
    expect(prompt.tokens[0]).toBe(base.info.bos)
    expect(text(base, prompt.tokens.slice(1)).trim()).toBe('Once upon a time, a cat sat.\nThen')
  })

  it('drops the oldest turns when the rendered conversation does not fit the budget', () => {
    const long = 'The little dog ran to the park and played with a big red ball all day long. '.repeat(3)
    const turns: Turn[] = [
      { role: 'user', text: long },
      { role: 'assistant', text: long },
      { role: 'user', text: 'Tell me more.' }
    ]
    const full = buildPrompt(instruct, turns, '', 'chat', 1000)
    const fitted = buildPrompt(instruct, turns, '', 'chat', full.tokens.length - 1)
    expect(fitted.droppedTurns).toBeGreaterThan(0)
    expect(fitted.tokens.length).toBeLessThan(full.tokens.length)
    expect(text(instruct, fitted.tokens)).toMatch(/Tell me more\./)
    expect(() => buildPrompt(instruct, turns, '', 'chat', 5)).toThrow(/does not fit the context/)
  })
})
