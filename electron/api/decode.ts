/** What one decode is asked to do, as chat (one method) and the workbench (a list of methods) send it. */
import { z } from 'zod'
import { settingSchema } from '../engine/settings/run-settings'
import { ParamValue } from './methods'

const ParamsRecord = z.record(z.string().min(1).max(100), ParamValue)

/** Decoding settings shared by chat and the workbench (the workbench adds its method list). */
export const DecodeSettings = z.object({
  maxTokens: settingSchema('maxTokens'),
  temperature: settingSchema('temperature'),
  topK: settingSchema('topK'),
  topP: settingSchema('topP'),
  gamma: settingSchema('gamma'),
  /** null = a fresh random seed, recorded with the result. */
  seed: settingSchema('seed').nullable(),
  /** Method parameters as the user gave them (the CLI's --set key=value); the host resolves and checks them. */
  params: ParamsRecord
})
export type DecodeSettings = z.infer<typeof DecodeSettings>
