/**
 * Where SpecLab keeps the `llama-server` it builds from the llama.cpp source node-llama-cpp ships
 * (node_modules/node-llama-cpp/llama/gitRelease.bundle), so that the peer runs exactly the llama.cpp that SpecLab's
 * own methods run on. The build is cached in the user cache directory under the bundle's commit: one build per
 * llama.cpp version, shared by every checkout. `SPECLAB_LLAMA_SERVER` points at another binary instead.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { BUILD_RECIPE } from '../model/cpu-build-flags'

/** The git bundle of llama.cpp inside the installed node-llama-cpp. */
export function llamaCppBundlePath(): string {
  // node-llama-cpp's exports do not include package.json: walk up from its entry point to the package root.
  let dir = dirname(createRequire(import.meta.url).resolve('node-llama-cpp'))
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
  return join(dir, 'llama', 'gitRelease.bundle')
}

/** The commit the bundle's HEAD points at (`git bundle list-heads`); it names the cache entry. */
export function llamaCppBundleCommit(bundle = llamaCppBundlePath()): string {
  const heads = execFileSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' })
  const head = heads.split('\n').find((line) => line.endsWith(' HEAD')) ?? heads.split('\n')[0]
  const commit = head.split(' ')[0]
  if (!/^[0-9a-f]{40}$/.test(commit)) throw new Error(`cannot read the llama.cpp commit from ${bundle}`)
  return commit
}

/** The per-user cache directory of each platform (XDG on Linux, Library/Caches on macOS, LOCALAPPDATA on Windows). */
export function userCacheDir(): string {
  if (process.env.SPECLAB_CACHE_DIR) return process.env.SPECLAB_CACHE_DIR
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Caches', 'speclab')
  if (process.platform === 'win32') return join(process.env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'speclab', 'Cache')
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'speclab')
}

/** The build of `commit` with SpecLab's build flags of this version (BUILD_RECIPE): an older recipe's is not reused. */
export function llamaServerBuildDir(commit: string): string {
  return join(userCacheDir(), 'llama-server', `${commit.slice(0, 12)}-r${BUILD_RECIPE}`)
}

const executableName = process.platform === 'win32' ? 'llama-server.exe' : 'llama-server'

/** Where the build puts the binary for `commit`. */
export function builtLlamaServerPath(commit: string): string {
  return join(llamaServerBuildDir(commit), 'bin', executableName)
}

/** The binary a run uses, or null with the reason when there is none. */
export function findLlamaServer(): { path: string } | { path: null; reason: string } {
  const override = process.env.SPECLAB_LLAMA_SERVER
  if (override) {
    return existsSync(override) ? { path: override } : { path: null, reason: `SPECLAB_LLAMA_SERVER=${override} does not exist` }
  }
  let commit: string
  try {
    commit = llamaCppBundleCommit()
  } catch (error) {
    return { path: null, reason: `cannot read node-llama-cpp's llama.cpp bundle: ${(error as Error).message}` }
  }
  const path = builtLlamaServerPath(commit)
  if (existsSync(path)) return { path }
  return { path: null, reason: `llama-server is not built for llama.cpp ${commit.slice(0, 12)}: run \`npm run build:llama-server\` (or pass --llama-server-url)` }
}
