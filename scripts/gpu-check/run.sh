#!/usr/bin/env bash
# SpecLab's GPU check, run inside the folder `npm run gpu-check` packed. Needs bash, tar, xz, sha256sum, cmake (≥ 3.19;
# ≥ 3.24 or nvidia-smi to pick the GPU's architecture), a C++ compiler and, for the default CUDA mode, the CUDA toolkit
# (nvcc on PATH or in /usr/local/cuda/bin). No Node, no network: the pack brings its own Node and every source.
#
#   ./run.sh [--cpu] [--build-only] [--work DIR] [--out DIR] [--jobs N] [-- ENTRY OPTIONS…]
#
# 1. checks every file against SHA256SUMS, joins split files, unpacks Node, the app, llama.cpp's source and the models
# 2. builds, in ONE cmake tree, node-llama-cpp's addon (its llama/CMakeLists.txt, with the variables cmake-js passes)
#    and llama.cpp's llama-server from the same source: CUDA (-DGGML_CUDA=ON) or, with --cpu, the CPU only
# 3. puts the addon where node-llama-cpp looks for a local build (llama/localBuilds/<linux-x64[-cuda]>/Release with
#    its _nlcBuildMetadata.json and buildDone.status) and runs the check (gpu-check.mjs): greedy sd = ar, then ar / sd /
#    svip / pearl / llama-server:ar / llama-server:draft interleaved with repeats and 95 % intervals, then where an ar
#    token's time goes beside llama-server's → OUT/report.md, .json
# ENTRY OPTIONS go to gpu-check.mjs (--repeats N, --prompts N, --max-tokens N, --arms A,B,…). --build-only stops after
# step 3's install (a later run reuses the build and measures; a script can size its workload to the time left).
# The build tree stays in WORK (default ./work), so a second run only relinks. Exit: 0 passed, 1 failed, 2 bad usage.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mode=cuda
work="$here/work"
out="$here/report"
jobs=$(nproc 2>/dev/null || echo 4)
build_only=0
entry_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu ;;
    --build-only) build_only=1 ;;
    --work) work=$2; shift ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --) shift; entry_args=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd)
out=$(cd "$out" && pwd)

say() { printf '[gpu-check %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "run.sh: needs $1 on PATH" >&2; exit 2; }; }
for tool in tar xz sha256sum cmake c++; do need "$tool"; done
if [ "$mode" = cuda ] && ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then PATH="/usr/local/cuda/bin:$PATH"; else echo "run.sh: CUDA mode needs nvcc (or --cpu)" >&2; exit 2; fi
fi

case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "run.sh: unsupported machine $(uname -m)" >&2; exit 2 ;;
esac

say "checking the pack"
(cd "$here" && sha256sum --check --quiet SHA256SUMS)

# A file of the pack, joined from its parts when it was split (parts.txt: WHOLE PART…).
packed() {
  local name=$1 line
  line=$(grep -E "^$name " "$here/parts.txt" || true)
  if [ -z "$line" ]; then echo "$here/$name"; return; fi
  local joined="$work/joined/$name"
  mkdir -p "$(dirname "$joined")"
  (cd "$here" && cat ${line#"$name "}) > "$joined"
  echo "$joined"
}

say "unpacking into $work"
mkdir -p "$work/bin" "$work/models"
xz -dc "$(packed node.xz)" > "$work/bin/node.tmp" && chmod +x "$work/bin/node.tmp" && mv "$work/bin/node.tmp" "$work/bin/node"
rm -rf "$work/app" "$work/joined"
tar -xJf "$(packed app.tar.xz)" -C "$work"
tar -xJf "$(packed llama.cpp.tar.xz)" -C "$work/app/nlc/llama"
for model in "$here"/models/*.xz; do
  name=$(basename "$model" .xz)
  [ -f "$work/models/$name" ] || xz -dc "$model" > "$work/models/$name"
done
rm -rf "$work/joined"
"$work/bin/node" --version >/dev/null || { echo "run.sh: the packed Node does not run here (it needs glibc and libstdc++)" >&2; exit 1; }

llama="$work/app/nlc/llama"
release=$(sed -n 's/.*"release": *"\([^"]*\)".*/\1/p' "$llama/binariesGithubRelease.json")
if [ "$mode" = cuda ]; then folder="linux-$arch-cuda"; variant="cuda.$release"; gpu_json='"cuda"'; else folder="linux-$arch"; variant="$release"; gpu_json=false; fi
build="$work/build-$mode"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# A build tree made with another generator cannot be reused.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${generator[1]:-Unix Makefiles}" "$build/CMakeCache.txt"; then rm -rf "$build"; fi

options=(
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CONFIGURATION_TYPES=Release
  # What cmake-js gives node-llama-cpp's CMakeLists: the Node-API headers (no node.lib on Linux).
  "-DCMAKE_JS_INC=$work/app/headers/node-api-headers/include;$work/app/headers/node-addon-api"
  -DNLC_CURRENT_PLATFORM="linux-$arch" -DNLC_TARGET_PLATFORM="linux-$arch" -DNLC_VARIANT="$variant"
  # What node-llama-cpp's compileLlamaCpp sets for a build on this machine.
  -DGGML_BUILD_NUMBER=1 -DGGML_METAL=OFF -DGGML_CCACHE=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_BORINGSSL=OFF
  # llama-server in the same tree, so llama.cpp's libraries (and CUDA kernels) compile once for both.
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
)
# SpecLab's builds keep Intel AMX out on x64 (electron/engine/model/cpu-build-flags.ts says why; pack.ts writes the flags).
if [ "$arch" = x64 ] && [ -f "$here/x64-build-flags.txt" ]; then
  cpu_flags=$(cat "$here/x64-build-flags.txt")
  options+=("-DCMAKE_C_FLAGS=$cpu_flags" "-DCMAKE_CXX_FLAGS=$cpu_flags")
fi
if [ "$mode" = cuda ]; then
  options+=(-DGGML_CUDA=ON)
  # Only the GPU that is here: the compute capability nvidia-smi reports (cmake ≥ 3.24 finds it itself otherwise).
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .' || true)
  [ -n "$cap" ] && options+=("-DCMAKE_CUDA_ARCHITECTURES=$cap")
else
  options+=(-DGGML_CUDA=OFF)
fi

say "configuring ($mode, ${jobs} jobs)"
# The time of the run that made the build tree is kept, so a later run's report still says what a whole build took.
fresh=0
[ -f "$build/CMakeCache.txt" ] || { fresh=1; rm -f "$work/first-build-$mode.seconds"; }
t0=$SECONDS
cmake -S "$llama" -B "$build" ${generator[@]+"${generator[@]}"} "${options[@]}" > "$work/configure-$mode.log" 2>&1 || { tail -n 40 "$work/configure-$mode.log" >&2; exit 1; }
configure_s=$((SECONDS - t0))
say "building llama-addon and llama-server (log: $work/build-$mode.log)"
t0=$SECONDS
cmake --build "$build" --config Release --target llama-addon llama-server -j "$jobs" > "$work/build-$mode.log" 2>&1 || { tail -n 60 "$work/build-$mode.log" >&2; exit 1; }
build_s=$((SECONDS - t0))
say "built in $((configure_s + build_s)) s"
[ "$fresh" = 0 ] || echo "$((configure_s + build_s))" > "$work/first-build-$mode.seconds"
timings="configure=$configure_s,build=$build_s"
[ -f "$work/first-build-$mode.seconds" ] && timings="$timings,first-build=$(cat "$work/first-build-$mode.seconds")"

addon=$(find "$build" -name llama-addon.node -type f | head -n 1)
server=$(find "$build" -name llama-server -type f -perm -u+x | head -n 1)
[ -n "$addon" ] && [ -n "$server" ] || { echo "run.sh: the build made no llama-addon.node or llama-server under $build" >&2; exit 1; }
# node-llama-cpp's local-build layout (its getLocalBuildBinaryPath): the addon, llama.cpp's shared libraries beside it,
# the build's options as it records them, and the done-mark.
dest="$llama/localBuilds/$folder"
rm -rf "$dest"
mkdir -p "$dest/Release"
cp "$addon" "$dest/Release/"
find "$build" -name '*.so*' \( -type f -o -type l \) -exec cp -P {} "$dest/Release/" \;
distro=$(. /etc/os-release 2>/dev/null && printf '"name":"%s","version":"%s"' "${NAME:-Linux}" "${VERSION_ID:-}")
printf '{"buildOptions":{"customCmakeOptions":{},"progressLogs":true,"platform":"linux","platformInfo":{%s},"arch":"%s","gpu":%s,"llamaCpp":{"repo":"ggml-org/llama.cpp","release":"%s"}}}' \
  "$distro" "$arch" "$gpu_json" "$release" > "$dest/Release/_nlcBuildMetadata.json"
: > "$dest/buildDone.status"
printf '{"folderName":"%s"}\n' "$folder" > "$llama/lastBuild.json"
if [ "$build_only" = 1 ]; then say "built; --build-only: not measuring"; exit 0; fi

say "measuring"
target=$(ls "$work/models"/*inflated*.gguf | head -n 1)
draft=$(ls "$work/models"/stories260K*.gguf | head -n 1)
gpu_env=false
libs="$dest/Release"
if [ "$mode" = cuda ]; then
  gpu_env=cuda
  # The CUDA runtime and cuBLAS the build linked, where the toolkit keeps them (unless ld.so already knows them).
  cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
  for dir in "$cuda_home/lib64" "$cuda_home/targets/$(uname -m)-linux/lib"; do [ -d "$dir" ] && libs="$libs:$dir"; done
fi
status=0
env PATH="$work/bin:$PATH" \
  LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  NODE_LLAMA_CPP_GPU="$gpu_env" \
  SPECLAB_RESOURCES="$work/app/resources" \
  SPECLAB_LLAMA_SERVER="$server" \
  SPECLAB_CACHE_DIR="$work/cache" \
  "$work/bin/node" "$work/app/nlc/dist/gpu-check.mjs" \
  --mode "$mode" --target "$target" --draft "$draft" --out "$out" \
  --build-seconds "$timings" ${entry_args[@]+"${entry_args[@]}"} || status=$?
say "report: $out/report.md (exit $status)"
exit "$status"
