/**
 * A request the contract refuses, in plain words on one line — the same text whichever side refused it (the engine
 * host, or Electron main before forwarding): each wrong field and what it allows.
 */
import type { z } from 'zod'

export function invalidRequestMessage(channel: string, error: z.ZodError): string {
  return `Invalid request for ${channel}: ${describeInvalidRequest(error)}`
}

/**
 * A rejected request in plain words on one line, for the app to show: each wrong field and what it allows,
 * e.g. "path: a model file must end in .gguf" or "settings.maxTokens: must be at most 16384".
 */
export function describeInvalidRequest(error: z.ZodError): string {
  return error.issues.map((issue) => `${fieldName(issue.path)}: ${describeIssue(issue)}`).join('; ')
}

function fieldName(path: readonly PropertyKey[]): string {
  if (path.length === 0) return 'request'
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i > 0 ? '.' : ''}${String(key)}`)).join('')
}

const KINDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  null: 'empty'
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return /received undefined$/.test(issue.message) ? 'is required' : `must be ${KINDS[issue.expected] ?? issue.expected}`
    case 'too_big':
      return `must ${bound(issue.origin, issue.maximum, issue.inclusive, 'at most', 'below')}`
    case 'too_small':
      return `must ${bound(issue.origin, issue.minimum, issue.inclusive, 'at least', 'above')}`
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`
    case 'invalid_union': {
      // One sentence from the alternatives ("must be "auto" or a number") when each failed at the field itself.
      const alternatives = issue.errors.map((branch) => (branch.length === 1 && branch[0].path.length === 0 ? describeIssue(branch[0]) : null))
      if (alternatives.includes('is required')) return 'is required'
      if (alternatives.length === 0 || !alternatives.every((a) => a?.startsWith('must be '))) return 'is not an allowed value'
      return `must be ${[...new Set(alternatives.map((a) => a!.slice('must be '.length)))].join(' or ')}`
    }
    default:
      // Custom checks (refine) carry their own sentence; zod's own messages lose their "Invalid …:" prefix.
      return issue.message.replace(/^Invalid [\w ]+: /, '').replace(/^\w/, (c) => c.toLowerCase())
  }
}

function bound(origin: string, limit: number | bigint, inclusive: boolean | undefined, atMost: string, beyond: string): string {
  const n = Number(limit)
  if (origin === 'string') return n === 1 && atMost === 'at least' ? 'not be empty' : `be ${atMost} ${n} characters`
  if (origin === 'array' || origin === 'set') return `have ${atMost} ${n} item${n === 1 ? '' : 's'}`
  // zod bounds every integer by Number.MAX_SAFE_INTEGER; quoting 9007199254740991 helps nobody.
  if (Math.abs(n) >= Number.MAX_SAFE_INTEGER) return atMost === 'at most' ? 'be a smaller number' : 'be a larger number'
  if (origin === 'int' && inclusive === false) return `be ${atMost} ${atMost === 'at most' ? n - 1 : n + 1}`
  return `be ${inclusive === false ? beyond : atMost} ${n}`
}
