/**
 * Padded vocabularies on real GGUF models (node-llama-cpp, CPU, one thread). test/helpers/gguf-pad.ts writes, into a
 * temp dir, copies of the stories family padded from 512 to 600 tokens (`<pad_k>` entries, rows with real mass, a
 * few near-copies of frequent tokens so padded ids win the argmax):
 *   A. padded target5M ← unpadded mid1M ← unpadded 260K: the target emits ids its drafts lack;
 *   B. unpadded target5M ← padded mid1M ← padded 260K: the drafts propose ids the target lacks.
 * Both trios pass the vocabulary check (sizes differ by 88), and every method of the catalog (with chen.residual for
 * hier-chen; beam and DSBD on the same trios; nlc-draft too) reproduces greedy `ar` on the trio's target — a
 * divergence only where the target's top two tokens are within 0.02 (expectSameOrNearTie, test/helpers/gguf.ts).
 * Models load once; few prompts × 24 tokens.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import type { DecoderModels } from '../../electron/engine/decoders/types'
import { CATALOG, isLlamaServerMethod } from '../../electron/engine/methods/catalog'
import type { RawParams as MethodParams } from '../../electron/engine/methods/param-spec'
import { needsSharedVocabulary, prepare } from '../../electron/engine/methods/prepare'
import { loadLlamaModel, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { assertSameVocabulary } from '../../electron/engine/model/vocabulary-check'
import { ModelLibrary, readGgufSummary, vocabularyCompatibility } from '../../electron/host/model-library'
import type { AppStore, ModelRow } from '../../electron/store/app-store'
import { decode, makeRequest } from '../helpers/decode'
import { describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'
import { writePaddedGguf } from '../helpers/gguf-pad'

const FILES = {
  target: 'family/stories-target5M-f32.gguf',
  mid: 'family/stories-mid1M-f32.gguf',
  draft: 'stories260K-f32.gguf'
} as const
type Role = keyof typeof FILES
const withModels = describeWithModels('test/integration/vocabulary-padding-gguf.test.ts', Object.values(FILES))

const PADDED_SIZE = 600
/** Frequent tokens whose near-copies the padded ids include, so a padded model picks padded ids greedily. */
const ALIASES = ['▁the', '.', '▁was', '▁and', '▁a', ',', '▁to', '▁He', '▁She', '▁they', '▁her', '▁his', '▁said', '▁big']
const MAX_TOKENS = 24
const SEQUENCES = 8
const PROMPTS = ['Once upon a time, there was a little dog named Max.', 'Lily went to the park with her mom. She saw a big red ball']

/** Every method of the catalog that needs a shared vocabulary, with the parameters the greedy test uses. */
const METHODS: { method: string; gamma: number; params: MethodParams }[] = [
  { method: 'sd', gamma: 4, params: {} },
  { method: 'sd', gamma: 4, params: { 'sd.parallel': true } },
  { method: 'pearl', gamma: 4, params: {} },
  { method: 'sd-heuristic', gamma: 3, params: {} },
  { method: 'sd-pmin', gamma: 4, params: { 'pmin.p': 0.5 } },
  { method: 'svip', gamma: 4, params: {} },
  { method: 'self-verify', gamma: 4, params: {} },
  { method: 'adaptive-analytic', gamma: 4, params: {} },
  { method: 'adaptive-fsm', gamma: 4, params: {} },
  { method: 'adaptive-cache-fsm', gamma: 4, params: {} },
  { method: 'adaptive-rl', gamma: 4, params: {} },
  { method: 'pre-verify', gamma: 3, params: { 'pre.window': 5 } },
  { method: 'pre-self-verify', gamma: 4, params: {} },
  { method: 'hsddw', gamma: 3, params: {} },
  { method: 'hier-chen', gamma: 1, params: { 'chen.m': 2, 'chen.n': 2, 'chen.residual': true } },
  { method: 'beam', gamma: 1, params: { 'beam.width': 3 } },
  { method: 'dsbd', gamma: 3, params: { 'dsbd.ws': 3 } },
  { method: 'dsbd-1beam', gamma: 3, params: { 'dsbd.ws': 3 } },
  // nlc.minTokens 1: node-llama-cpp's predictor is waited for one token per step. With its default 0 a step takes
  // whatever was predicted so far in the background, which on a busy machine can be nothing for a whole decode.
  { method: 'nlc-draft', gamma: 4, params: { 'nlc.minTokens': 1 } },
  { method: 'sd+ngram', gamma: 4, params: { 'sdngram.n': 3, 'sdngram.m': 8 } },
  { method: 'sd-tree', gamma: 4, params: { 'tree.pSplit': 0.05 } },
  { method: 'sd-tree+ngram', gamma: 4, params: { 'treengram.pSplit': 0.05 } }
]

withModels('padded vocabularies (512 → 600 tokens) on the stories family: every method = greedy ar', () => {
  let dir: string
  const plain = {} as Record<Role, LlamaCppModel>
  const padded = {} as Record<Role, LlamaCppModel>
  const paddedFiles = {} as Record<Role, string>
  const trios: { name: string; models: () => DecoderModels & { target: LlamaCppModel } }[] = [
    { name: 'A: padded target ← mid ← draft', models: () => ({ target: padded.target, mid: plain.mid, draft: plain.draft }) },
    { name: 'B: target ← padded mid ← padded draft', models: () => ({ target: plain.target, mid: padded.mid, draft: padded.draft }) }
  ]
  const arCache = new Map<string, number[]>()

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-padded-'))
    for (const [i, role] of (['target', 'mid', 'draft'] as const).entries()) {
      paddedFiles[role] = path.join(dir, `${role}-padded-${PADDED_SIZE}.gguf`)
      writePaddedGguf(modelPath(FILES[role]), paddedFiles[role], { size: PADDED_SIZE, seed: 1 + i, aliases: ALIASES })
      const options = { threads: 1, contextSize: 512, sequences: SEQUENCES }
      plain[role] = await loadLlamaModel(modelPath(FILES[role]), options)
      padded[role] = await loadLlamaModel(paddedFiles[role], options)
    }
  })
  afterAll(async () => {
    for (const model of [...Object.values(plain), ...Object.values(padded)]) await model?.dispose()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  const promptTokens = (model: LlamaCppModel, text: string): number[] => [model.info.bos!, ...model.tokenize(text)]

  async function arTokens(target: LlamaCppModel, prompt: string): Promise<number[]> {
    const key = `${target.info.path}|${prompt}`
    if (!arCache.has(key)) {
      const ar = await decode(autoregressive, { target }, makeRequest({ promptTokens: promptTokens(target, prompt), maxTokens: MAX_TOKENS, warp: GREEDY_64 }))
      arCache.set(key, ar.tokens)
    }
    return arCache.get(key)!
  }

  it('the fixtures: 600 tokens, the check accepts both directions (loaded and from the headers) and says why', async () => {
    for (const role of ['target', 'mid', 'draft'] as const) {
      expect(padded[role].info.vocabularySize).toBe(PADDED_SIZE)
      expect(padded[role].tokenText(PADDED_SIZE - 1)).toBe(`<pad_${PADDED_SIZE - 513}>`)
    }
    for (const trio of trios) {
      const { target, mid, draft } = trio.models()
      expect(() => assertSameVocabulary([target, mid!, draft!])).not.toThrow()
    }
    const verdict = vocabularyCompatibility(await readGgufSummary(paddedFiles.target), await readGgufSummary(modelPath(FILES.draft)))
    expect(verdict).toMatchObject({ compatible: true, sizeDifference: 88, commonSize: 512 })
    // Still refused: another tokenizer's vocabulary (2,048 tokens).
    const other = await readGgufSummary(modelPath('tinystories-656k-f32.gguf')).catch(() => null)
    if (other) expect(vocabularyCompatibility(await readGgufSummary(paddedFiles.target), other)).toMatchObject({ compatible: false, rule: 'size' })
  })

  it("the Models screen's trio check says which rule held for the padded trio", async () => {
    const files = [paddedFiles.target, modelPath(FILES.mid), modelPath(FILES.draft)]
    const rows = files.map((file, i) => ({ id: i + 1, path: file, source: 'file', uri: null, addedAt: '', loadingSince: null, loadingOwner: null, loadError: null }))
    const library = new ModelLibrary(() => ({ listModels: () => rows as unknown as ModelRow[] }) as unknown as AppStore)
    const check = await library.checkTrio({ target: 1, mid: 2, draft: 3 })
    console.log(check.message)
    expect(check.compatible).toBe(true)
    expect(check.message).toMatch(/^Compatible by llama\.cpp’s rule \(same tokenizer llama, BOS 1 \/ EOS 2, add-BOS true \/ add-EOS false\): /)
    expect(check.message).toContain(
      "stories-mid1M-f32.gguf: sizes differ by 88 — padding (512 vs the target's 600 tokens); " +
        "the first 512 token texts are identical (llama.cpp's rule: from id 5)"
    )
    expect(check.pairs.map((p) => p.held?.split(':')[0])).toEqual(['stories-mid1M-f32.gguf', 'stories260K-f32.gguf'])
  })

  it('greedy ar on the padded target emits padded ids (so the drafts really see ids they lack)', async () => {
    let pads = 0
    for (const prompt of PROMPTS) pads += (await arTokens(padded.target, prompt)).filter((t) => t >= 512).length
    console.log(`padded target5M: ${pads} padded ids in ${PROMPTS.length} × ${MAX_TOKENS} greedy tokens`)
    expect(pads).toBeGreaterThanOrEqual(3)
  })

  it('every method of the catalog that verifies a draft model by id is covered', () => {
    const covered = new Set(METHODS.map((m) => m.method))
    // Model-free drafters (they draft from the target's own tokens) and methods that map between vocabularies
    // themselves (catalog `vocabulary: 'any'`) have no draft vocabulary to pad. The llama-server peers decode in
    // llama.cpp's own process, under its own vocabulary check (test/integration/llama-server-gguf.test.ts).
    const byId = CATALOG.filter((m) => needsSharedVocabulary(m) && !isLlamaServerMethod(m))
    expect(byId.filter((m) => !covered.has(m.id)).map((m) => m.id)).toEqual([])
  })

  for (const trio of trios)
    for (const { method, gamma, params } of METHODS)
      it(`${method} (γ ${gamma}, ${JSON.stringify(params)}) on ${trio.name}`, async () => {
        const models = trio.models()
        let identical = 0
        let fromDrafts = 0
        for (const prompt of PROMPTS) {
          const request = makeRequest({ promptTokens: promptTokens(models.target, prompt), maxTokens: MAX_TOKENS, warp: GREEDY_64 })
          const result = await decode(prepare(method, { gamma, params }).newRun()(), models, request)
          fromDrafts += result.provenances.filter((p) => p === 'draft' || p === 'mid').length
          const reference = await arTokens(models.target, prompt)
          if ((await expectSameOrNearTie(`${method} ${trio.name}`, models.target, request.promptTokens, reference, result.tokens)) === 'identical') identical += 1
        }
        console.log(`${method} on ${trio.name}: ${identical}/${PROMPTS.length} identical, ${fromDrafts} draft tokens kept`)
        expect(identical).toBeGreaterThanOrEqual(PROMPTS.length - 1)
        if (method !== 'beam') expect(fromDrafts).toBeGreaterThan(0)
      })
})
