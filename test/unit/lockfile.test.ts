/**
 * `.ci/run` installs with `npm ci`, which refuses a lock file that lacks an entry for any declared dependency —
 * optional platform packages included. The registry mirror on the development machines has no macOS/Windows
 * builds of `@node-llama-cpp/*` for our version, so a plain `npm install` there silently leaves those entries
 * out and CI then fails before a single test runs. This test catches that drift on the machine that made it.
 *
 * Resolution follows Node's lookup: a dependency of `node_modules/a/node_modules/b` may live in
 * `node_modules/a/node_modules/b/node_modules/x`, `node_modules/a/node_modules/x` or `node_modules/x`.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

interface LockEntry {
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}

interface LockFile {
  lockfileVersion: number
  packages: Record<string, LockEntry>
}

function readLockFile(): LockFile {
  const lockPath = path.resolve(__dirname, '../../package-lock.json')
  return JSON.parse(fs.readFileSync(lockPath, 'utf8')) as LockFile
}

/** Lock keys at which Node would look for `name` when required from the package at `fromKey`. */
function candidateKeys(fromKey: string, name: string): string[] {
  const candidates: string[] = []
  let base = fromKey
  for (;;) {
    candidates.push(base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`)
    const cut = base.lastIndexOf('/node_modules/')
    if (cut >= 0) base = base.slice(0, cut)
    else if (base === '') break
    else base = ''
  }
  return candidates
}

function unresolvedDependencies(lock: LockFile): string[] {
  const missing: string[] = []
  for (const [key, entry] of Object.entries(lock.packages)) {
    // Links (workspaces) and the root's dev tools resolve the same way; peers are the consumer's business.
    const declared = {
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...(key === '' ? entry.devDependencies : {})
    }
    for (const name of Object.keys(declared)) {
      if (!candidateKeys(key, name).some((candidate) => candidate in lock.packages)) {
        missing.push(`${name} (needed by ${key === '' ? 'the project' : key})`)
      }
    }
  }
  return missing
}

describe('package-lock.json', () => {
  it('is a v3 lock file', () => {
    expect(readLockFile().lockfileVersion).toBe(3)
  })

  it('has an entry for every declared dependency, so `npm ci` accepts it on a clean machine', () => {
    expect(unresolvedDependencies(readLockFile())).toEqual([])
  })

  it('the check does notice a missing optional platform package', () => {
    const lock = readLockFile()
    const withoutMacBuild = { ...lock, packages: { ...lock.packages } }
    delete withoutMacBuild.packages['node_modules/@node-llama-cpp/mac-x64']
    expect(unresolvedDependencies(withoutMacBuild)).toContain(
      '@node-llama-cpp/mac-x64 (needed by node_modules/node-llama-cpp)'
    )
  })
})
