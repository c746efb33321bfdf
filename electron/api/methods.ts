/**
 * The method vocabulary every payload shares: method ids and a method parameter's value, and the catalog's
 * description of the methods for the UI. The engine's method catalog (engine/methods/) defines all three.
 */
import { z } from 'zod'
import { METHOD_IDS } from '../engine/methods/ids'

/** Method ids (DESIGN.md CLI contract — keep stable): generated from the method catalog. */
export { METHOD_IDS }
export type { MethodInfo, MethodParamInfo } from '../engine/methods/docs'
export const MethodId = z.enum(METHOD_IDS)
export type MethodId = z.infer<typeof MethodId>

/** A method parameter's value (the catalog's `--set key=value`): a number, a text or a flag. */
export const ParamValue = z.union([z.number(), z.string(), z.boolean()])
export type ParamValue = z.infer<typeof ParamValue>
