/**
 * Prompt sets: the built-in ones in resources/prompts, or any JSONL file in the shapes the papers' datasets use —
 * MT-Bench / Spec-Bench (`turns`: the first turn is the prompt), GSM8K (`question`), HumanEval (`prompt`), or
 * plain `text`. A bad file is one clear error naming the file and line; only regular UTF-8 files up to
 * MAX_PROMPT_FILE_BYTES are read (text-file.ts).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { UserInputError } from '../engine/errors'
import type { PromptSource } from '../api/runs'
import { readTextFile } from './text-file'

export interface PromptItem {
  id: string | null
  category: string | null
  text: string
}

export const BUILTIN_DATASETS = ['stories', 'chat', 'code', 'math', 'mixed', 'copy'] as const

/**
 * The sets `mixed` joins: the general-purpose ones. `copy` (passages the continuation may copy: summarise, rewrite,
 * extract, code-edit — the model-free suite's workload) stays out: `mixed` with one prompt per category is the quick
 * grid of several suites and the smoke suite's full one, and four long copy prompts would change what they measure.
 */
export const MIXED_DATASETS = ['stories', 'chat', 'code', 'math'] as const

/** resources/ beside the project root, from the sources (tsx) and from out/main alike; overridable for packaging. */
export function resourcesDirectory(): string {
  return process.env.SPECLAB_RESOURCES ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../resources')
}

export function loadPrompts(source: PromptSource): PromptItem[] {
  if (source.file && source.dataset) throw new UserInputError('give either --prompts or --dataset, not both')
  const prompts = source.file ? loadPromptFile(source.file) : loadBuiltinDataset(source.dataset ?? 'stories')
  const sampled = source.perCategory ? firstPerCategory(prompts, source.perCategory) : prompts
  const limited = source.limit ? sampled.slice(0, source.limit) : sampled
  if (limited.length === 0) throw new UserInputError('the prompt set is empty')
  return limited
}

/** The first `count` prompts of every category (uncategorised prompts form one group), in file order. */
export function firstPerCategory(prompts: readonly PromptItem[], count: number): PromptItem[] {
  const seen = new Map<string | null, number>()
  return prompts.filter((prompt) => {
    const n = seen.get(prompt.category) ?? 0
    seen.set(prompt.category, n + 1)
    return n < count
  })
}

export function loadBuiltinDataset(id: string): PromptItem[] {
  if (id === 'mixed') return MIXED_DATASETS.flatMap(loadBuiltinDataset)
  if (!(BUILTIN_DATASETS as readonly string[]).includes(id))
    throw new UserInputError(`unknown dataset '${id}' (built-in: ${BUILTIN_DATASETS.join(', ')})`)
  return loadPromptFile(path.join(resourcesDirectory(), 'prompts', `${id}.jsonl`))
}

/**
 * The largest prompt file read. The papers' sets are a few MiB at most (Spec-Bench's 480 prompts: ~0.5 MiB); a file
 * far beyond that is a wrong path (a disk image, a log) and would only exhaust memory.
 */
export const MAX_PROMPT_FILE_BYTES = 64 * 2 ** 20

export function loadPromptFile(file: string): PromptItem[] {
  let content = readTextFile(file, { what: 'prompt file', maxBytes: MAX_PROMPT_FILE_BYTES })
  // Editors on Windows often save UTF-8 with a byte-order mark; it is not part of the first record.
  if (content.startsWith('\uFEFF')) content = content.slice(1)
  const prompts: PromptItem[] = []
  content.split('\n').forEach((line, index) => {
    if (line.trim() === '') return
    prompts.push(parsePromptLine(line, `${file}:${index + 1}`))
  })
  return prompts
}

function parsePromptLine(line: string, where: string): PromptItem {
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    throw new UserInputError(`${where}: not valid JSON`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UserInputError(
      `${where}: expected a JSON object with a "turns", "question", "prompt" or "text" field, got ${parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`}`
    )
  const record = parsed as Record<string, unknown>
  const text = promptText(record)
  if (text === null) throw new UserInputError(`${where}: expected a "turns", "question", "prompt" or "text" field`)
  const id = record.question_id ?? record.task_id ?? record.id ?? null
  const category = typeof record.category === 'string' ? record.category : null
  return { id: id === null ? null : String(id), category, text }
}

function promptText(record: Record<string, unknown>): string | null {
  if (Array.isArray(record.turns) && typeof record.turns[0] === 'string') return record.turns[0]
  for (const key of ['question', 'prompt', 'text']) if (typeof record[key] === 'string') return record[key] as string
  return null
}
