/**
 * Which llama.cpp runtime SpecLab asks node-llama-cpp for. One process holds one runtime, so the choice is made once,
 * before the first model loads:
 *
 * - A GPU backend (CUDA, Vulkan, Metal) that this machine can run always wins: the runtime is node-llama-cpp's GPU
 *   binary, exactly as without SpecLab's CPU build. The CPU build is never consulted then — node-llama-cpp looks
 *   for the GPU binaries first and falls back to the CPU only when none of them loads, and the CPU build lives in
 *   the folder of the CPU binary (`linux-x64`), not of a GPU one (`linux-x64-cuda`).
 * - Where the CPU runs the model (no GPU backend here, or NODE_LLAMA_CPP_GPU=false asks for none) the runtime is
 *   the CPU binary: SpecLab's build with OpenMP when it is installed (npm install builds it, cached by llama.cpp
 *   commit + CPU: native-cpu-build.ts), else node-llama-cpp's prebuilt one, which has no OpenMP and loses speed on
 *   a second thread (docs/performance.md).
 *
 * Pure: the caller detects the GPU backends (node-llama-cpp's getLlamaGpuTypes('supported')) and whether the build
 * is installed; the unit test walks every combination.
 */

/** node-llama-cpp's GPU backends (its LlamaGpuType without `false`). */
export type GpuBackend = 'cuda' | 'vulkan' | 'metal'
/** node-llama-cpp's `gpu` option as SpecLab passes it. */
export type GpuOption = 'auto' | false | GpuBackend

export interface BackendChoiceInput {
  /** What the user asked for (NODE_LLAMA_CPP_GPU, node-llama-cpp's own variable): 'auto' unless set. */
  requested: GpuOption
  /** The GPU backends this machine can run (drivers and runtime present). */
  gpuBackends: readonly GpuBackend[]
  /** Whether SpecLab's OpenMP CPU build is installed where node-llama-cpp looks for local builds. */
  cpuBuildInstalled: boolean
}

export interface BackendChoice {
  /** The `gpu` option for getLlama. */
  gpu: GpuOption
  /** The binary this leads to: a GPU backend, SpecLab's OpenMP CPU build, or node-llama-cpp's prebuilt CPU binary. */
  binary: 'gpu' | 'cpu-openmp-build' | 'cpu-prebuilt'
  /** One line for logs and the Models screen. */
  reason: string
}

export function chooseLlamaBackend({ requested, gpuBackends, cpuBuildInstalled }: BackendChoiceInput): BackendChoice {
  if (requested !== false && requested !== 'auto')
    return { gpu: requested, binary: 'gpu', reason: `${requested} was asked for (NODE_LLAMA_CPP_GPU)` }
  if (requested === 'auto' && gpuBackends.length > 0)
    return { gpu: 'auto', binary: 'gpu', reason: `a GPU backend is available (${gpuBackends.join(', ')}); the CPU build is not used` }
  const why = requested === false ? 'the CPU was asked for (NODE_LLAMA_CPP_GPU)' : 'no GPU backend is available'
  return cpuBuildInstalled
    ? { gpu: false, binary: 'cpu-openmp-build', reason: `${why}: the CPU build made on this machine (with OpenMP when npm install made it)` }
    : { gpu: false, binary: 'cpu-prebuilt', reason: `${why}: node-llama-cpp's prebuilt CPU binary (no OpenMP; \`npm run build:native\` builds the faster one)` }
}

/** NODE_LLAMA_CPP_GPU as node-llama-cpp reads it ('false', 'off', 'none', 'disable', 'disabled' mean no GPU). */
export function requestedGpu(value = process.env.NODE_LLAMA_CPP_GPU): GpuOption {
  const v = (value ?? '').trim().toLowerCase()
  if (['false', 'off', 'none', 'disable', 'disabled'].includes(v)) return false
  if (v === 'cuda' || v === 'vulkan' || v === 'metal') return v
  return 'auto'
}
