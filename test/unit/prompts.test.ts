/** Prompt sets: the four JSONL shapes of the papers' datasets, the built-in sets, and clear errors. */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { BUILTIN_DATASETS, MAX_PROMPT_FILE_BYTES, MIXED_DATASETS, loadBuiltinDataset, loadPromptFile, loadPrompts } from '../../electron/experiments/prompts'
import { importPromptFile } from '../../electron/host/workbench'

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

  it('reads only regular files: a FIFO and a device are one line at once, never a read that blocks', () => {
    const fifo = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-fifo-')), 'prompts.jsonl')
    if (spawnSync('mkfifo', [fifo]).status !== 0) return void console.warn('prompts: SKIPPED the FIFO check: mkfifo failed')
    // Nobody writes to the FIFO: a plain read would block this test (and the engine, in browser mode) for ever.
    expect(() => loadPromptFile(fifo)).toThrow(new UserInputError(`prompt file ${fifo} is a FIFO (named pipe), not a regular file: save the text to a file and give that`))
    expect(() => importPromptFile(fifo)).toThrow(/is a FIFO \(named pipe\), not a regular file/)
    expect(() => loadPromptFile('/dev/zero')).toThrow(new UserInputError('prompt file /dev/zero is a character device, not a regular file: save the text to a file and give that'))
    expect(() => loadPromptFile(os.tmpdir())).toThrow(new UserInputError(`prompt file ${os.tmpdir()} is a directory, not a file`))
  })

  it('refuses a file over the size limit with one line naming the limit', () => {
    const file = tempFile('')
    fs.truncateSync(file, MAX_PROMPT_FILE_BYTES + 1) // sparse: no disk space taken
    expect(() => loadPromptFile(file)).toThrow(new UserInputError(`prompt file ${file} is 64 MiB; prompt files are limited to 64 MiB`))
    fs.truncateSync(file, 3 * 2 ** 30)
    expect(() => loadPromptFile(file)).toThrow(/is 3 GiB; prompt files are limited to 64 MiB$/)
  })

  it('refuses bytes that are not UTF-8, naming the line and the byte offset', () => {
    const file = tempFile('')
    const write = (...parts: (string | number[])[]) => fs.writeFileSync(file, Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)))))
    write('{"text": "fine é"}\n{"text": "caf', [0xe9], '"}\n') // line 2 starts at byte 20 (é is two bytes)
    expect(() => loadPromptFile(file)).toThrow(new UserInputError(`${file}:2: not UTF-8 at byte offset 33 (0xe9); save the prompt file as UTF-8`))
    write('{"text": "', [0xff], '"}')
    expect(() => loadPromptFile(file)).toThrow(`${file}:1: not UTF-8 at byte offset 10 (0xff)`)
    write('{"text": "x', [0xe2, 0x82], '"}') // a character cut short: reported at its first byte
    expect(() => loadPromptFile(file)).toThrow(`${file}:1: not UTF-8 at byte offset 11 (0xe2)`)
    write('{"text": "', [0xe2, 0x82])
    expect(() => loadPromptFile(file)).toThrow(`${file}:1: not UTF-8 at byte offset 10 (0xe2)`)
    write('{"text": "€ and U+FFFD \uFFFD written as such"}\n')
    expect(loadPromptFile(file)[0].text).toBe('€ and U+FFFD \uFFFD written as such')
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
