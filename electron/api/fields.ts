/** zod field builders the api's schemas share: a stored row's id and bounded text. */
import { z } from 'zod'

/** A stored row's id (a run, model, conversation, message or suite run). */
export const Id = z.number().int().positive()
/** Text of at most `max` characters. */
export const Text = (max: number) => z.string().max(max)
