/**
 * libuv's workers in this process, on which node-llama-cpp evaluates. With an OpenMP build each worker that
 * evaluates becomes an OpenMP master with a thread team of its own; the count decides how libgomp's idle threads wait
 * (llama-cpp-model.ts preferSpinningOpenMpThreads) and is recorded with every run (`machine.native.libuvWorkers`).
 *
 * SpecLab leaves UV_THREADPOOL_SIZE as the user has it (libuv's default: 4). One worker (UV_THREADPOOL_SIZE=1) is
 * llama-server's arrangement — one master, libgomp's default 300,000 spins before a thread sleeps — and is faster on
 * a quiet machine (`ar` at two threads against llama-server's: 0.89–0.93× instead of 0.82–0.86×), but as fragile as
 * llama-server when two OpenMP processes share the cores: two SpecLab model processes at once ran 2.5 tok/s each
 * with one worker and 46.7 with four (docs/performance.md, "OpenMP builds and the second thread"). The default is the
 * robust one; one worker is a setting for a machine given over to one model process. With one worker two
 * evaluations never overlap: `sd.parallel` runs its models one after the other, and `nlc-draft`'s node-llama-cpp
 * predictor, which drafts beside the target, drafts nothing in time (outputs unchanged, no speedup).
 */

/** libuv's workers: UV_THREADPOOL_SIZE as libuv reads it (unset 4; atoi, 0 → 1, over 1024 → 1024). */
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
