/**
 * `ar`: the target alone, one token per forward call — the speedup baseline every other method is held against.
 * It samples from exactly the warped distribution the speculative methods must reproduce.
 */
import type { ModelSession } from '../model/types'
import { argmax, sample } from '../sampling/distribution'
import { isGreedy } from '../sampling/warp'
import { OutputBuffer } from './output'
import { emitRound, runRounds } from './round'
import { evaluatePending, now, rewindTo } from './session-sync'
import { stepRecord } from './step-record'
import type { Decoder, DecodeEvent, DecodeRequest } from './types'

export const autoregressive: Decoder = async function* (models, request) {
  const session = await models.target.createSession(request.warp)
  const output = new OutputBuffer([...request.promptTokens], request.maxTokens, models.target)
  yield* runRounds(output, request, (step) => targetOnlyRound(session, output, step, request, 'ar'), () => session.dispose())
}

/** One token from the target by itself: an `ar` step, or a speculative round whose policy chose γ = 0. */
export async function* targetOnlyRound(
  target: ModelSession,
  output: OutputBuffer,
  step: number,
  request: DecodeRequest,
  stage: string
): AsyncGenerator<DecodeEvent> {
  const started = now()
  const pending = await rewindTo(target, output.sequence)
  const evaluated = now()
  const [p] = await evaluatePending(target, pending)
  const verifyMs = now() - evaluated
  const token = isGreedy(request.warp) ? argmax(p) : sample(p, request.rng)
  const events = output.commit([{ token, provenance: 'target' }], step)
  const totalMs = now() - started
  yield* emitRound(events, stepRecord({ index: step, stage, emitted: events.length, targetCalls: 1, verifyMs, totalMs }))
}
