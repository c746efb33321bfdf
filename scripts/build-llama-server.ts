/**
 * `npm run build:llama-server`: builds llama.cpp's `llama-server` from the source node-llama-cpp ships, so the peer
 * methods (`llama-server:*`) run the same llama.cpp commit as SpecLab's own methods. Needs git, cmake and a C++
 * compiler (Debian: `apt install cmake g++`). CPU only, tuned to this machine (GGML_NATIVE; without Intel AMX on x64:
 * electron/engine/model/cpu-build-flags.ts says why), no curl/SSL (SpecLab
 * passes local files). Cached by commit in the user cache directory; a second call returns at once (`--force`
 * rebuilds). Prints the binary's path.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import {
  builtLlamaServerPath,
  llamaCppBundleCommit,
  llamaCppBundlePath,
  llamaServerBuildDir,
} from '../electron/engine/peers/llama-server-binary'
import { AMX_OFF_FLAGS, amxOffApplies } from '../electron/engine/model/cpu-build-flags'

function run(command: string, args: string[], cwd?: string): void {
  process.stderr.write(`$ ${command} ${args.join(' ')}\n`)
  execFileSync(command, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] })
}

function requireTool(tool: string): void {
  try {
    execFileSync(tool, ['--version'], { stdio: 'ignore' })
  } catch {
    process.stderr.write(`build:llama-server needs \`${tool}\` on PATH (Debian: apt install cmake g++ git)\n`)
    process.exit(2)
  }
}

const bundle = llamaCppBundlePath()
const commit = llamaCppBundleCommit(bundle)
const binary = builtLlamaServerPath(commit)
const force = process.argv.includes('--force')

if (existsSync(binary) && !force) {
  process.stdout.write(`${binary}\n`)
  process.exit(0)
}
for (const tool of ['git', 'cmake', 'c++']) requireTool(tool)

const root = llamaServerBuildDir(commit)
const source = join(root, 'src')
const build = join(root, 'build')
rmSync(root, { recursive: true, force: true })
mkdirSync(root, { recursive: true })
run('git', ['clone', '--quiet', bundle, source])
run('cmake', [
  '-S', source, '-B', build,
  '-DCMAKE_BUILD_TYPE=Release',
  '-DGGML_NATIVE=ON',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DLLAMA_OPENSSL=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DLLAMA_BUILD_TOOLS=ON',
  '-DLLAMA_BUILD_SERVER=ON',
  '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_USE_PREBUILT_UI=OFF',
  ...(amxOffApplies() ? [`-DCMAKE_C_FLAGS=${AMX_OFF_FLAGS}`, `-DCMAKE_CXX_FLAGS=${AMX_OFF_FLAGS}`] : []),
])
run('cmake', ['--build', build, '--target', 'llama-server', '--config', 'Release', '-j', String(availableParallelism())])
const produced = [join(build, 'bin', 'llama-server'), join(build, 'bin', 'Release', 'llama-server.exe')].find(existsSync)
if (!produced) {
  process.stderr.write(`the build finished without a llama-server binary under ${build}\n`)
  process.exit(1)
}
mkdirSync(join(root, 'bin'), { recursive: true })
cpSync(produced, binary)
// The sources and objects are only needed to build; the binary is statically linked against ggml and llama.
rmSync(source, { recursive: true, force: true })
rmSync(build, { recursive: true, force: true })
process.stdout.write(`${binary}\n`)
