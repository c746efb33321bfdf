/**
 * Where the Electron binary should be, and the one sentence that says how to get it when it is not there.
 * Shared by check-electron.mjs (`npm start` / `npm run dev` run it first), install-electron.mjs (our postinstall)
 * and prepare-electron-native.mjs.
 *
 * The `electron` npm package is only a launcher: its postinstall (node_modules/electron/install.js) downloads the
 * real binary from GitHub into node_modules/electron/dist and then writes path.txt naming the executable inside
 * dist. So the binary is present exactly when path.txt exists and the file it names exists (install.js and
 * electron's index.js both honour ELECTRON_OVERRIDE_DIST_PATH in place of dist).
 *
 * SPECLAB_ELECTRON_DIR points the scripts at another electron package directory (used by the tests).
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..') // fileURLToPath: Windows drive letters

/** The electron package directory (where `npm install` puts it, unless SPECLAB_ELECTRON_DIR says otherwise). */
export function electronDir() {
  return process.env.SPECLAB_ELECTRON_DIR
    ? path.resolve(process.env.SPECLAB_ELECTRON_DIR)
    : path.join(root, 'node_modules', 'electron')
}

/**
 * What is installed: `{ dir, version, binary, problem }`. `version` is null when the electron package itself is
 * missing; `problem` is null when the binary is there, else a few words saying what is missing.
 */
export function electronStatus(dir = electronDir()) {
  let version = null
  try {
    version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version ?? null
  } catch {
    return { dir, version, binary: null, problem: 'the electron package is not installed' }
  }
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH
  let executable = ''
  try {
    executable = fs.readFileSync(path.join(dir, 'path.txt'), 'utf8').trim()
  } catch {
    // electron's index.js accepts an override dist without path.txt (then the executable is called `electron`).
    if (!override) return { dir, version, binary: null, problem: 'the Electron binary was never downloaded' }
  }
  const distDir = override || path.join(dir, 'dist')
  const binary = path.join(distDir, executable || 'electron')
  if (!fs.existsSync(binary)) return { dir, version, binary, problem: `the Electron binary ${binary} is missing` }
  return { dir, version, binary, problem: null }
}

/** The install.js command to show, relative to the project when the package is the project's own. */
function installCommand(dir) {
  const rel = path.relative(root, path.join(dir, 'install.js'))
  const shown = rel.startsWith('..') || path.isAbsolute(rel) ? path.join(dir, 'install.js') : rel.split(path.sep).join('/')
  return `node ${shown}`
}

/** How to fetch the binary: a clause for the one-line messages below and in install-electron.mjs. */
export function fetchElectronHint(status) {
  if (status.version === null) return 'run `npm install` (Electron is a devDependency, so not with --omit=dev)'
  // install.js does nothing while this is set, so say so.
  const unset = process.env.ELECTRON_SKIP_BINARY_DOWNLOAD ? 'unset ELECTRON_SKIP_BINARY_DOWNLOAD and ' : ''
  return `${unset}run \`${installCommand(status.dir)}\` once github.com is reachable (or ELECTRON_MIRROR names a mirror)`
}

/** The one sentence (a single line) for a missing binary: what is wrong, how to fetch it, what works meanwhile. */
export function missingElectronMessage(status) {
  const what = status.version ? `Electron ${status.version}` : 'Electron'
  return (
    `speclab: the desktop app needs ${what} but ${status.problem}; ${fetchElectronHint(status)}, ` +
    'and meanwhile `npm run serve` runs the same app in your browser (the CLI works too).'
  )
}
