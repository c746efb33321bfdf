/**
 * `speclab ngram-cache build` end to end: a static cache built from the built-in `copy` prompts with the target's
 * tokenizer is llama.cpp's format (it parses back to the corpus's 2-grams), a run reads it (`--set
 * ngramcache.static=`, recorded in the run's parameters, greedy text = ar's), and bad input — a non-GGUF model, a
 * missing or binary corpus, an unwritable output, a corpus a byte-fallback-less tokenizer would abort llama.cpp on, a
 * corrupt cache, a cache of another tokenizer — gets one line and exit 2.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildStaticCache, NgramCache } from '../../electron/engine/lookup/ngram-cache'
import { describeWithModels, modelPath } from '../helpers/gguf'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const TARGET = 'family/stories-target5M-f32.gguf'
const OTHER_VOCABULARY = 'tinystories-656k-f32.gguf'
const withModels = describeWithModels('test/integration/ngram-cache-cli.test.ts', [TARGET, OTHER_VOCABULARY])
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')
const corpus = path.join(root, 'resources/prompts/copy.jsonl')

let dir: string

function speclab(...args: string[]) {
  const result = spawnSync(tsx, [cli, ...args], { cwd: root, encoding: 'utf8' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** One line on stderr, starting with "speclab: ". */
const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n')
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(/^speclab: /)
  return lines[0]
}

withModels('speclab ngram-cache build', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-ngram-cache-'))
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('builds a static cache from a JSONL corpus that a run reads and drafts from', () => {
    const out = path.join(dir, 'static.bin')
    const built = speclab('ngram-cache', 'build', '--model', modelPath(TARGET), '--corpus', corpus, '--out', out, '--json')
    expect(built.code).toBe(0)
    const summary = JSON.parse(built.stdout)
    expect(summary).toMatchObject({ out, tokens: expect.any(Number), ngrams: expect.any(Number) })
    expect(summary.tokens).toBeGreaterThan(2000)
    const cache = NgramCache.parse(fs.readFileSync(out), out)
    expect(cache.size).toBe(summary.ngrams)
    expect([...cache.parts.keys()].every((key) => key.split(',').length === 2)).toBe(true)

    const db = path.join(dir, 'runs.sqlite')
    const run = speclab('run', '--target', modelPath(TARGET), '--methods', 'ar,ngram-cache', '--set', `ngramcache.static=${out}`, '--dataset', 'copy', '--limit', '2',
      '--max-tokens', '32', '--temperature', '0', '--repeats', '1', '--db', db, '--json')
    expect(run.code, run.stderr).toBe(0)
    const report = JSON.parse(run.stdout)
    expect(report.config.params).toEqual({ 'ngramcache.nDraft': 8, 'ngramcache.static': out })
    const [ar, lookup] = report.methods
    expect(lookup.outputs).toEqual(ar.outputs)
    expect(lookup.draftTokens).toBeGreaterThan(0)
  })

  it('bad input: one line, exit 2', () => {
    const out = path.join(dir, 'x.bin')
    const binary = path.join(dir, 'binary.txt')
    fs.writeFileSync(binary, Buffer.from([1, 0, 2, 0]))
    const cases: [string[], RegExp][] = [
      [['--model', corpus, '--corpus', corpus, '--out', out], /not a GGUF model file/],
      [['--model', modelPath(TARGET), '--corpus', path.join(dir, 'missing.txt'), '--out', out], /no such corpus file/],
      [['--model', modelPath(TARGET), '--corpus', binary, '--out', out], /a binary file, not a text corpus/],
      [['--model', modelPath(TARGET), '--corpus', corpus, '--out', path.join(dir, 'no-such-dir', 'x.bin')], /cannot write the cache \(ENOENT\)/]
    ]
    for (const [args, message] of cases) {
      const result = speclab('ngram-cache', 'build', ...args)
      expect(result.code, args.join(' ')).toBe(2)
      expect(oneLine(result.stderr)).toMatch(message)
    }
    // A run with a corrupt cache, or one built with another tokenizer (656k's ids go past target5M's 512).
    const db = path.join(dir, 'bad.sqlite')
    const corrupt = speclab('run', '--target', modelPath(TARGET), '--methods', 'ngram-cache', '--set', `ngramcache.static=${binary}`, '--db', db)
    expect(corrupt.code).toBe(2)
    expect(oneLine(corrupt.stderr)).toMatch(/ngramcache\.static: .*not an n-gram cache file/)
    // 656k's SentencePiece vocabulary has no byte fallback: the code-edit prompts' brackets would abort llama.cpp.
    const foreign = path.join(dir, 'foreign.bin')
    const unencodable = speclab('ngram-cache', 'build', '--model', modelPath(OTHER_VOCABULARY), '--corpus', corpus, '--out', foreign)
    expect(unencodable.code).toBe(2)
    expect(oneLine(unencodable.stderr)).toMatch(/its tokenizer has no token for .* and no byte fallback/)
    fs.writeFileSync(foreign, buildStaticCache([1, 600, 2]).serialize())
    const mismatch = speclab('run', '--target', modelPath(TARGET), '--methods', 'ngram-cache', '--set', `ngramcache.static=${foreign}`, '--limit', '1', '--max-tokens', '8', '--db', db)
    // (Found when the run starts, after its "seed" line: the run is stored as failed with this message.)
    expect(mismatch.code).toBe(2)
    expect(mismatch.stderr.trim().split('\n').at(-1)).toMatch(/beyond the target's vocabulary of 512 — it was built with another tokenizer/)
  })
})
