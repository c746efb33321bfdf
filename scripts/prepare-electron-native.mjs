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
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..') // fileURLToPath: Windows drive letters
const target = path.join(root, 'node_modules/.speclab/electron-better-sqlite3')
const stamp = path.join(target, '.electron-version')

const electronVersion = require('electron/package.json').version
if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === electronVersion) process.exit(0)

const source = path.dirname(require.resolve('better-sqlite3/package.json'))
fs.rmSync(target, { recursive: true, force: true })
fs.cpSync(source, target, { recursive: true, filter: (file) => !file.includes(`${path.sep}build${path.sep}`) })
console.error(`speclab: building better-sqlite3 for Electron ${electronVersion} (one time)…`)
const run = (command, args, env = {}) => execFileSync(command, args, { cwd: target, stdio: 'inherit', env: { ...process.env, ...env } })
const devDir = path.join(os.homedir(), '.cache', 'speclab-electron-headers')
try {
  // The maintainers publish prebuilt Electron binaries; fetching one takes seconds.
  run(process.execPath, [require.resolve('prebuild-install/bin.js'), '--runtime', 'electron', '--target', electronVersion])
} catch {
  // No prebuilt for this platform: compile against Electron's headers (needs a C++ toolchain).
  const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'
  try {
    // Electron's headers are fetched first and then named as the node dir. An npm `nodedir` setting (npmrc) would
    // otherwise make node-gyp build against the system Node's headers, a binary Electron refuses to load; node-gyp
    // lets npm_config_* outrank its own flags, and npm_package_config_node_gyp_* outrank those.
    const headers = ['--target=' + electronVersion, '--dist-url=https://electronjs.org/headers', '--devdir=' + devDir]
    run(npx, ['--yes', 'node-gyp', 'install', ...headers])
    run(npx, ['--yes', 'node-gyp', 'rebuild', '--release', ...headers], {
      npm_package_config_node_gyp_nodedir: path.join(devDir, electronVersion)
    })
  } catch {
    fs.rmSync(target, { recursive: true, force: true }) // the next start tries again from scratch
    console.error(
      `speclab: could not get better-sqlite3 for Electron ${electronVersion}: neither a prebuilt binary (github.com) nor ` +
        "Electron's headers (electronjs.org) could be fetched and compiled. Check the internet connection and, for " +
        'the compile, a C++ toolchain (python3, make, g++ / Xcode / Visual Studio Build Tools); then run npm start again.'
    )
    process.exit(1)
  }
}
fs.writeFileSync(stamp, electronVersion)
