/**
 * The environment of a process that runs models: the CLI's model process, the app's engine host (Electron's utility
 * process or browser mode's child). Decided by the parent, because libuv reads UV_THREADPOOL_SIZE once, when its
 * threadpool first starts — before any line of the child's own code runs.
 *
 * One libuv worker where SpecLab's OpenMP CPU build runs the models. node-llama-cpp evaluates on libuv's workers, and
 * each worker that evaluates becomes an OpenMP master with a thread team of its own. With libuv's default four,
 * libgomp counts more threads than cores and throttles its spinning (GOMP_SPINCOUNT's "throttled" count: 100 spins,
 * 1000 with OMP_WAIT_POLICY=active), so a token's second thread sleeps and wakes at every op. One worker keeps one
 * master and one team — llama-server's arrangement (its main thread is the master): libgomp then spins its default
 * 300,000 times before sleeping, as it does for llama-server, and an idle engine still sleeps. Measured
 * (docs/performance.md, "OpenMP builds and the second thread"): `ar` at two threads against llama-server's `ar` at
 * two threads 0.83–0.86× with four workers, 0.89–0.93× with one.
 *
 * What one worker costs: evaluations of two models never overlap, so the `parallel` option of PEARL-style drafting
 * (draft and target issued together) runs them one after the other — on a CPU whose cores the target's threads
 * already fill, it bought nothing measurable. `npm install` makes the CPU build only where no GPU backend runs
 * (scripts/install-native.ts), so an installed build means the CPU runs the models; a GPU asked for by name
 * (NODE_LLAMA_CPP_GPU) keeps libuv's default, and so does a user who set UV_THREADPOOL_SIZE.
 */
import { requestedGpu } from './llama-backend-choice'
import { cpuBuildInstalled } from './native-cpu-build'

/** The libuv workers of a model process that runs on SpecLab's OpenMP CPU build. */
export const OPENMP_LIBUV_WORKERS = '1'

/** `env` with the threadpool size a model process should start with (unchanged where none applies). */
export function modelProcessEnv(env: NodeJS.ProcessEnv = process.env, openmpBuild = cpuBuildInstalled()): NodeJS.ProcessEnv {
  if (env.UV_THREADPOOL_SIZE !== undefined || !openmpBuild) return env
  // A GPU asked for by name never runs on the CPU build (llama-backend-choice.ts): keep libuv's default there.
  const gpu = requestedGpu(env.NODE_LLAMA_CPP_GPU)
  if (gpu !== false && gpu !== 'auto') return env
  return { ...env, UV_THREADPOOL_SIZE: OPENMP_LIBUV_WORKERS }
}

/** libuv's workers in this process: UV_THREADPOOL_SIZE as libuv reads it (unset 4; atoi, 0 → 1, over 1024 → 1024). */
export function libuvWorkers(env: NodeJS.ProcessEnv = process.env): number {
  if (env.UV_THREADPOOL_SIZE === undefined) return 4
  const size = Number.parseInt(env.UV_THREADPOOL_SIZE, 10) || 0 // atoi: no leading digits read as 0
  if (size === 0) return 1
  return size < 0 || size > 1024 ? 1024 : size // a negative count wraps to a huge unsigned one
}

/** Whether this process runs on one libuv worker (then libgomp's own spinning is llama-server's; see above). */
export function singleLibuvWorker(env: NodeJS.ProcessEnv = process.env): boolean {
  return libuvWorkers(env) === 1
}

