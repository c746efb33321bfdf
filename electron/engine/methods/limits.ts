/** Bounds the contract (api/contract.ts) and the catalog share; data only, so the renderer may import it. */
export const GAMMA_RANGE = { min: 1, max: 128 } as const
