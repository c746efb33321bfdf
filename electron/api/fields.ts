/** zod field builders the api's schemas share: a stored row's id, bounded text, and a run's status. */
import { z } from 'zod'

/** A stored row's id (a run, model, conversation, message or suite run). */
export const Id = z.number().int().positive()
/** Text of at most `max` characters. */
export const Text = (max: number) => z.string().max(max)

/** Where a run stands (runs, suite cells, advice runs). */
export const RunStatus = z.enum(['running', 'done', 'cancelled', 'interrupted', 'failed'])
export type RunStatus = z.infer<typeof RunStatus>
