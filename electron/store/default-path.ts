/**
 * Where runs live by default: the same file the desktop app uses (Electron's userData for the product name
 * "SpecLab"), so runs made with the CLI show up in the app. SPECLAB_DB overrides it everywhere.
 */
import os from 'node:os'
import path from 'node:path'

export function defaultDatabasePath(): string {
  if (process.env.SPECLAB_DB) return process.env.SPECLAB_DB
  const home = os.homedir()
  const base =
    process.platform === 'win32'
      ? (process.env.APPDATA ?? path.join(home, 'AppData', 'Roaming'))
      : process.platform === 'darwin'
        ? path.join(home, 'Library', 'Application Support')
        : (process.env.XDG_CONFIG_HOME ?? path.join(home, '.config'))
  return path.join(base, 'SpecLab', 'speclab.sqlite')
}
