/**
 * A draft's acceptance per draft position read from replayed rounds — the workload profile of a draft of another
 * vocabulary (replay/profile.ts), whose trace holds no teacher-forced points to read it from.
 *
 * Position j's acceptance is the chance that a round's j-th proposal is accepted given that the round proposed it
 * and accepted the j − 1 before it: (rounds that accepted ≥ j) / (rounds that proposed ≥ j and accepted ≥ j − 1).
 * For sd-tli under greedy decoding this is what the teacher-forced profile of a shared-vocabulary draft measures: a
 * round's draft reads the target's text up to its position (sd-tli.ts DraftTextSync) and its j-th proposal is
 * accepted iff it is the target's token; rounds that stop drafting early (no mass in the intersection) only leave
 * the later positions unreached.
 */
import type { StepRecord } from '../decoders/types'

export function acceptanceOfRounds(steps: readonly Pick<StepRecord, 'proposed' | 'accepted'>[], positions: number): (number | null)[] {
  const reached = new Array<number>(positions).fill(0)
  const accepted = new Array<number>(positions).fill(0)
  for (const step of steps)
    for (let j = 0; j < positions && j < step.proposed && j <= step.accepted; j++) {
      reached[j]++
      if (step.accepted > j) accepted[j]++
    }
  return reached.map((n, j) => (n > 0 ? accepted[j] / n : null))
}
