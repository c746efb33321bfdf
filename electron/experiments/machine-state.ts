/**
 * The machine around a run, for judging its timings: the load averages before and after, the CPU frequency governor
 * where Linux exposes it (`powersave` or `ondemand` clocks cores down between bursts and adds noise; `performance`
 * does not), and the llama.cpp binary the models ran on (node-llama-cpp's prebuilt one or SpecLab's OpenMP build:
 * a second thread is worth a different amount on each). A run is flagged busy when the 1-minute load exceeded the
 * cores before it started or when it ended (the run's own threads are part of the load at the end). Load averages
 * read 0 on Windows.
 */
import fs from 'node:fs'
import os from 'node:os'
import type { MachineState } from '../api/runs'
import { knownNativeBackend } from '../engine/model/llama-cpp-model'

const GOVERNOR_FILE = '/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor'

function governor(): string | null {
  try {
    return fs.readFileSync(GOVERNOR_FILE, 'utf8').trim() || null
  } catch {
    return null
  }
}

const cpus = (): number => Math.max(1, os.availableParallelism?.() ?? os.cpus().length)

/** Taken before the run starts. */
export function machineBefore(): MachineState {
  const loadBefore = os.loadavg()
  return { cpus: cpus(), loadBefore, loadAfter: null, governor: governor(), busy: loadBefore[0]! > cpus(), native: knownNativeBackend() }
}

/** The state before, completed once the run has ended. */
export function machineAfter(before: MachineState): MachineState {
  const loadAfter = os.loadavg()
  return { ...before, loadAfter, busy: before.busy || loadAfter[0]! > before.cpus }
}

/**
 * "load 0.52 → 1.93 on 2 cores, governor performance, llama.cpp localBuild cpu with OpenMP" (and a warning when
 * busy).
 */
export function describeMachine(machine: MachineState): string {
  const after = machine.loadAfter ? ` → ${machine.loadAfter[0]!.toFixed(2)}` : ''
  const governorText = machine.governor ? `, governor ${machine.governor}` : ''
  const busy = machine.busy ? ' — BUSY: the load exceeded the cores, so timings are suspect' : ''
  return `load ${machine.loadBefore[0]!.toFixed(2)}${after} on ${machine.cpus} cores${governorText}${binaryText(machine.native)}${busy}`
}

function binaryText(native: MachineState['native']): string {
  if (!native) return ''
  const openmp = native.openmp === null ? '' : native.openmp ? ' with OpenMP' : ' without OpenMP'
  const workers = native.openmp && native.libuvWorkers ? `, ${native.libuvWorkers} libuv worker${native.libuvWorkers === 1 ? '' : 's'}` : ''
  const path =
    native.directEvaluation === false ? ', every evaluation through controlledEvaluate' : native.jsThreadEvaluation ? ', evaluations alone on the JS thread' : ''
  const read = native.directEvaluation !== false && native.topLogitsRead ? ', the one-pass top-k read' : ''
  const batches = native.smallBatchMatmul ? ", small f16 batches on ggml's kernel" : ''
  return `, llama.cpp ${native.build} ${native.gpu}${openmp}${workers}${path}${read}${batches}`
}
