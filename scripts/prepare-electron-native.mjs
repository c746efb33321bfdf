#!/usr/bin/env node
/**
 * `npm start` / `npm run dev` run Electron, whose Node ABI differs from the system Node that runs the CLI and the
 * tests. Rebuilding better-sqlite3 in place would break one or the other, so this keeps a SECOND copy built for
 * Electron under node_modules/.speclab/electron-better-sqlite3 and Electron's main process loads it through
 * better-sqlite3's `nativeBinding` option. node-llama-cpp needs nothing: its addons use the stable Node-API.
 * The copy is rebuilt only when the Electron version changes. Packaged apps do not use this: electron-builder
 * rebuilds native modules for Electron when it packages.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const target = path.join(root, 'node_modules/.speclab/electron-better-sqlite3')
const stamp = path.join(target, '.electron-version')

const electronVersion = require('electron/package.json').version
if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === electronVersion) process.exit(0)

const source = path.dirname(require.resolve('better-sqlite3/package.json'))
fs.rmSync(target, { recursive: true, force: true })
fs.cpSync(source, target, { recursive: true, filter: (file) => !file.includes(`${path.sep}build${path.sep}`) })
console.error(`speclab: building better-sqlite3 for Electron ${electronVersion} (one time)…`)
const run = (command, args) => execFileSync(command, args, { cwd: target, stdio: 'inherit' })
try {
  // The maintainers publish prebuilt Electron binaries; fetching one takes seconds.
  run(process.execPath, [require.resolve('prebuild-install/bin.js'), '--runtime', 'electron', '--target', electronVersion])
} catch {
  // No prebuilt for this platform: compile against Electron's headers (needs a C++ toolchain).
  const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'
  run(npx, ['--yes', 'node-gyp', 'rebuild', '--release', `--target=${electronVersion}`, '--dist-url=https://electronjs.org/headers'])
}
fs.writeFileSync(stamp, electronVersion)
