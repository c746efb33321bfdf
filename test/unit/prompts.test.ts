/** Prompt sets: the four JSONL shapes of the papers' datasets, the built-in sets, and clear errors. */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { BUILTIN_DATASETS, MIXED_DATASETS, loadBuiltinDataset, loadPromptFile, loadPrompts } from '../../electron/experiments/prompts'

const datasets = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared/datasets')

function tempFile(content: string): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-prompts-')), 'p.jsonl')
  fs.writeFileSync(file, content)
  return file
}

describe('prompt files', () => {
  it('reads turns, question, prompt and text shapes', () => {
    const file = tempFile(
      [
        JSON.stringify({ question_id: 81, category: 'writing', turns: ['first turn', 'second turn'] }),
        JSON.stringify({ question: 'How many eggs?', answer: '#### 9' }),
        JSON.stringify({ task_id: 'HumanEval/0', prompt: 'def f():\n' }),
        '',
        JSON.stringify({ text: 'Once upon a time' })
      ].join('\n')
    )
    expect(loadPromptFile(file)).toEqual([
      { id: '81', category: 'writing', text: 'first turn' },
      { id: null, category: null, text: 'How many eggs?' },
      { id: 'HumanEval/0', category: null, text: 'def f():\n' },
      { id: null, category: null, text: 'Once upon a time' }
    ])
  })

  it.runIf(fs.existsSync(datasets))('loads the shared MT-Bench, Spec-Bench, GSM8K and HumanEval files', () => {
    expect(loadPromptFile(path.join(datasets, 'mt_bench.jsonl'))).toHaveLength(80)
    expect(loadPromptFile(path.join(datasets, 'spec_bench.jsonl'))[0].category).toBe('writing')
    expect(loadPromptFile(path.join(datasets, 'gsm8k_test.jsonl'))[0].text).toMatch(/^Janet/)
    expect(loadPromptFile(path.join(datasets, 'humaneval.jsonl'))[0].id).toBe('HumanEval/0')
  })

  it('names the file and line of a bad record', () => {
    const file = tempFile(`${JSON.stringify({ text: 'ok' })}\n{not json\n`)
    expect(() => loadPromptFile(file)).toThrow(new UserInputError(`${file}:2: not valid JSON`))
    const shapeless = tempFile(JSON.stringify({ title: 'no prompt here' }))
    expect(() => loadPromptFile(shapeless)).toThrow(/p\.jsonl:1: expected a "turns", "question", "prompt" or "text" field/)
    expect(() => loadPromptFile('/no/such.jsonl')).toThrow(/prompt file not found: \/no\/such.jsonl/)
  })

  it('refuses a line that is not a JSON object with one clear error', () => {
    for (const [line, got] of [['null', 'null'], ['42', 'a number'], ['[{"text": "x"}]', 'an array'], ['"text"', 'a string']]) {
      const file = tempFile(`${JSON.stringify({ text: 'ok' })}\n${line}\n`)
      expect(() => loadPromptFile(file)).toThrow(
        new UserInputError(`${file}:2: expected a JSON object with a "turns", "question", "prompt" or "text" field, got ${got}`)
      )
    }
  })

  it('accepts a UTF-8 byte-order mark and CRLF line ends', () => {
    const file = tempFile(`\uFEFF${JSON.stringify({ text: 'first' })}\r\n${JSON.stringify({ text: 'second' })}\r\n`)
    expect(loadPromptFile(file).map((p) => p.text)).toEqual(['first', 'second'])
  })

  it('ships every built-in set, and mixed is the union of the general-purpose ones (copy stays out)', () => {
    for (const d of BUILTIN_DATASETS.filter((d) => d !== 'mixed')) expect(loadBuiltinDataset(d).length, d).toBeGreaterThanOrEqual(4)
    expect(MIXED_DATASETS).toEqual(['stories', 'chat', 'code', 'math'])
    expect(loadBuiltinDataset('mixed')).toEqual(MIXED_DATASETS.flatMap((d) => loadBuiltinDataset(d)))
    expect(loadBuiltinDataset('mixed').some((p) => p.id?.startsWith('copy-'))).toBe(false)
    expect(loadBuiltinDataset('stories')[0]).toMatchObject({ id: 'stories-1', category: 'story' })
    expect(() => loadBuiltinDataset('nope')).toThrow(/unknown dataset 'nope'/)
  })

  it('copy: 20 prompts, 5 per category interleaved, each a passage and then an opening that copies part of it', () => {
    const copy = loadBuiltinDataset('copy')
    expect(BUILTIN_DATASETS).toContain('copy')
    expect(copy).toHaveLength(20)
    expect(new Set(copy.map((p) => p.id)).size).toBe(20)
    const categories = ['summarise', 'rewrite', 'extract', 'code-edit']
    // Interleaved, so --limit 4 (the Workbench preset) and one per category alike cover every task.
    expect(copy.map((p) => p.category)).toEqual(Array.from({ length: 20 }, (_, i) => categories[i % 4]))
    expect(loadPrompts({ dataset: 'copy', perCategory: 1 }).map((p) => p.id)).toEqual(['copy-1', 'copy-2', 'copy-3', 'copy-4'])
    const words = (text: string) => text.match(/[A-Za-z0-9_]+/g) ?? []
    const pairs = (w: string[]) => new Set(w.slice(1).map((x, i) => `${w[i]} ${x}`))
    for (const prompt of copy) {
      // The passage, a blank line, then the instruction / opening the continuation starts from.
      const cut = prompt.text.lastIndexOf('\n\n')
      expect(cut, prompt.id!).toBeGreaterThan(0)
      const passage = words(prompt.text.slice(0, cut))
      const opening = words(prompt.text.slice(cut))
      expect(passage.length, prompt.id!).toBeGreaterThanOrEqual(20)
      const shared = [...pairs(opening)].filter((pair) => pairs(passage).has(pair))
      expect(shared.length, `${prompt.id} repeats words of its passage`).toBeGreaterThan(0)
      if (prompt.category === 'code-edit') expect(prompt.text, prompt.id!).toMatch(/The same code with .+ changed/)
    }
  })

  it('applies --limit and rejects both sources at once', () => {
    expect(loadPrompts({ dataset: 'stories', limit: 3 })).toHaveLength(3)
    expect(() => loadPrompts({ dataset: 'stories', file: '/x.jsonl' })).toThrow(/either --prompts or --dataset/)
  })
})
