/**
 * `npm run serve`: browser mode. Runs the engine host in a child process (host/child-host.ts: a model that aborts
 * llama.cpp kills the child, not this server, and a fresh one starts) and serves the built renderer with the api
 * over a token-protected WebSocket on 127.0.0.1 (electron/host/server.ts). Prints one line with the URL (and its
 * random token) on stdout; Ctrl-C stops.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command, InvalidArgumentError } from 'commander'
import type { HostEvent } from './api/events'
import { ChildHost } from './host/child-host'
import { startBrowserServer } from './host/server'
import { defaultDatabasePath } from './store/default-path'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

const parsePort = (value: string): number => {
  const port = Number(value)
  if (!/^\d+$/.test(value) || port > 65_535) throw new InvalidArgumentError('expected a port number (0 = random)')
  return port
}

const program = new Command('speclab-serve')
  .description('SpecLab in a browser: the engine and the built UI on 127.0.0.1, api over a token-protected WebSocket')
  .option('--port <n>', 'port on 127.0.0.1 (default: a random free port)', parsePort, 0)
  .option('--db <file>', 'SQLite database (default: SPECLAB_DB or the app database)')
  .option('--download-dir <dir>', 'where model downloads go (default: models/ beside the database)')
  .option('--renderer <dir>', 'the built renderer', path.join(root, 'out/renderer'))
  .parse()

const options = program.opts<{ port: number; db?: string; downloadDir?: string; renderer: string }>()

if (!fs.existsSync(path.join(options.renderer, 'index.html'))) {
  process.stderr.write(`speclab: no built renderer in ${options.renderer} — run \`npm run build\` first\n`)
  process.exit(2)
}

const databasePath = path.resolve(options.db ?? defaultDatabasePath())
const listeners = new Set<(event: HostEvent) => void>()
// The engine (database, models) runs in a child process, so a llama.cpp abort cannot take this server down.
const host = new ChildHost(
  { entry: path.join(root, 'electron/host/utility-entry.ts'), execArgv: ['--import', import.meta.resolve('tsx')] },
  {
    databasePath,
    nativeBinding: null,
    downloadDirectory: path.resolve(options.downloadDir ?? path.join(path.dirname(databasePath), 'models')),
    version: (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version,
    mode: 'browser'
  },
  (event) => {
    for (const listener of listeners) listener(event)
  }
)
try {
  await host.start()
} catch (error) {
  await host.close()
  process.stderr.write(`speclab: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(2)
}

const server = await startBrowserServer({
  host,
  subscribe: (listener) => {
    listeners.add(listener)
    return () => listeners.delete(listener)
  },
  rendererDirectory: options.renderer,
  port: options.port
})
process.stdout.write(`SpecLab browser mode: ${server.url}\n`)
process.stderr.write(`database ${databasePath}\nOpen the URL above in a browser (it carries the access token). Ctrl-C stops.\n`)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await Promise.all([server.close(), host.close()])
  process.exit(0)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
