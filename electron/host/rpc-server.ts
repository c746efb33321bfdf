/**
 * The serving half of the api transport: validates each incoming envelope, refuses privileged channels unless the
 * peer is trusted (Electron main is; a browser page is not), runs the request on the host and answers with the
 * result or the error's message.
 */
import { PRIVILEGED_CHANNELS, type ApiChannel } from '../api/contract'
import { RequestMessage, type ResponseMessage } from '../api/transport'

export interface RequestHandler {
  request(channel: string, payload: unknown): Promise<unknown>
}

export function serveRequests(
  host: RequestHandler,
  reply: (message: ResponseMessage) => void,
  options: { trusted: boolean }
): (raw: unknown) => void {
  return (raw) => {
    const parsed = RequestMessage.safeParse(raw)
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id
      if (typeof id === 'number' && Number.isInteger(id) && id >= 0) reply({ kind: 'response', id, ok: false, error: 'malformed request' })
      return
    }
    const { id, channel, payload } = parsed.data
    if (!options.trusted && PRIVILEGED_CHANNELS.has(channel as ApiChannel)) {
      reply({ kind: 'response', id, ok: false, error: `${channel} is not available here` })
      return
    }
    host.request(channel, payload).then(
      (result) => reply({ kind: 'response', id, ok: true, result }),
      (error: unknown) => reply({ kind: 'response', id, ok: false, error: error instanceof Error ? error.message : String(error) })
    )
  }
}
