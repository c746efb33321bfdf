/**
 * The method catalog: every fact about a method, once. What models it needs, its parameters (type, default,
 * range, help, the paper's symbol and section), what --gamma means to it, how many KV sequences it wants, whether
 * it is lossless, its description with the paper reference, and how a run of it is built. The CLI's --help, the
 * UI's knobs, the contract's METHOD_IDS (methods/ids.ts) and the method tables of docs/methods.md and the README are
 * generated from here (scripts/generate-methods.ts); `prepare` (prepare.ts) is the one way to validate settings and get decoders.
 */
import { adaptiveAnalyticPolicy } from '../policies/adaptive-analytic'
import { adaptiveCacheFsmPolicy } from '../policies/adaptive-cache-fsm'
import { adaptiveFsmPolicy } from '../policies/adaptive-fsm'
import { adaptiveRlPolicy } from '../policies/adaptive-rl'
import { fixedLengthPolicy } from '../policies/fixed'
import { heuristicPolicy } from '../policies/heuristic'
import { pMinPolicy } from '../policies/p-min'
import { selfVerifyPolicy } from '../policies/self-verify'
import { svipPolicy } from '../policies/svip'
import type { DraftLengthPolicy } from '../policies/types'
import { autoregressive } from '../decoders/autoregressive'
import { beamDecoder } from '../decoders/beam'
import { dsbdDecoder, dsbdSessions } from '../decoders/dsbd'
import { chenDecoder } from '../decoders/hierarchical-chen'
import { hsddwDecoder } from '../decoders/hsddw'
import { nlcDraftDecoder } from '../decoders/nlc-draft'
import { nlcLookupDecoder } from '../decoders/nlc-lookup'
import { chainDrafter, lookupDrafter, type TokenLookup } from '../decoders/drafter'
import { ngramMapState, ngramSimpleState } from '../lookup/ngram-map'
import { NgramModRun } from '../lookup/ngram-mod'
import { NGRAM_CACHE_N_DRAFT, NgramCacheRun, loadNgramCache } from '../lookup/ngram-cache'
import { UserInputError } from '../errors'
import { promptLookupState } from '../lookup/prompt-lookup'
import { preVerifyDecoder } from '../decoders/pre-verify'
import { sdTliDecoder } from '../decoders/sd-tli'
import { DEFAULT_LOOKBEHIND, sdUadDecoder } from '../decoders/sd-uad'
import { modelDrafter, speculativeDecoder } from '../decoders/speculative'
import { parallelDraftingDecoder } from '../decoders/parallel-drafting'
import { llamaServerRun } from '../decoders/llama-server'
import { findLlamaServer } from '../peers/llama-server-binary'
import { MAX_CHILDREN, sdTreeDecoder, type TreeOptions } from '../decoders/sd-tree'
import type { Decoder } from '../decoders/types'
import type { MethodId } from './ids'
import { defaultOf, filePath, flag, integer, real, serverUrl, type ParamSpecs, type ParamValue, type ResolvedOf } from './param-spec'

export interface Settings<P extends ParamSpecs = ParamSpecs> {
  /** --gamma (validated: an integer in GAMMA_RANGE). */
  gamma: number
  /** Every parameter of the method, defaults filled in. */
  params: ResolvedOf<P>
}

/**
 * What kind of method it is: the baseline, plain SD, a draft-length policy on SD, a 3-model hierarchy, beam methods,
 * model-free drafting (n-gram / prompt lookup on the speculative decoder, no draft model), a peer's.
 */
export type MethodFamily = 'baseline' | 'speculative' | 'policy' | 'hierarchy' | 'beam' | 'lookup' | 'peer'

export interface MethodDefinition<P extends ParamSpecs = ParamSpecs> {
  /** Generated into methods/ids.ts (npm run methods:docs): a new id is refused by the compiler until then. */
  id: MethodId
  family: MethodFamily
  /** One line: the method picker, `run --help`, the README's method table. */
  summary: string
  /** docs/methods.md's paragraph: the algorithm with equation numbers, and every choice where the paper is ambiguous. */
  description: string
  needs: { draft: boolean; mid: boolean }
  /**
   * Whether the method compares token ids across models ('shared', the default: every model of the trio must pass the
   * vocabulary check, model/vocabulary-check.ts) or maps between vocabularies itself ('any': the draft may use another
   * tokenizer — sd-tli, sd-uad).
   */
  vocabulary?: 'shared' | 'any'
  /** Whether the output follows the target's warped distribution exactly (greedy: equals `ar`). */
  lossless: boolean
  /**
   * Whether `--synthetic-acceptance` applies: the method verifies ONE draft per round position by position, so
   * sampling/synthetic-acceptance.ts can replace its accept test with "position i passes with probability r_i".
   * Absent: true for the baseline, speculative and policy families (prepare.ts), false for the others.
   */
  synthetic?: boolean
  /** What --gamma is to this method; null when it ignores it. */
  gamma: string | null
  /** Parameter keys are `${namespace}.${name}`; methods of one family share a namespace (pre.*, dsbd.*). */
  namespace: string
  params: P
  /** Rules between parameters: the message naming the offending key, or null. */
  check?(settings: Settings<P>): string | null
  /** KV sequences per model one batched step needs; absent: the loader's default suffices. */
  sessions?(settings: Settings<P>): number
  /**
   * A fresh run: state that persists across the prompts of a run (HF's persistent heuristic, learned Acc, the
   * Q-table) lives in this closure; the returned factory is called once per prompt.
   */
  newRun(settings: Settings<P>): () => Decoder
}

/** Type-checks a definition against its own parameters, then erases them for the list. */
function method<P extends ParamSpecs>(definition: MethodDefinition<P>): MethodDefinition {
  return definition as unknown as MethodDefinition
}

/** A two-model speculative method whose draft length comes from a policy made once per run. */
const withPolicy = (
  makePolicy: () => DraftLengthPolicy,
  decoder: (policy: DraftLengthPolicy) => Decoder = (policy) => speculativeDecoder(policy)
): (() => Decoder) => {
  const policy = makePolicy()
  return () => decoder(policy)
}

/**
 * The `parallel` flag of sd and the policies that draft with the draft model: PEARL's post-verify (decoders/
 * parallel-drafting.ts) — the draft drafts the next window while the target verifies this one.
 */
const PARALLEL = {
  parallel: flag(false, {
    help: "draft the next window while the target verifies this one (PEARL's post-verify; lossless): a round costs max(draft, verify), not their sum",
    source: 'PEARL (Liu et al., ICLR 2025)'
  })
}
const draftModelDecoder =
  ({ params }: Settings<typeof PARALLEL>) =>
  (policy: DraftLengthPolicy): Decoder =>
    params.parallel ? parallelDraftingDecoder(policy, { preVerify: false }) : speculativeDecoder(policy)

const DRAFT = { draft: true, mid: false }
const TARGET_ONLY = { draft: false, mid: false }
const TRIO = { draft: true, mid: true }
const CAP = 'the cap γ_max on the draft length the policy chooses'

const PRE_PARAMS = {
  window: integer('gamma', { min: 1 }, { help: 'M_q2-level tokens M_p verifies per target round (default: γ)', symbol: 'W', source: 'HSDDW Fig. 5' })
}

const DSBD_PARAMS = {
  ws: integer(4, { min: 1, max: 64 }, { help: 'draft beams per layer', symbol: 'W_S', source: 'DSBD §3, §4.2 sweeps 2–6' }),
  t: real(0.9, { min: 0, max: 1 }, { help: 'width threshold of the dynamic width', symbol: 't', source: 'DSBD Eq 6–7; App. C.2: 0.9 is faster' }),
  wmin: integer(1, { min: 1, max: 64 }, { help: 'smallest layer width', symbol: 'W_min', source: 'DSBD Eq 6' }),
  fixedWidth: integer(0, { min: 0, max: 64 }, { help: 'the width of every layer; 0 = dynamic (Eq 6)', symbol: 'W_L' })
}
type DsbdParams = typeof DSBD_PARAMS

const dsbdWithin = ({ params }: Settings<DsbdParams>): string | null =>
  params.wmin > params.ws
    ? `dsbd.wmin must be at most dsbd.ws (${params.ws}), got ${params.wmin}`
    : params.fixedWidth > params.ws
      ? `dsbd.fixedWidth must be at most dsbd.ws (${params.ws}), got ${params.fixedWidth}`
      : null

const dsbdOptions = ({ gamma, params }: Settings<DsbdParams>, oneBeam: boolean) => ({
  gamma,
  ws: params.ws,
  t: params.t,
  wMin: params.wmin,
  fixedWidth: params.fixedWidth,
  oneBeam
})

const dsbdSequences = (settings: Settings<DsbdParams>, oneBeam: boolean): number => {
  const sizes = dsbdSessions(dsbdOptions(settings, oneBeam))
  return Math.max(sizes.target, sizes.draft)
}

/**
 * A model-free method (family 'lookup'): the speculative decoder with a lookup drafter (decoders/drafter.ts) whose
 * proposals are point masses, drafting at most `cap` tokens a round (fixed policy).
 */
const lookupMethod =
  (stage: string, cap: number, start: (promptTokens: readonly number[], isEnd: (token: number) => boolean) => TokenLookup) =>
  (): Decoder =>
    speculativeDecoder(
      fixedLengthPolicy(cap),
      lookupDrafter(stage, (promptTokens, target) => start(promptTokens, (token) => target.isEndOfGeneration(token)))
    )

/** Why a point-mass proposal is lossless, said once for every model-free method's help. */
const POINT_MASS =
  'Lossless at any temperature: a looked-up token x is a point mass q = δ(x), so verification (the `sd` verifier with a ' +
  'one-token q) accepts it with probability p(x) and on rejection samples norm(max(0, p − δ)) — p without x, ' +
  'renormalised — so every emitted token is distributed as p; greedy accepts iff x = argmax p (text = `ar`). ' +
  'Accepted lookup tokens are provenance `ngram`'

/** llama.cpp's common_params_speculative_ngram_map (common/common.h, bundled with node-llama-cpp 3.22.1): n, m, min_hits. */
const LLAMA_NGRAM_PARAMS = 'llama.cpp common/common.h common_params_speculative_ngram_map'
const ngramSize = (flagName: string) => ({
  n: integer(12, { min: 1 }, { help: 'key length: the last n tokens (the one just sampled included) are looked up', symbol: 'size_n', source: `${LLAMA_NGRAM_PARAMS}; --spec-${flagName}-size-n` }),
  m: integer(48, { min: 1 }, { help: 'the most tokens drafted after a match (the draft cap)', symbol: 'size_m', source: `${LLAMA_NGRAM_PARAMS}; --spec-${flagName}-size-m` })
})
const NGRAM_SIMPLE_PARAMS = ngramSize('ngram-simple')
/** sd+ngram's n-gram part: ngram-simple's knobs, its drafts also cut at the round's cap γ (the method's choice). */
const SD_NGRAM_PARAMS = {
  ...ngramSize('ngram-simple'),
  m: integer(48, { min: 1 }, {
    help: 'the most tokens drafted after a match; --gamma cuts the draft too (llama-server cuts it only at the remaining budget)',
    symbol: 'size_m',
    source: `${LLAMA_NGRAM_PARAMS}; --spec-ngram-simple-size-m`
  })
}
const ngramMapParams = (flagName: string, help: string) => ({
  ...ngramSize(flagName),
  minHits: integer(1, { min: 1 }, { help, symbol: 'min_hits', source: `${LLAMA_NGRAM_PARAMS}; --spec-${flagName}-min-hits` })
})
const NGRAM_MAP_K_PARAMS = ngramMapParams(
  'ngram-map-k',
  "hits of the key before it drafts (docs/speculative.md; this commit's key-only code skips the test: the default 1 is the code exactly)"
)
const NGRAM_MAP_K4V_PARAMS = ngramMapParams('ngram-map-k4v', 'hits of the key before its values are counted and it drafts (common/ngram-map.cpp)')

/** sd-tree's tree shape (llama.cpp examples/speculative/speculative.cpp and common/common.h). */
const TREE_SHAPE = {
  pSplit: real(0.1, { min: 0, max: 1 }, { help: 'a draft candidate below the first becomes a sibling branch when its probability is above this', symbol: 'p_split', source: 'llama.cpp common/common.h p_split; --spec-draft-p-split' }),
  branches: integer(4, { min: 1, max: 16 }, { help: 'the most root-to-leaf paths, i.e. KV sequences per model (1 = a chain, plain sd)', symbol: 'n_seq_dft', source: 'llama.cpp examples/speculative -np (its default 1 is no tree)' }),
  nodes: integer(16, { min: 1, max: 256 }, { help: 'the most tree nodes per round', symbol: 'n_draft', source: "SpecLab's default: 2025 llama.cpp's --draft-max default (16); examples/speculative stops past n_draft = --spec-draft-n-max tokens, default 3 in the bundled llama.cpp (common.h common_params_speculative_draft)" }),
  maxChildren: integer(MAX_CHILDREN, { min: 1, max: MAX_CHILDREN }, { help: 'the most children per node', source: 'llama.cpp examples/speculative: split ranks f < 8' })
}
const TREE_NGRAM_PARAMS = {
  ...TREE_SHAPE,
  ngram: integer(3, { min: 1 }, { help: 'the longest suffix n-gram the n-gram branch looks up in prompt + output (as pld.ngram)', symbol: 'max_matching_ngram_size', source: 'HF PromptLookupCandidateGenerator' })
}
const treeOptions = ({ gamma, params }: Settings<typeof TREE_SHAPE>): TreeOptions => ({
  depth: gamma,
  pSplit: params.pSplit,
  branches: params.branches,
  nodes: params.nodes,
  maxChildren: params.maxChildren
})

/** dsbd and dsbd-1beam: one family, one parameter set; they differ in what becomes the next input (§3.4). */
const dsbdMethod = (oneBeam: boolean, text: Pick<MethodDefinition, 'id' | 'family' | 'summary' | 'description'>): MethodDefinition =>
  method({
    ...text,
    needs: DRAFT,
    lossless: true,
    gamma: 'draft layers per iteration',
    namespace: 'dsbd',
    params: DSBD_PARAMS,
    check: dsbdWithin,
    sessions: (settings) => dsbdSequences(settings, oneBeam),
    newRun: (settings) => () => dsbdDecoder(dsbdOptions(settings, oneBeam))
  })

/**
 * llama.cpp's llama-server as a peer engine (decoders/llama-server.ts): one parameter set for every `llama-server:*`
 * method. The draft knobs are llama-server's own flags; the n-gram types run at the server's defaults.
 */
const LLAMA_SERVER_PARAMS = {
  url: serverUrl({
    help: "a llama-server you already run (a GPU box, an RPC cluster) instead of starting one; its /props must name the run's target file and its tokenizer must agree (CLI: --llama-server-url)",
    source: 'llama.cpp tools/server'
  }),
  nMax: integer('gamma', { min: 1, max: 64 }, { help: 'draft types: the most tokens drafted per round (default: γ)', symbol: 'n_max', source: 'llama-server --spec-draft-n-max' }),
  nMin: integer(0, { min: 0, max: 64 }, { help: 'draft types: the fewest tokens a draft must have to be used', symbol: 'n_min', source: 'llama-server --spec-draft-n-min' }),
  pMin: real(0, { min: 0, max: 1 }, { help: "draft types: stop drafting below this draft top-1 probability (this commit's default 0: off)", symbol: 'p_min', source: 'llama-server --spec-draft-p-min' }),
  static: filePath({ help: 'ngram-cache: a static 2-gram cache file (speclab ngram-cache build, llama-lookup-create)', source: 'llama-server --lookup-cache-static' }),
  ngramN: integer(0, { min: 0, max: 1024 }, {
    help: "n-gram types: the lookup length (ngram-simple / -map-k / -map-k4v: size_n, the server's default 12; ngram-mod: n_match, 24); 0 = the server's default",
    symbol: 'n',
    source: 'llama-server --spec-ngram-{simple,map-k,map-k4v}-size-n, --spec-ngram-mod-n-match'
  }),
  ngramM: integer(0, { min: 0, max: 1024 }, {
    help: "n-gram types: the longest draft (size_m, the server's default 48; ngram-mod: n_max, 64); 0 = the server's default",
    symbol: 'm',
    source: 'llama-server --spec-ngram-{simple,map-k,map-k4v}-size-m, --spec-ngram-mod-n-max'
  }),
  ngramModMin: integer(0, { min: 0, max: 1024 }, {
    help: "ngram-mod: a shorter chain is not drafted (n_min, the server's default 48); 0 = the server's default",
    symbol: 'n_min',
    source: 'llama-server --spec-ngram-mod-n-min'
  })
}
type LlamaServerParams = typeof LLAMA_SERVER_PARAMS

/** llama-server's speculative types (common/speculative.cpp) that SpecLab runs as peers, and what each needs. */
type ServerType = 'none' | 'draft-simple' | 'ngram-simple' | 'ngram-map-k' | 'ngram-map-k4v' | 'ngram-mod' | 'ngram-cache' | 'draft-eagle3' | 'draft-dflash' | 'draft-mtp'
const SERVER_DRAFT_TYPES = new Set<ServerType>(['draft-simple', 'draft-eagle3', 'draft-dflash', 'draft-mtp'])

function serverArguments(type: ServerType, { params }: Settings<LlamaServerParams>): string[] {
  if (type === 'none') return []
  const args = ['--spec-type', type]
  if (SERVER_DRAFT_TYPES.has(type)) args.push('--spec-draft-n-max', String(params.nMax), '--spec-draft-n-min', String(params.nMin), '--spec-draft-p-min', String(params.pMin))
  if (type === 'ngram-cache' && params.static !== '') args.push('--lookup-cache-static', params.static)
  // 0 leaves a knob at the server's default, so an unset knob means what llama-server means by it.
  const knob = (flag: string, value: number) => value > 0 && args.push(flag, String(value))
  if (type === 'ngram-mod') {
    knob('--spec-ngram-mod-n-match', params.ngramN)
    knob('--spec-ngram-mod-n-max', params.ngramM)
    knob('--spec-ngram-mod-n-min', params.ngramModMin)
  } else if (type === 'ngram-simple' || type === 'ngram-map-k' || type === 'ngram-map-k4v') {
    knob(`--spec-${type}-size-n`, params.ngramN)
    knob(`--spec-${type}-size-m`, params.ngramM)
  }
  return args
}

/** Each `llama-server:*` method's speculative type (filled as PEER_METHODS is built). */
const SERVER_TYPES = new Map<string, ServerType>()

/**
 * The `--spec-type …` arguments a `llama-server:*` method passes its server, for given γ and parameters (full keys,
 * `llamaserver.nMax`; absent: the catalog's defaults) — what the setup advisor prints as the command line that
 * deploys a configuration, from the same code the peer methods start their servers with.
 */
export function llamaServerSpeculativeArguments(id: string, gamma: number, given: Readonly<Record<string, ParamValue>>): string[] {
  const type = SERVER_TYPES.get(id)
  if (type === undefined) throw new Error(`'${id}' is not a llama-server method`)
  const params = Object.fromEntries(Object.entries(LLAMA_SERVER_PARAMS).map(([name, spec]) => [name, given[`${LLAMA_SERVER_NAMESPACE}.${name}`] ?? defaultOf(spec, gamma)]))
  return serverArguments(type, { gamma, params } as Settings<LlamaServerParams>)
}

/** llama.cpp's ngram-mod defaults (common/common.h common_params_speculative_ngram_mod): n_min 48, n_max 64. */
const SERVER_NGRAM_MOD_DEFAULTS = { nMin: 48, nMax: 64 }

/** The namespace every `llama-server:*` method shares (their parameters are one set: LLAMA_SERVER_PARAMS). */
const LLAMA_SERVER_NAMESPACE = 'llamaserver'

/** Whether a method runs in llama.cpp's own server (a peer engine) rather than in SpecLab's. */
export const isLlamaServerMethod = (definition: Pick<MethodDefinition, 'namespace'>): boolean => definition.namespace === LLAMA_SERVER_NAMESPACE

const llamaServerMethod = (id: MethodId, type: ServerType, summary: string, description: string): MethodDefinition => {
  SERVER_TYPES.set(id, type)
  return method({
    id,
    family: 'peer',
    summary,
    description:
      `${description}. llama.cpp's own server (the commit node-llama-cpp ships; \`npm run build:llama-server\`) decodes ` +
      "each prompt, started on 127.0.0.1 with the run's models, `--threads`, `--batch-threads` and context, one slot, " +
      'no prompt cache; or the server at `llamaserver.url`. One step record per prompt with the server\'s draft and ' +
      'accepted counts; no acceptance per position (the server reports totals)',
    needs: SERVER_DRAFT_TYPES.has(type) ? DRAFT : TARGET_ONLY,
    lossless: true,
    gamma: SERVER_DRAFT_TYPES.has(type) ? 'the default of `llamaserver.nMax`' : null,
    namespace: LLAMA_SERVER_NAMESPACE,
    params: LLAMA_SERVER_PARAMS,
    check: ({ params }) => {
      const modMin = params.ngramModMin || SERVER_NGRAM_MOD_DEFAULTS.nMin
      const modMax = params.ngramM || SERVER_NGRAM_MOD_DEFAULTS.nMax
      if (type === 'ngram-mod' && modMin > modMax) return `llamaserver.ngramModMin must be at most llamaserver.ngramM (n_min ${modMin} > n_max ${modMax}: the server would never draft)`
      if (params.url === '') {
        const binary = findLlamaServer()
        if (binary.path === null) return binary.reason
      }
      if (params.static !== '') {
        try {
          loadNgramCache(params.static)
        } catch (error) {
          if (error instanceof UserInputError) return `llamaserver.static: ${error.message}`
          throw error
        }
      }
      return null
    },
    newRun: (settings) =>
      llamaServerRun({ method: id, speculative: serverArguments(type, settings), usesDraft: SERVER_DRAFT_TYPES.has(type), url: settings.params.url })
  })
}

const UNTESTED_HERE = 'needs a draft GGUF made for it (none of the models here is), so SpecLab passes it through untested'

const PEER_METHODS: readonly MethodDefinition[] = [
  llamaServerMethod('llama-server:ar', 'none', "llama.cpp's llama-server without speculation (the peer's baseline)", 'llama-server decoding alone, no speculative type'),
  llamaServerMethod('llama-server:draft', 'draft-simple', "llama.cpp's llama-server with the draft model (`--spec-type draft-simple`)", 'llama-server with the run\'s draft model, `--spec-type draft-simple`: drafts of up to n_max tokens, verified by sample-and-match — the draft proposes its top token and the target keeps it while its own sample equals it, so under sampling a draft token is accepted with p(x̂) rather than rejection sampling\'s Σ min(p, q) (the advisor replays it so: replay/llama-server-draft.ts)'),
  llamaServerMethod('llama-server:ngram-simple', 'ngram-simple', "llama-server's `--spec-type ngram-simple` (no draft model)", "llama-server's ngram-simple lookup at its defaults (SpecLab's own port: `ngram-simple`)"),
  llamaServerMethod('llama-server:ngram-map-k', 'ngram-map-k', "llama-server's `--spec-type ngram-map-k` (no draft model)", "llama-server's ngram-map-k at its defaults (SpecLab's port: `ngram-map-k`)"),
  llamaServerMethod('llama-server:ngram-map-k4v', 'ngram-map-k4v', "llama-server's `--spec-type ngram-map-k4v` (no draft model)", "llama-server's ngram-map-k4v at its defaults (SpecLab's port: `ngram-map-k4v`)"),
  llamaServerMethod('llama-server:ngram-mod', 'ngram-mod', "llama-server's `--spec-type ngram-mod` (no draft model)", "llama-server's ngram-mod at its defaults (SpecLab's port: `ngram-mod`)"),
  llamaServerMethod('llama-server:ngram-cache', 'ngram-cache', "llama-server's `--spec-type ngram-cache` (no draft model)", "llama-server's ngram-cache, with `llamaserver.static` as `--lookup-cache-static` (SpecLab's port: `ngram-cache`)"),
  llamaServerMethod('llama-server:draft-eagle3', 'draft-eagle3', "llama-server's `--spec-type draft-eagle3` with your EAGLE-3 draft (pass-through)", `llama-server with \`--spec-type draft-eagle3\` and the run's draft as \`-md\`; ${UNTESTED_HERE}`),
  llamaServerMethod('llama-server:draft-dflash', 'draft-dflash', "llama-server's `--spec-type draft-dflash` with your DFlash draft (pass-through)", `llama-server with \`--spec-type draft-dflash\` and the run's draft as \`-md\`; ${UNTESTED_HERE}`),
  llamaServerMethod('llama-server:draft-mtp', 'draft-mtp', "llama-server's `--spec-type draft-mtp` with your MTP head GGUF (pass-through)", `llama-server with \`--spec-type draft-mtp\` and the run's draft (an MTP head) as \`-md\`; ${UNTESTED_HERE}`)
]

const METHODS: readonly MethodDefinition[] = [
  method({
    id: 'ar',
    family: 'baseline',
    summary: 'autoregressive decoding with the target alone (the speedup baseline)',
    description: 'the target alone, one token per forward call — the speedup baseline',
    needs: { draft: false, mid: false },
    lossless: true,
    gamma: null,
    namespace: 'ar',
    params: {},
    newRun: () => () => autoregressive
  }),
  method({
    id: 'sd',
    family: 'speculative',
    summary: 'speculative decoding with a constant draft length γ',
    description:
      'speculative decoding with constant draft length γ (`--gamma`): draft γ tokens, verify all γ+1 positions in one ' +
      'batched target call, accept with min(1, p/q), correct from norm(max(0, p − q)), bonus token when all pass ' +
      '(SVIP App. A, Alg. 2–6); greedy uses argmax verify/correct',
    needs: DRAFT,
    lossless: true,
    gamma: 'the draft length',
    namespace: 'sd',
    params: PARALLEL,
    newRun: (settings) => withPolicy(() => fixedLengthPolicy(settings.gamma), draftModelDecoder(settings))
  }),
  method({
    id: 'pearl',
    family: 'speculative',
    summary: 'PEARL: parallel drafting — the draft drafts the next window while the target verifies (pre-/post-verify)',
    description:
      'PEARL (Liu et al., "Parallel Speculative Decoding with Adaptive Draft Length", ICLR 2025; the authors\' ' +
      '`parallel_speculative_decoding`): draft and target run at the same time, so a round costs max(draft, target), ' +
      'not their sum. Post-verify: while the target scores the γ waiting drafts in one batched call, the draft drafts ' +
      'the next γ after them; the waiting drafts and then the first new one are tested by exact rejection sampling ' +
      '(the new one takes the bonus token\'s place); all accepted, the rest of the new window waits for the next ' +
      'round, otherwise it is dropped after the correction. Pre-verify (after a rejection): the draft drafts γ while ' +
      'the target scores the one position after the committed text, and only the first draft is tested. Lossless: ' +
      'what is drafted during a verification never depends on its verdict. The `parallel` option of sd and the ' +
      'draft-length policies is post-verify alone. Choice: the target keeps `--batch-threads` while the draft runs on ' +
      '`--threads`; on a 2-core machine `--batch-threads 1` gives each model one core',
    needs: DRAFT,
    lossless: true,
    gamma: 'the draft window γ',
    namespace: 'pearl',
    params: {},
    newRun: ({ gamma }) => withPolicy(() => fixedLengthPolicy(gamma), (policy) => parallelDraftingDecoder(policy, { preVerify: true }))
  }),
  method({
    id: 'sd-heuristic',
    family: 'policy',
    summary: "Hugging Face's heuristic draft length: +2 after an all-accepted round, else −1",
    description:
      "Hugging Face's heuristic schedule (`AssistedCandidateGenerator.update_candidate_strategy`): start at `--gamma`, " +
      '+2 after a round whose drafts were all accepted, else −1 (floor 1), no upper bound unless `heuristic.maxDraft` ' +
      'sets one (SVIP §3.1 and its code cap its "heuristics" baseline at 40: min(40, γ + 2), start at min(40, `--gamma`)); ' +
      'persists across the prompts of a run (HF "heuristic"); `heuristic.transient=true` resets to `--gamma` at each ' +
      'prompt (HF "heuristic_transient")',
    needs: DRAFT,
    lossless: true,
    gamma: 'the starting draft length',
    namespace: 'heuristic',
    params: {
      ...PARALLEL,
      transient: flag(false, { help: 'back to γ at each prompt (HF "heuristic_transient")', source: 'HF candidate_generator.py' }),
      maxDraft: integer(0, { min: 0 }, { help: 'the draft length cap; 0 = none (HF)', source: 'SVIP §3.1 and its code: 40' })
    },
    // One policy per run: the persistent schedule carries γ from prompt to prompt; the transient one resets it.
    newRun: (settings) =>
      withPolicy(() => heuristicPolicy({ initialGamma: settings.gamma, transient: settings.params.transient, maxDraft: settings.params.maxDraft }), draftModelDecoder(settings))
  }),
  method({
    id: 'sd-pmin',
    family: 'policy',
    summary: "llama.cpp's confidence floor: stop after a draft token with top-1 probability < p_min",
    description:
      "llama.cpp's confidence floor (common/speculative.cpp): stop drafting after a token whose draft top-1 probability " +
      "< p_min, never before n_min tokens, at most n_max (not `--gamma`). Defaults are llama.cpp's " +
      '`common_params_speculative` (the llama.cpp bundled with node-llama-cpp 3.22.1 now defaults to p_min = 0, i.e. ' +
      'off). Unlike llama.cpp, the token below the floor is still verified, and n_min is a floor for the check rather ' +
      'than "discard shorter drafts"',
    needs: DRAFT,
    lossless: true,
    gamma: null,
    namespace: 'pmin',
    params: {
      ...PARALLEL,
      p: real(0.75, { min: 0, max: 1 }, { help: 'stop after a token whose draft top-1 probability is below it', symbol: 'p_min', source: 'llama.cpp common.h' }),
      min: integer(0, { min: 0 }, { help: 'no confidence stop before this many tokens', symbol: 'n_min', source: 'llama.cpp common.h' }),
      max: integer(16, { min: 1 }, { help: 'the draft length cap', symbol: 'n_max', source: 'llama.cpp common.h' })
    },
    check: ({ params }) => (params.min > params.max ? `pmin.min must be at most pmin.max (${params.max}), got ${params.min}` : null),
    newRun: (settings) => withPolicy(() => pMinPolicy(settings.params), draftModelDecoder(settings))
  }),
  method({
    id: 'svip',
    family: 'policy',
    summary: 'SVIP: stop drafting after a token whose draft entropy gives √(c·H) > h',
    description:
      'SVIP (Algorithm 1, Eq. 6): stop drafting after a token whose draft entropy H (nats) gives √(c·H) > h; at most ' +
      '`svip.maxDraft`. h = 0.3 (§3.1: chosen from the grid {0.2, 0.3, 0.4, 0.5}; 0.3 for Qwen2.5 and LLaMA-3). ' +
      "Choices: the authors' public code scales the entropy by a constant before the root (`sqrt(entropy * 0.15) > " +
      "threshold`); the paper absorbs √c into h, and its h values are for c = 0.15. `svip.c=1` is Algorithm 1 as " +
      "printed (√H > h). H is the authors' `calc_entropy(next_token_logits)`: the draft's softmax of its raw logits " +
      'over the whole vocabulary at temperature 1, whatever the run\'s temperature / top-k / top-p (every draft logit is ' +
      'transferred, ~10 ms per drafted token at a 32k vocabulary); `svip.warpedEntropy=true` takes H of the warped ' +
      'draft distribution instead (lower with top-k: longer drafts at the same h)',
    needs: DRAFT,
    lossless: true,
    gamma: null,
    namespace: 'svip',
    params: {
      ...PARALLEL,
      h: real(0.3, { min: 0 }, { help: 'entropy threshold: stop after a token with √(c·H) > h', symbol: 'h', source: 'SVIP §3.1, Alg. 1' }),
      c: real(0.15, { min: 0, minExclusive: true }, { help: "entropy scale of the authors' code (1 = Alg. 1 as printed)", symbol: 'c', source: 'SVIP public code' }),
      maxDraft: integer(40, { min: 1 }, { help: 'the draft length cap', source: 'SVIP §3.1' }),
      warpedEntropy: flag(false, {
        help: 'H of the warped draft distribution (temperature, top-k, top-p) instead of the whole-vocabulary softmax',
        source: "SVIP public code: calc_entropy of the raw logits"
      })
    },
    newRun: (settings) => withPolicy(() => svipPolicy(settings.params), draftModelDecoder(settings))
  }),
  method({
    id: 'self-verify',
    family: 'policy',
    summary: 'HSDDW self-verify: stop drafting after a token with H(q) > τ (τ = mean entropy of rejected tokens)',
    description:
      'HSDDW self-verify (App. C Algorithm 1, §3.1, §4.4): stop drafting after a token with H(q) > τ; τ = mean entropy ' +
      "of the draft tokens rejected so far in this prompt (the text's rule; Alg. 1 line 25's H(q_n) would be the last " +
      'accepted one), 0 until the first rejection, so drafts are one token long until then; τ resets at each prompt ' +
      '("in the current sentence") and is recorded in every step\'s threshold. H is that of the draft model\'s ' +
      'distribution, as SVIP computes it: the softmax of its raw logits over the whole vocabulary at temperature 1 (the ' +
      "paper's runs: temperature 1 or greedy, no top-k); `selfverify.warpedEntropy=true` takes H of the warped draft " +
      'distribution instead',
    needs: DRAFT,
    lossless: true,
    gamma: null,
    namespace: 'selfverify',
    params: {
      ...PARALLEL,
      maxDraft: integer(10, { min: 1 }, { help: 'the draft window', symbol: 'K', source: 'HSDDW App. A.1' }),
      warpedEntropy: flag(false, {
        help: 'H of the warped draft distribution (temperature, top-k, top-p) instead of the whole-vocabulary softmax'
      })
    },
    // τ is per prompt (reset in startPrompt), so one policy per run is enough.
    newRun: (settings) => withPolicy(() => selfVerifyPolicy(settings.params), draftModelDecoder(settings))
  }),
  method({
    id: 'adaptive-analytic',
    family: 'policy',
    summary: 'on-the-fly adaptation, Method 1: γ maximising the expected throughput of Eq 1 with measured Acc and costs',
    description:
      'on-the-fly adaptation, Method 1 (Liu et al. §4.1): before each round γ = argmax over [1, `--gamma`] of ' +
      '(1 − Acc^{γ+1}) / ((1 − Acc)(γ·a_q + b_p(γ))) (Eq 1); Acc = ΣV / (ΣV + #rounds with a rejection) over the last h ' +
      "rounds (Eq 2, the exact MLE of App. B.1's censored geometric), capped at Acc_max; a_q = draft ms per token, " +
      'b_p(γ) = b0 + b1·γ by non-negative least squares on verify ms (prompt-prefill rounds excluded); γ = `--gamma` ' +
      'until the first timed round; history and timings persist across prompts',
    needs: DRAFT,
    lossless: true,
    gamma: CAP,
    namespace: 'analytic',
    params: {
      ...PARALLEL,
      history: integer(6, { min: 1, max: Infinity }, { help: 'rounds in the acceptance estimate', symbol: 'h', source: 'Liu et al. App. D.6' }),
      accMax: real(0.98, { min: 0, max: 1, minExclusive: true }, { help: 'cap on the estimated acceptance', symbol: 'Acc_max' }),
      timingHistory: integer(32, { min: 1, max: Infinity }, { help: 'rounds in the draft/verify cost fit' })
    },
    newRun: (settings) => withPolicy(() => adaptiveAnalyticPolicy({ gammaMax: settings.gamma, ...settings.params }), draftModelDecoder(settings))
  }),
  method({
    id: 'adaptive-fsm',
    family: 'policy',
    summary: 'on-the-fly adaptation, Method 2: saturating counter, −1 after a rejection, +1 when all accepted',
    description:
      'on-the-fly adaptation, Method 2 (Liu et al. §4.2): saturating counter, γ −1 after a rejection, +1 when every ' +
      'draft was accepted, within [0, `--gamma`], starting at `--gamma`; at γ = 0 the target decodes one token alone ' +
      'and (nothing rejected) γ returns to 1; γ persists across prompts',
    needs: DRAFT,
    lossless: true,
    gamma: CAP,
    namespace: 'fsm',
    params: PARALLEL,
    newRun: (settings) => withPolicy(() => adaptiveFsmPolicy(settings.gamma), draftModelDecoder(settings))
  }),
  method({
    id: 'adaptive-cache-fsm',
    family: 'policy',
    summary: 'on-the-fly adaptation, Method 3: counter driven by accepted tokens already in a token-id cache',
    description:
      'on-the-fly adaptation, Method 3 (Liu et al. §4.2): token-id cache seeded with the prompt and grown with the ' +
      'emitted tokens; γ += (accepted draft tokens already in the cache) + 1 if all accepted − 1 if none was cached, ' +
      'within [1, `--gamma`]; cache per prompt, γ persists across prompts',
    needs: DRAFT,
    lossless: true,
    gamma: CAP,
    namespace: 'cachefsm',
    params: PARALLEL,
    newRun: (settings) => withPolicy(() => adaptiveCacheFsmPolicy(settings.gamma), draftModelDecoder(settings))
  }),
  method({
    id: 'adaptive-rl',
    family: 'policy',
    summary: 'on-the-fly adaptation, Method 4: tabular Q-learning over the next γ',
    description:
      'on-the-fly adaptation, Method 4 (Liu et al. App. B.4 Alg. 2): tabular Q-learning, state = previous γ, action = ' +
      'next γ ∈ [1, `--gamma`], reward = accepted / proposed, uniformly random for the first `rl.warmup` decisions ' +
      'then ε-greedy from its own seeded PRNG; Q-table persists across prompts',
    needs: DRAFT,
    lossless: true,
    gamma: CAP,
    namespace: 'rl',
    params: {
      ...PARALLEL,
      epsilon: real(0.1, { min: 0, max: 1 }, { help: 'exploration rate after the warm-up', symbol: 'ε', source: 'Liu et al. Alg. 2' }),
      alpha: real(0.1, { min: 0, max: 1, minExclusive: true }, { help: 'learning rate', symbol: 'α', source: 'Liu et al. Alg. 2' }),
      discount: real(0.9, { min: 0, max: 1, maxExclusive: true }, { help: 'discount of the next state’s value', symbol: 'γ_RL', source: 'Liu et al. Alg. 2' }),
      warmup: integer(25, { min: 0, max: Infinity }, { help: 'uniformly random decisions before ε-greedy' }),
      seed: integer(0, { min: 0, max: 2 ** 32 - 1 }, { help: "the policy's own PRNG seed" })
    },
    newRun: (settings) => withPolicy(() => adaptiveRlPolicy({ gammaMax: settings.gamma, ...settings.params }), draftModelDecoder(settings))
  }),
  method({
    id: 'pre-verify',
    family: 'hierarchy',
    summary: 'three models (HSDDW Fig. 5a): M_q1 drafts, M_q2 pre-verifies, M_p verifies the M_q2-level tokens',
    description:
      'three models (HSDDW §4.3, Fig. 5a: "two speculative decoding models connected sequentially"): M_q1 (`--draft`) ' +
      'drafts `--gamma` tokens, M_q2 (`--mid`) verifies them in one batched call by exact rejection sampling (accept ' +
      'min(1, q2/q1), correct from norm(max(0, q2 − q1)), bonus from q2), repeatedly, until `pre.window` M_q2-level ' +
      'tokens wait; M_p verifies them in one batched call with q = q2 for every one of them (the marginal law of an ' +
      'accepted M_q1 token, a correction and a bonus alike — lossless)',
    needs: TRIO,
    lossless: true,
    gamma: "M_q1's draft window K",
    namespace: 'pre',
    params: PRE_PARAMS,
    newRun: ({ gamma, params }) => () => preVerifyDecoder({ gamma, window: params.window, selfVerify: false })
  }),
  method({
    id: 'pre-self-verify',
    family: 'hierarchy',
    summary: 'pre-verify + self-verify at both levels (HSDDW Fig. 5b)',
    description:
      '`pre-verify` plus self-verify at both levels (Fig. 5b), same windows: M_q1 stops after a token with H(q1) > ' +
      'τ_q1, the M_q2 level hands over after the first token with H(q2) > τ_q2 (later tokens of that round are ' +
      'dropped); τ_q1 / τ_q2 = mean entropy of the tokens M_q2 / M_p rejected in this prompt, 0 at first (the ' +
      '`self-verify` rule, with H of the warped q1 / q2 — `self-verify`\'s `selfverify.warpedEntropy=true`)',
    needs: TRIO,
    lossless: true,
    gamma: "M_q1's draft window K",
    namespace: 'pre',
    params: PRE_PARAMS,
    newRun: ({ gamma, params }) => () => preVerifyDecoder({ gamma, window: params.window, selfVerify: true })
  }),
  method({
    id: 'hsddw',
    family: 'hierarchy',
    summary: 'HSDDW (App. D Alg. 2): draft+self-verify by M_q1, pre-verify+self-verify by M_q2, verify by M_p',
    description:
      'HSDDW (App. D Algorithm 2): Draft + Self-verify by M_q1 (τ_q1, window `--gamma`), Pre-verify + Self-verify by ' +
      'M_q2 — back to drafting while every token of the round has H(q2) ≤ τ_q2, else hand all n_tot waiting tokens ' +
      'to M_p (no window) — then Verify by M_p. Choices where the listing is ambiguous or lossy (n_tot counts ' +
      "corrections, τ takes the rejected token's entropy, H of the warped q1 / q2, bonus tokens, …) are in `electron/engine/decoders/hsddw.ts`",
    needs: TRIO,
    lossless: true,
    gamma: "M_q1's draft window K",
    namespace: 'hsddw',
    params: {},
    newRun: ({ gamma }) => () => hsddwDecoder({ gamma })
  }),
  method({
    id: 'hier-chen',
    family: 'hierarchy',
    summary: "Chen's hierarchical SD (Alg. 2): m mid guesses, each after n small guesses — NOT lossless as printed",
    description:
      "Chen's hierarchical SD (Algorithm 2): per target call m mid-model guesses, each after n small-model guesses, " +
      'all verified by M_p against their own draft distribution; after a rejection t ~ p_{k+1} as printed — **not ' +
      'lossless** (the paper says so; the toy test measures a total variation distance of ≈ 0.19 on the first token). ' +
      '`chen.residual=true` corrects from norm(max(0, p − d)) instead, which is exact',
    needs: TRIO,
    lossless: false,
    gamma: null,
    namespace: 'chen',
    params: {
      m: integer(2, { min: 1, max: 256 }, { help: 'mid-model guesses per target call', symbol: 'm', source: 'Chen et al. Alg. 2' }),
      n: integer(2, { min: 0, max: 256 }, { help: 'small-model guesses per mid-model guess', symbol: 'n', source: 'Chen et al. Alg. 2' }),
      residual: flag(false, { help: 'correct from the residual (exact) instead of p_{k+1} (Alg. 2 line 14)' })
    },
    newRun: ({ params }) => () => chenDecoder(params)
  }),
  method({
    id: 'beam',
    family: 'beam',
    summary: 'beam sampling (DSBD Eq 1) with the target alone; output = the final beam with the lowest perplexity',
    description:
      "beam sampling (DSBD Eq 1) with the target alone: W beams drawn i.i.d. (with replacement) from T∘p_beam, the run's " +
      'warp applied to the joint over beams × vocabulary (temperature on the joint log-likelihood, global top-k, ' +
      'top-p); W = 1 is multinomial sampling; the output is the final beam with the lowest perplexity',
    needs: { draft: false, mid: false },
    lossless: true,
    gamma: null,
    namespace: 'beam',
    params: {
      width: integer(3, { min: 1, max: 64 }, { help: 'beams kept per step', symbol: 'W', source: 'DSBD Eq 1' }),
      deterministic: flag(false, { help: 'keep the W most probable candidates (beam search) instead of sampling' })
    },
    sessions: ({ params }) => params.width,
    newRun: ({ params }) => () => beamDecoder(params)
  }),
  dsbdMethod(false, {
    id: 'dsbd',
    family: 'beam',
    summary: 'DSBD (Alg. 1): the draft beam-samples a forest, the target verifies it layer by layer in one decode',
    description:
      'DSBD (Algorithm 1, §3): the draft beam-samples a forest of `--gamma` layers × `dsbd.ws` beams, the target scores ' +
      'every node in one batched decode (one sequence per tree path), layers are verified in order with ' +
      "min(1, p′/q_beam) (Appendix A's direction — Algorithm 1 prints the inverse), residual p′ ← norm(max(0, p′ − " +
      'q_beam)), completion from p′ then p_beam, an extra layer when all pass; width W_L = max(W_min, W̃(t)) from Eq ' +
      "2–7. Lossless: with a fixed width it samples exactly `beam`'s law"
  }),
  dsbdMethod(true, {
    id: 'dsbd-1beam',
    family: 'beam',
    summary: 'DSBD memory mode (§3.4): only the lowest-perplexity output beam becomes the next input',
    description:
      "DSBD's memory mode (§3.4): only the output beam with the lowest perplexity becomes the next input, so one KV " +
      'sequence per model is kept between iterations (the forest still needs one per path while it is scored). Same ' +
      '`dsbd.*` parameters'
  }),
  method({
    id: 'nlc-draft',
    family: 'peer',
    summary: "node-llama-cpp's DraftSequenceTokenPredictor (peer baseline; maxTokens = γ)",
    description:
      "node-llama-cpp's own `DraftSequenceTokenPredictor` (peer baseline): the draft predicts in the background and a " +
      "prediction is kept when it equals the token the target samples with llama.cpp's sampler (seeded from SpecLab's " +
      'PRNG) — lossless in distribution, but by its own sampler chain, so its text equals `ar` only when greedy',
    needs: DRAFT,
    lossless: true,
    gamma: "the predictor's maxTokens",
    namespace: 'nlc',
    params: {
      minConfidence: real(0.6, { min: 0, max: 1 }, { help: 'stop predicting below this draft confidence', source: "node-llama-cpp's default" }),
      minTokens: integer(0, { min: 0 }, { help: 'tokens always predicted before the confidence check', source: "node-llama-cpp's default" })
    },
    check: ({ gamma, params }) => (params.minTokens > gamma ? `nlc.minTokens must be at most γ (${gamma}), got ${params.minTokens}` : null),
    newRun: ({ gamma, params }) => () => nlcDraftDecoder({ maxTokens: gamma, minTokens: params.minTokens, minConfidence: params.minConfidence })
  }),
  method({
    id: 'pld',
    family: 'lookup',
    summary: "prompt lookup decoding (Hugging Face): the longest suffix n-gram found in prompt + output proposes what followed it",
    description:
      "prompt lookup decoding, Hugging Face's `PromptLookupCandidateGenerator` (generation/candidate_generator.py; " +
      "Saxena's prompt-lookup-decoding), no draft model: for n from `pld.ngram` (HF `max_matching_ngram_size`) down " +
      'to 1 the last n tokens are matched in the prompt + output, the first match from the left whose continuation ' +
      'is non-empty wins, and the next ≤ `pld.k` tokens (HF `prompt_lookup_num_tokens`, default `--gamma`) are ' +
      'proposed, cut before an end-of-generation token; no match: the target decodes one token alone. Each round ' +
      `records the n-gram length and where it matched. ${POINT_MASS}`,
    needs: TARGET_ONLY,
    lossless: true,
    gamma: 'the default of `pld.k`, the most tokens proposed per round',
    namespace: 'pld',
    params: {
      ngram: integer(2, { min: 1 }, { help: 'the longest suffix n-gram matched (then n − 1, … 1)', symbol: 'max_matching_ngram_size', source: 'HF candidate_generator.py PromptLookupCandidateGenerator: 2' }),
      k: integer('gamma', { min: 1 }, { help: 'the most tokens proposed after the match (default: γ)', symbol: 'prompt_lookup_num_tokens', source: 'HF PromptLookupCandidateGenerator num_output_tokens (its own default 10)' })
    },
    newRun: ({ params }) => lookupMethod('pld', params.k, (_, isEnd) => promptLookupState({ maxNgram: params.ngram, k: params.k }, isEnd))
  }),
  method({
    id: 'ngram-simple',
    family: 'lookup',
    summary: "llama.cpp's ngram-simple: the m tokens after the last earlier occurrence of the last n tokens",
    description:
      "llama.cpp's `ngram-simple` (common/ngram-map.cpp `common_ngram_simple_draft`, docs/speculative.md), no draft " +
      'model: the key is the last `ngramsimple.n` tokens (the one just sampled included); a backward scan of prompt + ' +
      'output finds its most recent earlier occurrence, and the min(m, available) tokens after it are drafted when ' +
      "that is at least n (nothing otherwise). llama.cpp's schedule: no draft before the first token is sampled from " +
      "the prompt. Defaults are llama.cpp's (n = 12, m = 48): it drafts nothing until the history is longer than " +
      'n + m + 1 tokens; the draft cap is m, not `--gamma`; its `min_hits` option is read by nothing in llama.cpp. ' +
      `Each round records where the key matched. ${POINT_MASS}`,
    needs: TARGET_ONLY,
    lossless: true,
    gamma: null,
    namespace: 'ngramsimple',
    params: NGRAM_SIMPLE_PARAMS,
    newRun: ({ params }) => lookupMethod('ngram-simple', params.m, (promptTokens) => ngramSimpleState(params, promptTokens.length))
  }),
  method({
    id: 'ngram-map-k',
    family: 'lookup',
    summary: "llama.cpp's ngram-map-k: hashed n-gram keys, each draft capped by the key's last accepted length",
    description:
      "llama.cpp's `ngram-map-k` (common/ngram-map.cpp `common_ngram_map_draft` in key-only mode, PR #18471), no draft " +
      'model: the key (last `ngrammapk.n` tokens) is looked up through a 2^18-slot LCG hash table of earlier positions ' +
      'whose m-gram lies inside the history, and the tokens after it are drafted. Accepted-token statistics: per key, ' +
      'the next draft is capped at the number of tokens accepted from its last one (m at first), so a key whose draft ' +
      'was rejected outright never drafts again; a key drafts only after `ngrammapk.minHits` hits (docs/speculative.md; ' +
      "this commit's key-only code skips that test — the default 1 is the code exactly). One map per prompt " +
      '(llama-server keeps one per slot), no draft before the first sampled token, draft cap m (not `--gamma`). Ported ' +
      "line by line, quirks included, and replayed against llama.cpp's own code (test/fixtures/llama-ngram-map). Each " +
      `round records the match, the key's hits and its accepted-length statistic. ${POINT_MASS}`,
    needs: TARGET_ONLY,
    lossless: true,
    gamma: null,
    namespace: 'ngrammapk',
    params: NGRAM_MAP_K_PARAMS,
    newRun: ({ params }) =>
      lookupMethod('ngram-map-k', params.m, (promptTokens) => ngramMapState({ ...params, keyOnly: true, minHitsKeyOnly: true }, promptTokens))
  }),
  method({
    id: 'ngram-map-k4v',
    family: 'lookup',
    summary: "llama.cpp's ngram-map-k4v (experimental): up to 4 m-grams counted per key, the dominant one drafted",
    description:
      "llama.cpp's experimental `ngram-map-k4v` (common/ngram-map.cpp `common_ngram_map_draft`), no draft model: as " +
      '`ngram-map-k`, but up to 4 value m-grams are counted after each key, and the key drafts (the tokens after its ' +
      "latest occurrence, at most the chosen value's accepted-length statistic) only once it has `ngrammapk4v.minHits` " +
      `hits and its most frequent value is at least twice as frequent as the others together. ${POINT_MASS}`,
    needs: TARGET_ONLY,
    lossless: true,
    gamma: null,
    namespace: 'ngrammapk4v',
    params: NGRAM_MAP_K4V_PARAMS,
    newRun: ({ params }) => lookupMethod('ngram-map-k4v', params.m, (promptTokens) => ngramMapState({ ...params, keyOnly: false }, promptTokens))
  }),
  method({
    id: 'ngram-mod',
    family: 'lookup',
    summary: "llama.cpp's ngram-mod: a rolling-hash pool of n-grams shared across the run's prompts, variable-length chains",
    description:
      "llama.cpp's `ngram-mod` (common/ngram-mod.cpp `common_ngram_mod`, PR #19164, driven by common/speculative.cpp " +
      '`common_speculative_impl_ngram_mod`), no draft model: a pool of 2^22 entries maps the hash of every n-gram seen ' +
      '(`ngrammod.n` tokens, 64-bit LCG hash mod the pool size) to the token that last followed it (collisions ' +
      'overwrite). Each round the last n tokens are looked up and the drafted token extends the window, a chain of up ' +
      'to `ngrammod.nMax` tokens; a miss ends it, and a chain shorter than `ngrammod.nMin` is no draft (variable draft ' +
      'length). New n-grams are added in chunks of more than 32 tokens; the pool is emptied when a prompt fills it ' +
      'past 25% and after 5 drafts in a row with acceptance below 25%. The pool is SHARED ACROSS THE PROMPTS OF A RUN ' +
      "(llama-server shares one pool across all its slots): a later prompt drafts from earlier prompts' text; a new run " +
      "starts empty. llama.cpp's defaults (n = 24, nMin = 48, nMax = 64) draft only long verbatim repeats; no draft " +
      `before the first sampled token; the cap is nMax, not \`--gamma\`. Each round records the chain length and the pool's occupancy. ${POINT_MASS}`,
    needs: TARGET_ONLY,
    lossless: true,
    gamma: null,
    namespace: 'ngrammod',
    params: {
      n: integer(24, { min: 1, max: 1024 }, { help: 'n-gram length hashed into the pool (the lookup key)', symbol: 'n_match', source: 'llama.cpp common/common.h common_params_speculative_ngram_mod; --spec-ngram-mod-n-match' }),
      nMax: integer(64, { min: 1, max: 1024 }, { help: 'the longest chain drafted (the draft cap)', symbol: 'n_max', source: 'llama.cpp common_params_speculative_ngram_mod; --spec-ngram-mod-n-max' }),
      nMin: integer(48, { min: 0, max: 1024 }, { help: 'a shorter chain is not drafted', symbol: 'n_min', source: 'llama.cpp common_params_speculative_ngram_mod; --spec-ngram-mod-n-min' })
    },
    check: ({ params }) => (params.nMin > params.nMax ? `ngrammod.nMin must be at most ngrammod.nMax (${params.nMax}), got ${params.nMin}` : null),
    newRun: ({ params }) => {
      const run = new NgramModRun(params)
      return lookupMethod('ngram-mod', params.nMax, (promptTokens) => run.start(promptTokens))
    }
  }),
  method({
    id: 'ngram-cache',
    family: 'lookup',
    summary: "llama.cpp's ngram-cache: 1–4-gram counts of this prompt, of the run's earlier prompts and of a static corpus",
    description:
      "llama.cpp's `ngram-cache` (common/ngram-cache.cpp `common_ngram_cache_draft`, driven as examples/lookup/lookup.cpp " +
      'drives it), no draft model: three caches count which token followed each n-gram — CONTEXT (1–4-grams of this ' +
      'prompt + output), DYNAMIC (the context caches of the RUN\'s earlier prompts, merged in as lookup.cpp merges and ' +
      'saves them after a generation; a new run starts empty) and STATIC (2-grams of a corpus, from the file ' +
      '`ngramcache.static`, which `speclab ngram-cache build` or llama.cpp\'s `llama-lookup-create` writes). Each drafted ' +
      'token: the longest n-gram ending at the draft\'s end whose top follower passes llama.cpp\'s thresholds (context: ' +
      'lax, dynamic: strict sample size and share), its counts weighted by the static cache; else the static cache alone; ' +
      'the first miss ends the draft, at most `ngramcache.nDraft` tokens (llama-server\'s fixed 8); no draft before the ' +
      'first sampled token (lookup.cpp drafts after a sample). Ties go to the token ' +
      "first seen (llama.cpp: hash-map order). llama-server's `--spec-type ngram-cache` never updates its dynamic cache and " +
      'keeps its context cache across a slot\'s requests — not copied; choices in `electron/engine/lookup/ngram-cache.ts`. ' +
      `Each round records which cache drafted each token (\`levels\`: c / d / s). ${POINT_MASS}`,
    needs: TARGET_ONLY,
    lossless: true,
    gamma: null,
    namespace: 'ngramcache',
    params: {
      nDraft: integer(NGRAM_CACHE_N_DRAFT, { min: 1, max: 64 }, { help: 'the most tokens drafted per round', symbol: 'n_draft', source: 'llama.cpp common/speculative.cpp create_state_ngram_cache: 8' }),
      static: filePath({
        help: 'static cache file: 2-grams of a corpus (speclab ngram-cache build, or llama.cpp llama-lookup-create)',
        source: 'llama.cpp --lookup-cache-static'
      })
    },
    check: ({ params }) => {
      if (params.static === '') return null
      try {
        loadNgramCache(params.static)
        return null
      } catch (error) {
        if (error instanceof UserInputError) return `ngramcache.static: ${error.message}`
        throw error
      }
    },
    newRun: ({ params }) => {
      const run = new NgramCacheRun({ nDraft: params.nDraft, staticFile: params.static })
      return () =>
        speculativeDecoder(
          fixedLengthPolicy(params.nDraft),
          lookupDrafter('ngram-cache', (promptTokens, target) => run.start(promptTokens, target.info.vocabularySize))
        )
    }
  }),
  method({
    id: 'sd+ngram',
    family: 'speculative',
    summary: "hybrid: llama.cpp's ngram-simple drafts when its key matches, otherwise the draft model (γ tokens)",
    description:
      "hybrid drafting as llama.cpp chains speculative types (`--spec-type ngram-simple,draft-simple`; " +
      'common/speculative.cpp `common_speculative_init` lists the n-gram types before the draft model, ' +
      '`common_speculative_draft` takes the first non-empty draft and `common_speculative_accept` reports the verdict ' +
      "to that type only): each round llama.cpp's `ngram-simple` (as the `ngram-simple` method: key = the last " +
      '`sdngram.n` tokens, up to `sdngram.m` tokens after its latest earlier occurrence, no lookup before the first ' +
      'sampled token) proposes when it matches, otherwise the draft model drafts; either draft is cut at `--gamma`. ' +
      "Choice: llama-server caps only the draft model at `--spec-draft-n-max`; its round cap dp.n_max is the slot's " +
      'remaining budget (tools/server/server-context.cpp `get_n_draft_max`), so its n-gram drafts run to `size_m` ' +
      '(48). Here one cap γ bounds both sources, so `--gamma` is the one draft length and rounds compare with `sd` at ' +
      'the same γ; `sdngram.m` above γ changes nothing. `decision.source` says which drafted the round (`ngram` or ' +
      '`draft`). Lossless: a ' +
      'round has one source, so its tokens are verified against the law they came from — δ(x) for looked-up tokens ' +
      "(accept with p(x), correct from norm(max(0, p − δ))), the draft's warped q for model tokens (`sd`'s min(1, p/q)); " +
      "greedy equals `ar`. The n-gram defaults are llama.cpp's (12, 48: nothing matches before the history passes 61 tokens)",
    needs: DRAFT,
    lossless: true,
    gamma: 'the draft length of either source (model tokens drafted; n-gram drafts cut there)',
    namespace: 'sdngram',
    params: SD_NGRAM_PARAMS,
    newRun: ({ gamma, params }) =>
      withPolicy(() => fixedLengthPolicy(gamma), (policy) =>
        speculativeDecoder(
          policy,
          chainDrafter('sd+ngram', [
            { source: 'ngram', drafter: lookupDrafter('ngram-simple', (promptTokens) => ngramSimpleState(params, promptTokens.length)) },
            { source: 'draft', drafter: modelDrafter }
          ])
        )
      )
  }),
  method({
    id: 'sd-tree',
    family: 'speculative',
    summary: "multi-draft tree: the draft splits where its runner-up candidates pass p_split, the target scores every path at once",
    description:
      "token-tree speculative decoding: the draft expands a tree depth by depth (one batched draft call per depth) and " +
      "splits a node into more children where its candidates of rank ≥ 1 have probability > `tree.pSplit` (llama.cpp's " +
      '`examples/speculative` rule), within `tree.branches` leaves, `tree.nodes` nodes and depth `--gamma`; children are ' +
      'drawn from q WITHOUT replacement (greedy: the top candidates). The target scores every node in one decode — one ' +
      'KV sequence per root-to-leaf path issued together (node-llama-cpp has no tree attention masks; each step records ' +
      'positions evaluated vs requested, paths and KV copies). Verification is multi-draft recursive rejection sampling ' +
      '(SpecInfer; Recursive Speculative Decoding): the children are tried in order, each accepted with ' +
      'min(1, cur(x)/r(x)) against the residual cur left by its rejected siblings (cur ← norm(max(0, cur − r))), where r ' +
      'is the law it was drawn from; a correction from cur when all fail, a bonus at a leaf — lossless. Greedy follows ' +
      "the argmax path (text = `ar`). Unlike llama.cpp's example, which drafts the top candidates deterministically and " +
      'tests them as if sampled from q (not exact at temperature > 0). Steps record the tree size, depth, leaves and the ' +
      'accepted path (child ranks); accepted tokens of a non-first sibling are provenance `branch`',
    needs: DRAFT,
    lossless: true,
    gamma: "the tree's depth",
    // A round verifies siblings against residuals, not one draft by position: a rate r_i names no node to accept.
    synthetic: false,
    namespace: 'tree',
    params: TREE_SHAPE,
    sessions: ({ params }) => params.branches,
    newRun: (settings) => () => sdTreeDecoder(treeOptions(settings))
  }),
  method({
    id: 'sd-tree+ngram',
    family: 'speculative',
    summary: 'sd-tree with an n-gram branch: a prompt-lookup continuation as the root\'s first child, next to the draft\'s',
    description:
      '`sd-tree` plus an n-gram branch: each round the prompt lookup of `pld` (the longest suffix n-gram of prompt + ' +
      'output, n ≤ `treengram.ngram`, down to 1) proposes a chain of up to `--gamma` tokens that hangs from the root as its ' +
      'FIRST child (llama.cpp chains its n-gram types before the draft model); the draft\'s root children are drawn from q ' +
      'without the looked-up token. The chain is a path of point masses r = δ(x), verified by the same recursive ' +
      'rejection (accept with cur(x), else cur without x renormalised), so the method stays lossless. The chain is one ' +
      'of the `treengram.branches` paths and counts against `treengram.nodes`; its accepted tokens are provenance `ngram`',
    needs: DRAFT,
    lossless: true,
    gamma: "the tree's depth (and the n-gram chain's cap)",
    // A round verifies siblings against residuals, not one draft by position: a rate r_i names no node to accept.
    synthetic: false,
    namespace: 'treengram',
    params: TREE_NGRAM_PARAMS,
    sessions: ({ params }) => params.branches,
    newRun: (settings) => () =>
      sdTreeDecoder(treeOptions(settings), 'sd-tree+ngram', (_, target) =>
        promptLookupState({ maxNgram: settings.params.ngram, k: settings.gamma }, (token) => target.isEndOfGeneration(token))
      )
  }),
  method({
    id: 'nlc-lookup',
    family: 'peer',
    summary: "node-llama-cpp's InputLookupTokenPredictor (model-free peer baseline): predicts prompt tokens that follow a match",
    description:
      "node-llama-cpp's own `InputLookupTokenPredictor` (peer baseline, no draft model; tokenPredictors/" +
      'InputLookupTokenPredictor.js): the end of the generated text is looked up in the PROMPT only (never the ' +
      'output), the longest match of at least `nlclookup.patternMin` tokens (at most `nlclookup.patternMax`, 0 = no ' +
      'limit) wins, and the next `nlclookup.predictionMin`–`nlclookup.predictionMax` prompt tokens are predicted ' +
      "(node-llama-cpp's defaults). Validated inside node-llama-cpp by sample-and-match with llama.cpp's sampler " +
      "(seeded from SpecLab's PRNG): drawing y ~ p and keeping x iff y = x is the point-mass verification, so it is " +
      'lossless in distribution, but by its own sampler chain — its text equals `ar` only when greedy',
    needs: TARGET_ONLY,
    lossless: true,
    gamma: null,
    namespace: 'nlclookup',
    params: {
      patternMin: integer(1, { min: 1 }, { help: 'the shortest match in the prompt', symbol: 'patternLength.min', source: "node-llama-cpp's default" }),
      patternMax: integer(0, { min: 0 }, { help: 'the longest match looked for; 0 = no limit', symbol: 'patternLength.max', source: "node-llama-cpp's default" }),
      predictionMin: integer(1, { min: 1 }, { help: 'fewer tokens after the match: no prediction', symbol: 'predictionLength.min', source: "node-llama-cpp's default" }),
      predictionMax: integer(3, { min: 1 }, { help: 'the most tokens predicted (the draft cap)', symbol: 'predictionLength.max', source: "node-llama-cpp's default" })
    },
    check: ({ params }) =>
      params.predictionMin > params.predictionMax
        ? `nlclookup.predictionMin must be at most nlclookup.predictionMax (${params.predictionMax}), got ${params.predictionMin}`
        : params.patternMax !== 0 && params.patternMax < params.patternMin
          ? `nlclookup.patternMax must be 0 or at least nlclookup.patternMin (${params.patternMin}), got ${params.patternMax}`
          : null,
    newRun: ({ params }) => () => nlcLookupDecoder(params)
  }),
  method({
    id: 'sd-tli',
    family: 'speculative',
    summary: 'a draft with ANOTHER tokenizer (Token-Level Intersection): it drafts only tokens both vocabularies spell',
    description:
      'Token-Level Intersection (Timor et al. 2025, Algorithm 4; Hugging Face\'s `UniversalSpeculativeDecodingGenerator`): ' +
      'the draft may use another tokenizer. I = the tokens whose byte strings both vocabularies have (SentencePiece `▁` ' +
      'and `<0xNN>`, byte-level BPE `Ġ`/`Ċ` normalised to bytes; control tokens never in I); the draft\'s warped q is ' +
      'restricted to I and renormalised, its `--gamma` proposals are mapped to the target\'s ids and verified as in `sd` ' +
      '(min(1, p/q_I), residual norm(max(0, p − q_I)) over the target\'s vocabulary, bonus) — lossless, greedy equals ' +
      '`ar`. The draft is fed the target\'s text: tokens in I map 1:1, text a target-only token brings is re-tokenised ' +
      'with the draft\'s tokenizer from the last sync point (a look-behind of 4 draft tokens). Choices in ' +
      '`electron/engine/decoders/sd-tli.ts`; |I| is in every step\'s decision',
    needs: DRAFT,
    vocabulary: 'any',
    lossless: true,
    gamma: 'the draft length',
    namespace: 'tli',
    params: {},
    newRun: ({ gamma }) => () => sdTliDecoder({ gamma })
  }),
  method({
    id: 'sd-uad',
    family: 'speculative',
    summary: "a draft with ANOTHER tokenizer, string level (HF's Universal Assisted Generation): its text is re-tokenised for the target",
    description:
      "String-level exact match (Hugging Face's Universal Assisted Generation, `AssistedCandidateGeneratorDifferentTokenizers`; " +
      'Timor et al. 2025, SLEM): the draft may use another tokenizer. It continues the text with up to `--gamma` of ' +
      "its own tokens; that text is re-tokenised with the target's tokenizer together with the last `uad.lookbehind` " +
      'committed target tokens (a look-behind, so token boundaries come out as the target would split them; a token ' +
      'spanning the junction is split there) and the target tokens after the committed text are proposed. The target ' +
      'scores them in one batched call and, at each position, draws its own token from its warped p with the seeded ' +
      "PRNG (greedy: argmax), keeping the proposal while they agree (llama-server's sample-then-match); the first " +
      'mismatch gives its own token, a full match a bonus — every token is the target\'s own draw, so lossless, and ' +
      "greedy equals `ar`. The draft is re-synced to the committed text the same way (KV rolled back to the kept " +
      'prefix); before drafting it heals its last token (`uad.heal`: the committed text usually ends inside what the ' +
      'draft would write as one token, so it redraws that token among those that begin with its text — not in HF). ' +
      "Steps record the fraction of draft text kept (`decision.textKept`; the run's `textKept`); choices in " +
      '`electron/engine/decoders/sd-uad.ts`',
    needs: DRAFT,
    vocabulary: 'any',
    lossless: true,
    gamma: "the draft model's tokens per round",
    namespace: 'uad',
    params: {
      lookbehind: integer(DEFAULT_LOOKBEHIND, { min: 1, max: 256 }, {
        help: 'committed tokens re-tokenised with the new text, target and draft side',
        source: 'HF GenerationConfig target_lookbehind / assistant_lookbehind: 10'
      }),
      heal: flag(true, {
        help: "token healing: the draft takes back its last token and redraws it among the tokens that begin with its text (false: HF's UAG as shipped)"
      }),
      maxProposed: integer(0, { min: 0 }, {
        help: "the most target tokens proposed per round; 0 = all the draft's text re-tokenises into (HF)"
      })
    },
    newRun: ({ gamma, params }) => () =>
      sdUadDecoder({ gamma, lookbehind: params.lookbehind, heal: params.heal, maxProposed: params.maxProposed })
  }),
  ...PEER_METHODS
]

/**
 * Ids are unique, and methods that share a namespace (pre.*, dsbd.*) declare the same parameters: one key means one
 * thing whichever method reads it. Checked when the module loads, so a bad catalog never reaches a user.
 */
export function checkCatalog(methods: readonly MethodDefinition[]): readonly MethodDefinition[] {
  const byNamespace = new Map<string, MethodDefinition>()
  methods.forEach((method, index) => {
    if (methods.findIndex((m) => m.id === method.id) !== index) throw new Error(`method catalog: '${method.id}' is declared twice`)
    const sibling = byNamespace.get(method.namespace)
    if (sibling && sibling.params !== method.params)
      throw new Error(`method catalog: ${method.id} and ${sibling.id} share the namespace '${method.namespace}' but not its parameters`)
    byNamespace.set(method.namespace, method)
  })
  return methods
}

export const CATALOG = checkCatalog(METHODS)
