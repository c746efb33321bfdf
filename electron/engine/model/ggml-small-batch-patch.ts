/**
 * SpecLab's patch to llama.cpp's llamafile GEMM dispatch (`llamafile_sgemm`, ggml/src/ggml-cpu/llamafile/sgemm.cpp),
 * for SpecLab's own CPU build (native-cpu-build.ts; applied with the other ggml patches of ggml-patches.ts and put
 * back after the build).
 *
 * Terms: a matrix product W·X, W the weights (m rows of k), X the batch (n columns: the positions evaluated in one
 * call). ggml's CPU backend hands every product with n ≥ 2 to llamafile's tinyBLAS, which computes C in tiles of 4
 * rows × up to 6 columns; n = 1 (one token) goes to ggml's own kernel, a dot product per row and column
 * (`ggml_vec_dot_f16` for f16 weights) over blocks of 16 rows.
 *
 * What the patch changes: on x86-64 with AVX-512, a product with f16 weights of at least 512 KiB and a batch of at most
 * 16 columns goes to ggml's own kernel as well. Every other product is llama.cpp's choice. `SPECLAB_SMALL_BATCH_MATMUL=0`
 * in the environment gives llama.cpp's choice for every product (to compare; read once per process).
 *
 * Why: verifying γ + 1 positions is exactly such a product. On the 2-core Intel Xeon VM (AVX-512, 2026-11-27) the
 * inflated f16 target — 156 MB of weights, read from memory at every call — took 14.2 ms for 2 positions with
 * tinyBLAS against 8.4 ms for one, and 10.3–10.7 ms with ggml's kernel; 6 positions 21.6–21.9 ms against 15.4–16.0;
 * 16 positions 37.4–38.8 against 31.2–31.7; from 24 on both are level (docs/performance.md, "Small batches against
 * f16 weights"). Under perf, tinyBLAS's inner loop stalls on its loads of the weights' four rows. Where the weights
 * sit in the cache the tiles win instead: stories260K-f16 (8 KiB matrices) verified 2 positions in 0.26 ms per
 * position with either kernel, but 0.41 with ggml's when every matrix was routed there, and f32 and q8_0 weights
 * (target5M) ran 20–45 % slower with ggml's kernel — hence the type and size conditions. Not measured on AVX2-only
 * or ARM CPUs, so the patch leaves them as llama.cpp has them.
 *
 * Numerics: with the patch the weight products of a batch of up to 16 positions are computed by the same dot product,
 * in the same order, as a single token's.
 *
 * The llama-server SpecLab builds as its peer is built from unpatched source (the peer stays llama.cpp's own); the
 * same routing would speed its verification too.
 */

/** Part of SpecLab's ggml patch set (ggml-patches.ts). */
export const GGML_SMALL_BATCH_PATCH = String.raw`--- a/llama/llama.cpp/ggml/src/ggml-cpu/llamafile/sgemm.cpp
+++ b/llama/llama.cpp/ggml/src/ggml-cpu/llamafile/sgemm.cpp
@@ -55,8 +55,20 @@
 #include "simd-mappings.h"
 
 #include <array>
+#include <cstdlib>
 #include <type_traits>
 
+#if defined(__AVX512F__)
+// SpecLab's patch: whether small f16 batches go to ggml's own kernel (unless SPECLAB_SMALL_BATCH_MATMUL=0).
+static bool speclab_small_batch_matmul() {
+    static const bool enabled = [] {
+        const char * value = getenv("SPECLAB_SMALL_BATCH_MATMUL");
+        return !(value && value[0] == '0' && value[1] == '\0');
+    }();
+    return enabled;
+}
+#endif
+
 #ifdef _MSC_VER
 #define NOINLINE __declspec(noinline)
 #else
@@ -3821,6 +3833,15 @@
         return false;
 #endif
 
+#if defined(__AVX512F__)
+    // SpecLab's patch (electron/engine/model/ggml-small-batch-patch.ts in SpecLab): a batch of at most 16 against
+    // f16 weights of 512 KiB or more goes to ggml's own kernel, the one a single token uses (ggml_vec_dot_f16 per
+    // row and column), which verified 2-16 positions of a memory-bound f16 model in 17-30 % less time than tinyBLAS's
+    // tiles. SPECLAB_SMALL_BATCH_MATMUL=0 keeps tinyBLAS for every batch of 2 or more, as llama.cpp does.
+    if (Atype == GGML_TYPE_F16 && n <= 16 && m * k >= 256 * 1024 && speclab_small_batch_matmul())
+        return false;
+#endif
+
     if (Ctype != GGML_TYPE_F32)
         return false;
 
`
