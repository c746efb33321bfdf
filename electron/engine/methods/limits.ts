/**
 * Bounds the api's schemas (api/runs.ts, decode.ts, workbench.ts, suites.ts) and the catalog share; data only, so
 * the renderer may import it (through api/renderer-kit.ts).
 */
export const GAMMA_RANGE = { min: 1, max: 128 } as const
/** Timed repeats of a (prompt, method) cell: 1 allowed; 3 is the default of speed comparisons. */
export const MAX_REPEATS = 50
export const DEFAULT_REPEATS = 3

/** Repeats when none are asked for: DEFAULT_REPEATS when the run compares ar with another method (a speedup), else 1. */
export const defaultRepeats = (methods: readonly string[]): number => (methods.includes('ar') && methods.length > 1 ? DEFAULT_REPEATS : 1)
