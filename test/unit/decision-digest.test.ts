/**
 * Decision digests: every method of the catalog that runs on toy models is decoded with a fixed seed, greedy and at
 * a temperature > 0, over two prompts of one run (so run-level state — heuristic γ, Q-tables, n-gram pools — is
 * exercised too), and the sha256 of what it decided is compared with the table below. What is hashed: the emitted
 * tokens, their provenance, the stop reason and every step record without its timings (stage, proposed γ, accepted
 * n, resampled / bonus, emitted, draft tokens, entropies, threshold, the policy's decision, calls, per-level
 * counters). The clock is frozen at 0 while decoding, so policies that read timings (adaptive-analytic's cost fit)
 * decide the same way every run; floats are rounded to 10 significant digits so that a harmless reordering of a sum
 * does not count as a change of behaviour.
 *
 * A refactor of the decoders must leave every digest unchanged. A deliberate change of behaviour regenerates the
 * table: `DIGEST_PRINT=1 npx vitest run test/unit/decision-digest.test.ts` prints it.
 */
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { DecodeEvent, DecoderModels, StepRecord } from '../../electron/engine/decoders/types'
import { CATALOG } from '../../electron/engine/methods/catalog'
import type { RawParams } from '../../electron/engine/methods/param-spec'
import { prepare } from '../../electron/engine/methods/prepare'
import { createPrng } from '../../electron/engine/sampling/prng'
import type { WarpConfig } from '../../electron/engine/sampling/warp'
import { GREEDY } from '../helpers/decode'
import { eosDraft, eosTarget, TOY_BOS, toyDraft, toyDraftClose, toyTarget } from '../helpers/toy-models'
import { crossVocabularyPair } from '../helpers/toy-tokenizers'

const SEED = 20260311
const MAX_TOKENS = 24
const GAMMA = 4
/** Temperature > 0 with nucleus truncation, so the warp's cut is part of what is pinned. */
const WARM: WarpConfig = { temperature: 0.8, topK: 0, topP: 0.95 }

/** Methods that need node-llama-cpp or a llama-server process: no toy model can stand in for them. */
const SKIPPED: Record<string, string> = {
  'nlc-draft': "node-llama-cpp's DraftSequenceTokenPredictor needs GGUF models (llamaModel refuses a toy)",
  'nlc-lookup': "node-llama-cpp's InputLookupTokenPredictor needs a GGUF target (llamaModel refuses a toy)",
  ...Object.fromEntries(
    CATALOG.filter((m) => m.id.startsWith('llama-server:')).map((m) => [m.id, 'runs in a llama-server process on GGUF files'])
  )
}

/** Prompts that repeat themselves, so every lookup drafter finds its key. */
const TOY_PROMPTS = [
  [TOY_BOS, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2],
  [TOY_BOS, 2, 3, 5, 2, 3, 5, 2, 3]
]

const pair = (): DecoderModels => ({ target: toyTarget(), draft: toyDraftClose() })
const farPair = (): DecoderModels => ({ target: toyTarget(), draft: toyDraft() })
const trio = (): DecoderModels => ({ target: toyTarget(), mid: toyDraftClose(), draft: toyDraft() })
const eosPair = (): DecoderModels => ({ target: eosTarget(), draft: eosDraft() })

function crossPair(draftSide: 'byte-level' | 'sentencepiece'): { models: () => DecoderModels; prompts: number[][] } {
  const { target } = crossVocabularyPair(draftSide)
  return {
    models: () => crossVocabularyPair(draftSide),
    prompts: ['ab ca b', 'c ab'].map((text) => [TOY_BOS, ...target.tokenize(text)])
  }
}

interface DigestCase {
  id: string
  /** Distinguishes several cases of one method. */
  variant?: string
  params?: RawParams
  gamma?: number
  syntheticAcceptance?: readonly number[]
  models: () => DecoderModels
  prompts?: number[][]
}

/** Short n-gram keys: llama.cpp's defaults (n = 12 …) would never match in a toy prompt. */
const CASES: DigestCase[] = [
  { id: 'ar', models: pair },
  { id: 'sd', models: pair },
  { id: 'sd', variant: 'far draft', models: farPair },
  { id: 'sd', variant: 'eos', models: eosPair, prompts: [[TOY_BOS], [TOY_BOS, 2, 3]] },
  { id: 'sd', variant: 'parallel', params: { 'sd.parallel': true }, models: pair },
  { id: 'sd', variant: 'synthetic', syntheticAcceptance: [0.9, 0.6, 0.3], models: pair },
  { id: 'pearl', models: pair },
  { id: 'pearl', variant: 'far draft', models: farPair },
  { id: 'sd-heuristic', models: pair },
  { id: 'sd-heuristic', variant: 'parallel', params: { 'heuristic.parallel': true }, models: pair },
  { id: 'sd-pmin', params: { 'pmin.p': 0.5, 'pmin.max': 6 }, models: pair },
  { id: 'svip', models: pair },
  { id: 'svip', variant: 'synthetic', syntheticAcceptance: [0.8, 0.5], models: pair },
  { id: 'self-verify', models: pair },
  { id: 'adaptive-analytic', models: pair },
  { id: 'adaptive-fsm', models: pair },
  { id: 'adaptive-cache-fsm', models: pair },
  { id: 'adaptive-rl', params: { 'rl.warmup': 3 }, models: pair },
  { id: 'pre-verify', models: trio },
  { id: 'pre-self-verify', models: trio },
  { id: 'hsddw', models: trio },
  { id: 'hier-chen', models: trio },
  { id: 'hier-chen', variant: 'residual', params: { 'chen.residual': true }, models: trio },
  { id: 'beam', models: pair },
  { id: 'beam', variant: 'deterministic', params: { 'beam.deterministic': true }, models: pair },
  { id: 'dsbd', models: pair },
  { id: 'dsbd', variant: 'fixed width', params: { 'dsbd.fixedWidth': 2 }, models: pair },
  { id: 'dsbd-1beam', models: pair },
  { id: 'pld', params: { 'pld.ngram': 2, 'pld.k': 3 }, models: pair },
  { id: 'ngram-simple', params: { 'ngramsimple.n': 1, 'ngramsimple.m': 3 }, models: pair },
  { id: 'ngram-map-k', params: { 'ngrammapk.n': 1, 'ngrammapk.m': 3 }, models: pair },
  { id: 'ngram-map-k4v', params: { 'ngrammapk4v.n': 1, 'ngrammapk4v.m': 2 }, models: pair },
  { id: 'ngram-mod', params: { 'ngrammod.n': 2, 'ngrammod.nMin': 1, 'ngrammod.nMax': 3 }, models: pair },
  { id: 'ngram-cache', params: { 'ngramcache.nDraft': 3 }, models: pair },
  { id: 'sd+ngram', params: { 'sdngram.n': 1, 'sdngram.m': 3 }, models: pair },
  { id: 'sd-tree', models: pair },
  { id: 'sd-tree', variant: 'far draft', params: { 'tree.pSplit': 0.05 }, models: farPair },
  { id: 'sd-tree+ngram', params: { 'treengram.ngram': 2 }, models: pair },
  { id: 'sd-tli', models: crossPair('byte-level').models, prompts: crossPair('byte-level').prompts },
  { id: 'sd-tli', variant: 'sentencepiece draft', models: crossPair('sentencepiece').models, prompts: crossPair('sentencepiece').prompts },
  { id: 'sd-uad', models: crossPair('byte-level').models, prompts: crossPair('byte-level').prompts },
  {
    id: 'sd-uad',
    variant: 'no healing, 2 proposed',
    params: { 'uad.heal': false, 'uad.maxProposed': 2 },
    models: crossPair('sentencepiece').models,
    prompts: crossPair('sentencepiece').prompts
  }
]

const TIMING_KEY = /(^ms$|Ms$)/

/** Rounds floats and drops timings (keys `ms` or ending in `Ms`), recursively: what is left is what was decided. */
function canonical(value: unknown): unknown {
  if (typeof value === 'number') return Number.isInteger(value) || !Number.isFinite(value) ? value : Number(value.toPrecision(10))
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !TIMING_KEY.test(key))
        .map(([key, inner]) => [key, canonical(inner)])
    )
  return value
}

const decisions = (record: StepRecord): unknown => canonical(record)

function digestOf(streams: DecodeEvent[][]): string {
  const hash = createHash('sha256')
  for (const events of streams)
    for (const event of events) {
      if (event.type === 'token') hash.update(`t ${event.token} ${event.provenance} ${event.step}\n`)
      else if (event.type === 'step') hash.update(`s ${JSON.stringify(decisions(event.record))}\n`)
      else hash.update(`d ${event.stopReason}\n`)
    }
  return hash.digest('hex')
}

const caseName = (c: DigestCase, warm: boolean): string => `${c.id}${c.variant ? ` (${c.variant})` : ''} ${warm ? 'T=0.8' : 'T=0'}`

/** One run of the method: newRun once, then each prompt in turn on PRNG stream = prompt index (as decodeOnce does). */
async function runCase(c: DigestCase, warp: WarpConfig): Promise<string> {
  const prepared = prepare(c.id, { gamma: c.gamma ?? GAMMA, params: c.params ?? {}, syntheticAcceptance: c.syntheticAcceptance })
  const run = prepared.newRun()
  const models = c.models()
  const streams: DecodeEvent[][] = []
  for (const [stream, prompt] of (c.prompts ?? TOY_PROMPTS).entries()) {
    const events: DecodeEvent[] = []
    const request = {
      promptTokens: [...prompt],
      maxTokens: MAX_TOKENS,
      warp,
      rng: createPrng(SEED, stream),
      ...(c.syntheticAcceptance ? { syntheticAcceptance: c.syntheticAcceptance } : {})
    }
    for await (const event of run()(models, request)) events.push(event)
    streams.push(events)
  }
  return digestOf(streams)
}



const PINNED: Record<string, string> = {
  "ar T=0": 'b25242e5e0062bc5f04ad27d754bd62da91cc6773b962f0b10c1acc0f4a3abd2',
  "ar T=0.8": 'cdf30ff37ae6835751248817dd746e9e6300bce863e70f09da4c28f725ea1e7e',
  "sd T=0": '730a4a162ebdb423d0fd81980afdaf642725b79d005075c4abcdd5875410c1b2',
  "sd T=0.8": '4ba9df7f0bbeb8ce4cbccd6054de41b0ec1fe52e83580b05dac098a088f91ada',
  "sd (far draft) T=0": '8334f3b15220523f090a12cc1e7590893daf4714d35668d268380847cf511fca',
  "sd (far draft) T=0.8": '33a8130373c57dae6ef1de7b97fd265efc5386a933a4b2f1e175a960d533310a',
  "sd (eos) T=0": '426deb3c339113d376aa5aaaeb9b768c3239827125103acb6899692b40b5d85e',
  "sd (eos) T=0.8": '7c7cfa3f53f503307bba12aaae209b6947dd1681730fe788eaa11cb8d3272307',
  "sd (parallel) T=0": '86cc88c903f296daa9fd798ef31d9cd8383cc1922f57a182b22a74e2f1b4c0c7',
  "sd (parallel) T=0.8": '0dfae352a8d8b1f3741a308380575eb57d4e0501aac1ecd9e9d2104af03f4e9d',
  "sd (synthetic) T=0": '03f0bae962808486bdc735a888f1ce6d067c4d767e83eaa82ee3ad07ac43a3c9',
  "sd (synthetic) T=0.8": '1f679b5d784bddad0a32343ee96d4ee90c0cf29af6853ccfe1671fbb1fcd4634',
  "pearl T=0": '854079f1a7617883190c56ee24641e73a1f9e2fda05f8f041aa27d2f2a0205eb',
  "pearl T=0.8": 'bf7ccc3ea53d0e13917e42f2b6ce9000c221fb52abd9752b93715a7ae5cd882f',
  "pearl (far draft) T=0": '4537d660632b3b4851fde54537f27e8f0bb44fcc1492a883c3b16f713b7ae66a',
  "pearl (far draft) T=0.8": '63c8ddd18bcdf10106fc39d9abbf94d53dc5545d96b713644ab3620df7b99a7b',
  "sd-heuristic T=0": '128e92a09af618763876047a25ab601d81645065c28ad84097aa5f90a12e6861',
  "sd-heuristic T=0.8": '50f2e4fa5984e4a967bcd487e0d345eec036dce5aa0233f91b3e6f66403b6065',
  "sd-heuristic (parallel) T=0": '8eccbc74cd16bdde208fbc9006addcd6208473843fbf6fc67df19ee525e38e3d',
  "sd-heuristic (parallel) T=0.8": '9b4935dd9572bc23ca6f344d0009def835349bf259a3be27091616bd3419dc2e',
  "sd-pmin T=0": 'e461ecb0e63b7cf29824133e234e5b0e1a9c71fcc274c3712a6d6fe106517fc1',
  "sd-pmin T=0.8": '04fac65b63de59bed61dec0bc9265f49287e3a27d37ff3c59a8d342672d1be4c',
  "svip T=0": '2033ff6e6b300b2a9ee8c1875c334f8aecb7a7d994b07183ef353929cfa35129',
  "svip T=0.8": '2c2b892f87fe3e516e26c2100fa9554b18f9fdde555b911fcdc9eb5237fb5bd0',
  "svip (synthetic) T=0": '29c6bf82225cee9bf649da9fba891a0bb301dbf90d1b6d55047cc5a8a5d64df7',
  "svip (synthetic) T=0.8": '672c1985becf0f030cfb1230b719df1d508b3aaab95910738b1d5e501bf9078d',
  "self-verify T=0": '51d65c30e696081af5dba7bc4bae6c35df269a358e95a548db9868bfae4fbd96',
  "self-verify T=0.8": 'a4bfde5aaab1d170b761f47a08f322c8c6833d74502520b91d2d036f807de03a',
  "adaptive-analytic T=0": '5521ba018835dca0ef726645a7bf1b2d10263cf264d3a796fc3a3b1787e67617',
  "adaptive-analytic T=0.8": '4464f73f5105acec7b5f87c3989efe97a70ef18c4b66e0f8f8003ecb19b65600',
  "adaptive-fsm T=0": '3d0af787d1b856d5fb08a43db2ee7241bc26384b27be5d75acc2083304fcda28',
  "adaptive-fsm T=0.8": '87b359ae1bbf4bf772bd1b2fdac6d600b04ea6eddbb418b9976b22a3a3a6fba6',
  "adaptive-cache-fsm T=0": '110fa8d40be2352c760f07e336402c8eda6515c79406e47c539cf536bc75f619',
  "adaptive-cache-fsm T=0.8": '2b3f48c18a3d3c35cce2a645cc97e2ab03a4ab879f8ee956a74d9e5400687e0b',
  "adaptive-rl T=0": 'f7bfd7233ad95616de042be8084c9e39b18e9d757de9c8c6127b87854a58acee',
  "adaptive-rl T=0.8": '27f94e88c35a6164190f5d51b4e879bf002a2bf392c0b9de3c3384aa8a22e8a7',
  "pre-verify T=0": 'ec243017a54360cd05b02085e64185629b3b95f707ec1e924f0aa4af5da99b1c',
  "pre-verify T=0.8": '804b7892e26e294931dabd5f8d3ef31c0a81cac6c341fd4b2cb2c68edf6c7a0a',
  "pre-self-verify T=0": '3a88377baf575f0e8ef36deeeed58394ea4b80a29e264e30998d025a2ae4bbec',
  "pre-self-verify T=0.8": 'bb02cf697b669c5d8c4178d1fbe30a757747123504930a168cc5fedca4298d9b',
  "hsddw T=0": '766790ea615c20d3ab39fcb331718a9f3df33059509a23a1422869d0e3a2f641',
  "hsddw T=0.8": '6d7dd736113d08450ac5552d001fd8778c8e63a0bff4f00e3667a3609ede9548',
  "hier-chen T=0": '63c3c62b321e542f32e15051b3e8d253c44b3c3793c4815df63846dc1a0b2f26',
  "hier-chen T=0.8": 'c85dd7525823c5eebda65faf53b200a9ff0ccdedc21758a72bcbf6c0b617ed77',
  "hier-chen (residual) T=0": 'f600be02a226101302c6c21dd5d6ff11c49fc2fe7832c383fcd8629440587e53',
  "hier-chen (residual) T=0.8": '5f85f3ec2a31b9b0fb316d00e1734929bc1d5450d9cdee78fdbe5a4078293dd7',
  "beam T=0": '0cea83c74b99179f8d88172ffdc6be26157020936f26b17efa0307bc5766b66c',
  "beam T=0.8": '4e0c15fbe2b67eecadbdece598fe0714678540985da050a08d1e430c72737979',
  "beam (deterministic) T=0": '1a7c4d6795bc7026128779933f4d03338e18ae9c5c330b32ee1f99a45ecb8d5f',
  "beam (deterministic) T=0.8": 'b25bc2cc7a92b76be05a46f960986a4bc873ed9aa2415e302065d73c49561a29',
  "dsbd T=0": '48178e1c45b748908e1824d48dced7bd8e0a50fcfc3b77bb56e87b322aab19ae',
  "dsbd T=0.8": 'a1175180f8118fe6e7b5ba7f3cb05e5164e636e0e292b8c7075a543041f1df91',
  "dsbd (fixed width) T=0": '4e47f70081fc831ce4b32a1caa2b29f817789e8126044503a1c5ec3caa74c11f',
  "dsbd (fixed width) T=0.8": '314971068753f83ca5728848af76f06953e1802b5d81646c5a34da47d5cc3030',
  "dsbd-1beam T=0": 'a2862a4a20bc3e8f26e8937882dfeffc2a29ab4c56193b38c6be8b7ccd62fdec',
  "dsbd-1beam T=0.8": '24e08d6172278bb315b36f0c3d08bc28e763258d1fe53fbadbc4f0061e8d2da2',
  "pld T=0": 'ef303e33c342f65443768f36e9a36a4af83d6f8618bc77cf71743fa01f6adaa9',
  "pld T=0.8": 'c202736031564f4f8c3a6fc9f8948f1c9bf0e71c04244a6b9d21084aee6b7e8d',
  "ngram-simple T=0": 'b62e49b726f68749c8ff9291ffef0242de13509dbade76033fbaa21ff4d8d148',
  "ngram-simple T=0.8": 'c0f55f720a911e9039323987a86092d44cf3523a362dc6e1dc28ed084b1ae38f',
  "ngram-map-k T=0": '0a78226c43f937d9ddf9d82348b9db5fdd9dfad1f66f795aed8087818352679d',
  "ngram-map-k T=0.8": '1b0660f4b292686559829440f7cb77a69ffc83d061f821ae333aecd5a796e8c8',
  "ngram-map-k4v T=0": '5d974547cd8df9dadf5a9c8184b15b7a382cf4e640ab60f9ba33df6f9e1c763d',
  "ngram-map-k4v T=0.8": 'af9e6276f20fe3af8ecc355955aebcc7c42d23948f021a61774f07f9e5964b77',
  "ngram-mod T=0": 'c762d6f2a8387bdfbcec9c0138d99e9f4fb85c1d858fcf233abddf7e4e1267f3',
  "ngram-mod T=0.8": 'c7e6bac716506e078acfec3e7c06e0bc15b07c478335b1443dc56158df318983',
  "ngram-cache T=0": 'b148b02a12e66491138e4acb0cefa5d4382ddde858e90b9acbdd9b074d5b65a0',
  "ngram-cache T=0.8": '5225fbebfced41a25be6d73b1659dacad9e0ec5ae5df1f072584bdc8ff7197dc',
  "sd+ngram T=0": '018aff0c2b4ac73b6c5398675cd7e3585718eeae81035cc62b9fceb6fcadc531',
  "sd+ngram T=0.8": '240e5c7c9bdfac474d4d5ee576ef2346ef1e7580ad12d2038c4d85d05ecd2d0a',
  "sd-tree T=0": '4ad30e804378f616a6127938407e1968a1a00a53d8ac359a9082fb05f4eb3969',
  "sd-tree T=0.8": '94f12cb709cde004d8db8887c2923c1e5460bd68a45f665ce5357bee5e336f6c',
  "sd-tree (far draft) T=0": 'd89cdb2b42b6428eeac99b547cf77b7dd575448ecccc156d3933e686952814bf',
  "sd-tree (far draft) T=0.8": '34fa878f9a5cb0817194c4d9a50fb2072437e59d643c1b23b935b15aae3d0bd9',
  "sd-tree+ngram T=0": 'ab311d6eb7262a89ceb4efeb9f04db8fb5dc476ada824e83630eda4284cafaca',
  "sd-tree+ngram T=0.8": 'f0aa132d7d8f6172b06989851b506356df893b712249deee2921e11499e002f0',
  "sd-tli T=0": 'af07ba3377fb92a6339efb75a49a0b1887c048414b2f7e8652cfb1638705e82e',
  "sd-tli T=0.8": '51efbdef714135d790533f87a5cf608bb4047a04a6fabf3b4a1f1d5ccc553eb2',
  "sd-tli (sentencepiece draft) T=0": '7316fa4e625ddcbdf330233f44f224ce5d713575f371c980d29f5de58d2854fb',
  "sd-tli (sentencepiece draft) T=0.8": '9c46a659fa9b91a88178472421f5cdc5c6e05352fb33bff9b1b2dbde554bdd84',
  "sd-uad T=0": '1b10c339d7c0cb781416452f1dc151fada291ee06219f77d05a7f0b73ccaa04b',
  "sd-uad T=0.8": '1a65b0aaf503ead65a69f9a45c61cb3a6484a4a39b7d784de67cdf70aad8faff',
  "sd-uad (no healing, 2 proposed) T=0": '8771b98e8a8d839f76d7231801aacec09518d79e23c6b6e69cedc14954df7599',
  "sd-uad (no healing, 2 proposed) T=0.8": '3d9c7aa84f14d67c66166be783ac022220e8c8554f4205df7aa99994f3902f9e'
}

describe('decision digests of fixed-seed toy runs', () => {
  beforeAll(() => {
    vi.spyOn(performance, 'now').mockReturnValue(0)
  })
  afterAll(() => {
    vi.restoreAllMocks()
  })

  it('covers every method of the catalog, or says why not', () => {
    const covered = new Set(CASES.map((c) => c.id))
    const missing = CATALOG.map((m) => m.id).filter((id) => !covered.has(id) && !(id in SKIPPED))
    expect(missing).toEqual([])
    for (const id of Object.keys(SKIPPED)) expect(covered.has(id), id).toBe(false)
  })

  const actual: Record<string, string> = {}
  for (const c of CASES)
    for (const warm of [false, true]) {
      const name = caseName(c, warm)
      it(name, async () => {
        actual[name] = await runCase(c, warm ? WARM : GREEDY)
        if (process.env.DIGEST_PRINT) return
        expect(actual[name]).toBe(PINNED[name])
      })
    }

  afterAll(() => {
    if (!process.env.DIGEST_PRINT) return
    const lines = Object.entries(actual).map(([name, digest]) => `  ${JSON.stringify(name)}: '${digest}',`)
    console.log(`const PINNED: Record<string, string> = {\n${lines.join('\n')}\n}`)
  })
})
