/**
 * Electron main (electron/main/index.ts + host-process.ts) without the Electron binary, which cannot be downloaded
 * here: `electron` is replaced by a recording fake whose utilityProcess.fork runs the real utility entry
 * (electron/host/utility-entry.ts) in-process over a real MessageChannel. What is checked is main's own code: the
 * window's security preferences, the permission and navigation guards, the menu, and the IPC handler — calls only
 * from our top frame, known non-privileged channels, zod-validated payloads — forwarding to a live engine host and
 * relaying its events to the window, the preload's exposed api end to end, then a clean shutdown on quit.
 */
import { EventEmitter } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { MessagePort } from 'node:worker_threads'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { HostEvent } from '../../electron/api/events'
import { SUITES } from '../../electron/experiments/suites'
import { until } from '../helpers/until'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const rendererUrl = pathToFileURL(path.join(root, 'electron/renderer/index.html')).href
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-electron-main-'))

interface EventEmitterLike {
  emit(event: string, ...args: unknown[]): boolean
}

/** What the fake records of main's calls into Electron. */
const recorded = vi.hoisted(() => ({
  windows: [] as { options: Record<string, any>; loaded: string | null; sent: { channel: string; payload: unknown }[] }[],
  ipcHandlers: new Map<string, (event: unknown, ...args: unknown[]) => unknown>(),
  appHandlers: new Map<string, (...args: any[]) => void>(),
  menuTemplate: null as any[] | null,
  permissionRequest: null as ((contents: unknown, permission: string, callback: (granted: boolean) => void) => void) | null,
  permissionCheck: null as ((contents: unknown, permission: string) => boolean) | null,
  openedExternally: [] as string[],
  hostExits: [] as number[],
  children: [] as EventEmitterLike[],
  ready: null as (() => void) | null,
  /** The app's userData / appPath folder (set before main is imported). */
  dir: '',
  /** What the preload exposed with contextBridge, and the page's ipcRenderer listeners. */
  exposed: {} as Record<string, any>,
  rendererListeners: new Map<string, Set<(event: unknown, payload: unknown) => void>>()
}))

// The factory is hoisted above the imports: it imports what it needs itself.
vi.mock('electron', async () => {
  const { EventEmitter } = await import('node:events')
  const { MessageChannel } = await import('node:worker_threads')
  const { runUtilityHost } = await import('../../electron/host/utility-entry')
  const { pathToFileURL, fileURLToPath } = await import('node:url')
  const pathModule = await import('node:path')
  const pageUrl = pathToFileURL(pathModule.resolve(pathModule.dirname(fileURLToPath(import.meta.url)), '../../electron/renderer/index.html')).href

  /** Electron's MessagePortMain over a Node MessagePort: listeners get `{data}`. */
  class FakePortMain {
    constructor(readonly port: MessagePort) {}
    on(event: 'message' | 'close', listener: (arg?: any) => void) {
      if (event === 'message') this.port.on('message', (data) => listener({ data }))
      else this.port.on('close', () => listener())
      return this
    }
    postMessage(message: unknown) {
      this.port.postMessage(message)
    }
    start() {
      this.port.start()
    }
    close() {
      this.port.close()
    }
  }

  class FakeUtilityProcess extends EventEmitter {
    postMessage(message: unknown, ports: FakePortMain[]) {
      // What Electron's utilityProcess does with the first message: the child's process.parentPort receives it.
      runUtilityHost(
        { once: (_event, listener) => listener({ data: message, ports }) },
        (code) => {
          recorded.hostExits.push(code)
          setImmediate(() => this.emit('exit', code))
        }
      )
    }
    kill() {
      this.emit('exit', 1)
    }
  }

  class FakeBrowserWindow extends EventEmitter {
    static all: FakeBrowserWindow[] = []
    static getAllWindows = () => FakeBrowserWindow.all
    static fromWebContents = () => FakeBrowserWindow.all[0] ?? null
    readonly record: (typeof recorded.windows)[number]
    readonly webContents: { send: (channel: string, payload: unknown) => void }
    constructor(options: Record<string, any>) {
      super()
      this.record = { options, loaded: null, sent: [] }
      recorded.windows.push(this.record)
      this.webContents = {
        send: (channel, payload) => {
          this.record.sent.push({ channel, payload })
          for (const listener of recorded.rendererListeners.get(channel) ?? []) listener({ sender: 'main' }, payload)
        }
      }
      FakeBrowserWindow.all.push(this)
    }
    loadFile(file: string) {
      this.record.loaded = file
      return Promise.resolve()
    }
    loadURL(url: string) {
      this.record.loaded = url
      return Promise.resolve()
    }
    show() {}
  }

  const app = {
    isPackaged: false,
    on: (event: string, handler: (...args: any[]) => void) => recorded.appHandlers.set(event, handler),
    whenReady: () => new Promise<void>((resolve) => (recorded.ready = resolve)),
    getPath: () => recorded.dir,
    getAppPath: () => recorded.dir,
    getVersion: () => '0.0.0-test',
    setAboutPanelOptions: () => {},
    showAboutPanel: () => {},
    quit: () => {}
  }
  return {
    app,
    BrowserWindow: FakeBrowserWindow,
    MessageChannelMain: class {
      readonly port1: FakePortMain
      readonly port2: FakePortMain
      constructor() {
        const { port1, port2 } = new MessageChannel()
        this.port1 = new FakePortMain(port1)
        this.port2 = new FakePortMain(port2)
      }
    },
    utilityProcess: {
      fork: () => {
        const child = new FakeUtilityProcess()
        recorded.children.push(child)
        return child
      }
    },
    ipcMain: { handle: (channel: string, handler: (event: unknown, ...args: unknown[]) => unknown) => recorded.ipcHandlers.set(channel, handler) },
    Menu: { buildFromTemplate: (template: any[]) => (recorded.menuTemplate = template), setApplicationMenu: () => {} },
    nativeTheme: { shouldUseDarkColors: false, themeSource: 'system' },
    session: {
      defaultSession: {
        setPermissionRequestHandler: (handler: typeof recorded.permissionRequest) => (recorded.permissionRequest = handler),
        setPermissionCheckHandler: (handler: typeof recorded.permissionCheck) => (recorded.permissionCheck = handler)
      }
    },
    dialog: { showOpenDialog: async () => ({ canceled: true, filePaths: [] }), showErrorBox: () => {} },
    // The preload's side: invoke reaches main's handler as a call from our own top frame.
    contextBridge: { exposeInMainWorld: (key: string, api: unknown) => (recorded.exposed[key] = api) },
    // Electron's answer for a File the user dropped: where it lives ('' for a file made in the page).
    webUtils: { getPathForFile: (file: { name: string; onDisk?: string }) => file.onDisk ?? '' },
    ipcRenderer: {
      invoke: (channel: string, ...args: unknown[]) =>
        recorded.ipcHandlers.get(channel)!({ senderFrame: { parent: null, url: pageUrl }, sender: {} }, ...args),
      on: (channel: string, listener: (event: unknown, payload: unknown) => void) => {
        if (!recorded.rendererListeners.has(channel)) recorded.rendererListeners.set(channel, new Set())
        recorded.rendererListeners.get(channel)!.add(listener)
      },
      removeListener: (channel: string, listener: (event: unknown, payload: unknown) => void) =>
        recorded.rendererListeners.get(channel)?.delete(listener)
    },
    shell: { openPath: async () => '', openExternal: async (url: string) => void recorded.openedExternally.push(url) }
  }
})

type Reply = { ok: true; result: unknown } | { ok: false; error: string }
const ownFrame = { senderFrame: { parent: null, url: rendererUrl }, sender: {} }
const api = (event: unknown, channel: unknown, payload: unknown) => recorded.ipcHandlers.get('speclab:api')!(event, channel, payload) as Promise<Reply>
const hostEvents = () => recorded.windows[0].sent.filter((s) => s.channel === 'speclab:event').map((s) => s.payload as HostEvent)

describe('Electron main with a fake electron module', () => {
  beforeAll(async () => {
    recorded.dir = dir
    process.env['SPECLAB_DB'] = path.join(dir, 'main.sqlite')
    delete process.env['ELECTRON_RENDERER_URL']
    await import('../../electron/main/index')
    recorded.ready!()
    await until(() => (recorded.windows.length > 0 ? true : undefined))
  })

  afterAll(() => {
    delete process.env['SPECLAB_DB']
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('opens one window with context isolation, the sandbox, no Node integration and the built page', () => {
    const [window] = recorded.windows
    expect(window.options.webPreferences).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true })
    expect(window.options.webPreferences.preload).toMatch(/preload[\\/]index\.cjs$/)
    expect(window.options.backgroundColor).toBe('#f4f6f9') // the light page colour: the mocked system is light
    expect(pathToFileURL(window.loaded!).href).toBe(rendererUrl)
  })

  it('refuses every permission but writing the clipboard, and lists every suite in the Experiments menu', () => {
    const granted: boolean[] = []
    recorded.permissionRequest!({}, 'media', (g) => granted.push(g))
    recorded.permissionRequest!({}, 'clipboard-read', (g) => granted.push(g))
    recorded.permissionRequest!({}, 'clipboard-sanitized-write', (g) => granted.push(g))
    expect(granted).toEqual([false, false, true])
    expect(recorded.permissionCheck!({}, 'geolocation')).toBe(false)
    expect(recorded.permissionCheck!({}, 'clipboard-sanitized-write')).toBe(true)
    const experiments = recorded.menuTemplate!.find((m) => m.label === 'Experiments')
    const labels = experiments.submenu.map((item: { label?: string }) => item.label)
    for (const suite of SUITES) expect(labels).toContain(suite.name)
  })

  it('keeps web contents on our page: no new windows, no navigation or redirect elsewhere, no webviews', () => {
    type OpenHandler = (details: { url: string }) => unknown
    const contents = new EventEmitter() as EventEmitter & { setWindowOpenHandler(h: OpenHandler): void; openHandler?: OpenHandler }
    contents.setWindowOpenHandler = (handler) => (contents.openHandler = handler)
    recorded.appHandlers.get('web-contents-created')!({}, contents)
    // A web link (from a Markdown reply) opens in the system browser; nothing opens a window of ours.
    for (const url of ['https://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'not a url'])
      expect(contents.openHandler!({ url })).toEqual({ action: 'deny' })
    expect(recorded.openedExternally).toEqual(['https://example.com/'])
    const attempt = (event: string, url?: string) => {
      let prevented = false
      contents.emit(event, { url, preventDefault: () => (prevented = true) })
      return prevented
    }
    expect(attempt('will-navigate', 'https://example.com/')).toBe(true)
    expect(attempt('will-redirect', 'file:///etc/passwd')).toBe(true)
    expect(attempt('will-navigate', rendererUrl)).toBe(false)
    expect(attempt('will-attach-webview')).toBe(true)
  })

  it('validates every api call before it reaches the host, and forwards the valid ones', async () => {
    const stranger = { senderFrame: { parent: null, url: 'https://example.com/' }, sender: {} }
    const subframe = { senderFrame: { parent: {}, url: rendererUrl }, sender: {} }
    expect(await api(stranger, 'app:info', {})).toEqual({ ok: false, error: 'api call from an unknown frame' })
    expect(await api(subframe, 'app:info', {})).toEqual({ ok: false, error: 'api call from an unknown frame' })
    expect(await api(ownFrame, 'fs:read', {})).toEqual({ ok: false, error: 'Unknown api channel: "fs:read"' })
    expect(await api(ownFrame, 'app:open-database', { path: '/tmp/other.sqlite' })).toMatchObject({ ok: false, error: expect.stringMatching(/only available from the application menu/) })
    expect(await api(ownFrame, 'models:add', { path: 42 })).toMatchObject({ ok: false, error: expect.stringMatching(/^Invalid request for models:add/) })

    // A valid call crosses the MessageChannel to the utility entry's engine host and back.
    const info = await api(ownFrame, 'app:info', {})
    expect(info).toMatchObject({ ok: true, result: { mode: 'electron', version: '0.0.0-test', databasePath: path.join(dir, 'main.sqlite') } })
    // The host's own errors come back as the page's error message.
    expect(await api(ownFrame, 'models:add', { path: path.join(dir, 'missing.gguf') })).toMatchObject({ ok: false, error: expect.stringMatching(/model file not found/) })
  })

  it("relays the host's pushed events to the window", async () => {
    const status = await until(() => hostEvents().find((e) => e.type === 'host:status'))
    expect(status).toMatchObject({ type: 'host:status', state: 'ready' })
  })

  it('the preload exposes only the typed api: calls resolve or throw the message, events arrive without Electron\'s event', async () => {
    await import('../../electron/preload/index')
    const speclab = recorded.exposed['speclab']
    expect(Object.keys(recorded.exposed)).toEqual(['speclab'])
    expect(Object.keys(speclab).sort()).toEqual(['call', 'onEvent', 'pathForFile', 'pickFile'])
    await expect(speclab.call('app:info', {})).resolves.toMatchObject({ mode: 'electron' })
    await expect(speclab.call('models:add', { path: 42 })).rejects.toThrow(/^Invalid request for models:add/)
    // models:unload pushes one models:changed event: the listener gets the bare payload, until it unsubscribes.
    const seen: unknown[] = []
    const unsubscribe = speclab.onEvent((event: unknown) => seen.push(event))
    await speclab.call('models:unload', {})
    await until(() => (seen.length > 0 ? true : undefined))
    expect(seen).toEqual([{ type: 'models:changed' }])
    unsubscribe()
    await speclab.call('models:unload', {})
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(seen).toHaveLength(1)
    await expect(speclab.pickFile('model')).resolves.toBeNull()
    // A dropped file's path comes from webUtils.getPathForFile (File.path is gone from Electron).
    expect(speclab.pathForFile({ name: 'model.gguf', onDisk: '/models/model.gguf' })).toBe('/models/model.gguf')
    expect(speclab.pathForFile({ name: 'made-in-page.gguf' })).toBe('')
  })

  it('restarts a host process that died, tells the window, and serves calls again', async () => {
    const statuses = () => hostEvents().filter((e) => e.type === 'host:status')
    const before = statuses().length
    recorded.children[0].emit('exit', 9) // as if the utility process crashed
    expect(statuses()[before]).toMatchObject({ state: 'restarting', message: expect.stringMatching(/exit code 9/) })
    await until(() => (statuses().length > before + 1 ? true : undefined))
    expect(statuses()[before + 1]).toMatchObject({ state: 'ready' })
    expect(recorded.children).toHaveLength(2)
    expect(await api(ownFrame, 'app:info', {})).toMatchObject({ ok: true })
  })

  it('after the fourth death in a minute it stops restarting and says so; the next call starts the host again', async () => {
    const statuses = () => hostEvents().filter((e) => e.type === 'host:status')
    // One death in the previous test: three more spend the budget of three restarts a minute.
    for (let death = 2; death <= 4; death++) {
      const before = statuses().length
      recorded.children.at(-1)!.emit('exit', 9)
      if (death < 4) await until(() => (statuses().length > before + 1 ? true : undefined))
    }
    expect(statuses().at(-1)).toMatchObject({ state: 'failed', message: expect.stringMatching(/it stopped 4 times within 60 s, so it was not restarted; the next request starts it again$/) })
    const children = recorded.children.length
    expect(await api(ownFrame, 'app:info', {})).toMatchObject({ ok: true })
    expect(recorded.children).toHaveLength(children + 1)
  })

  it('the native file picker only takes the kinds it knows, from our frame', async () => {
    const pick = recorded.ipcHandlers.get('speclab:pick-file')!
    expect(await pick(ownFrame, 'model')).toBeNull() // the fake dialog is cancelled
    await expect(async () => pick(ownFrame, 'anything')).rejects.toThrow()
    await expect(async () => pick({ senderFrame: { parent: null, url: 'https://example.com/' } }, 'model')).rejects.toThrow(/unknown frame/)
  })

  it('on quit, asks the host to close its database and waits for it to exit', async () => {
    let prevented = false
    recorded.appHandlers.get('will-quit')!({ preventDefault: () => (prevented = true) })
    expect(prevented).toBe(true)
    // Every host closed cleanly: the crashed ones when main closed their ports, the live one on the shutdown message.
    await until(() => (recorded.hostExits.length >= recorded.children.length ? true : undefined))
    expect(recorded.hostExits).toEqual(recorded.children.map(() => 0))
  })
})
