/**
 * `npm run gpu-check`: packs everything the GPU check needs on a machine with an NVIDIA GPU, a CUDA toolkit and cmake
 * but no Node, no node_modules and no network, into one folder of at most 64 MiB (default gpu-check-pack/):
 *
 * - node.xz            this Node binary (process.execPath; it needs only glibc and libstdc++)
 * - app.tar.xz         entry.ts bundled with node-llama-cpp's JavaScript into one .mjs (esbuild), node-llama-cpp's addon
 *                      sources with SpecLab's addon patch applied (addon-patch.ts: evaluations alone on the JS thread,
 *                      as in SpecLab's CPU build) and CMakeLists, the Node-API headers the addon compiles against, the
 *                      story prompts
 * - llama.cpp.tar.xz   the llama.cpp source node-llama-cpp builds from (its patched checkout), without what the addon
 *                      and llama-server do not compile (other backends' sources, the web UI's sources, models, docs)
 * - models/*.xz        the inflated target and the 260K draft
 * - run.sh             unpack, build (CUDA, or `--cpu`), run the entry, write report.md / report.json
 * - x64-build-flags.txt the compiler flags SpecLab's builds add on x64 (cpu-build-flags.ts: no Intel AMX)
 * - manifest.json, SHA256SUMS   every file's size and sha256 (run.sh checks them with sha256sum before anything else)
 *
 * A file over PART_BYTES is split into .partNN files (run.sh joins them). The compressed files are kept in the user
 * cache (gpu-check/) and reused while their sources are unchanged (sizes and mtimes), so a second pack takes seconds.
 * Prints the folder.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { ADDON_PATCH } from '../../electron/engine/model/addon-patch'
import { applySourcePatch } from '../../electron/engine/model/source-patch'
import { AMX_OFF_FLAGS } from '../../electron/engine/model/cpu-build-flags'
import { bundleCommit, nodeLlamaCppDir } from '../../electron/engine/model/native-cpu-build'
import { sharedModelsDirectory } from '../../electron/experiments/shared-paths'
import { userCacheDir } from '../../electron/engine/peers/llama-server-binary'

/** The most the pack may weigh: the limit on what travels to the machine under test. */
export const PACK_LIMIT_BYTES = 64 * 1024 * 1024
/** Files above this are split, so no single file is large. */
export const PART_BYTES = 16 * 1024 * 1024

export const TARGET_MODEL = 'family/stories-target5M-inflated-78M-f16.gguf'
export const DRAFT_MODEL = 'stories260K-f32.gguf'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** What of llama.cpp's tree the addon and llama-server build from. */
const LLAMA_CPP_PARTS = ['CMakeLists.txt', 'LICENSE', 'cmake', 'common', 'ggml', 'include', 'src', 'tools', 'vendor', 'scripts/ui-assets.cmake', 'licenses']
/** Inside those: backends this check never enables, the web UI's sources (llama-server is built without its UI), tests. */
const LLAMA_CPP_EXCLUDES = [
  'ggml/src/ggml-sycl', 'ggml/src/ggml-vulkan', 'ggml/src/ggml-opencl', 'ggml/src/ggml-cann', 'ggml/src/ggml-metal', 'ggml/src/ggml-webgpu',
  'ggml/src/ggml-hexagon', 'ggml/src/ggml-zdnn', 'ggml/src/ggml-openvino', 'tools/ui/src', 'tools/ui/tests', 'tools/ui/package-lock.json', '.git'
]

interface PackedFile {
  name: string
  bytes: number
  sha256: string
}

export interface PackManifest {
  created: string
  node: string
  nodeLlamaCpp: string
  llamaCppCommit: string
  models: { target: string; draft: string }
  /** A split file and its parts, in order. */
  parts: Record<string, string[]>
  files: PackedFile[]
  totalBytes: number
}

function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex')
}

/** Size + mtime of every source file of an output: it is rebuilt only when one changed. */
function fingerprint(paths: readonly string[]): string {
  const hash = createHash('sha256')
  for (const p of paths) {
    const stack = [p]
    while (stack.length > 0) {
      const item = stack.pop()!
      const stat = fs.statSync(item)
      if (stat.isDirectory()) for (const child of fs.readdirSync(item).sort()) stack.push(path.join(item, child))
      else hash.update(`${item}\0${stat.size}\0${stat.mtimeMs}\n`)
    }
  }
  return hash.digest('hex')
}

function xzFile(source: string, destination: string): void {
  const threads = String(Math.max(1, os.availableParallelism?.() ?? os.cpus().length))
  execFileSync('sh', ['-c', 'xz -9 -T"$1" -c -- "$2" > "$3"', 'xz', threads, source, destination], { stdio: ['ignore', 'ignore', 'inherit'] })
}

function tarXz(cwd: string, entries: readonly string[], destination: string, excludes: readonly string[] = []): void {
  const threads = Math.max(1, os.availableParallelism?.() ?? os.cpus().length)
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', ...excludes.map((e) => `--exclude=${e}`), '-cf', '-', ...entries], {
    cwd,
    stdio: ['ignore', fs.openSync(`${destination}.tar`, 'w'), 'inherit']
  })
  execFileSync('xz', ['-9', `-T${threads}`, '-f', `${destination}.tar`], { stdio: ['ignore', 'ignore', 'inherit'] })
  fs.renameSync(`${destination}.tar.xz`, destination)
}

/** Copies `source` into `dir` as `name`, or as name.partNN files of at most PART_BYTES when it is larger. */
function copySplit(source: string, dir: string, name: string): string[] {
  const data = fs.readFileSync(source)
  if (data.length <= PART_BYTES) {
    fs.writeFileSync(path.join(dir, name), data)
    return [name]
  }
  const parts: string[] = []
  for (let offset = 0, i = 0; offset < data.length; offset += PART_BYTES, i++) {
    const part = `${name}.part${String(i).padStart(2, '0')}`
    fs.writeFileSync(path.join(dir, part), data.subarray(offset, offset + PART_BYTES))
    parts.push(part)
  }
  return parts
}

/** entry.ts and everything it imports, node-llama-cpp's JavaScript included, as one ES module. */
async function bundleEntry(destination: string): Promise<void> {
  await build({
    entryPoints: [path.join(root, 'scripts/gpu-check/entry.ts')],
    outfile: destination,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'error',
    // The prebuilt-binary packages and reflink's addon are looked up at run time and may be absent; the check
    // loads the addon run.sh builds. Electron is imported only inside Electron.
    external: ['electron', '@node-llama-cpp/*', '@reflink/*', '*.node'],
    // CommonJS dependencies inside an ES module bundle call require for Node's built-ins.
    banner: { js: "import { createRequire as __speclabCreateRequire } from 'node:module'; const require = __speclabCreateRequire(import.meta.url);" }
  })
}

/**
 * app/: the bundle where node-llama-cpp's code looks for its files (dist/ beside llama/, its package.json two levels
 * above the bundle), the addon's build files, the Node-API headers (cmake-js passes them as CMAKE_JS_INC), prompts.
 */
async function stageApp(stage: string, nlc: string): Promise<void> {
  const app = path.join(stage, 'app')
  const version = JSON.parse(fs.readFileSync(path.join(nlc, 'package.json'), 'utf8')).version as string
  fs.mkdirSync(path.join(app, 'nlc/dist'), { recursive: true })
  fs.writeFileSync(path.join(app, 'package.json'), `${JSON.stringify({ name: 'node-llama-cpp', version, type: 'module', private: true })}\n`)
  await bundleEntry(path.join(app, 'nlc/dist/gpu-check.mjs'))
  for (const item of ['CMakeLists.txt', 'cmake', 'addon', 'package.json', 'binariesGithubRelease.json', 'llama.cpp.info.json'])
    fs.cpSync(path.join(nlc, 'llama', item), path.join(app, 'nlc/llama', item), { recursive: true })
  // The staged copy keeps the patch (nothing to put back); where it does not apply the engine uses the worker path.
  if (!applySourcePatch(path.join(app, 'nlc'), ADDON_PATCH)) console.warn(`gpu-check: SpecLab's addon patch does not apply to node-llama-cpp ${version}: packing its addon unpatched`)
  const modules = path.dirname(nlc)
  fs.cpSync(path.join(modules, 'node-api-headers/include'), path.join(app, 'headers/node-api-headers/include'), { recursive: true })
  fs.mkdirSync(path.join(app, 'headers/node-addon-api'), { recursive: true })
  for (const file of fs.readdirSync(path.join(modules, 'node-addon-api')).filter((f) => f.endsWith('.h') || f === 'package.json' || f === 'index.js'))
    fs.cpSync(path.join(modules, 'node-addon-api', file), path.join(app, 'headers/node-addon-api', file))
  fs.mkdirSync(path.join(app, 'resources/prompts'), { recursive: true })
  fs.cpSync(path.join(root, 'resources/prompts/stories.jsonl'), path.join(app, 'resources/prompts/stories.jsonl'))
}

export async function pack(out: string): Promise<PackManifest> {
  const nlc = nodeLlamaCppDir(path.join(root, 'package.json'))
  const llamaCpp = path.join(nlc, 'llama', 'llama.cpp')
  if (!fs.existsSync(path.join(llamaCpp, 'CMakeLists.txt')))
    throw new Error(`${llamaCpp} has no llama.cpp checkout: run \`npm run build:native\` (node-llama-cpp's source download) first`)
  const models = sharedModelsDirectory()
  // Compressed outputs are kept whole in the user cache and reused while their sources are unchanged.
  const cache = path.join(userCacheDir(), 'gpu-check')
  fs.mkdirSync(cache, { recursive: true })
  const sourcesFile = path.join(cache, 'sources.json')
  const previous: Record<string, string> = fs.existsSync(sourcesFile) ? JSON.parse(fs.readFileSync(sourcesFile, 'utf8')) : {}
  const sources: Record<string, string> = { ...previous }
  const cached = async (name: string, inputs: readonly string[], make: (destination: string) => void | Promise<void>): Promise<string> => {
    const key = fingerprint(inputs)
    const destination = path.join(cache, name)
    if (previous[name] !== key || !fs.existsSync(destination)) {
      fs.rmSync(destination, { force: true })
      await make(`${destination}.tmp`)
      fs.renameSync(`${destination}.tmp`, destination)
      sources[name] = key
      fs.writeFileSync(sourcesFile, `${JSON.stringify(sources, null, 1)}\n`)
    }
    return destination
  }
  const outputs: [string, string][] = []
  outputs.push(['node.xz', await cached('node.xz', [process.execPath], (d) => xzFile(process.execPath, d))])
  const entryInputs = [path.join(root, 'scripts/gpu-check'), path.join(root, 'electron/api'), path.join(root, 'electron/engine'), path.join(root, 'electron/experiments'), path.join(root, 'resources/prompts'), path.join(nlc, 'dist'), path.join(nlc, 'llama/addon')]
  outputs.push(['app.tar.xz', await cached('app.tar.xz', entryInputs, async (d) => {
    const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-gpu-check-'))
    try {
      await stageApp(stage, nlc)
      tarXz(stage, ['app'], d)
    } finally {
      fs.rmSync(stage, { recursive: true, force: true })
    }
  })])
  outputs.push(['llama.cpp.tar.xz', await cached('llama.cpp.tar.xz', LLAMA_CPP_PARTS.map((p) => path.join(llamaCpp, p)), (d) =>
    tarXz(path.dirname(llamaCpp), LLAMA_CPP_PARTS.map((p) => `llama.cpp/${p}`), d, LLAMA_CPP_EXCLUDES.map((e) => `llama.cpp/${e}`))
  )])
  for (const model of [TARGET_MODEL, DRAFT_MODEL]) {
    const source = path.join(models, model)
    if (!fs.existsSync(source)) throw new Error(`${source} is missing (SPECLAB_MODELS names the models folder)`)
    const name = `${path.basename(model)}.xz`
    outputs.push([`models/${name}`, await cached(name, [source], (d) => xzFile(source, d))])
  }

  // Only a folder this script made (or an empty one) is replaced.
  if (fs.existsSync(out) && fs.readdirSync(out).length > 0 && !fs.existsSync(path.join(out, 'manifest.json')))
    throw new Error(`${out} exists and is not a GPU-check pack: give another --out`)
  fs.rmSync(out, { recursive: true, force: true })
  fs.mkdirSync(path.join(out, 'models'), { recursive: true })
  fs.cpSync(path.join(root, 'scripts/gpu-check/run.sh'), path.join(out, 'run.sh'))
  fs.chmodSync(path.join(out, 'run.sh'), 0o755)
  // The compiler flags SpecLab's builds add on x64 (electron/engine/model/cpu-build-flags.ts); run.sh reads them.
  fs.writeFileSync(path.join(out, 'x64-build-flags.txt'), `${AMX_OFF_FLAGS}\n`)
  const parts: Record<string, string[]> = {}
  const files: PackedFile[] = ['run.sh', 'x64-build-flags.txt'].map((name) => ({ name, bytes: fs.statSync(path.join(out, name)).size, sha256: sha256(path.join(out, name)) }))
  for (const [name, source] of outputs) {
    const pieces = copySplit(source, out, name)
    if (pieces.length > 1) parts[name] = pieces
    for (const piece of pieces) files.push({ name: piece, bytes: fs.statSync(path.join(out, piece)).size, sha256: sha256(path.join(out, piece)) })
  }
  fs.writeFileSync(path.join(out, 'SHA256SUMS'), files.map((f) => `${f.sha256}  ${f.name}\n`).join(''))
  fs.writeFileSync(path.join(out, 'parts.txt'), Object.entries(parts).map(([whole, pieces]) => `${whole} ${pieces.join(' ')}\n`).join(''))
  const manifest: PackManifest = {
    created: new Date().toISOString(),
    node: process.version,
    nodeLlamaCpp: JSON.parse(fs.readFileSync(path.join(nlc, 'package.json'), 'utf8')).version,
    llamaCppCommit: bundleCommit(path.join(nlc, 'llama', 'gitRelease.bundle')),
    models: { target: path.basename(TARGET_MODEL), draft: path.basename(DRAFT_MODEL) },
    parts,
    files,
    totalBytes: 0
  }
  // The manifest counts itself: written once to learn its size, then with the total.
  fs.writeFileSync(path.join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 1)}\n`)
  manifest.totalBytes = packBytes(out) + 16
  fs.writeFileSync(path.join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 1)}\n`)
  if (packBytes(out) > PACK_LIMIT_BYTES)
    throw new Error(`the pack weighs ${(packBytes(out) / 2 ** 20).toFixed(1)} MiB, over the ${PACK_LIMIT_BYTES / 2 ** 20} MiB limit`)
  return manifest
}

/** Bytes of every file under `dir`. */
export function packBytes(dir: string): number {
  let total = 0
  const stack = [dir]
  while (stack.length > 0) {
    const item = stack.pop()!
    const stat = fs.statSync(item)
    if (stat.isDirectory()) for (const child of fs.readdirSync(item)) stack.push(path.join(item, child))
    else total += stat.size
  }
  return total
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outIndex = process.argv.indexOf('--out')
  const out = path.resolve(outIndex > 0 ? process.argv[outIndex + 1]! : path.join(root, 'gpu-check-pack'))
  pack(out).then(
    (manifest) => {
      process.stderr.write(`${manifest.files.length} files, ${(manifest.totalBytes / 2 ** 20).toFixed(1)} MiB of ${PACK_LIMIT_BYTES / 2 ** 20} MiB\n`)
      process.stdout.write(`${out}\n`)
    },
    (error: unknown) => {
      process.stderr.write(`gpu-check pack: ${(error as Error).message}\n`)
      process.exit(1)
    }
  )
}
