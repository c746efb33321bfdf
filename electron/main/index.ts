/**
 * Electron main: window, menu, one IPC handler — thin glue. All api logic lives in ../api (shared with the browser
 * bridge); the renderer reaches it only through the preload's `window.speclab.call`.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { app, BrowserWindow, ipcMain, Menu, type IpcMainInvokeEvent } from 'electron'
import { createRunsService, handleApiRequest, type ApiService } from '../api/runs-service'
import { RunStore } from '../store/run-store'

const API_CHANNEL = 'speclab:api' // also in ../preload/index.ts
const devServerUrl = app.isPackaged ? undefined : process.env['ELECTRON_RENDERER_URL']
const rendererFile = fileURLToPath(new URL('../renderer/index.html', import.meta.url))
const preloadFile = fileURLToPath(new URL('../preload/index.cjs', import.meta.url))

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

let store: RunStore | null = null
let service: ApiService | null = null
let storeError: string | null = null

function openStore(): void {
  const file = process.env['SPECLAB_DB'] || join(app.getPath('userData'), 'speclab.sqlite')
  try {
    store = RunStore.open(file, { nativeBinding: electronSqliteBinding() })
    service = createRunsService(store)
  } catch (error) {
    storeError = `Could not open the run database ${file}: ${error instanceof Error ? error.message : String(error)}`
    console.error(storeError)
  }
}

async function onApiCall(event: IpcMainInvokeEvent, channel: unknown, payload: unknown): Promise<unknown> {
  const frame = event.senderFrame
  if (!frame || frame.parent !== null || !isRendererUrl(frame.url)) throw new Error('api call from an unknown frame')
  if (!service) throw new Error(storeError ?? 'The run database is not open')
  return handleApiRequest(service, typeof channel === 'string' ? channel : String(channel), payload)
}

function createWindow(): void {
  const win = new BrowserWindow({
    width: 1200,
    height: 800,
    title: 'SpecLab',
    show: false,
    webPreferences: {
      preload: preloadFile,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true
    }
  })
  win.once('ready-to-show', () => win.show())
  if (devServerUrl) void win.loadURL(devServerUrl)
  else void win.loadFile(rendererFile)
}

function buildMenu(): Menu {
  return Menu.buildFromTemplate([
    { label: 'File', submenu: [{ role: 'quit' }] },
    { label: 'View', submenu: [{ role: 'reload' }, { role: 'toggleDevTools' }] },
    { label: 'Help', submenu: [{ label: 'About SpecLab', click: () => app.showAboutPanel() }] }
  ])
}

// Every web contents (windows, devtools excepted by Electron) may neither open windows nor leave our page.
app.on('web-contents-created', (_event, contents) => {
  contents.setWindowOpenHandler(() => ({ action: 'deny' }))
  contents.on('will-navigate', (event) => {
    if (!isRendererUrl(event.url)) event.preventDefault()
  })
  contents.on('will-attach-webview', (event) => event.preventDefault())
})

app.whenReady().then(() => {
  app.setAboutPanelOptions({ applicationName: 'SpecLab', applicationVersion: app.getVersion() })
  Menu.setApplicationMenu(buildMenu())
  openStore()
  ipcMain.handle(API_CHANNEL, onApiCall)
  createWindow()
  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow()
  })
})

app.on('window-all-closed', () => {
  if (process.platform !== 'darwin') app.quit()
})

app.on('will-quit', () => {
  store?.close()
  store = null
  service = null
})
