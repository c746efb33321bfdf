/**
 * One clear line and an exit code: 2 for bad input (a missing or corrupt GGUF, mismatched vocabularies, invalid
 * parameters, unknown runs), 1 for anything unexpected, 130 after Ctrl-C.
 */
import { CommanderError } from 'commander'
import { ZodError } from 'zod'
import { UserInputError } from '../engine/errors'

export function exitWithError(error: unknown): never {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2)
  if (error instanceof UserInputError) fail(error.message, 2)
  if (error instanceof ZodError) fail(describeZodError(error), 2)
  fail(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`, 1)
}

function fail(message: string, code: number): never {
  process.stderr.write(`speclab: ${message}\n`)
  process.exit(code)
}

/** Names the offending setting as the user typed it (--top-p, not sampling.topP). */
function describeZodError(error: ZodError): string {
  const issue = error.issues[0]
  const key = String(issue.path.at(-1) ?? 'value')
  const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
  return `invalid --${flag}: ${issue.message}`
}
