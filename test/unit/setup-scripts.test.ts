/**
 * The set-up scripts a new user meets first (README "Install and run"): `npm install` must not fail when the
 * Electron binary cannot be downloaded (scripts/install-electron.mjs, our postinstall), and `npm start` must say in
 * one line what is missing before anything else runs (scripts/check-electron.mjs). Each script is run as a child
 * process against a fake electron package in a temp dir (SPECLAB_ELECTRON_DIR); nothing touches the network.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

const root = path.resolve(__dirname, '../..')
const script = (name: string) => path.join(root, 'scripts', name)
const temps: string[] = []

afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** node_modules/electron in a fresh temp dir, as `npm install` leaves it before/after the binary download. */
function fakeElectron(opts: { binary?: boolean; pathTxt?: boolean; installJs?: string } = {}): string {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-setup-'))
  temps.push(tmp)
  const dir = path.join(tmp, 'node_modules', 'electron')
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'electron', version: '40.1.2' }))
  if (opts.pathTxt ?? opts.binary) fs.writeFileSync(path.join(dir, 'path.txt'), 'electron')
  if (opts.binary) {
    fs.mkdirSync(path.join(dir, 'dist'))
    fs.writeFileSync(path.join(dir, 'dist', 'electron'), '')
  }
  if (opts.installJs) fs.writeFileSync(path.join(dir, 'install.js'), opts.installJs)
  return dir
}

function run(name: string, electronDir: string, env: Record<string, string> = {}) {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, SPECLAB_ELECTRON_DIR: electronDir, ...env }
  // CI exports ELECTRON_SKIP_BINARY_DOWNLOAD; each test sets what it needs.
  if (!('ELECTRON_SKIP_BINARY_DOWNLOAD' in env)) delete childEnv.ELECTRON_SKIP_BINARY_DOWNLOAD
  delete childEnv.ELECTRON_OVERRIDE_DIST_PATH
  const result = spawnSync(process.execPath, [script(name)], { cwd: root, env: childEnv, encoding: 'utf8' })
  const lines = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.trim() !== '')
  return { status: result.status, lines }
}

describe('check-electron.mjs (run first by npm start / npm run dev)', () => {
  it('exits 1 with exactly one line pointing at npm run serve when the binary was never downloaded', () => {
    const { status, lines } = run('check-electron.mjs', fakeElectron())
    expect(status).toBe(1)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('npm run serve')
    expect(lines[0]).toContain('install.js')
    expect(lines[0]).toContain('40.1.2')
  })

  it('exits 1 with one line when path.txt names a binary that is not there', () => {
    const { status, lines } = run('check-electron.mjs', fakeElectron({ pathTxt: true }))
    expect(status).toBe(1)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('npm run serve')
  })

  it('exits 1 with one line when the electron package is not installed at all', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-setup-'))
    temps.push(tmp)
    const { status, lines } = run('check-electron.mjs', path.join(tmp, 'node_modules', 'electron'))
    expect(status).toBe(1)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('npm install')
    expect(lines[0]).toContain('npm run serve')
  })

  it('says to unset ELECTRON_SKIP_BINARY_DOWNLOAD while it is set (install.js does nothing then)', () => {
    const { status, lines } = run('check-electron.mjs', fakeElectron(), { ELECTRON_SKIP_BINARY_DOWNLOAD: '1' })
    expect(status).toBe(1)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('unset ELECTRON_SKIP_BINARY_DOWNLOAD')
  })

  it('exits 0 silently when the binary is present', () => {
    const { status, lines } = run('check-electron.mjs', fakeElectron({ binary: true }))
    expect(status).toBe(0)
    expect(lines).toEqual([])
  })
})

describe('prepare-electron-native.mjs', () => {
  it('attempts no native build without the Electron binary: one line, exit 1', () => {
    const { status, lines } = run('prepare-electron-native.mjs', fakeElectron())
    expect(status).toBe(1)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('npm run serve')
    expect(lines.join('\n')).not.toContain('gyp')
  })
})

describe('install-electron.mjs (our postinstall)', () => {
  const failingInstall =
    "console.error('RequestError: getaddrinfo ENOTFOUND github.com\\n    at ClientRequest.<anonymous> (got.js:1:1)'); process.exit(1)"
  const workingInstall = `
    const fs = require('fs'), path = require('path')
    fs.mkdirSync(path.join(__dirname, 'dist'), { recursive: true })
    fs.writeFileSync(path.join(__dirname, 'dist', 'electron'), '')
    fs.writeFileSync(path.join(__dirname, 'path.txt'), 'electron')`

  it('never fails npm install when the download fails: exit 0, one line naming the cause and the log', () => {
    const dir = fakeElectron({ installJs: failingInstall })
    const { status, lines } = run('install-electron.mjs', dir)
    expect(status).toBe(0)
    const failure = lines.filter((line) => !line.includes('downloading'))
    expect(failure).toHaveLength(1)
    expect(failure[0]).toContain('ENOTFOUND github.com')
    expect(failure[0]).toContain('npm run serve')
    expect(lines.join('\n')).not.toContain('    at ') // the stack trace goes to the log only
    const log = path.join(path.dirname(dir), '.speclab', 'electron-install.log')
    expect(failure[0]).toContain(log)
    expect(fs.readFileSync(log, 'utf8')).toContain('at ClientRequest')
  })

  it('leaves the binary in place, quietly, when the download works', () => {
    const dir = fakeElectron({ installJs: workingInstall })
    const { status, lines } = run('install-electron.mjs', dir)
    expect(status).toBe(0)
    expect(lines.filter((line) => !line.includes('downloading'))).toEqual([])
    expect(run('check-electron.mjs', dir).status).toBe(0)
    expect(fs.existsSync(path.join(path.dirname(dir), '.speclab', 'electron-install.log'))).toBe(false)
  })

  it('does not download with ELECTRON_SKIP_BINARY_DOWNLOAD set, and says how to get the binary', () => {
    const dir = fakeElectron({ installJs: failingInstall })
    const { status, lines } = run('install-electron.mjs', dir, { ELECTRON_SKIP_BINARY_DOWNLOAD: '1' })
    expect(status).toBe(0)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('npm run serve')
  })

  it('does nothing when the binary is already there or electron is not installed (--omit=dev)', () => {
    expect(run('install-electron.mjs', fakeElectron({ binary: true, installJs: failingInstall }))).toEqual({ status: 0, lines: [] })
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-setup-'))
    temps.push(tmp)
    expect(run('install-electron.mjs', path.join(tmp, 'node_modules', 'electron'))).toEqual({ status: 0, lines: [] })
  })
})

describe('package.json wiring', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
    allowScripts: Record<string, boolean>
  }

  it('checks the Electron binary before the native build and electron-vite', () => {
    for (const name of ['start', 'dev']) {
      const command = pkg.scripts[name]
      expect(command.indexOf('scripts/check-electron.mjs')).toBeGreaterThanOrEqual(0)
      expect(command.indexOf('scripts/check-electron.mjs')).toBeLessThan(command.indexOf('prepare-electron-native'))
      expect(command.indexOf('prepare-electron-native')).toBeLessThan(command.indexOf('electron-vite'))
    }
  })

  it("runs Electron's download through our non-fatal postinstall instead of electron's own", () => {
    expect(pkg.allowScripts.electron).toBe(false)
    expect(pkg.scripts.postinstall).toBe('node scripts/install-electron.mjs && tsx scripts/install-native.ts')
  })
})
