/**
 * SpecLab's patch to ggml's CPU barrier (`ggml_barrier`, llama.cpp's ggml/src/ggml-cpu/ggml-cpu.c), for SpecLab's own
 * CPU build (native-cpu-build.ts; applied with the other ggml patches of ggml-patches.ts and put back after the build).
 *
 * Terms: a graph (one evaluation) runs its ops one after the other on a team of threads; between two ops every
 * thread waits at a barrier until the last one arrives. Built with OpenMP, ggml's barrier is libgomp's (`#pragma omp
 * barrier`): a waiting thread spins GOMP_SPINCOUNT times, then sleeps on a futex until the last thread wakes it.
 *
 * What the patch changes: with OpenMP too, ggml's own barrier (an atomic counter — what builds without OpenMP use),
 * whose wait spins 64 times and then calls sched_yield() at every check instead of spinning without end. The team,
 * its start and its end stay OpenMP's.
 *
 * Why: SpecLab sets GOMP_SPINCOUNT=1000 (llama-cpp-model.ts) so that idle threads sleep and two OpenMP processes
 * sharing the cores do not starve each other. At libgomp's barrier that count also decides the wait between ops, and
 * a wait longer than 1000 spins costs a sleep and a wake-up; llama-server keeps libgomp's 300,000 spins, faster alone
 * and collapsing when two OpenMP processes share the cores. A yielding thread stays awake (sched_yield returns at once
 * when nothing else wants the core) and gives the core away when something else does. Measured (docs/performance.md,
 * "ggml's barrier"; 2 cores).
 *
 * Where it applies: the llama.cpp commit the ggml patches are written against (GGML_PATCH_COMMIT, ggml-patches.ts);
 * SpecLab's build of another commit goes without them, and its build key says so. The llama-server
 * SpecLab builds as its peer (`npm run build:llama-server`, the GPU check's pack) is built from unpatched source: the
 * peer stays llama.cpp's own.
 */

/** Part of SpecLab's ggml patch set (ggml-patches.ts). */
export const GGML_BARRIER_PATCH = String.raw`--- a/llama/llama.cpp/ggml/src/ggml-cpu/ggml-cpu.c
+++ b/llama/llama.cpp/ggml/src/ggml-cpu/ggml-cpu.c
@@ -579,9 +579,8 @@
         return;
     }
 
-#ifdef GGML_USE_OPENMP
-    #pragma omp barrier
-#else
+    // SpecLab's patch (electron/engine/model/ggml-barrier-patch.ts in SpecLab): with OpenMP too, this barrier rather than
+    // libgomp's, which sleeps on a futex after GOMP_SPINCOUNT spins and is woken at the next op.
     int n_passed = atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed);
 
     // enter barrier (full seq-cst fence)
@@ -596,9 +595,16 @@
         return;
     }
 
-    // wait for other threads
+    // wait for other threads: spin a little, then yield the core at every check, so that a thread waiting long
+    // neither sleeps (a wake-up per op) nor holds a core that another process's thread needs (SpecLab's patch)
+    int n_spins = 0;
     while (atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed) == n_passed) {
-        ggml_thread_cpu_relax();
+        if (n_spins < 64) {
+            n_spins++;
+            ggml_thread_cpu_relax();
+        } else {
+            sched_yield();
+        }
     }
 
     // exit barrier (full seq-cst fence)
@@ -608,7 +614,6 @@
     #else
     atomic_thread_fence(memory_order_seq_cst);
     #endif
-#endif
 }
 
 void ggml_threadpool_chunk_set(struct ggml_threadpool * tp, int value) {
`
