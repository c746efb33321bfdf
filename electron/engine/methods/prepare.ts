/**
 * The one way from user settings to decoders. `prepareRun` validates a run's methods once — known ids, no
 * duplicates, the models each needs, --gamma, and every parameter key against the catalog (a typo, a key of no
 * method, a key of a method not in the run: one message naming the key and the valid ones) — and resolves every
 * parameter with its default, so what a run records is what it decoded with.
 */
import { UserInputError } from '../errors'
import type { Decoder } from '../decoders/types'
import { CATALOG, type MethodDefinition } from './catalog'
import { GAMMA_RANGE } from './limits'
import { defaultOf, describeRange, schemaOf, type ParamValue, type RawParams } from './param-spec'

export interface MethodSettings {
  /** --gamma: the draft length of fixed-window methods, the cap or starting point of adaptive ones. */
  gamma: number
  /** --set key=value pairs, as given. */
  params: RawParams
  /** --synthetic-acceptance r1,r2,…: only methods whose verification is the two-model speculative decoder's. */
  syntheticAcceptance?: readonly number[] | null
}

/**
 * Families whose rounds go through a speculative verification of one draft (sampling/synthetic-acceptance.ts); ar
 * has no verification and stays the real baseline. A definition's own `synthetic` overrides its family's (sd-tree).
 */
const SYNTHETIC_FAMILIES = new Set(['speculative', 'policy', 'baseline'])
export const MAX_SYNTHETIC_RATES = 128

const acceptsSynthetic = (definition: MethodDefinition): boolean => definition.synthetic ?? SYNTHETIC_FAMILIES.has(definition.family)

/** "ar and to the methods that verify … (sd, pearl, …, the draft-length policies)": named from the catalog, so the message cannot drift from it. */
function syntheticMethods(): string {
  const accepting = CATALOG.filter(acceptsSynthetic)
  const baselines = accepting.filter((d) => d.family === 'baseline').map((d) => d.id)
  const verifying = [...accepting.filter((d) => d.family !== 'baseline' && d.family !== 'policy').map((d) => d.id), 'the draft-length policies']
  return `${baselines.join(', ')} and to the methods that verify one draft position by position (${verifying.join(', ')})`
}

function checkSynthetic(definitions: readonly MethodDefinition[], rates: readonly number[] | null | undefined): void {
  if (rates === null || rates === undefined) return
  if (rates.length === 0 || rates.length > MAX_SYNTHETIC_RATES) throw new UserInputError(`--synthetic-acceptance needs 1 to ${MAX_SYNTHETIC_RATES} rates`)
  const bad = rates.find((r) => !(typeof r === 'number' && r >= 0 && r <= 1))
  if (bad !== undefined) throw new UserInputError(`--synthetic-acceptance rates must be numbers in [0, 1], got ${JSON.stringify(bad)}`)
  const unsupported = definitions.filter((d) => !acceptsSynthetic(d)).map((d) => d.id)
  if (unsupported.length > 0)
    throw new UserInputError(
      `--synthetic-acceptance applies to ${syntheticMethods()}, not ${unsupported.join(', ')}`
    )
}

/** Which models a run has (prepare refuses methods whose models are missing). */
export interface AvailableModels {
  draft: boolean
  mid: boolean
}

export interface PreparedMethod {
  id: string
  definition: MethodDefinition
  gamma: number
  /** This method's parameters, full keys, defaults filled in. */
  params: Readonly<Record<string, ParamValue>>
  /** KV sequences per model one batched step wants (DEFAULT_SEQUENCES ≤ n ≤ MAX_SEQUENCES). */
  sessions: number
  /** A fresh run (per-run state starts here); call the result once per prompt. */
  newRun(): () => Decoder
}

export interface PreparedRun {
  methods: PreparedMethod[]
  /** Every parameter of every method of the run, resolved: what the run record stores. */
  params: Record<string, ParamValue>
  /** KV sequences per model the run should open (DEFAULT_SEQUENCES ≤ n ≤ MAX_SEQUENCES). */
  sessions: number
  /**
   * True when any method of the run compares token ids across models (a draft / mid method whose catalog
   * `vocabulary` is 'shared', the default): its trio must pass the vocabulary check (experiments/models.ts loadTrio's
   * `sharedVocabulary`). False when every draft method maps between vocabularies itself (sd-tli, sd-uad) and the rest
   * use the target alone, so the draft may use another tokenizer.
   */
  sharedVocabulary: boolean
}

/** The default context sequences of loadLlamaModel. */
export const DEFAULT_SEQUENCES = 4
/** Sequences above this are not opened (memory: sequences × context size × KV cell size); the beam pool then splits a step into several decodes. */
export const MAX_SEQUENCES = 16

/** At least the default 4, at most MAX_SEQUENCES. */
const clampSequences = (wanted: number): number => Math.min(Math.max(DEFAULT_SEQUENCES, wanted), MAX_SEQUENCES)

export function findMethod(id: string): MethodDefinition | undefined {
  return CATALOG.find((method) => method.id === id)
}

export const keyOf = (definition: MethodDefinition, name: string): string => `${definition.namespace}.${name}`
export const keysOf = (definition: MethodDefinition): string[] => Object.keys(definition.params).map((name) => keyOf(definition, name))

function takes(definition: MethodDefinition): string {
  const keys = keysOf(definition)
  return `${definition.id} takes ${keys.length > 0 ? keys.join(', ') : 'no parameters'}`
}

/** A key no method of the run owns: say whose it is, or that nobody's, and what the run's methods take. */
function unknownKeyMessage(key: string, run: readonly MethodDefinition[]): string {
  const owners = CATALOG.filter((m) => keysOf(m).includes(key)).map((m) => m.id)
  const message = `${key} is not a parameter of ${run.map((m) => m.id).join(' or ')} (${run.map(takes).join('; ')})`
  if (owners.length === 0) return message
  return `${message}: it belongs to ${owners.join(' / ')}, which ${owners.length > 1 ? 'are' : 'is'} not in this run`
}

/** The keys of `params` that a method of the run owns (for plans stored before keys were checked per run). */
export function ownedParams(ids: readonly string[], params: RawParams): Record<string, number | string | boolean> {
  const owned = new Set(ids.map(findMethod).flatMap((method) => (method ? keysOf(method) : [])))
  return Object.fromEntries(Object.entries(params).filter(([key]) => owned.has(key)))
}

function checkModels(definition: MethodDefinition, models: AvailableModels): void {
  if (definition.needs.draft && !models.draft) throw new UserInputError(`method '${definition.id}' needs a draft model`)
  if (definition.needs.mid && !models.mid) throw new UserInputError(`method '${definition.id}' needs a mid model`)
}

function checkGamma(gamma: number): void {
  if (!Number.isInteger(gamma) || gamma < GAMMA_RANGE.min || gamma > GAMMA_RANGE.max)
    throw new UserInputError(`γ must be an integer in [${GAMMA_RANGE.min}, ${GAMMA_RANGE.max}], got ${JSON.stringify(gamma)}`)
}

/** Validates one given value against its spec (zod), or fills the default. */
function resolveParams(definition: MethodDefinition, gamma: number, given: RawParams): Record<string, ParamValue> {
  const resolved: Record<string, ParamValue> = {}
  for (const [name, spec] of Object.entries(definition.params)) {
    const key = keyOf(definition, name)
    const raw = given[key]
    if (raw === undefined) {
      resolved[name] = defaultOf(spec, gamma)
      continue
    }
    const parsed = schemaOf(spec).safeParse(raw)
    if (!parsed.success) throw new UserInputError(`${key} (${definition.id}) must be ${describeRange(spec)}, got ${JSON.stringify(raw)}`)
    resolved[name] = parsed.data
  }
  const problem = definition.check?.({ gamma, params: resolved })
  if (problem) throw new UserInputError(problem)
  return resolved
}

function prepareMethod(definition: MethodDefinition, gamma: number, given: RawParams): PreparedMethod {
  const byName = resolveParams(definition, gamma, given)
  const settings = { gamma, params: byName }
  return {
    id: definition.id,
    definition,
    gamma,
    params: Object.fromEntries(Object.entries(byName).map(([name, value]) => [keyOf(definition, name), value])),
    sessions: clampSequences(definition.sessions?.(settings) ?? DEFAULT_SEQUENCES),
    newRun: () => definition.newRun(settings)
  }
}

/**
 * Validates the methods of a run and their settings once, before anything loads. `models` (when given) are the
 * models the run has: a method that needs a missing one is refused.
 */
export function prepareRun(ids: readonly string[], settings: MethodSettings, models?: AvailableModels): PreparedRun {
  if (ids.length === 0) throw new UserInputError('no method given')
  const definitions = ids.map((id, index) => {
    const definition = findMethod(id)
    if (!definition) throw new UserInputError(`unknown method '${id}' (methods: ${CATALOG.map((m) => m.id).join(', ')})`)
    if (ids.indexOf(id) !== index) throw new UserInputError(`method '${id}' is listed twice`)
    if (models) checkModels(definition, models)
    return definition
  })
  checkGamma(settings.gamma)
  checkSynthetic(definitions, settings.syntheticAcceptance)
  const owned = new Set(definitions.flatMap(keysOf))
  for (const key of Object.keys(settings.params)) if (!owned.has(key)) throw new UserInputError(unknownKeyMessage(key, definitions))
  const methods = definitions.map((definition) => prepareMethod(definition, settings.gamma, settings.params))
  return {
    methods,
    params: Object.assign({}, ...methods.map((m) => m.params)),
    sessions: Math.max(...methods.map((m) => m.sessions)),
    sharedVocabulary: definitions.some(needsSharedVocabulary)
  }
}

/**
 * Whether a method compares token ids across models: one with a draft or mid model, unless its catalog entry says
 * `vocabulary: 'any'`. Target-only methods (ar, beam) run on any trio.
 */
export const needsSharedVocabulary = (definition: MethodDefinition): boolean =>
  (definition.needs.draft || definition.needs.mid) && (definition.vocabulary ?? 'shared') === 'shared'

/** The methods that draft with another vocabulary (a draft and catalog `vocabulary: 'any'`): sd-tli, sd-uad. */
export function crossVocabularyMethods(): string[] {
  return CATALOG.filter((m) => m.needs.draft && m.vocabulary === 'any').map((m) => m.id)
}

/** The line every vocabulary refusal ends with: which methods still run on such a pair. */
export function crossVocabularyAdvice(): string {
  const ids = crossVocabularyMethods()
  return ids.length === 0
    ? 'no method drafts with another vocabulary'
    : `only ${ids.join(' / ')} ${ids.length > 1 ? 'draft' : 'drafts'} with another tokenizer`
}

/**
 * Refuses methods that compare token ids when the trio's vocabularies differ (`mismatch`: the vocabulary check's
 * reason, null when they pass): one line naming the methods, the reason and what can run instead.
 */
export function assertVocabularyFits(definitions: readonly MethodDefinition[], mismatch: string | null): void {
  if (mismatch === null) return
  const refused = definitions.filter(needsSharedVocabulary).map((d) => d.id)
  if (refused.length === 0) return
  throw new UserInputError(
    `${refused.join(', ')} ${refused.length > 1 ? 'compare' : 'compares'} token ids across models, but the loaded ` +
      `vocabularies differ (${mismatch}): ${crossVocabularyAdvice()}`
  )
}

/** One method alone (chat, benches, tests): every key must be this method's. */
export function prepare(id: string, settings: MethodSettings, models?: AvailableModels): PreparedMethod {
  return prepareRun([id], settings, models).methods[0]
}
