/** RunConfig → engine settings (kept apart so the runner and draft selection share it without a cycle). */
import type { RunConfig } from '../api/runs'
import type { WarpConfig } from '../engine/sampling/warp'

export function warpOf(config: RunConfig): WarpConfig {
  const { temperature, topK, topP } = config.sampling
  return { temperature, topK, topP }
}
