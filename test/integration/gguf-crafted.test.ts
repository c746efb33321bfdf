/**
 * Crafted GGUF files end to end through the CLI (test/helpers/gguf-craft.ts): unchecked, each would abort the
 * process (llama.cpp GGML_ASSERT, exit 134), exhaust memory in node-llama-cpp's header reader, or fail with a stray
 * TypeError; each must exit 2 with exactly one `speclab:` line naming the file and the field. NaN weights pass the
 * header scan and fail at the first decode, naming the model file.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { RECIPES, writeCraftedGgufs } from '../helpers/gguf-craft'
import { describeWithModels, missingModels, modelPath } from '../helpers/gguf'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const BASE = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/gguf-crafted.test.ts', [BASE])

const cli = path.join(root, 'electron/cli.ts')
const haveModels = missingModels([BASE]).length === 0
const dir = haveModels ? fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-gguf-crafted-')) : os.tmpdir()
const crafted = haveModels ? writeCraftedGgufs(modelPath(BASE), dir) : []
const fileOf = (name: string) => crafted.find((c) => c.name === name)?.file ?? path.join(dir, `${name}.gguf`)

function run(file: string) {
  // node --import tsx: one process fewer than tsx's own wrapper (the CLI still supervises a child of its own).
  const args = ['--import', 'tsx', cli, 'run', '--target', file, '--methods', 'ar', '--limit', '1', '--max-tokens', '4', '--db', path.join(dir, 'runs.sqlite')]
  const result = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', timeout: 60_000 })
  const lines = result.stderr.split('\n').filter((line) => line.startsWith('speclab:'))
  return { code: result.status, signal: result.signal, lines, stderr: result.stderr }
}

afterAll(() => {
  if (haveModels) fs.rmSync(dir, { recursive: true, force: true })
})

withModels('crafted GGUF files through the CLI', () => {
  it.each(RECIPES.filter((r) => r.field !== null).map((r) => [r.name, r.field!]))(
    '%s exits 2 with one line naming the file and the field',
    (name, field) => {
      const file = fileOf(name)
      const { code, signal, lines, stderr } = run(file)
      expect(signal, stderr).toBeNull()
      expect(code, stderr).toBe(2)
      expect(lines, stderr).toHaveLength(1)
      expect(lines[0]).toContain(`speclab: ${file}: `)
      expect(lines[0]).toContain(field)
      // Refused by the header scan, before llama.cpp's loader logs a line.
      expect(stderr).not.toMatch(/llama_model_load|\[node-llama-cpp\]/)
    }
  )

  it('NaN weights pass the header scan and exit 2 at the first decode, naming the model file', () => {
    const file = fileOf('nan-weights')
    const { code, signal, lines, stderr } = run(file)
    expect(signal, stderr).toBeNull()
    expect(code, stderr).toBe(2)
    expect(lines, stderr).toHaveLength(1)
    expect(lines[0]).toContain(`speclab: ${file}: `)
    expect(lines[0]).toMatch(/NaN logits/)
  })
})
