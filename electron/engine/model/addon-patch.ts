/**
 * SpecLab's patch to node-llama-cpp's addon, three calls:
 * - `decodeBatchNow` and `sampleTokenNow`: its `decodeBatch` and `sampleToken` run on the calling (JS) thread — the
 *   same job, the same promise, settled before the call returns — instead of being handed to a libuv worker and back;
 * - `topLogits(batchLogitIndex, k)` and `topLogitsNow`: the k highest raw logits of a position, highest first (equal
 *   logits: the lower id first), read from llama.cpp's logits in one pass with a heap of k (16 logits compared at a
 *   time with SSE2 on x86-64) — what `sampleToken` with a top-k chain returns, without copying the whole vocabulary
 *   into a candidates array and sorting it (at 131,072 tokens a read took 0.19 ms, and a round of γ = 5 makes
 *   eleven; docs/performance.md, "The top-k read").
 * Applied to node-llama-cpp's C++ source for SpecLab's own CPU build (native-cpu-build.ts) and restored right after,
 * so node_modules keeps npm's files.
 *
 * Why: every evaluation through node-llama-cpp is an asynchronous addon call — a hand-off from the JS thread to one
 * of libuv's workers and back, once for the decode and once per position read — and with OpenMP each worker that
 * decodes becomes an OpenMP master of its own (docs/performance.md, "OpenMP builds and the second thread"). An
 * evaluation alone in the process (direct-evaluation.ts) runs on the JS thread instead: no hand-offs, and the same
 * OpenMP master every time, as llama-server decodes. node-llama-cpp offers no synchronous decode; this is the change
 * the docs propose upstream, carried as a patch until node-llama-cpp has one.
 *
 * The diff is against node-llama-cpp 3.22.1's llama/addon/AddonContext.{cpp,h}, applied by source-patch.ts, which
 * refuses any hunk that does not match: another node-llama-cpp version then builds unpatched, and the engine, which
 * feature-detects the calls, keeps node-llama-cpp's.
 */

/** Part of SpecLab's CPU build key (native-cpu-build.ts): a build with another revision of the patch is rebuilt. */
export const ADDON_PATCH_REVISION = 3

export const ADDON_PATCH = String.raw`--- a/llama/addon/AddonContext.cpp
+++ b/llama/addon/AddonContext.cpp
@@ -2,6 +2,9 @@
 #include <algorithm>
 #include <cmath>
 #include <vector>
+#if defined(__SSE2__) || defined(_M_X64)
+#include <emmintrin.h>
+#endif
 #include "common/common.h"
 #include "llama-context.h"
 #include "llama-vocab.h"
@@ -33,12 +36,37 @@
     return totalSize;
 }
 
-class AddonContextDecodeBatchWorker : public Napi::AsyncWorker {
+// SpecLab's patch (electron/engine/model/addon-patch.ts in SpecLab): an AsyncWorker that can also run its job on
+// the calling (JS) thread: Execute, then OnOK or the rejection, with no hand-off to a libuv worker and back.
+class CallingThreadAsyncWorker : public Napi::AsyncWorker {
+    public:
+        using Napi::AsyncWorker::AsyncWorker;
+
+    protected:
+        Napi::Value RunOnCallingThread(Napi::Promise::Deferred& deferred) {
+            Execute();
+            if (failed) deferred.Reject(Napi::Error::New(Env(), failure).Value());
+            else OnOK();
+            return deferred.Promise();
+        }
+        // Hides AsyncWorker::SetError for the workers below, so that a failure on the calling thread is seen too.
+        void SetError(const std::string& error) {
+            failed = true;
+            failure = error;
+            Napi::AsyncWorker::SetError(error);
+        }
+
+    private:
+        bool failed = false;
+        std::string failure;
+};
+
+class AddonContextDecodeBatchWorker : public CallingThreadAsyncWorker {
     public:
         AddonContext* ctx;
 
         AddonContextDecodeBatchWorker(const Napi::Env& env, AddonContext* ctx)
-            : Napi::AsyncWorker(env, "AddonContextDecodeBatchWorker"),
+            : CallingThreadAsyncWorker(env, "AddonContextDecodeBatchWorker"),
               ctx(ctx),
               deferred(Napi::Promise::Deferred::New(env)) {
             ctx->Ref();
@@ -50,6 +78,9 @@
         Napi::Promise GetPromise() {
             return deferred.Promise();
         }
+        Napi::Value RunNow() {
+            return RunOnCallingThread(deferred);
+        }
 
     protected:
         Napi::Promise::Deferred deferred;
@@ -172,7 +203,130 @@
 };
 
 
-class AddonContextSampleTokenWorker : public Napi::AsyncWorker {
+// SpecLab's patch: the k highest raw logits of one batch position, highest first (equal logits: the lower id
+// first, as llama.cpp's greedy pick), in one pass over llama.cpp's logits with a heap of k (on x86-64, 16 logits
+// compared at a time with SSE2) — what a top-k sampler chain returns, without copying the vocabulary into a
+// candidates array and sorting it. A NaN logit anywhere is returned (as the last entry), so that corrupt weights are
+// seen. Resolves null where the position has no logits.
+class AddonContextTopLogitsWorker : public CallingThreadAsyncWorker {
+    public:
+        AddonContext* ctx;
+        int32_t batchLogitIndex;
+        size_t k;
+
+        AddonContextTopLogitsWorker(const Napi::CallbackInfo& info, AddonContext* ctx)
+            : CallingThreadAsyncWorker(info.Env(), "AddonContextTopLogitsWorker"),
+              ctx(ctx),
+              batchLogitIndex(info[0].As<Napi::Number>().Int32Value()),
+              k(info[1].As<Napi::Number>().Uint32Value()),
+              deferred(Napi::Promise::Deferred::New(info.Env())) {
+            ctx->Ref();
+        }
+        ~AddonContextTopLogitsWorker() {
+            ctx->Unref();
+        }
+
+        Napi::Promise GetPromise() {
+            return deferred.Promise();
+        }
+        Napi::Value RunNow() {
+            return RunOnCallingThread(deferred);
+        }
+
+    protected:
+        Napi::Promise::Deferred deferred;
+        std::vector<llama_token_data> top;
+        bool hasLogits = false;
+
+        // a before b in the result: the higher logit, and of equal logits the lower id
+        static bool Before(const llama_token_data& a, const llama_token_data& b) {
+            return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
+        }
+
+        void Execute() {
+            const float* sampledLogits = nullptr;
+            const llama_token* sampledIds = nullptr;
+            const float* logits = nullptr;
+            size_t n = 0;
+            {
+                // The position's logits as AddonSampler finds them: under the context's sampling mutex, since
+                // llama.cpp's getters synchronize the backend and may reorder the outputs (reads of a batch's
+                // positions run at once on libuv's workers); the scan runs outside it — the logits stay until the next
+                // decode, which the engine's context lock keeps out
+                std::lock_guard<std::mutex> samplingLock(ctx->sharedSamplerData.mutex);
+                sampledLogits = llama_get_sampled_logits_ith(ctx->ctx, batchLogitIndex);
+                sampledIds = llama_get_sampled_candidates_ith(ctx->ctx, batchLogitIndex);
+                logits = sampledLogits != nullptr ? sampledLogits : llama_get_logits_ith(ctx->ctx, batchLogitIndex);
+                if (sampledLogits != nullptr) n = llama_get_sampled_logits_count_ith(ctx->ctx, batchLogitIndex);
+                else if (logits != nullptr) n = llama_vocab_n_tokens(llama_model_get_vocab(ctx->model->model));
+            }
+            if (logits == nullptr || k == 0) {
+                return;
+            }
+            hasLogits = true;
+            const auto idOf = [&](size_t i) { return sampledLogits != nullptr && sampledIds != nullptr ? sampledIds[i] : (llama_token)i; };
+            // a heap under Before, its front the worst of those kept
+            top.reserve(std::min(k, n) + 1);
+            bool nanSeen = false;
+            llama_token nanId = LLAMA_TOKEN_NULL;
+            const auto isNan = [&](size_t i) {
+                if (!std::isnan(logits[i])) return false;
+                if (!nanSeen) nanId = idOf(i);
+                nanSeen = true;
+                return true;
+            };
+            size_t i = 0;
+            for (; i < n && top.size() < k; i++) {
+                if (isNan(i)) continue;
+                top.push_back(llama_token_data { idOf(i), logits[i], 0.0f });
+                std::push_heap(top.begin(), top.end(), Before);
+            }
+            float worst = top.empty() ? INFINITY : top.front().logit;
+            const auto consider = [&](size_t j) {
+                if (isNan(j) || !(logits[j] > worst)) return;
+                std::pop_heap(top.begin(), top.end(), Before);
+                top.back() = llama_token_data { idOf(j), logits[j], 0.0f };
+                std::push_heap(top.begin(), top.end(), Before);
+                worst = top.front().logit;
+            };
+#if defined(__SSE2__) || defined(_M_X64)
+            // 16 logits at a time: a group is looked at one by one only where a logit is above the worst kept, or
+            // is NaN (an unordered compare is true): about 0.1 of the scalar loop's time at 131,072 entries
+            for (; i + 16 <= n; i += 16) {
+                const __m128 bound = _mm_set1_ps(worst);
+                const __m128 above = _mm_or_ps(
+                    _mm_or_ps(_mm_cmpnle_ps(_mm_loadu_ps(logits + i), bound), _mm_cmpnle_ps(_mm_loadu_ps(logits + i + 4), bound)),
+                    _mm_or_ps(_mm_cmpnle_ps(_mm_loadu_ps(logits + i + 8), bound), _mm_cmpnle_ps(_mm_loadu_ps(logits + i + 12), bound))
+                );
+                if (_mm_movemask_ps(above) == 0) continue;
+                for (size_t j = i; j < i + 16; j++) consider(j);
+            }
+#endif
+            for (; i < n; i++) consider(i);
+            std::sort(top.begin(), top.end(), Before);
+            if (nanSeen) {
+                if (top.size() == k) top.pop_back();
+                top.push_back(llama_token_data { nanId, NAN, 0.0f });
+            }
+        }
+        void OnOK() {
+            if (!hasLogits) {
+                deferred.Resolve(Env().Null());
+                return;
+            }
+            Napi::Array pairs = Napi::Array::New(Env(), top.size() * 2);
+            for (size_t i = 0; i < top.size(); i++) {
+                pairs.Set(i * 2, Napi::Number::New(Env(), top[i].id));
+                pairs.Set(i * 2 + 1, Napi::Number::New(Env(), top[i].logit));
+            }
+            deferred.Resolve(pairs);
+        }
+        void OnError(const Napi::Error& err) {
+            deferred.Reject(err.Value());
+        }
+};
+
+class AddonContextSampleTokenWorker : public CallingThreadAsyncWorker {
     public:
         AddonContext* ctx;
         AddonSampler* sampler;
@@ -222,7 +376,7 @@
         } totalLogitWeight;
 
         AddonContextSampleTokenWorker(const Napi::CallbackInfo& info, AddonContext* ctx)
-            : Napi::AsyncWorker(info.Env(), "AddonContextSampleTokenWorker"),
+            : CallingThreadAsyncWorker(info.Env(), "AddonContextSampleTokenWorker"),
               ctx(ctx),
               deferred(Napi::Promise::Deferred::New(info.Env())) {
             ctx->Ref();
@@ -303,6 +457,9 @@
         Napi::Promise GetPromise() {
             return deferred.Promise();
         }
+        Napi::Value RunNow() {
+            return RunOnCallingThread(deferred);
+        }
 
     protected:
         Napi::Promise::Deferred deferred;
@@ -919,6 +1076,30 @@
     worker->Queue();
     return worker->GetPromise();
 }
+// SpecLab's patch: decodeBatch / sampleToken run on the calling thread; the same promise, settled before returning.
+Napi::Value AddonContext::DecodeBatchNow(const Napi::CallbackInfo& info) {
+    AddonContextDecodeBatchWorker* worker = new AddonContextDecodeBatchWorker(info.Env(), this);
+    Napi::Value promise = worker->RunNow();
+    delete worker;
+    return promise;
+}
+Napi::Value AddonContext::SampleTokenNow(const Napi::CallbackInfo& info) {
+    AddonContextSampleTokenWorker* worker = new AddonContextSampleTokenWorker(info, this);
+    Napi::Value promise = worker->RunNow();
+    delete worker;
+    return promise;
+}
+Napi::Value AddonContext::TopLogits(const Napi::CallbackInfo& info) {
+    AddonContextTopLogitsWorker* worker = new AddonContextTopLogitsWorker(info, this);
+    worker->Queue();
+    return worker->GetPromise();
+}
+Napi::Value AddonContext::TopLogitsNow(const Napi::CallbackInfo& info) {
+    AddonContextTopLogitsWorker* worker = new AddonContextTopLogitsWorker(info, this);
+    Napi::Value promise = worker->RunNow();
+    delete worker;
+    return promise;
+}
 Napi::Value AddonContext::SampleToken(const Napi::CallbackInfo& info) {
     AddonContextSampleTokenWorker* worker = new AddonContextSampleTokenWorker(info, this);
     worker->Queue();
@@ -1463,6 +1644,10 @@
                 InstanceMethod("getSequenceKvCacheMaxPosition", &AddonContext::GetSequenceKvCacheMaxPosition),
                 InstanceMethod("decodeBatch", &AddonContext::DecodeBatch),
                 InstanceMethod("sampleToken", &AddonContext::SampleToken),
+                InstanceMethod("decodeBatchNow", &AddonContext::DecodeBatchNow),
+                InstanceMethod("sampleTokenNow", &AddonContext::SampleTokenNow),
+                InstanceMethod("topLogits", &AddonContext::TopLogits),
+                InstanceMethod("topLogitsNow", &AddonContext::TopLogitsNow),
                 InstanceMethod("getEmbedding", &AddonContext::GetEmbedding),
                 InstanceMethod("getStateSize", &AddonContext::GetStateSize),
                 InstanceMethod("getMemoryBreakdown", &AddonContext::GetMemoryBreakdown),
--- a/llama/addon/AddonContext.h
+++ b/llama/addon/AddonContext.h
@@ -54,6 +54,10 @@
         Napi::Value GetSequenceKvCacheMaxPosition(const Napi::CallbackInfo& info);
         Napi::Value DecodeBatch(const Napi::CallbackInfo& info);
         Napi::Value SampleToken(const Napi::CallbackInfo& info);
+        Napi::Value DecodeBatchNow(const Napi::CallbackInfo& info);
+        Napi::Value SampleTokenNow(const Napi::CallbackInfo& info);
+        Napi::Value TopLogits(const Napi::CallbackInfo& info);
+        Napi::Value TopLogitsNow(const Napi::CallbackInfo& info);
 
         Napi::Value GetEmbedding(const Napi::CallbackInfo& info);
         Napi::Value GetStateSize(const Napi::CallbackInfo& info);
`
