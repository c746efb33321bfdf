/**
 * Keeps a model session aligned with the committed output without re-evaluating shared prefixes.
 * Invariant: the last committed token is never in a session's cache when we need the distribution after it,
 * so every evaluation appends at least that token and asks for the distributions from there on.
 */
import type { ModelSession } from '../model/types'
import type { Distribution } from '../sampling/distribution'

/** How many leading tokens two sequences share. */
export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  return i
}

/** Rolls `session` back to the longest prefix it shares with `sequence`, keeping the last token pending. */
export async function rewindTo(session: ModelSession, sequence: readonly number[]): Promise<number[]> {
  const keep = Math.min(commonPrefixLength(session.tokens, sequence), sequence.length - 1)
  await session.truncate(keep)
  return sequence.slice(keep)
}

/** Appends `pending` (from rewindTo) and then `extra`, in one call: 1 + extra.length distributions. */
export function evaluatePending(
  session: ModelSession,
  pending: readonly number[],
  extra: readonly number[] = []
): Promise<Distribution[]> {
  return session.append([...pending, ...extra], pending.length - 1)
}

export const now = (): number => performance.now()
