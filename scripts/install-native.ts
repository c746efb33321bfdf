/**
 * Our second postinstall step, and `npm run build:native`: installs SpecLab's CPU build of llama.cpp (OpenMP, tuned to
 * this CPU; electron/engine/model/native-cpu-build.ts) where node-llama-cpp finds it — from the cache when this
 * llama.cpp commit was built for this CPU before (a second), else by building it (~6 minutes on 2 cores, progress
 * lines on the terminal). It never fails `npm install`: without cmake or a compiler, one line says what the build
 * buys and how to get it, and node-llama-cpp's prebuilt CPU binary is used. It never replaces a GPU backend: where
 * CUDA, Vulkan or Metal can run, those are used (llama-backend-choice.ts) and the build is skipped.
 *
 *   SPECLAB_NATIVE_BUILD=0   skip it (the prebuilt binary is used; `npm run build:native` still builds)
 *   --strict                 `npm run build:native`: build even where a GPU backend is available (it serves
 *                            NODE_LLAMA_CPP_GPU=false) and exit 1 when the build fails
 *   --force                  build again even when cached
 *
 * npm hides a postinstall's output unless it fails, so as a postinstall it writes to the terminal itself (/dev/tty)
 * where there is one, else (and when run directly) to stderr — CI shows it with --foreground-scripts; the output of a
 * failed build is kept in node_modules/.speclab/native-build.log.
 */
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { chooseLlamaBackend, requestedGpu, type GpuBackend } from '../electron/engine/model/llama-backend-choice'
import {
  buildCpuBackend,
  buildToolsHint,
  cpuBuildStatus,
  missingBuildTools,
  nodeLlamaCppDir,
  restoreCpuBuild
} from '../electron/engine/model/native-cpu-build'

const strict = process.argv.includes('--strict')
const force = process.argv.includes('--force')
const WHAT_IT_BUYS = 'building llama.cpp here with OpenMP decodes ~1.4x faster on 2 cores (ar 134 vs 99 tok/s, sd 185 vs 127; docs/performance.md)'

const out = terminal()
function say(line: string): void {
  out.write(`speclab: ${line}\n`)
}
function terminal(): { write(text: string): void } {
  if (process.env.npm_lifecycle_event === 'postinstall' && !process.stderr.isTTY) {
    try {
      const fd = fs.openSync('/dev/tty', 'w')
      return { write: (text) => fs.writeSync(fd, text) }
    } catch {
      // No terminal (CI): stderr.
    }
  }
  return process.stderr
}

/** The installed node-llama-cpp of the project npm installs (the working directory of a postinstall). */
function projectNodeLlamaCpp(): string | null {
  try {
    return nodeLlamaCppDir(path.join(process.cwd(), 'package.json'))
  } catch {
    return null
  }
}

/** The GPU backends node-llama-cpp can run here, asked of the installed package itself. */
async function gpuBackends(dir: string): Promise<GpuBackend[]> {
  const entry = pathToFileURL(path.join(dir, 'dist', 'index.js')).href
  const { getLlamaGpuTypes } = (await import(entry)) as typeof import('node-llama-cpp')
  return (await getLlamaGpuTypes('supported')).filter((gpu): gpu is GpuBackend => gpu !== false)
}

function formatSeconds(seconds: number): string {
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m${String(Math.round(seconds % 60)).padStart(2, '0')}s` : `${Math.round(seconds)}s`
}

async function main(): Promise<number> {
  if (process.env.SPECLAB_NATIVE_BUILD === '0' && !strict) {
    say(`SPECLAB_NATIVE_BUILD=0: keeping node-llama-cpp's prebuilt CPU binary; ${WHAT_IT_BUYS}: \`npm run build:native\``)
    return 0
  }
  const dir = projectNodeLlamaCpp()
  if (!dir) return 0 // node-llama-cpp is not installed (yet): nothing to build for.
  const choice = chooseLlamaBackend({ requested: requestedGpu(), gpuBackends: await gpuBackends(dir), cpuBuildInstalled: false })
  if (choice.binary === 'gpu' && !strict) {
    say(`${choice.reason}; \`npm run build:native\` builds it for NODE_LLAMA_CPP_GPU=false`)
    return 0
  }
  const status = cpuBuildStatus(dir)
  if (status.installed === 'speclab' && !force) {
    if (strict) say(`the CPU backend with OpenMP is installed (cached in ${status.cacheDir}); --force builds it again`)
    return 0
  }
  if (status.installed === 'other' && !force) {
    say('node-llama-cpp already has a local CPU build that SpecLab did not make; it stays in use (`npm run build:native -- --force` replaces it)')
    return 0
  }
  if (status.stale) say('the CPU build installed was made for another llama.cpp, CPU or build recipe: replacing it')
  if (status.cached && !force) {
    restoreCpuBuild(dir)
    say(`installed the CPU backend with OpenMP from the cache (${status.cacheDir})`)
    return 0
  }
  const missing = missingBuildTools()
  if (missing.length > 0) {
    say(`using node-llama-cpp's prebuilt CPU binary; ${WHAT_IT_BUYS}: ${buildToolsHint(missing)}, then \`npm run build:native\` (or Models → Build fast CPU backend)`)
    return strict ? 1 : 0
  }
  say(`building llama.cpp's CPU backend with OpenMP for this CPU (${status.key.cpu}; ~6 min on 2 cores, once per llama.cpp version; SPECLAB_NATIVE_BUILD=0 skips)`)
  if (status.key.addonPatch === 0)
    say(`SpecLab's addon patch does not apply to node-llama-cpp ${status.key.nodeLlamaCpp}: building without it, so evaluations stay on libuv's workers (docs/architecture.md)`)
  const logDir = path.join(dir, '..', '.speclab')
  fs.mkdirSync(logDir, { recursive: true })
  const log = path.join(logDir, 'native-build.log')
  let shownTenth = -1
  try {
    const seconds = await buildCpuBackend(dir, {
      onProgress: ({ fraction, stage }) => {
        const tenth = Math.floor(fraction * 10)
        if (tenth <= shownTenth) return
        shownTenth = tenth
        say(`CPU build ${Math.round(fraction * 100)}% — ${stage}`)
      }
    })
    say(`CPU backend with OpenMP built in ${formatSeconds(seconds)}; cached in ${status.cacheDir}`)
    return 0
  } catch (error) {
    fs.writeFileSync(log, (error as Error).message)
    say(`the CPU build failed, so node-llama-cpp's prebuilt CPU binary is used (output in ${log}); \`npm run build:native\` tries again`)
    return strict ? 1 : 0
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Never fail `npm install` over an optional speed-up.
    say(`the CPU build step stopped (${(error as Error).message}); node-llama-cpp's prebuilt CPU binary is used`)
    process.exit(strict ? 1 : 0)
  }
)
