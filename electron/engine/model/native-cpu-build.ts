/**
 * SpecLab's CPU build of llama.cpp: node-llama-cpp's addon built from the llama.cpp source it ships, on this machine,
 * with OpenMP and for this CPU (GGML_NATIVE) — node-llama-cpp's prebuilt CPU binary has no OpenMP, so a second
 * thread makes a token slower there (docs/performance.md). `npm install` builds it (scripts/install-native.ts), the
 * Models screen can too (host/cpu-build-job.ts).
 *
 * The build is node-llama-cpp's own, `node-llama-cpp source download --gpu false`: it lands where node-llama-cpp
 * looks for local builds (node_modules/node-llama-cpp/llama/localBuilds/<platform>-<arch>) and getLlama finds it
 * with no option (llama-backend-choice.ts says when it is used). node-llama-cpp offers no way to load an addon from
 * elsewhere, and `npm ci` deletes node_modules, so the result is also kept in the user cache directory under
 * native/<llama.cpp commit>-<node-llama-cpp version>-<platform>-<arch>-<CPU hash>-r<recipe>-p<patch> (the CPU's model
 * and feature flags: GGML_NATIVE compiles for exactly this CPU; the recipe: BUILD_RECIPE; the patch: the revision of
 * SpecLab's addon patch built in, addon-patch.ts, 0 where it does not apply) and copied back at the next install in a
 * second instead of ~6 minutes.
 * Both copies go through a temporary folder renamed into place, so a killed build leaves nothing half-written.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { userCacheDir } from '../peers/llama-server-binary'
import { ADDON_PATCH, ADDON_PATCH_REVISION } from './addon-patch'
import { GGML_PATCH_COMMIT, GGML_PATCH_REVISION, GGML_PATCHES } from './ggml-patches'
import { applySourcePatch, patchedSources } from './source-patch'
import { AMX_OFF_FLAGS, BUILD_RECIPE, amxOffApplies } from './cpu-build-flags'

export { AMX_OFF_FLAGS, BUILD_RECIPE }

/**
 * The environment of the build: node-llama-cpp's CLI run by Node, no GPU, and on x64 (not Windows) the C and C++
 * compilers named with AMX_OFF_FLAGS after them (CC / CXX: the user's compiler if set, else the first on PATH).
 * Why there: CMake keeps what follows the compiler in CC / CXX as its mandatory arguments on every compile line,
 * whereas cmake-js sets CMAKE_CXX_FLAGS itself (CXXFLAGS would be dropped), and a NODE_LLAMA_CPP_CMAKE_OPTION_* flag
 * would rename the build folder away from the plain CPU one that getLlama looks for.
 */
export function buildEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
  hasTool: (tool: string) => boolean = onPath
): NodeJS.ProcessEnv {
  // ELECTRON_RUN_AS_NODE: under Electron, process.execPath is Electron itself.
  const out: NodeJS.ProcessEnv = { ...env, ELECTRON_RUN_AS_NODE: '1', NODE_LLAMA_CPP_GPU: 'false' }
  if (!amxOffApplies(platform, arch)) return out
  const compiler = (set: string | undefined, candidates: readonly string[]) => set?.trim() || candidates.find(hasTool)
  const cc = compiler(env.CC, ['cc', 'gcc', 'clang'])
  const cxx = compiler(env.CXX, ['c++', 'g++', 'clang++'])
  if (cc) out.CC = `${cc} ${AMX_OFF_FLAGS}`
  if (cxx) out.CXX = `${cxx} ${AMX_OFF_FLAGS}`
  return out
}

/** The file SpecLab leaves in an installed build, naming the cache entry it came from. */
const MARKER = 'speclab-cpu-build.json'
const ENTRY = 'entry.json'

/** The root of the node-llama-cpp package that `from` (a file or folder) resolves. */
export function nodeLlamaCppDir(from: string = import.meta.url): string {
  // node-llama-cpp's exports do not include package.json: walk up from its entry point to the package root.
  let dir = path.dirname(createRequire(from).resolve('node-llama-cpp'))
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir)
  return dir
}

/**
 * The commit of the llama.cpp source node-llama-cpp ships (its git bundle's HEAD), read from the bundle's header
 * (`# v2 git bundle`, then `<sha> <ref>` lines): no git needed to tell whether a cached build fits.
 */
export function bundleCommit(bundle: string): string {
  const fd = fs.openSync(bundle, 'r')
  try {
    const head = Buffer.alloc(64 * 1024)
    const read = fs.readSync(fd, head, 0, head.length, 0)
    const lines = head.subarray(0, read).toString('latin1').split('\n')
    if (!/^# v[23] git bundle/.test(lines[0] ?? '')) throw new Error(`${bundle} is not a git bundle`)
    const refs = lines.slice(1).filter((line) => /^[0-9a-f]{40} /.test(line))
    const ref = refs.find((line) => line.endsWith(' HEAD')) ?? refs[0]
    if (!ref) throw new Error(`${bundle} names no commit`)
    return ref.slice(0, 40)
  } finally {
    fs.closeSync(fd)
  }
}

/** What a build compiled with GGML_NATIVE depends on: the CPU's model and its instruction-set flags. */
export function cpuIdentity(): { model: string; flags: string } {
  const model = os.cpus()[0]?.model.trim() ?? 'unknown'
  let flags = ''
  try {
    if (process.platform === 'linux') flags = /^flags\s*:(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? ''
    else if (process.platform === 'darwin')
      flags = spawnSync('sysctl', ['-n', 'machdep.cpu.features', 'machdep.cpu.leaf7_features'], { encoding: 'utf8' }).stdout?.trim() ?? ''
  } catch {
    // The model name alone then keys the build.
  }
  return { model, flags }
}

export interface CpuBuildKey {
  commit: string
  nodeLlamaCpp: string
  platform: string
  arch: string
  cpu: string
  /** sha256 of the CPU model and flags, 12 hex digits. */
  cpuHash: string
  /** BUILD_RECIPE. */
  recipe: number
  /** ADDON_PATCH_REVISION where SpecLab's addon patch applies to this node-llama-cpp, else 0 (built unpatched). */
  addonPatch: number
  /** GGML_PATCH_REVISION where the llama.cpp commit is the one SpecLab's ggml patches are for, else 0. */
  ggmlPatch: number
}

export function cpuBuildKey(dir: string = nodeLlamaCppDir()): CpuBuildKey {
  const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version as string
  const cpu = cpuIdentity()
  const commit = bundleCommit(path.join(dir, 'llama', 'gitRelease.bundle'))
  return {
    commit,
    nodeLlamaCpp: version,
    platform: process.platform,
    arch: process.arch,
    cpu: cpu.model,
    cpuHash: createHash('sha256').update(`${cpu.model}\n${cpu.flags}`).digest('hex').slice(0, 12),
    recipe: BUILD_RECIPE,
    addonPatch: patchedSources(dir, ADDON_PATCH) ? ADDON_PATCH_REVISION : 0,
    ggmlPatch: commit === GGML_PATCH_COMMIT ? GGML_PATCH_REVISION : 0
  }
}

const keyName = (key: CpuBuildKey) =>
  `${key.commit.slice(0, 12)}-${key.nodeLlamaCpp}-${key.platform}-${key.arch}-${key.cpuHash}-r${key.recipe}-p${key.addonPatch}-g${key.ggmlPatch}`

/** The cache folder of `key`: native/<commit>-<version>-<platform>-<arch>-<cpu hash>-r<recipe>-p<addon patch>-g<ggml patch>. */
export function cpuBuildCacheDir(key: CpuBuildKey): string {
  return path.join(userCacheDir(), 'native', keyName(key))
}

/** node-llama-cpp's name for the platform in its build folders (getPlatform). */
function platformName(): string {
  return process.platform === 'darwin' ? 'mac' : process.platform === 'win32' ? 'win' : process.platform
}

/** The local-build folder of node-llama-cpp's CPU binary (no GPU, no custom cmake options): `<platform>-<arch>`. */
export function localCpuBuildDir(dir: string = nodeLlamaCppDir()): string {
  return path.join(dir, 'llama', 'localBuilds', `${platformName()}-${process.arch}`)
}

/** A local build node-llama-cpp will load: its addon, metadata and done-mark (its getLocalBuildBinaryPath). */
function isCompleteLocalBuild(folder: string): boolean {
  return ['Release/llama-addon.node', 'Release/_nlcBuildMetadata.json', 'buildDone.status'].every((file) => fs.existsSync(path.join(folder, file)))
}

export interface CpuBuildStatus {
  key: CpuBuildKey
  cacheDir: string
  /** The build is in the cache for this commit, node-llama-cpp version and CPU. */
  cached: boolean
  /**
   * What node-llama-cpp's CPU local-build folder holds: SpecLab's build for this key, another local build (someone
   * ran node-llama-cpp's own `source build`; left alone), or nothing (the prebuilt binary is used).
   */
  installed: 'speclab' | 'other' | null
  /**
   * The folder holds a build SpecLab made for another key (an older llama.cpp, CPU or recipe): `installed` is null,
   * so that `npm install` (its postinstall, scripts/install-native.ts) replaces it, but it is what node-llama-cpp
   * loads until then.
   */
  stale: boolean
}

export function cpuBuildStatus(dir: string = nodeLlamaCppDir()): CpuBuildStatus {
  const key = cpuBuildKey(dir)
  const cacheDir = cpuBuildCacheDir(key)
  const local = localCpuBuildDir(dir)
  let installed: CpuBuildStatus['installed'] = null
  let stale = false
  if (isCompleteLocalBuild(local)) {
    const marker = readMarker(local)
    if (marker === keyName(key)) installed = 'speclab'
    else if (marker === null) installed = 'other'
    else stale = true
  }
  return { key, cacheDir, cached: isCompleteLocalBuild(path.join(cacheDir, 'build')), installed, stale }
}

/**
 * Whether node-llama-cpp's CPU local-build folder holds a build (SpecLab's — a stale one too: it is what loads —, or
 * one made with its own CLI); false when its bundle is unreadable.
 */
export function cpuBuildInstalled(): boolean {
  try {
    const status = cpuBuildStatus()
    return status.installed !== null || status.stale
  } catch {
    return false // node-llama-cpp's bundle unreadable: the prebuilt binary is what loads anyway
  }
}

function readMarker(folder: string): string | null {
  try {
    return (JSON.parse(fs.readFileSync(path.join(folder, MARKER), 'utf8')) as { key?: string }).key ?? null
  } catch {
    return null
  }
}

/** Copies `from` to `to` through a temporary sibling renamed into place (whatever was at `to` is replaced). */
function copyAtomically(from: string, to: string, files: readonly string[]): void {
  const temp = `${to}.tmp-${process.pid}`
  fs.rmSync(temp, { recursive: true, force: true })
  fs.mkdirSync(temp, { recursive: true })
  for (const file of files) fs.cpSync(path.join(from, file), path.join(temp, file), { recursive: true })
  fs.rmSync(to, { recursive: true, force: true })
  fs.renameSync(temp, to)
}

/** What of a local build node-llama-cpp loads (the rest of the folder is cmake's objects). */
const BUILD_FILES = ['Release', 'buildDone.status'] as const

/** Installs the cached build for this machine into node-llama-cpp's local-build folder. */
export function restoreCpuBuild(dir: string = nodeLlamaCppDir()): void {
  const status = cpuBuildStatus(dir)
  if (!status.cached) throw new Error(`no cached CPU build at ${status.cacheDir}`)
  const local = localCpuBuildDir(dir)
  copyAtomically(path.join(status.cacheDir, 'build'), local, BUILD_FILES)
  fs.writeFileSync(path.join(local, MARKER), JSON.stringify({ key: keyName(status.key) }))
}

/** Keeps the build node-llama-cpp just made in the cache, and marks it as SpecLab's. */
export function storeCpuBuild(dir: string, seconds: number): void {
  const key = cpuBuildKey(dir)
  const cacheDir = cpuBuildCacheDir(key)
  const local = localCpuBuildDir(dir)
  fs.mkdirSync(cacheDir, { recursive: true })
  copyAtomically(local, path.join(cacheDir, 'build'), BUILD_FILES)
  fs.writeFileSync(path.join(cacheDir, ENTRY), JSON.stringify({ ...key, builtAt: new Date().toISOString(), buildSeconds: Math.round(seconds) }, null, 2))
  fs.writeFileSync(path.join(local, MARKER), JSON.stringify({ key: keyName(key) }))
}

function onPath(tool: string): boolean {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)
  const names = process.platform === 'win32' ? [`${tool}.exe`, `${tool}.cmd`] : [tool]
  return dirs.some((d) => names.some((name) => fs.existsSync(path.join(d, name))))
}

/** Whether this CPU has AVX-512 (its `avx512f` flag), where SpecLab's small-batch patch is compiled in. */
export function cpuHasAvx512(flags: string = cpuIdentity().flags): boolean {
  return /(^|\s)avx512f(\s|$)/i.test(flags)
}

/**
 * Whether the CPU binary node-llama-cpp loaded sends small f16 batches to ggml's own kernel (ggml-small-batch-patch.ts):
 * SpecLab's installed build, whose ggml CPU library has the patch compiled in (it is only where the compiler targets
 * AVX-512: the library then names the switch), and SPECLAB_SMALL_BATCH_MATMUL not 0. `build` is node-llama-cpp's
 * buildType, `gpu` its gpu (false: the CPU binary).
 */
export function smallBatchMatmulActive(build: string, gpu: string | false, env: NodeJS.ProcessEnv = process.env): boolean {
  if (build !== 'localBuild' || gpu !== false || env.SPECLAB_SMALL_BATCH_MATMUL === '0') return false
  try {
    const status = cpuBuildStatus()
    return status.installed === 'speclab' && status.key.ggmlPatch >= 2 && hasSmallBatchRouting(path.join(localCpuBuildDir(), 'Release'))
  } catch {
    return false // node-llama-cpp's bundle or the build unreadable: nothing tells what this build does
  }
}

/** The name the patch reads its switch by: in the ggml CPU library only where the routing is compiled in. */
const SMALL_BATCH_SWITCH = 'SPECLAB_SMALL_BATCH_MATMUL'

/** Whether the ggml CPU library in `folder` (libggml-cpu.so / .dylib, ggml-cpu.dll) has the small-batch routing. */
export function hasSmallBatchRouting(folder: string): boolean {
  const library = fs.readdirSync(folder).find((file) => /^(lib)?ggml-cpu.*\.(so|dylib|dll)$/.test(file))
  return library !== undefined && fs.readFileSync(path.join(folder, library)).includes(SMALL_BATCH_SWITCH)
}

/** The tools the build needs that this machine lacks (empty: it can build). */
export function missingBuildTools(): string[] {
  const missing: string[] = []
  if (!onPath('cmake')) missing.push('cmake')
  if (!['c++', 'g++', 'clang++', 'cl'].some(onPath)) missing.push('a C++ compiler')
  if (process.platform !== 'win32' && !['make', 'ninja'].some(onPath)) missing.push('make')
  if (!onPath('git')) missing.push('git')
  if (!onPath('npm')) missing.push('npm')
  return missing
}

/** What to install for the build, per platform. */
export function buildToolsHint(missing: readonly string[]): string {
  const how =
    process.platform === 'darwin'
      ? '`xcode-select --install` and `brew install cmake`'
      : process.platform === 'win32'
        ? 'Visual Studio Build Tools (C++) and CMake'
        : '`apt install cmake g++ make git` (Debian/Ubuntu) or your distribution\'s equivalent'
  return `missing ${missing.join(', ')}: install ${how}`
}

export interface BuildProgress {
  /** 0…1: cloning the bundled source is the first 5 %, compiling the rest (ninja's or make's own count). */
  fraction: number
  /** What the build is doing now, one line. */
  stage: string
}

/** The progress a line of the build's output shows, or null for lines that show none. */
export function progressOfLine(line: string): BuildProgress | null {
  // eslint-disable-next-line no-control-regex
  const text = line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').trim()
  const ninja = /^\[(\d+)\/(\d+)\]\s*(.*)$/.exec(text)
  if (ninja) return { fraction: 0.05 + 0.95 * (Number(ninja[1]) / Math.max(1, Number(ninja[2]))), stage: `compiling (${ninja[1]}/${ninja[2]})` }
  const make = /^\[\s*(\d+)%\]\s*(.*)$/.exec(text)
  if (make) return { fraction: 0.05 + 0.95 * (Number(make[1]) / 100), stage: `compiling (${make[1]} %)` }
  const clone = /^Cloning .*?(\d+)%/.exec(text)
  if (clone) return { fraction: 0.05 * (Number(clone[1]) / 100), stage: 'copying the llama.cpp source' }
  if (/Compiling llama\.cpp/.test(text)) return { fraction: 0.05, stage: 'configuring' }
  return null
}

export interface BuildOptions {
  onProgress?: (progress: BuildProgress) => void
  signal?: AbortSignal
}

/**
 * Builds the CPU backend with node-llama-cpp's CLI (child processes: ~6 minutes on 2 cores): `source download
 * --skipBuild` clones the llama.cpp source it bundles, SpecLab's patches go into that source and the addon's
 * (addon-patch.ts, ggml-patches.ts), `source build` compiles, and npm's files are put back whatever happens.
 * Keeps the build in the cache and returns its duration in seconds. Throws with the tail of the build's output when
 * it fails.
 */
export async function buildCpuBackend(dir: string = nodeLlamaCppDir(), options: BuildOptions = {}): Promise<number> {
  const missing = missingBuildTools()
  if (missing.length > 0) throw new Error(`cannot build the CPU backend: ${buildToolsHint(missing)}`)
  const started = performance.now()
  const { ggmlPatch } = cpuBuildKey(dir)
  await runNodeLlamaCppCli(dir, ['source', 'download', '--gpu', 'false', '--skipBuild'], options)
  const restores: (() => void)[] = []
  try {
    const addon = applySourcePatch(dir, ADDON_PATCH)
    if (addon) restores.push(addon)
    if (ggmlPatch > 0) for (const patch of GGML_PATCHES) restores.push(requiredPatch(dir, patch.diff, patch.name))
    await runNodeLlamaCppCli(dir, ['source', 'build', '--gpu', 'false', '--noUsageExample'], options)
  } finally {
    for (const restore of restores) restore()
  }
  if (!isCompleteLocalBuild(localCpuBuildDir(dir)))
    throw new Error(`the build finished without a CPU build in ${localCpuBuildDir(dir)} (are NODE_LLAMA_CPP_CMAKE_OPTION_* variables set?)`)
  const seconds = (performance.now() - started) / 1000
  storeCpuBuild(dir, seconds)
  return seconds
}

/** Applies a patch the build key promised (written for this commit); one that does not apply ends the build. */
function requiredPatch(dir: string, diff: string, name: string): () => void {
  const restore = applySourcePatch(dir, diff)
  if (!restore) throw new Error(`SpecLab's ${name} patch does not apply to the llama.cpp source node-llama-cpp cloned into ${path.join(dir, 'llama', 'llama.cpp')}`)
  return restore
}

/** node-llama-cpp's CLI with `args` in a child process, its progress read from its output lines. */
async function runNodeLlamaCppCli(dir: string, args: readonly string[], options: BuildOptions): Promise<void> {
  if (options.signal?.aborted) throw new Error('the CPU build was cancelled')
  const tail: string[] = []
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(dir, 'dist', 'cli', 'cli.js'), ...args], {
      cwd: dir,
      env: buildEnvironment(),
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let lastFraction = -1
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split(/[\r\n]+/)) {
        if (!line.trim()) continue
        tail.push(line)
        if (tail.length > 30) tail.shift()
        const progress = progressOfLine(line)
        if (progress && progress.fraction > lastFraction) {
          lastFraction = progress.fraction
          options.onProgress?.(progress)
        }
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    const abort = () => child.kill('SIGTERM')
    options.signal?.addEventListener('abort', abort, { once: true })
    child.on('error', reject)
    child.on('close', (code, signal) => {
      options.signal?.removeEventListener('abort', abort)
      if (options.signal?.aborted) reject(new Error('the CPU build was cancelled'))
      else if (code === 0) resolve()
      else reject(new Error(`the CPU build failed (${signal ?? `exit ${code}`}):\n${tail.join('\n')}`))
    })
  })
}
