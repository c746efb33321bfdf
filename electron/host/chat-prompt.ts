/**
 * Conversation → prompt tokens. Instruct models (a chat template in the GGUF) go through node-llama-cpp's chat
 * wrappers: `resolveChatWrapper` picks the model's template (a specialised wrapper or its Jinja template), the
 * history ends with an empty model turn, and the rendered LlamaText is tokenized with special tokens. Base models
 * get plain completion: the conversation is one continuing text (each user message on a new line after the
 * model's continuation). Older turns are dropped when prompt + max tokens would not fit the context.
 */
import { resolveChatWrapper, type ChatHistoryItem, type LlamaText } from 'node-llama-cpp'
import type { PromptFormat } from '../api/chat'
import { UserInputError } from '../engine/errors'
import type { LlamaCppModel } from '../engine/model/llama-cpp-model'

export interface Turn {
  role: 'user' | 'assistant'
  text: string
}

export interface BuiltPrompt {
  tokens: number[]
  format: 'chat' | 'completion'
  /** Text that ends the answer when generated (the template's textual stop triggers). */
  stopStrings: string[]
  /** How many of the oldest turns did not fit. */
  droppedTurns: number
}

export function hasChatTemplate(model: LlamaCppModel): boolean {
  return typeof model.model.fileInfo.metadata.tokenizer?.chat_template === 'string'
}

export function resolveFormat(model: LlamaCppModel, format: PromptFormat): 'chat' | 'completion' {
  if (format !== 'auto') return format
  return hasChatTemplate(model) ? 'chat' : 'completion'
}

/** A trigger made only of plain text (special-token triggers are end-of-generation tokens the decoders stop at). */
function textTrigger(trigger: LlamaText): string | null {
  return trigger.values.every((value) => typeof value === 'string') ? trigger.values.join('') : null
}

function renderChat(model: LlamaCppModel, turns: readonly Turn[], systemPrompt: string) {
  const wrapper = resolveChatWrapper(model.model, { warningLogs: false })
  const history: ChatHistoryItem[] = []
  if (systemPrompt.trim() !== '') history.push({ type: 'system', text: systemPrompt })
  for (const turn of turns)
    history.push(turn.role === 'user' ? { type: 'user', text: turn.text } : { type: 'model', response: [turn.text] })
  history.push({ type: 'model', response: [] })
  const state = wrapper.generateContextState({ chatHistory: history })
  let tokens = state.contextText.tokenize(model.model.tokenizer) as number[]
  const bos = model.info.bos
  if (tokens.length === 0 && bos !== null) tokens = [bos]
  const stopStrings = state.stopGenerationTriggers.map(textTrigger).filter((s): s is string => !!s && s.trim() !== '')
  return { tokens, stopStrings }
}

function completionText(turns: readonly Turn[]): string {
  let text = ''
  turns.forEach((turn, i) => {
    if (turn.role === 'user' && i > 0) text += '\n'
    text += turn.text
  })
  return text
}

/** `budget`: tokens the prompt may use (context size − max tokens). */
export function buildPrompt(
  model: LlamaCppModel,
  turns: readonly Turn[],
  systemPrompt: string,
  format: PromptFormat,
  budget: number
): BuiltPrompt {
  if (budget < 2) throw new UserInputError('max tokens leaves no room for the prompt in the context; lower max tokens')
  const resolved = resolveFormat(model, format)
  if (resolved === 'chat') {
    for (let dropped = 0; dropped < turns.length; dropped++) {
      model.assertEncodable([systemPrompt, ...turns.map((t) => t.text)].join('\n'))
      const { tokens, stopStrings } = renderChat(model, turns.slice(dropped), systemPrompt)
      if (tokens.length <= budget) return { tokens, format: resolved, stopStrings, droppedTurns: dropped }
    }
    throw new UserInputError(`the message does not fit the context (room for ${budget} prompt tokens); shorten it or lower max tokens`)
  }
  const bos = model.info.bos
  const text = model.tokenize(completionText(turns))
  const room = budget - (bos === null ? 0 : 1)
  const kept = text.length > room ? text.slice(text.length - room) : text
  return {
    tokens: [...(bos === null ? [] : [bos]), ...kept],
    format: resolved,
    stopStrings: [],
    droppedTurns: text.length > room ? 1 : 0
  }
}
