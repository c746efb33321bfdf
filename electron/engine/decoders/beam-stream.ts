/**
 * The output stream of a beam decoder — `beam` (beam.ts) and `dsbd` / `dsbd-1beam` (dsbd.ts). The decoder seam
 * carries ONE sequence, the beam the decoder finally picks, but a token can only be emitted once every possible
 * output agrees on it, so we stream the common prefix of all current beams as it becomes fixed (beams coalesce
 * quickly) and emit the rest of the chosen beam when decoding ends. A committed prefix token carries the provenance
 * recorded on the first beam holding it (identical when the beams share that ancestor, the usual case).
 * Its own file, apart from the session pool (session-pool.ts): it knows beams and the output, nothing of KV state.
 */
import type { LanguageModel } from '../model/types'
import { OutputBuffer } from './output'
import { emitRound, runRounds } from './round'
import { commonPrefixLength } from './session-sync'
import type { DecodeEvent, DecodeRequest, Provenance, StepRecord } from './types'

export interface Beam {
  /** Prompt + generated tokens. */
  tokens: number[]
  /** Σ raw target log p of the generated tokens. */
  logP: number
  finished: boolean
  /** Provenance of each generated token. */
  provenance: Provenance[]
}

/**
 * Streams a beam decoder's single output: the common prefix of all beams as it becomes fixed, the rest of the
 * chosen beam at the end (see the header). Commits go through OutputBuffer (EOS / --max-tokens rules).
 */
export class BeamStream {
  readonly output: OutputBuffer
  private committed = 0

  constructor(
    private readonly promptLength: number,
    promptTokens: readonly number[],
    maxTokens: number,
    target: LanguageModel
  ) {
    this.output = new OutputBuffer([...promptTokens], maxTokens, target)
  }

  /** Emits the generated tokens every beam shares that were not emitted yet. */
  commitCommonPrefix(beams: readonly Beam[], step: number): DecodeEvent[] {
    let common = beams[0].tokens.length
    for (const beam of beams) common = Math.min(common, commonPrefixLength(beams[0].tokens, beam.tokens))
    return this.commitUpTo(beams[0], common - this.promptLength, step)
  }

  /** Emits the rest of `beam` (which must extend what was emitted). */
  finish(beam: Beam, step: number): DecodeEvent[] {
    return this.commitUpTo(beam, beam.tokens.length - this.promptLength, step)
  }

  private commitUpTo(beam: Beam, generated: number, step: number): DecodeEvent[] {
    if (generated <= this.committed) return []
    const candidates = []
    for (let i = this.committed; i < generated; i++)
      candidates.push({ token: beam.tokens[this.promptLength + i], provenance: beam.provenance[i] })
    this.committed = generated
    return this.output.commit(candidates, step)
  }
}

/** One step of a beam decoder: the tokens it streamed, its record, and whether every beam is done. */
export interface BeamStep {
  events: DecodeEvent[]
  record: StepRecord
  finished: boolean
}

/**
 * The loop of a beam decoder: round.ts's loop, except that the output lags the beams (only their common prefix
 * streams), so the beams — `finished` — end it, and the output's own stopping rules only cut it short.
 */
export function beamSteps(
  stream: BeamStream,
  request: DecodeRequest,
  step: (index: number) => Promise<BeamStep>,
  release: () => Promise<void>
): AsyncGenerator<DecodeEvent> {
  let finished = false
  const round = async function* (index: number): AsyncGenerator<DecodeEvent> {
    const outcome = await step(index)
    finished = outcome.finished
    yield* emitRound(outcome.events, outcome.record)
  }
  return runRounds(stream.output, request, round, release, () => finished)
}
