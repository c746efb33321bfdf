#!/usr/bin/env node
/**
 * Run first by `npm start` and `npm run dev`: exits 0 when the Electron binary is installed, else prints one line
 * (how to fetch it, and that `npm run serve` runs the same app in a browser meanwhile) and exits 1 — before
 * electron-vite or the better-sqlite3 build for Electron (prepare-electron-native.mjs) are tried.
 * See electron-binary.mjs for what "installed" means.
 */
import { electronStatus, missingElectronMessage } from './electron-binary.mjs'

const status = electronStatus()
if (status.problem) {
  console.error(missingElectronMessage(status))
  process.exit(1)
}
