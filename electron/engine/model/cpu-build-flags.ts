/**
 * What SpecLab's own llama.cpp builds add to llama.cpp's GGML_NATIVE build: the CPU build node-llama-cpp loads
 * (native-cpu-build.ts), llama-server (scripts/build-llama-server.ts) and the GPU check's build (scripts/gpu-check).
 */

/**
 * The build's own choices beyond node-llama-cpp's, versioned so that a cached or installed build made otherwise is
 * not reused — SpecLab's CPU build (native-cpu-build.ts) and llama-server's (scripts/build-llama-server.ts) alike.
 * 2: Intel AMX compiled out on x64 (AMX_OFF_FLAGS).
 */
export const BUILD_RECIPE = 2

/**
 * Compiler flags that keep Intel AMX out of the build: GGML_NATIVE's -march=native enables AMX on a CPU that has it
 * (Sapphire Rapids and later), and llama.cpp's AMX kernels at node-llama-cpp 3.22.1's commit then run for q8_0 and
 * q4 weights. On an Intel Xeon VM with amx_tile and amx_int8 (2026-11-27) the first q8_0 evaluation killed the
 * process with an invalid opcode at `tilezero` in tinygemm_kernel_amx — a tile instruction without a valid tile
 * configuration — while a small program that loads a configuration and zeroes a tile ran there; upstream llama.cpp
 * PR #26954 (open) names the cause (the configuration on the stack can be optimised away; per-thread tile permission).
 * Choice: no AMX in SpecLab's builds until node-llama-cpp ships that fix (node-llama-cpp's prebuilt CPU binary, which
 * picks a CPU variant at run time, evaluated the same model there without fault); what AMX would buy on a machine
 * where it works — q8_0 / q4 batches — is not measured here. GCC and Clang let an explicit -mno-* override -march
 * whatever the order, so these hold after cmake's -march=native. x64 only; MSVC's GGML_NATIVE does not enable AMX.
 */
export const AMX_OFF_FLAGS = '-mno-amx-tile -mno-amx-int8 -mno-amx-bf16'

/** Where AMX_OFF_FLAGS apply: x64 with GCC or Clang (not Windows: MSVC's native build does not enable AMX). */
export const amxOffApplies = (platform: NodeJS.Platform = process.platform, arch: string = process.arch): boolean => arch === 'x64' && platform !== 'win32'
