/**
 * SpecLab's patches to ggml's CPU backend, for SpecLab's own CPU build (native-cpu-build.ts): written against one
 * llama.cpp commit, applied together, keyed by one revision.
 */
import { GGML_BARRIER_PATCH } from './ggml-barrier-patch'
import { GGML_SMALL_BATCH_PATCH } from './ggml-small-batch-patch'

/** The llama.cpp commit the diffs are written against (node-llama-cpp 3.22.1's bundled source). */
export const GGML_PATCH_COMMIT = 'de3ff815ea7d559ee917f063901b8986f038abc6'

/**
 * Part of SpecLab's CPU build key (native-cpu-build.ts): a build made with another revision of the set is rebuilt.
 * 1: ggml's own yielding barrier with OpenMP (ggml-barrier-patch.ts).
 * 2: and small f16 batches on ggml's own kernel (ggml-small-batch-patch.ts).
 */
export const GGML_PATCH_REVISION = 2

/** The patches in the order they are applied, each with the name a failure to apply reports. */
export const GGML_PATCHES: readonly { name: string; diff: string }[] = [
  { name: 'ggml barrier', diff: GGML_BARRIER_PATCH },
  { name: 'ggml small-batch', diff: GGML_SMALL_BATCH_PATCH }
]
