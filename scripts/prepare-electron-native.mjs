#!/usr/bin/env node
/**
 * `npm start` / `npm run dev` run Electron, whose Node ABI differs from the system Node that runs the CLI and the
 * tests. Rebuilding better-sqlite3 in place would break one or the other, so this keeps a SECOND copy built for
 * Electron under node_modules/.speclab/electron-better-sqlite3 and Electron's main process loads it through
 * better-sqlite3's `nativeBinding` option. node-llama-cpp needs nothing: its addons use the stable Node-API.
 * The copy is rebuilt only when the Electron version changes. Packaged apps do not use this: electron-builder
 * rebuilds native modules for Electron when it packages.
 *
 * Nothing is tried without the Electron binary (check-electron.mjs runs first in `npm start`; this checks again for
 * direct runs). The build's own output (prebuild-install, node-gyp) goes to node_modules/.speclab/
 * electron-better-sqlite3.log, so a failure is one line naming that log rather than a screenful of `gyp ERR!`.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { electronStatus, missingElectronMessage, root } from './electron-binary.mjs'

const require = createRequire(import.meta.url)
const target = path.join(root, 'node_modules/.speclab/electron-better-sqlite3')
const stamp = path.join(target, '.electron-version')
const log = path.join(root, 'node_modules/.speclab/electron-better-sqlite3.log')

const electron = electronStatus()
if (electron.problem) {
  console.error(missingElectronMessage(electron))
  process.exit(1)
}
const electronVersion = electron.version
if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === electronVersion) process.exit(0)

const source = path.dirname(require.resolve('better-sqlite3/package.json'))
fs.rmSync(target, { recursive: true, force: true })
fs.cpSync(source, target, { recursive: true, filter: (file) => !file.includes(`${path.sep}build${path.sep}`) })
console.error(`speclab: building better-sqlite3 for Electron ${electronVersion} (one time; output in ${log})…`)
const logFd = fs.openSync(log, 'w')
const run = (command, args, env = {}) => {
  fs.writeSync(logFd, `\n$ ${[command, ...args].join(' ')}\n`)
  execFileSync(command, args, { cwd: target, stdio: ['ignore', logFd, logFd], env: { ...process.env, ...env } })
}
const devDir = path.join(os.homedir(), '.cache', 'speclab-electron-headers')
try {
  // The maintainers publish prebuilt Electron binaries; fetching one takes seconds.
  run(process.execPath, [require.resolve('prebuild-install/bin.js'), '--runtime', 'electron', '--target', electronVersion])
} catch {
  // No prebuilt for this platform: compile against Electron's headers (needs a C++ toolchain). Under npm
  // (`npm start`) npm_config_node_gyp names the node-gyp that npm bundles, run here with this very node (no
  // download, no npx.cmd to spawn on Windows); run directly, npx fetches node-gyp.
  const bundled = process.env.npm_config_node_gyp
  const nodeGyp = (args, env) =>
    bundled && fs.existsSync(bundled)
      ? run(process.execPath, [bundled, ...args], env)
      : run(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['--yes', 'node-gyp', ...args], env)
  try {
    // Electron's headers are fetched first and then named as the node dir. An npm `nodedir` setting (npmrc) would
    // otherwise make node-gyp build against the system Node's headers, a binary Electron refuses to load; node-gyp
    // lets npm_config_* outrank its own flags, and npm_package_config_node_gyp_* outrank those.
    const headers = ['--target=' + electronVersion, '--dist-url=https://electronjs.org/headers', '--devdir=' + devDir]
    nodeGyp(['install', ...headers])
    nodeGyp(['rebuild', '--release', ...headers], {
      npm_package_config_node_gyp_nodedir: path.join(devDir, electronVersion)
    })
  } catch {
    fs.closeSync(logFd)
    fs.rmSync(target, { recursive: true, force: true }) // the next start tries again from scratch
    console.error(
      `speclab: could not get better-sqlite3 for Electron ${electronVersion}: neither a prebuilt binary (github.com) nor ` +
        "a compile against Electron's headers (electronjs.org) worked — see " +
        `${log}; the compile needs the internet and a C++ toolchain (python3, make, g++ / Xcode / Visual Studio ` +
        'Build Tools); then run npm start again (`npm run serve` runs the same app in a browser meanwhile).'
    )
    process.exit(1)
  }
}
fs.closeSync(logFd)
fs.writeFileSync(stamp, electronVersion)
