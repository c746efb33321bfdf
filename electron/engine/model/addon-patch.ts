/**
 * SpecLab's patch to node-llama-cpp's addon: `decodeBatchNow` and `sampleTokenNow`, its `decodeBatch` and
 * `sampleToken` run on the calling (JS) thread — the same job, the same promise, settled before the call returns —
 * instead of being handed to a libuv worker and back. Applied to node-llama-cpp's C++ source for SpecLab's own CPU
 * build (native-cpu-build.ts) and restored right after, so node_modules keeps npm's files.
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
 * feature-detects the two methods, keeps the worker path.
 */

/** Part of SpecLab's CPU build key (native-cpu-build.ts): a build with another revision of the patch is rebuilt. */
export const ADDON_PATCH_REVISION = 1

export const ADDON_PATCH = String.raw`--- a/llama/addon/AddonContext.cpp
+++ b/llama/addon/AddonContext.cpp
@@ -33,12 +33,37 @@
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
@@ -50,6 +75,9 @@
         Napi::Promise GetPromise() {
             return deferred.Promise();
         }
+        Napi::Value RunNow() {
+            return RunOnCallingThread(deferred);
+        }
 
     protected:
         Napi::Promise::Deferred deferred;
@@ -172,7 +200,7 @@
 };
 
 
-class AddonContextSampleTokenWorker : public Napi::AsyncWorker {
+class AddonContextSampleTokenWorker : public CallingThreadAsyncWorker {
     public:
         AddonContext* ctx;
         AddonSampler* sampler;
@@ -222,7 +250,7 @@
         } totalLogitWeight;
 
         AddonContextSampleTokenWorker(const Napi::CallbackInfo& info, AddonContext* ctx)
-            : Napi::AsyncWorker(info.Env(), "AddonContextSampleTokenWorker"),
+            : CallingThreadAsyncWorker(info.Env(), "AddonContextSampleTokenWorker"),
               ctx(ctx),
               deferred(Napi::Promise::Deferred::New(info.Env())) {
             ctx->Ref();
@@ -303,6 +331,9 @@
         Napi::Promise GetPromise() {
             return deferred.Promise();
         }
+        Napi::Value RunNow() {
+            return RunOnCallingThread(deferred);
+        }
 
     protected:
         Napi::Promise::Deferred deferred;
@@ -919,6 +950,19 @@
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
 Napi::Value AddonContext::SampleToken(const Napi::CallbackInfo& info) {
     AddonContextSampleTokenWorker* worker = new AddonContextSampleTokenWorker(info, this);
     worker->Queue();
@@ -1463,6 +1507,8 @@
                 InstanceMethod("getSequenceKvCacheMaxPosition", &AddonContext::GetSequenceKvCacheMaxPosition),
                 InstanceMethod("decodeBatch", &AddonContext::DecodeBatch),
                 InstanceMethod("sampleToken", &AddonContext::SampleToken),
+                InstanceMethod("decodeBatchNow", &AddonContext::DecodeBatchNow),
+                InstanceMethod("sampleTokenNow", &AddonContext::SampleTokenNow),
                 InstanceMethod("getEmbedding", &AddonContext::GetEmbedding),
                 InstanceMethod("getStateSize", &AddonContext::GetStateSize),
                 InstanceMethod("getMemoryBreakdown", &AddonContext::GetMemoryBreakdown),
--- a/llama/addon/AddonContext.h
+++ b/llama/addon/AddonContext.h
@@ -54,6 +54,8 @@
         Napi::Value GetSequenceKvCacheMaxPosition(const Napi::CallbackInfo& info);
         Napi::Value DecodeBatch(const Napi::CallbackInfo& info);
         Napi::Value SampleToken(const Napi::CallbackInfo& info);
+        Napi::Value DecodeBatchNow(const Napi::CallbackInfo& info);
+        Napi::Value SampleTokenNow(const Napi::CallbackInfo& info);
 
         Napi::Value GetEmbedding(const Napi::CallbackInfo& info);
         Napi::Value GetStateSize(const Napi::CallbackInfo& info);
`
