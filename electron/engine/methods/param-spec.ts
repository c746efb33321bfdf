/**
 * A method parameter as the catalog declares it: key, type, default, range, one-line help and the paper's symbol
 * and section. The zod schema that validates a user's value, the message that refuses it, the UI's knob and the
 * help line are all derived from this one declaration.
 */
import { z } from 'zod'

export type ParamValue = number | boolean | string
/** Raw settings as users give them (`--set key=value`, the app's fields): anything may arrive. */
export type RawParams = Readonly<Record<string, number | string | boolean>>

interface SpecBase {
  /** One line: what the parameter does. */
  help: string
  /** The paper's symbol (h, τ, W_S …), when the paper names it. */
  symbol?: string
  /** Where it is defined: paper and section, or the peer's source file. */
  source?: string
}

export interface NumberSpec extends SpecBase {
  type: 'number' | 'integer'
  /** A number, or 'gamma': the run's --gamma (pre.window). */
  default: number | 'gamma'
  min: number
  max: number
  minExclusive?: boolean
  maxExclusive?: boolean
}

export interface BooleanSpec extends SpecBase {
  type: 'boolean'
  default: boolean
}

/** A file path ('' = none); `check` of the method says what the file must be. */
export interface PathSpec extends SpecBase {
  type: 'path'
  default: ''
}

/** A server's http(s) URL ('' = none): `llamaserver.url`, the CLI's --llama-server-url. */
export interface UrlSpec extends SpecBase {
  type: 'url'
  default: ''
}

export type ParamSpec = NumberSpec | BooleanSpec | PathSpec | UrlSpec

/** Short names → specs; the method's namespace prefixes them (`svip` + `h` → `svip.h`). */
export type ParamSpecs = Readonly<Record<string, ParamSpec>>

export type ValueOf<S extends ParamSpec> = S extends BooleanSpec ? boolean : S extends PathSpec | UrlSpec ? string : number
export type ResolvedOf<P extends ParamSpecs> = { [K in keyof P]: ValueOf<P[K]> }

type Bounds = Omit<NumberSpec, 'type' | 'default' | 'help' | 'symbol' | 'source'>
type Described = Pick<SpecBase, 'help' | 'symbol' | 'source'>

/** The numeric cap when a paper sets none: keeps a typo (1e9) from allocating or looping for hours. */
export const NO_PAPER_CAP = 1024

export const real = (defaultValue: number, bounds: Partial<Bounds>, described: Described): NumberSpec => ({
  type: 'number',
  default: defaultValue,
  min: bounds.min ?? 0,
  max: bounds.max ?? Infinity,
  minExclusive: bounds.minExclusive,
  maxExclusive: bounds.maxExclusive,
  ...described
})

export const integer = (defaultValue: number | 'gamma', bounds: Partial<Bounds>, described: Described): NumberSpec => ({
  type: 'integer',
  default: defaultValue,
  min: bounds.min ?? 0,
  max: bounds.max ?? NO_PAPER_CAP,
  ...described
})

export const flag = (defaultValue: boolean, described: Described): BooleanSpec => ({ type: 'boolean', default: defaultValue, ...described })

export const filePath = (described: Described): PathSpec => ({ type: 'path', default: '', ...described })

export const serverUrl = (described: Described): UrlSpec => ({ type: 'url', default: '', ...described })

/** The longest path a parameter takes (a typo or a pasted text should not become a file name). */
const MAX_PATH = 4096
const MAX_URL = 2048
const URL_PATTERN = /^https?:\/\/[^\s/?#]+(\/[^\s]*)?$/

/** "a number ≥ 0", "an integer in [1, 64]", "true or false". */
export function describeRange(spec: ParamSpec): string {
  if (spec.type === 'boolean') return 'true or false'
  if (spec.type === 'path') return 'a file path (empty = none)'
  if (spec.type === 'url') return 'an http:// or https:// URL (empty = none)'
  const kind = spec.type === 'integer' ? 'an integer' : 'a number'
  if (spec.max === Infinity) return `${kind} ${spec.minExclusive ? '>' : '≥'} ${spec.min}`
  return `${kind} in ${spec.minExclusive ? '(' : '['}${spec.min}, ${spec.max}${spec.maxExclusive ? ')' : ']'}`
}

/** The zod schema of one value. */
export function schemaOf(spec: ParamSpec): z.ZodType<ParamValue> {
  if (spec.type === 'boolean') return z.boolean()
  if (spec.type === 'path') return z.string().max(MAX_PATH).refine((s) => !s.includes('\0'))
  if (spec.type === 'url') return z.string().max(MAX_URL).refine((s) => s === '' || URL_PATTERN.test(s))
  let schema = spec.type === 'integer' ? z.number().int() : z.number().finite()
  schema = spec.minExclusive ? schema.gt(spec.min) : schema.gte(spec.min)
  if (spec.max !== Infinity) schema = spec.maxExclusive ? schema.lt(spec.max) : schema.lte(spec.max)
  return schema
}

/** The default as a value, --gamma filled in. */
export function defaultOf(spec: ParamSpec, gamma: number): ParamValue {
  return spec.default === 'gamma' ? gamma : spec.default
}
