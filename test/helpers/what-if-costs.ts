/**
 * The costs of the constructed runs that the what-if tests decode (test/unit/what-if.test.ts, what-if-parallel.test.ts):
 * a verification of k positions 10 + 1.5 (k − 1) ms (for parallel drafting: timed beside the draft), a draft token
 * 2 ms, 0.5 ms per round outside both, 5 ms per prompt outside its rounds, a 20 ms prefill on each prompt's first
 * round; every prompt at most MAX_TOKENS tokens.
 */
export const MAX_TOKENS = 64
export const verifyMs = (k: number) => 10 + 1.5 * (k - 1)
export const DRAFT_MS = 2
export const ROUND_MS = 0.5
export const PROMPT_MS = 5
export const PREFILL_MS = 20
