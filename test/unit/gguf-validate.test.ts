/**
 * The bounded GGUF header scan (engine/model/gguf-validate.ts): every crafted header of test/helpers/gguf-craft.ts
 * is refused with one line naming the file and the field, through the validator itself, assertGgufFile (every load
 * and the CLI) and the model library (`models:add`, the trio check); every shared model is accepted, fast.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { validateGgufFile } from '../../electron/engine/model/gguf-validate'
import { assertGgufFile } from '../../electron/engine/model/llama-cpp-model'
import { checkModelFile, ModelLibrary, readGgufSummary } from '../../electron/host/model-library'
import type { AppStore, ModelRow } from '../../electron/store/app-store'
import { writeCraftedGgufs, type CraftedGguf } from '../helpers/gguf-craft'
import { describeWithModels, MODELS_DIR, modelPath } from '../helpers/gguf'

const BASE = 'stories260K-f32.gguf'
const INFLATED = 'family/stories-target5M-inflated-78M-f16.gguf'

let dir: string
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-gguf-validate-'))
})
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

async function refusal(check: Promise<unknown>): Promise<string> {
  const error = await check.then(
    () => null,
    (e: unknown) => e
  )
  expect(error).toBeInstanceOf(UserInputError)
  const message = (error as UserInputError).message
  expect(message.split('\n')).toHaveLength(1)
  return message
}

/** A GGUF header from raw parts: magic, version, tensor count, KV count (little-endian). */
function header(version: number, tensors: bigint, kvs: bigint, extra = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(24)
  b.write('GGUF', 0, 'latin1')
  b.writeUInt32LE(version, 4)
  b.writeBigUInt64LE(tensors, 8)
  b.writeBigUInt64LE(kvs, 16)
  return Buffer.concat([b, extra])
}

/** One metadata entry: a key and a u32 value (GGUF type 4). */
function keyValueU32(key: string, value: number): Buffer {
  const name = Buffer.from(key, 'utf8')
  const b = Buffer.alloc(8 + name.length + 8)
  b.writeBigUInt64LE(BigInt(name.length), 0)
  name.copy(b, 8)
  b.writeUInt32LE(4, 8 + name.length)
  b.writeUInt32LE(value, 12 + name.length)
  return b
}

describe('gguf-validate without models', () => {
  it.each([
    ['a missing file', null, /^model file not found: .*missing\.gguf$/],
    ['a text file', Buffer.from('not a model at all\n'), /: not a GGUF model file$/],
    ['the 4 magic bytes alone', Buffer.from('GGUF'), /: the GGUF version at byte 4 needs 4 bytes, but the file ends at byte 4/],
    ['GGUF version 1', header(1, 0n, 0n), /: GGUF version is 1 \(must be 2 or 3\)$/],
    ['a tensor count of 2^40', header(3, 2n ** 40n, 0n), /: tensor count is 1099511627776 \(must be ≤ 0/],
    ['a KV count of 2^40', header(3, 0n, 2n ** 40n, Buffer.alloc(100)), /: metadata key count is 1099511627776 \(must be ≤ 7: /],
    ['no architecture', header(3, 0n, 0n), /: general.architecture is missing/],
    ['a key with a newline in it', header(3, 0n, 2n, Buffer.concat([keyValueU32('a\nb', 1), keyValueU32('a\nb', 1)])), /: a\\u000ab appears twice/]
  ])('%s is refused with one line naming the file', async (name, bytes, message) => {
    const file = path.join(dir, `${name.replace(/\W+/g, '-')}.gguf`.replace('a-missing-file', 'missing'))
    if (bytes) fs.writeFileSync(file, bytes)
    const text = await refusal(validateGgufFile(file))
    expect(text).toContain(file)
    expect(text).toMatch(message)
  })
})

const withModels = describeWithModels('test/unit/gguf-validate.test.ts', [BASE])

withModels('gguf-validate on crafted copies of a shared model', () => {
  let crafted: CraftedGguf[]
  beforeAll(() => {
    crafted = writeCraftedGgufs(modelPath(BASE), dir)
  })
  const refused = () => crafted.filter((c) => c.field !== null)

  it('every crafted header is refused by the scan, naming the file and the field', async () => {
    expect(refused().length).toBeGreaterThanOrEqual(15)
    for (const c of refused()) {
      const message = await refusal(validateGgufFile(c.file))
      expect(message, c.name).toContain(`${c.file}: `)
      expect(message, c.name).toContain(c.field!)
      expect(message, c.name).toMatch(/\(.*must .*\)$/)
    }
  })

  it('assertGgufFile (every load, the CLI) and the library (models:add, trio check) refuse them the same way', async () => {
    for (const c of refused()) {
      expect(await refusal(assertGgufFile(c.file)), c.name).toContain(c.field!)
      expect(await refusal(checkModelFile(c.file)), c.name).toContain(c.field!)
      expect(await refusal(readGgufSummary(c.file)), c.name).toContain(c.field!)
    }
  })

  it('models:add refuses them before storing; a crafted file already in the library fails get and the trio check', async () => {
    const rows: ModelRow[] = []
    const store = {
      listModels: () => rows,
      addModel: () => {
        throw new Error('a refused file must not be stored')
      }
    } as unknown as AppStore
    const library = new ModelLibrary(() => store)
    rows.push({ id: 1, path: modelPath(BASE), source: 'file', uri: null, addedAt: '' } as ModelRow)
    for (const [i, c] of refused().entries()) {
      expect(await refusal(library.add(c.file)), c.name).toContain(c.field!)
      // The file was swapped for a crafted one after it was added.
      rows.push({ id: 2 + i, path: c.file, source: 'file', uri: null, addedAt: '' } as ModelRow)
      const message = await refusal(library.get(2 + i))
      expect(message, c.name).toContain(`${c.file}: `)
      expect(message, c.name).toContain(c.field!)
      expect(await refusal(library.checkTrio({ target: 1, mid: null, draft: 2 + i })), c.name).toContain(c.field!)
    }
  })

  it('a 2^40 array count is refused at once, without node-llama-cpp reading the header', async () => {
    const file = crafted.find((c) => c.name === 'scores-2e40')!.file
    const start = performance.now()
    await refusal(readGgufSummary(file))
    expect(performance.now() - start).toBeLessThan(500)
  })

  it('NaN weights pass the header scan (they fail at decode time, naming the model)', async () => {
    const nan = crafted.find((c) => c.name === 'nan-weights')!
    expect((await validateGgufFile(nan.file)).architecture).toBe('llama')
  })
})

const sharedModels = (): string[] =>
  ['.', 'family']
    .map((sub) => path.join(MODELS_DIR, sub))
    .filter((d) => fs.existsSync(d))
    .flatMap((d) => fs.readdirSync(d).filter((f) => f.endsWith('.gguf')).map((f) => path.join(d, f)))

withModels('gguf-validate on the shared models', () => {
  it('accepts every shared model, each in tens of milliseconds', async () => {
    const files = sharedModels()
    expect(files.length).toBeGreaterThanOrEqual(8)
    for (const file of files) {
      const start = performance.now()
      const scan = await validateGgufFile(file)
      const ms = performance.now() - start
      expect(scan.architecture, file).toBe('llama')
      expect(scan.vocabularySize, file).toBeGreaterThanOrEqual(512)
      expect(scan.sizeBytes, file).toBe(fs.statSync(file).size)
      expect(ms, file).toBeLessThan(250)
    }
  })

  it.skipIf(!fs.existsSync(modelPath(INFLATED)))('scans the 78M inflated model in tens of milliseconds', async () => {
    await validateGgufFile(modelPath(INFLATED)) // warm the file cache
    const runs: number[] = []
    for (let i = 0; i < 5; i++) {
      const start = performance.now()
      await validateGgufFile(modelPath(INFLATED))
      runs.push(performance.now() - start)
    }
    const median = runs.sort((a, b) => a - b)[2]
    console.log(`gguf-validate on ${INFLATED}: median ${median.toFixed(2)} ms of 5`)
    expect(median).toBeLessThan(50)
  })
})
