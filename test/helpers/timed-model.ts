/**
 * A model whose forward calls take time on a fake clock: each `append` of k tokens advances `clock.ms` by
 * fixed + perToken·k, and opening a session by `openMs`. Cost measurements and timed runs then read exact,
 * reproducible times.
 */
import type { LanguageModel, ModelSession, SessionOptions } from '../../electron/engine/model/types'
import type { WarpConfig } from '../../electron/engine/sampling/warp'

export interface FakeClock {
  ms: number
}

export function timedModel(model: LanguageModel, clock: FakeClock, fixed: number, perToken: number, openMs = 0): LanguageModel {
  return Object.assign(Object.create(model) as LanguageModel, {
    async createSession(warp: WarpConfig, options?: SessionOptions): Promise<ModelSession> {
      const session = await model.createSession(warp, options)
      clock.ms += openMs
      return {
        get tokens() {
          return session.tokens
        },
        async append(tokens: readonly number[], from: number) {
          clock.ms += fixed + perToken * tokens.length
          return session.append(tokens, from)
        },
        truncate: (length: number) => session.truncate(length),
        dispose: () => session.dispose()
      }
    }
  })
}

/**
 * A model whose call of k tokens costs `cost(k, threads)` on the fake clock, with `threads` the model's phase
 * threads (single tokens: `threads`, more: `batchThreads`), as LlamaCppModel applies them.
 */
export function threadedModel(model: LanguageModel, clock: FakeClock, cost: (tokens: number, threads: number) => number): LanguageModel & { phaseThreads: { threads: number; batchThreads: number } } {
  const phaseThreads = { threads: 1, batchThreads: 1 }
  return Object.assign(Object.create(model) as LanguageModel, {
    phaseThreads,
    async createSession(warp: WarpConfig, options?: SessionOptions): Promise<ModelSession> {
      const session = await model.createSession(warp, options)
      return {
        get tokens() {
          return session.tokens
        },
        async append(tokens: readonly number[], from: number) {
          clock.ms += cost(tokens.length, tokens.length > 1 ? phaseThreads.batchThreads : phaseThreads.threads)
          return session.append(tokens, from)
        },
        truncate: (length: number) => session.truncate(length),
        dispose: () => session.dispose()
      }
    }
  })
}
