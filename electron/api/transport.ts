/**
 * Transport envelopes: Electron main ↔ utility process (MessagePort) and browser ↔ server (WebSocket). Every
 * message is validated with these before use.
 */
import { z } from 'zod'
import { HostEvent } from './events'
import { Text } from './fields'

export const RequestMessage = z.object({
  kind: z.literal('request'),
  id: z.number().int().min(0),
  channel: Text(100),
  payload: z.unknown()
})
export type RequestMessage = z.infer<typeof RequestMessage>
export const ResponseMessage = z.object({
  kind: z.literal('response'),
  id: z.number().int().min(0),
  ok: z.boolean(),
  result: z.unknown().optional(),
  error: z.string().optional()
})
export type ResponseMessage = z.infer<typeof ResponseMessage>
export const EventMessage = z.object({ kind: z.literal('event'), event: HostEvent })
export type EventMessage = z.infer<typeof EventMessage>
