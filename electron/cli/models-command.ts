/**
 * `speclab models inspect <gguf...>`: what the Models screen says before loading, on the command line — each file's
 * header facts, whether the drafts share the target's vocabulary, and what loading would take: GPU layers on this
 * machine, RAM and VRAM per file for the chosen context and sequences (experiments/memory-estimate.ts), and whether it
 * fits. Reads headers only (after the bounded GGUF scan); nothing is loaded. The first file is the target, then the
 * mid draft and the small draft (two files: target and draft).
 */
import os from 'node:os'
import path from 'node:path'
import { Command, InvalidArgumentError } from 'commander'
import type { MemoryEstimate } from '../api/models'
import { crossVocabularyAdvice, DEFAULT_SEQUENCES } from '../engine/methods/prepare'
import { UserInputError } from '../engine/errors'
import { assertTrioFits, describeMemory, estimateTrioMemory, size, type TrioFileRole } from '../experiments/memory-estimate'
import { describeCompatible } from '../engine/model/vocabulary-check'
import { readGgufSummary, vocabularyCompatibility, type GgufSummary } from '../host/model-library'
import { formatTable } from './format'
import { integerIn } from './run-command'
import { settingOption } from './setting-options'
import { loadTrio } from '../experiments/models'
import { nativeBackend } from '../engine/model/llama-cpp-model'
import { calibrationNote, timingsText } from '../api/thread-summary'

interface InspectOptions {
  contextSize: number
  sequences: number
  gpuLayers: 'auto' | number
  json?: boolean
}

const parseGpuLayers = (value: string): 'auto' | number => {
  if (value.trim() === 'auto') return 'auto'
  if (!/^\d+$/.test(value.trim()) || Number(value) > 1000) throw new InvalidArgumentError('expected "auto" or a whole number of layers (0 = CPU only)')
  return Number(value)
}

/** The roles the files take, in the order given: target, then (mid and) draft. */
function rolesOf(count: number): TrioFileRole[] {
  if (count === 1) return ['target']
  if (count === 2) return ['target', 'draft']
  if (count === 3) return ['target', 'mid', 'draft']
  throw new UserInputError('give one to three GGUF files: the target, then the mid and small drafts')
}

export function modelsCommand(): Command {
  const inspect = new Command('inspect')
    .description('header facts, vocabulary compatibility and the memory a load would take, before loading anything')
    .argument('<gguf...>', 'the target, then the mid and small drafts (one to three files)')
    .addOption(settingOption('contextSize'))
    .option('--sequences <n>', 'KV sequences per model (beam / DSBD runs want one per path)', integerIn(1, 64), DEFAULT_SEQUENCES)
    .option('--gpu-layers <n>', 'layers to offload to the GPU: auto or a number (0 = CPU only)', parseGpuLayers, 'auto')
    .option('--json', 'print one JSON object on stdout')
    .action(inspectAction)
  const calibrate = new Command('calibrate')
    .description('load a trio and show the threads each model gets per phase: measured (or cached) timings per thread count')
    .argument('<gguf...>', 'the target, then the mid and small drafts (one to three files)')
    .addOption(settingOption('calibration', { default: 'refresh', choices: ['auto', 'refresh'] }))
    .addOption(settingOption('contextSize', { default: 512 }))
    .option('--json', 'print one JSON object on stdout')
    .action(calibrateAction)
  return new Command('models').description('inspect GGUF files before loading them; measure their threads').addCommand(inspect).addCommand(calibrate)
}

interface CalibrateOptions {
  calibration: 'auto' | 'refresh'
  contextSize: number
  json?: boolean
}

/** `speclab models calibrate`: what loadTrio measures (or finds cached) for these files on this machine. */
async function calibrateAction(files: string[], options: CalibrateOptions): Promise<void> {
  const roles = rolesOf(files.length)
  const absolute = files.map((f) => path.resolve(f))
  const file = (role: TrioFileRole) => absolute[roles.indexOf(role)]
  const trio = await loadTrio(
    { target: absolute[0]!, mid: file('mid'), draft: file('draft') },
    { contextSize: options.contextSize, sharedVocabulary: false, calibration: options.calibration }
  )
  try {
    const native = await nativeBackend()
    const calibrations = trio.threadCalibration ?? []
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ native, cores: os.cpus().length, calibrations })}
`)
      return
    }
    const lines = [
      `node-llama-cpp ${native.build} binary${native.openmp === null ? '' : native.openmp ? ' (OpenMP threads)' : ' (no OpenMP)'}, ${native.gpu}, ${os.cpus().length} cores`,
      formatTable(
        ['role', 'file', 'source', 'one token, per thread count', `batch of ${calibrations[0]?.batchTokens ?? 6}, per thread count`, 'chosen token/batch'],
        calibrations.map((c) => [
          c.role,
          path.basename(c.path),
          c.source === 'cached' ? `cached ${c.measuredAt.slice(0, 10)}` : 'measured now',
          timingsText(c.single, c.chosen.threads),
          timingsText(c.batch, c.chosen.batchThreads),
          `${c.chosen.threads}/${c.chosen.batchThreads}`
        ])
      ),
      calibrationNote(calibrations[0])
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
  } finally {
    await trio.dispose()
  }
}

async function inspectAction(files: string[], options: InspectOptions): Promise<void> {
  const roles = rolesOf(files.length)
  const absolute = files.map((f) => path.resolve(f))
  const summaries = await Promise.all(absolute.map(readGgufSummary))
  // llama.cpp's rules (engine/model/vocabulary-check.ts): the rule that failed (`difference`), or which held (`held`).
  const vocabulary = summaries.slice(1).map((s, i) => {
    const verdict = vocabularyCompatibility(summaries[0]!, s)
    return verdict.compatible
      ? { role: roles[i + 1]!, difference: null, held: describeCompatible(verdict) }
      : { role: roles[i + 1]!, difference: verdict.reason, held: null }
  })
  const memory = await estimateTrioMemory(
    absolute.map((file, i) => ({ fileName: path.basename(file), path: file, role: roles[i]! })),
    { contextSize: options.contextSize, sequences: options.sequences, gpuLayers: options.gpuLayers }
  )
  let fits: string | null = null
  try {
    assertTrioFits(memory)
  } catch (error) {
    fits = error instanceof Error ? error.message : String(error)
  }
  if (options.json) {
    const headers = summaries.map(({ tokens: _tokens, metadata: _metadata, ...facts }, i) => ({ file: absolute[i], role: roles[i], ...facts }))
    process.stdout.write(`${JSON.stringify({ files: headers, vocabulary, memory, fits: fits === null, refusal: fits })}\n`)
    return
  }
  process.stdout.write(`${[headerTable(absolute, roles, summaries), '', ...vocabularyLines(vocabulary), memoryTable(memory), describeMemory(memory), fits ? `REFUSED: ${fits}` : 'fits: a load with these settings would be accepted'].join('\n')}\n`)
}

function headerTable(files: readonly string[], roles: readonly TrioFileRole[], summaries: readonly GgufSummary[]): string {
  return formatTable(
    ['role', 'file', 'architecture', 'quant', 'vocab', 'layers', 'context', 'template'],
    summaries.map((s, i) => [
      roles[i]!,
      path.basename(files[i]!),
      s.architecture,
      s.quantization ?? '–',
      String(s.vocabularySize),
      s.layers === null ? '–' : String(s.layers),
      s.contextLength === null ? '–' : String(s.contextLength),
      s.chatTemplate ? 'chat' : 'base'
    ])
  )
}

function vocabularyLines(vocabulary: readonly { role: TrioFileRole; difference: string | null; held: string | null }[]): string[] {
  if (vocabulary.length === 0) return []
  return [...vocabulary.map((v) => `${v.role}: ${v.difference === null ? `compatible with the target’s vocabulary — ${v.held}` : `vocabulary differs — ${v.difference}; ${crossVocabularyAdvice()}`}`), '']
}

function memoryTable(memory: MemoryEstimate): string {
  return formatTable(
    ['role', 'file', 'RAM weights', 'RAM context', 'context', 'GPU layers', 'VRAM'],
    memory.files.map((f) => [f.role, f.fileName, size(f.weightsBytes), size(f.contextBytes), String(f.contextSize), `${f.gpuLayers}/${f.totalLayers}`, size(f.vramBytes)])
  )
}
