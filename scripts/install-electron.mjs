#!/usr/bin/env node
/**
 * Our postinstall: downloads the Electron binary the way Electron's own postinstall would, but never fails
 * `npm install` over it.
 *
 * Electron's postinstall (node_modules/electron/install.js) fetches the binary from GitHub and, when that fails,
 * prints the stack trace and exits 1 — and npm then rolls back the whole install, leaving a machine without
 * github.com access with nothing, although the browser mode (`npm run serve`) and the CLI need no Electron binary.
 * So package.json's `allowScripts` denies electron's own install script (`"electron": false`; npm ≥ 11 honours
 * the field) and this script runs the same install.js instead, with its output going to a log file: on success
 * the binary is in place exactly as before; on failure one line says what to do and `npm install` still succeeds.
 * With an npm that ignores `allowScripts`, electron's postinstall runs itself first and this finds the binary
 * present (or never runs, when that failed: set ELECTRON_SKIP_BINARY_DOWNLOAD=1 there).
 *
 * ELECTRON_SKIP_BINARY_DOWNLOAD=1 skips the download (install.js honours it, and so does this).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { electronStatus, fetchElectronHint } from './electron-binary.mjs'

const status = electronStatus()
// No electron package (`npm install --omit=dev`: it is a devDependency) or the binary already there: nothing to do.
if (status.version === null || !status.problem) process.exit(0)

const serve = 'meanwhile `npm run serve` runs the same app in your browser, and the CLI works too'
if (process.env.ELECTRON_SKIP_BINARY_DOWNLOAD) {
  console.error(
    `speclab: ELECTRON_SKIP_BINARY_DOWNLOAD is set, so the Electron ${status.version} binary was not downloaded; ` +
      `for the desktop app (\`npm start\`) ${fetchElectronHint(status)}; ${serve}.`
  )
  process.exit(0)
}

const logDir = path.join(path.dirname(status.dir), '.speclab') // node_modules/.speclab
const log = path.join(logDir, 'electron-install.log')
fs.mkdirSync(logDir, { recursive: true })
const fd = fs.openSync(log, 'w')
console.error(`speclab: downloading the Electron ${status.version} binary for the desktop app (about 100 MB, once)…`)
const result = spawnSync(process.execPath, [path.join(status.dir, 'install.js')], {
  cwd: status.dir,
  stdio: ['ignore', fd, fd],
  env: process.env
})
fs.closeSync(fd)

const after = electronStatus(status.dir)
if (result.status === 0 && !after.problem) {
  fs.rmSync(log, { force: true })
  process.exit(0)
}
// The first line of the error names the cause (e.g. "RequestError: getaddrinfo ENOTFOUND github.com").
const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : ''
const cause = (result.error?.message ?? text.split('\n').find((line) => line.trim()) ?? `exit code ${result.status}`).trim()
console.error(
  `speclab: npm install is done, but the Electron binary could not be downloaded (${cause}; full output in ${log}); ` +
    `for the desktop app (\`npm start\`) ${fetchElectronHint(status)}; ${serve}.`
)
