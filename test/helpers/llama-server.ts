/**
 * The llama-server tests' gate: `describe` when the llama-server binary (`npm run build:llama-server`, or
 * SPECLAB_LLAMA_SERVER) and the models are there; skipped with a banner otherwise — or failing where
 * SPECLAB_REQUIRE_LLAMA_SERVER=1 (CI builds the binary first: .ci/run).
 */
import { describe, expect, it } from 'vitest'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import { describeWithModels } from './gguf'

export function describeWithLlamaServer(testFile: string, models: readonly string[]): typeof describe | typeof describe.skip {
  const found = findLlamaServer()
  if (found.path !== null) return describeWithModels(testFile, models)
  if (process.env.SPECLAB_REQUIRE_LLAMA_SERVER === '1') {
    it('llama-server is built (SPECLAB_REQUIRE_LLAMA_SERVER=1)', () => expect.fail(found.reason))
    return describe.skip
  }
  console.warn(`\n${'!'.repeat(100)}\n!! SKIPPING ${testFile}: ${found.reason}\n${'!'.repeat(100)}\n`)
  return describe.skip
}
