/** What one decode is asked to do, as chat (one method) and the workbench (a list of methods) send it. */
import { z } from 'zod'
import { GAMMA_RANGE } from '../engine/methods/limits'
import { ParamValue } from './methods'

const ParamsRecord = z.record(z.string().min(1).max(100), ParamValue)
const Seed = z.number().int().min(0).max(2 ** 32 - 1)

/** Decoding settings shared by chat and the workbench (the workbench adds its method list). */
export const DecodeSettings = z.object({
  maxTokens: z.number().int().min(1).max(16_384),
  temperature: z.number().min(0).max(10),
  topK: z.number().int().min(0).max(1_000_000),
  topP: z.number().gt(0).max(1),
  gamma: z.number().int().min(GAMMA_RANGE.min).max(GAMMA_RANGE.max),
  /** null = a fresh random seed, recorded with the result. */
  seed: Seed.nullable(),
  /** Method parameters as the user gave them (the CLI's --set key=value); the host resolves and checks them. */
  params: ParamsRecord
})
export type DecodeSettings = z.infer<typeof DecodeSettings>
