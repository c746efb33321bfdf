/**
 * sd-tli on a real pair of DIFFERENT vocabularies (node-llama-cpp, CPU, one thread): the target
 * family/stories-target5M-f32 (karpathy's 512-token SentencePiece vocabulary, `▁` before words, BOS/EOS `<s>`/`</s>`)
 * drafted by tinystories-656k-q8_0 (its own 2,048-token SentencePiece vocabulary, `▁` after words, BOS/EOS
 * `<|start_story|>`/`<|end_story|>`). The vocabulary check refuses the pair for id-comparing methods and names
 * sd-tli; loaded for cross-vocabulary methods, greedy sd-tli reproduces greedy `ar` token for token (or differs only
 * at a near-tie of the target, the rule of expectSameOrNearTie), and the acceptance it reaches is reported.
 *
 * Models: $SPECLAB_MODELS, default ../shared/models next to the project.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { autoregressive } from '../../electron/engine/decoders/autoregressive'
import type { StepRecord } from '../../electron/engine/decoders/types'
import { prepare } from '../../electron/engine/methods/prepare'
import { crossVocabulary } from '../../electron/engine/model/vocabulary-bytes'
import { loadTrio, type LoadedTrio } from '../../electron/experiments/models'
import { decode, makeRequest } from '../helpers/decode'
import { describeWithModels, expectSameOrNearTie, GREEDY_64, modelPath } from '../helpers/gguf'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'tinystories-656k-q8_0.gguf'
const withModels = describeWithModels('test/integration/sd-tli-gguf.test.ts', [TARGET, DRAFT])

const MAX_TOKENS = 32
const PROMPTS = [
  'Once upon a time, there was a little dog named Max.',
  'Lily went to the park with her mom. She saw a big red ball',
  'Tom had a toy car. One day, the car broke and Tom was sad.',
  'The sun was shining and the birds were singing.'
]

withModels('sd-tli on GGUF models of different vocabularies (target5M ← tinystories-656k)', () => {
  let trio: LoadedTrio

  beforeAll(async () => {
    trio = await loadTrio({ target: modelPath(TARGET), draft: modelPath(DRAFT) }, { threads: 1, contextSize: 512, sharedVocabulary: false })
  })
  afterAll(async () => {
    await trio?.dispose()
  })

  it('the vocabulary check refuses the pair for id-comparing runs, naming sd-tli; a cross-vocabulary load keeps its reason', async () => {
    await expect(loadTrio({ target: modelPath(TARGET), draft: modelPath(DRAFT) }, { threads: 1, contextSize: 256 })).rejects.toThrow(
      /vocabulary mismatch between .*stories-target5M-f32\.gguf and .*tinystories-656k-q8_0\.gguf: .*only sd-tli.* drafts? with another tokenizer$/
    )
    expect(trio.vocabularyMismatch).toMatch(/^vocabulary mismatch between/)
    const map = crossVocabulary(trio.models.target, trio.models.draft!)
    // Single characters, " " and short pieces such as "er", "ing", " her": the 656k model puts its ▁ after words.
    expect(map.size).toBe(133)
    expect(map.draftAddsSpace).toBe(true)
  })

  it('greedy sd-tli = greedy ar, 4 prompts × 32 tokens, γ ∈ {3, 5}; reports the acceptance', async () => {
    const { target, draft } = trio.models
    const promptTokens = (text: string): number[] => [target.info.bos!, ...target.tokenize(text)]
    const totals = { proposed: 0, accepted: 0, rounds: 0, emitted: 0, targetOnly: 0, retokenised: 0, mass: 0 }
    let nearTies = 0
    for (const text of PROMPTS) {
      const request = () => makeRequest({ promptTokens: promptTokens(text), maxTokens: MAX_TOKENS, warp: GREEDY_64 })
      const ar = await decode(autoregressive, { target }, request())
      expect(ar.tokens).toHaveLength(MAX_TOKENS)
      for (const gamma of [3, 5]) {
        const tli = await decode(prepare('sd-tli', { gamma, params: {} }).newRun()(), { target, draft }, request())
        if ((await expectSameOrNearTie(`sd-tli γ=${gamma}`, target, promptTokens(text), ar.tokens, tli.tokens)) === 'near-tie') nearTies++
        tli.steps.forEach((step: StepRecord) => {
          totals.rounds += 1
          totals.proposed += step.proposed
          totals.accepted += step.accepted
          totals.emitted += step.emitted
          if (step.proposed === 0) totals.targetOnly += 1
          totals.retokenised += Number(step.decision?.retokenised ?? 0)
          totals.mass += Number(step.decision?.draftMass ?? 0)
          expect(step.decision?.intersection).toBe(133)
        })
        // Provenance: accepted draft tokens, corrections / bonuses, target-only rounds.
        expect(tli.provenances.filter((p) => p === 'draft').length).toBe(tli.steps.reduce((n, s) => n + s.acceptedDraftTokens, 0))
      }
    }
    console.log(
      `sd-tli target5M ← 656k greedy: ${totals.rounds} rounds, ${totals.emitted} tokens, acceptance ` +
        `${(totals.accepted / totals.proposed).toFixed(3)} (${totals.accepted}/${totals.proposed}), ` +
        `${(totals.emitted / totals.rounds).toFixed(2)} tokens per target call, target-only rounds ${totals.targetOnly}, ` +
        `mean draft mass in I ${(totals.mass / totals.rounds).toFixed(3)}, draft tokens re-tokenised ${totals.retokenised}, near-ties ${nearTies}`
    )
    expect(totals.accepted).toBeGreaterThan(0)
    expect(totals.retokenised).toBeGreaterThan(0)
  })
})
