/**
 * Method parameters (`--set key=value`): one reader per kind, one message format. Every bad value is a
 * UserInputError naming the key, raised when a method is instantiated — before any model loads.
 */
import type { MethodParams } from './decoders/types'
import { UserInputError } from './errors'

export interface Range {
  min: number
  max: number
  minExclusive?: boolean
  maxExclusive?: boolean
  integer?: boolean
}

function describeRange(range: Range): string {
  const kind = range.integer ? 'an integer' : 'a number'
  if (range.max === Infinity) return `${kind} ${range.minExclusive ? '>' : '≥'} ${range.min}`
  return `${kind} in ${range.minExclusive ? '(' : '['}${range.min}, ${range.max}${range.maxExclusive ? ')' : ']'}`
}

/** A number within `range`, or `fallback` when the key is absent. */
export function numericParam(params: MethodParams, key: string, fallback: number, range: Range): number {
  const raw = params[key]
  if (raw === undefined) return fallback
  const value = typeof raw === 'number' ? raw : Number.NaN
  const ok =
    Number.isFinite(value) &&
    (range.minExclusive ? value > range.min : value >= range.min) &&
    (range.maxExclusive ? value < range.max : value <= range.max) &&
    (!range.integer || Number.isInteger(value))
  if (!ok) throw new UserInputError(`--set ${key} must be ${describeRange(range)}, got ${JSON.stringify(raw)}`)
  return value
}

/** An integer in [min, max]. */
export function integerParam(params: MethodParams, key: string, fallback: number, min: number, max = 1024): number {
  return numericParam(params, key, fallback, { min, max, integer: true })
}

export function booleanParam(params: MethodParams, key: string, fallback: boolean): boolean {
  const raw = params[key]
  if (raw === undefined) return fallback
  if (typeof raw !== 'boolean') throw new UserInputError(`--set ${key} must be true or false, got ${JSON.stringify(raw)}`)
  return raw
}

/**
 * A typo in a method's own namespace (e.g. analytic.histroy) is an error, not a silently ignored setting; keys of
 * other namespaces belong to other methods of the same run.
 */
export function rejectUnknownParams(params: MethodParams, prefix: string, known: readonly string[], method: string): void {
  for (const key of Object.keys(params))
    if (key.startsWith(`${prefix}.`) && !known.includes(key))
      throw new UserInputError(
        `--set ${key} is not a parameter of ${method} (it takes ${known.length > 0 ? known.join(', ') : `no ${prefix}.* parameters`})`
      )
}

/** --gamma as the window cap γ_max of adaptive methods; the CLI contract bounds it, direct callers may not. */
export function gammaMaxOf(gamma: number, method: string): number {
  if (!Number.isInteger(gamma) || gamma < 1)
    throw new UserInputError(`--gamma must be an integer ≥ 1 (it is γ_max of ${method}), got ${String(gamma)}`)
  return gamma
}
