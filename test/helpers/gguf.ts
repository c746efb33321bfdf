/**
 * Conventions shared by the integration tests that run real GGUF models: where the models live, how a test file
 * skips (loudly) without them, and the rule by which greedy outputs of two decoders count as equivalent.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect } from 'vitest'
import type { LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import { decode, makeRequest } from './decode'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const DEFAULT_MODELS_DIR = path.resolve(ROOT, '../shared/models')

/** The shared models folder: $SPECLAB_MODELS, default ../shared/models next to the project (see its README.md). */
export const MODELS_DIR = path.resolve(process.env.SPECLAB_MODELS ?? DEFAULT_MODELS_DIR)

/** Absolute path of a model file given relative to MODELS_DIR, e.g. 'family/stories-target5M-f32.gguf'. */
export function modelPath(relative: string): string {
  return path.join(MODELS_DIR, relative)
}

/** The absolute paths among `files` (relative to MODELS_DIR) that are absent; the folder itself when it is. */
export function missingModels(files: readonly string[]): string[] {
  if (!fs.existsSync(MODELS_DIR)) return [MODELS_DIR]
  return files.map(modelPath).filter((file) => !fs.existsSync(file))
}

/**
 * `describe` when every one of `files` is there, else `describe.skip` after a banner that cannot be missed in the
 * output: a quietly skipped model suite would read as a pass.
 */
export function describeWithModels(testFile: string, files: readonly string[]): typeof describe | typeof describe.skip {
  const missing = missingModels(files)
  if (missing.length === 0) return describe
  console.warn(
    `\n${'!'.repeat(100)}\n` +
      `!! SKIPPING ${testFile}: missing\n` +
      `!! ${missing.join('\n!! ')}\n` +
      `!! Set SPECLAB_MODELS to the folder holding the shared models (default: ${DEFAULT_MODELS_DIR}).\n` +
      `${'!'.repeat(100)}\n`
  )
  return describe.skip
}

/** Greedy over the top 64: the warp of every greedy-equivalence test on real models. */
export const GREEDY_64: WarpConfig = { temperature: 0, topK: 64, topP: 1 }

/**
 * Largest gap between the target's top two probabilities at which a greedy divergence is forgiven: batched and
 * single-token evaluation round differently, which can flip a near-tie but nothing wider.
 */
export const NEAR_TIE = 0.02

/**
 * Greedy `tokens` must equal the greedy `reference` (ar on `target`) after `promptTokens`. A divergence is tolerated
 * only where the target's top two tokens are within NEAR_TIE at the first differing position and the two outputs
 * chose exactly those two tokens; one output stopping early (a prefix of the other) is not. Fails the test otherwise.
 */
export async function expectSameOrNearTie(
  label: string,
  target: LlamaCppModel,
  promptTokens: readonly number[],
  reference: readonly number[],
  tokens: readonly number[]
): Promise<'identical' | 'near-tie'> {
  let i = 0
  while (i < reference.length && i < tokens.length && reference[i] === tokens[i]) i++
  if (i === reference.length && i === tokens.length) return 'identical'

  const prefix = [...promptTokens, ...reference.slice(0, i)]
  const session = await target.createSession(GREEDY_64)
  const [p] = await session.append(prefix, prefix.length - 1)
  await session.dispose()
  const gap = p.probs[0] - (p.probs[1] ?? 0)
  const text = (token: number | undefined) => (token === undefined ? '(end)' : JSON.stringify(target.tokenText(token)))
  console.log(
    `${label} "${target.detokenize(promptTokens).trim().slice(0, 30)}…": diverges from ar at token ${i} ` +
      `(ar ${text(reference[i])} vs ${text(tokens[i])}); ` +
      `target top-2 ${text(p.ids[0])} ${p.probs[0].toFixed(4)} / ${text(p.ids[1])} ${p.probs[1]?.toFixed(4)}, gap ${gap.toFixed(4)}`
  )
  expect(gap, `${label}: divergence at token ${i} is not a near-tie (gap ${gap})`).toBeLessThan(NEAR_TIE)
  expect(i, `${label}: one output is a prefix of the other`).toBeLessThan(Math.min(reference.length, tokens.length))
  expect([reference[i], tokens[i]].sort()).toEqual([p.ids[0], p.ids[1]].sort())
  return 'near-tie'
}

/**
 * A prompt that copies, with greedy ar's tokens after it: an opening, the target's own greedy continuation of it
 * (`continuation` tokens), then the opening again — the target then partly re-tells what it told, which is where
 * lookups pay. Used by the tests of the model-free and tree methods.
 */
export async function copyingPrompt(
  target: LlamaCppModel,
  opening: string,
  continuation: number,
  maxTokens: number
): Promise<{ promptTokens: number[]; reference: number[] }> {
  const first = await decode(autoregressive, { target }, makeRequest({ promptTokens: [target.info.bos!, ...target.tokenize(opening)], maxTokens: continuation, warp: GREEDY_64 }))
  const promptTokens = [target.info.bos!, ...target.tokenize(`${opening} ${target.detokenize(first.tokens).trimStart()}\n${opening}`)]
  const reference = (await decode(autoregressive, { target }, makeRequest({ promptTokens, maxTokens, warp: GREEDY_64 }))).tokens
  return { promptTokens, reference }
}
