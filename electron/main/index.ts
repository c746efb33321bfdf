/**
 * Electron main: window, menu, IPC registration — thin glue. The engine (models, database, jobs) runs in a
 * utilityProcess (./host-process.ts → ../host/utility-entry.ts), so model work never blocks the window. Main checks
 * every renderer call (our own top frame only, a known non-privileged channel, a payload the contract's zod schema
 * accepts) before forwarding it, and relays the host's pushed events to the window.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeTheme, session, shell, type IpcMainInvokeEvent } from 'electron'
import { z } from 'zod'
import type { UiCommand } from '../api/app'
import { API, isApiChannel, PRIVILEGED_CHANNELS } from '../api/contract'
import type { HostEvent } from '../api/events'
import { invalidRequestMessage } from '../api/request-errors'
import { SUITES } from '../experiments/suites'
import { HostProcess } from './host-process'
import { buildMenuTemplate } from './menu'

// Channel names, also in ../preload/index.ts.
const API_CHANNEL = 'speclab:api'
const EVENT_CHANNEL = 'speclab:event'
const PICK_CHANNEL = 'speclab:pick-file'

const devServerUrl = app.isPackaged ? undefined : process.env['ELECTRON_RENDERER_URL']
const rendererFile = fileURLToPath(new URL('../renderer/index.html', import.meta.url))
const preloadFile = fileURLToPath(new URL('../preload/index.cjs', import.meta.url))
const hostEntry = fileURLToPath(new URL('./host.js', import.meta.url))

/** True only for our own renderer page (dev server origin in dev, the built index.html otherwise). */
function isRendererUrl(url: string): boolean {
  try {
    const u = new URL(url)
    if (devServerUrl) return u.origin === new URL(devServerUrl).origin
    return u.protocol === 'file:' && u.pathname === pathToFileURL(rendererFile).pathname
  } catch {
    return false
  }
}

/** The better-sqlite3 build for Electron's ABI that `npm start` prepares (scripts/prepare-electron-native.mjs). */
function electronSqliteBinding(): string | undefined {
  const file = join(app.getAppPath(), 'node_modules/.speclab/electron-better-sqlite3/build/Release/better_sqlite3.node')
  return existsSync(file) ? file : undefined
}

let host: HostProcess | null = null
let mainWindow: BrowserWindow | null = null

function broadcast(event: HostEvent): void {
  for (const win of BrowserWindow.getAllWindows()) win.webContents.send(EVENT_CHANNEL, event)
}
const command = (ui: UiCommand) => broadcast({ type: 'ui:command', command: ui })
const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

function assertOwnFrame(event: IpcMainInvokeEvent): void {
  const frame = event.senderFrame
  if (!frame || frame.parent !== null || !isRendererUrl(frame.url)) throw new Error('api call from an unknown frame')
}

/** Renderer → host. Replies {ok, result} / {ok: false, error} so the page sees the host's message, not Electron's. */
async function onApiCall(event: IpcMainInvokeEvent, channel: unknown, payload: unknown): Promise<unknown> {
  try {
    assertOwnFrame(event)
    if (!isApiChannel(channel)) throw new Error(`Unknown api channel: ${JSON.stringify(channel)}`)
    if (PRIVILEGED_CHANNELS.has(channel)) throw new Error(`${channel} is only available from the application menu`)
    const parsed = API[channel].request.safeParse(payload)
    if (!parsed.success) throw new Error(invalidRequestMessage(channel, parsed.error))
    if (!host) throw new Error('the engine host is not running')
    return { ok: true, result: await host.call(channel, parsed.data) }
  } catch (error) {
    return { ok: false, error: message(error) }
  }
}

const PickKind = z.enum(['model', 'dataset', 'runs'])
const PICK_FILTERS = {
  model: [{ name: 'GGUF model', extensions: ['gguf'] }],
  dataset: [{ name: 'Prompts (JSONL)', extensions: ['jsonl'] }],
  runs: [
    { name: 'SpecLab runs', extensions: ['speclab-runs', 'sqlite', 'sqlite3', 'db'] },
    { name: 'All files', extensions: ['*'] }
  ]
}

/** A native open dialog; the host still checks whatever path comes back. */
async function onPickFile(event: IpcMainInvokeEvent, kind: unknown): Promise<string | null> {
  assertOwnFrame(event)
  const parsed = PickKind.parse(kind)
  const win = BrowserWindow.fromWebContents(event.sender)
  const options = { properties: ['openFile' as const], filters: PICK_FILTERS[parsed] }
  const result = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options)
  return result.canceled ? null : (result.filePaths[0] ?? null)
}

async function addModelFromMenu(): Promise<void> {
  const options = { title: 'Add a GGUF model', properties: ['openFile' as const], filters: PICK_FILTERS.model }
  const result = mainWindow ? await dialog.showOpenDialog(mainWindow, options) : await dialog.showOpenDialog(options)
  if (result.canceled || !result.filePaths[0] || !host) return
  try {
    await host.call('models:add', { path: result.filePaths[0] })
    command({ kind: 'navigate', view: 'models' })
  } catch (error) {
    dialog.showErrorBox('Could not add the model', message(error))
  }
}

async function openDatabaseFromMenu(): Promise<void> {
  const options = {
    title: 'Open a SpecLab database',
    properties: ['openFile' as const, 'promptToCreate' as const],
    filters: [{ name: 'SpecLab database', extensions: ['sqlite', 'sqlite3', 'db'] }]
  }
  const result = mainWindow ? await dialog.showOpenDialog(mainWindow, options) : await dialog.showOpenDialog(options)
  if (result.canceled || !result.filePaths[0] || !host) return
  try {
    await host.call('app:open-database', { path: result.filePaths[0] })
    command({ kind: 'database-opened', path: result.filePaths[0] })
  } catch (error) {
    dialog.showErrorBox('Could not open the database', message(error))
  }
}

function openDocs(): void {
  const readme = app.isPackaged ? join(process.resourcesPath, 'README.md') : join(app.getAppPath(), 'README.md')
  void shell.openPath(readme).then((error) => {
    if (error) dialog.showErrorBox('Could not open the documentation', `${readme}: ${error}`)
  })
}

function createWindow(): void {
  const win = new BrowserWindow({
    width: 1320,
    height: 860,
    minWidth: 900,
    minHeight: 600,
    title: 'SpecLab',
    show: false,
    // The page colour of app.css (--bg) in the system's scheme, so no white shows before the page paints in dark
    // mode. nativeTheme.themeSource stays 'system': the renderer follows prefers-color-scheme.
    backgroundColor: nativeTheme.shouldUseDarkColors ? '#111418' : '#f4f6f9',
    webPreferences: {
      preload: preloadFile,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false
    }
  })
  mainWindow = win
  win.on('closed', () => {
    if (mainWindow === win) mainWindow = null
  })
  win.once('ready-to-show', () => win.show())
  if (devServerUrl) void win.loadURL(devServerUrl)
  else void win.loadFile(rendererFile)
}

/** A link in a chat reply (Markdown) opens in the system browser when it is a web link; nothing else opens. */
function isWebLink(url: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol)
  } catch {
    return false
  }
}

/** The only permission a page of ours uses: writing text to the clipboard (Copy on chat messages). */
const ALLOWED_PERMISSIONS: ReadonlySet<string> = new Set(['clipboard-sanitized-write'])

// Every web contents may neither open windows nor leave our page, nor embed webviews.
app.on('web-contents-created', (_event, contents) => {
  contents.setWindowOpenHandler(({ url }) => {
    if (isWebLink(url)) void shell.openExternal(url)
    return { action: 'deny' }
  })
  contents.on('will-navigate', (event) => {
    if (!isRendererUrl(event.url)) event.preventDefault()
  })
  contents.on('will-redirect', (event) => {
    if (!isRendererUrl(event.url)) event.preventDefault()
  })
  contents.on('will-attach-webview', (event) => event.preventDefault())
})

app.whenReady().then(() => {
  app.setAboutPanelOptions({ applicationName: 'SpecLab', applicationVersion: app.getVersion() })
  // No page of ours needs a permission (camera, notifications, …) beyond writing the clipboard: refuse the rest.
  session.defaultSession.setPermissionRequestHandler((_contents, permission, callback) => callback(ALLOWED_PERMISSIONS.has(permission)))
  session.defaultSession.setPermissionCheckHandler((_contents, permission) => ALLOWED_PERMISSIONS.has(permission))
  const userData = app.getPath('userData')
  host = new HostProcess(
    hostEntry,
    {
      databasePath: process.env['SPECLAB_DB'] || join(userData, 'speclab.sqlite'),
      nativeBinding: electronSqliteBinding() ?? null,
      downloadDirectory: join(userData, 'models'),
      version: app.getVersion(),
      mode: 'electron'
    },
    broadcast
  )
  host.start()
  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      buildMenuTemplate(
        { suites: SUITES, isMac: process.platform === 'darwin', isDev: !app.isPackaged },
        {
          addModel: () => void addModelFromMenu(),
          openDatabase: () => void openDatabaseFromMenu(),
          navigate: (view) => command({ kind: 'navigate', view }),
          startSuite: (suiteId) => command({ kind: 'start-suite', suiteId }),
          about: () => app.showAboutPanel(),
          openDocs
        }
      )
    )
  )
  ipcMain.handle(API_CHANNEL, onApiCall)
  ipcMain.handle(PICK_CHANNEL, onPickFile)
  createWindow()
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow()
  })
})

app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit()
})

let quitting = false
app.on('will-quit', (event) => {
  if (quitting || !host) return
  // Let the host finish its rows and free the models before the process ends.
  event.preventDefault()
  quitting = true
  void host.stop().finally(() => app.quit())
})
