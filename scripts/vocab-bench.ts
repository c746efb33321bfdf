/**
 * `npm run bench:vocab`: how SpecLab's per-position costs grow with the vocabulary. Every benchmark model
 * here has 512 tokens; real ones have 32k–152k. The family target (target5M) and the 260K draft are padded to larger
 * vocabularies (test/helpers/gguf-pad.ts: random rows of the real rows' scale, same function on the real ids) and,
 * per size, timed on the same context:
 *   - t1: one target token, llama.cpp alone (argmax inside llama.cpp, nothing transferred);
 *   - t1 + top-k: the same through SpecLab's session (top-64 logits transferred and warped in JS) — what ar pays;
 *   - t1 + full: every logit transferred (svip / self-verify's entropy, `--full-vocabulary`);
 *   - verify(γ+1): γ+1 positions in one batch with top-64 per position — what sd pays per round;
 *   - draft t1 + top-k: one draft token as sd drafts it;
 *   - ar and sd end to end (greedy, 2 prompts × 64 tokens) with sd's acceptance.
 * Medians of 15 repeats after a warm-up; threads as SpecLab's defaults for the prebuilt binary (1 per token, 2 per
 * batch on a 2-core machine). Usage: npm run bench:vocab [-- --sizes 512,8192,32768,131072 --json]
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Token } from 'node-llama-cpp'
import { autoregressive } from '../electron/engine/decoders/autoregressive'
import { decodeOnce } from '../electron/engine/methods/decode-once'
import { prepare } from '../electron/engine/methods/prepare'
import { loadLlamaModel, type LlamaCppModel } from '../electron/engine/model/llama-cpp-model'
import { sharedModelsDirectory } from '../electron/experiments/shared-paths'
import { writePaddedGguf } from '../test/helpers/gguf-pad'

/**
 * Pad rows at 2 % of the real rows' scale: their logits sit near 0, below the real top tokens, as a real padded
 * vocabulary's never-produced entries do — at full scale the two models' independent random rows win their argmaxes
 * and acceptance collapses, which measures the padding, not the engine.
 */
const PAD_SCALE = 0.02
const GAMMA = 5
const REPEATS = 15
const WARP = { temperature: 0, topK: 64, topP: 1 }
const PROMPTS = ['Once upon a time, there was a little dog named Max.', 'Lily went to the park with her mom. She saw a big red ball']

const argument = (name: string) => {
  const index = process.argv.indexOf(name)
  return index >= 0 ? process.argv[index + 1] : undefined
}
const sizes = (argument('--sizes') ?? '512,8192,32768,131072').split(',').map(Number)

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!

async function timed(repeats: number, run: () => Promise<unknown>): Promise<number> {
  await run()
  const samples: number[] = []
  for (let i = 0; i < repeats; i++) {
    const started = performance.now()
    await run()
    samples.push(performance.now() - started)
  }
  return median(samples)
}

/** Per-position costs on `prefix` (rolled back after every repeat). */
async function positionCosts(target: LlamaCppModel, draft: LlamaCppModel, prefix: number[]) {
  const next = [13, 14, 15, 16, 17, 18].slice(0, GAMMA + 1)
  const sequence = target.context.getSequence()
  const reset = () => sequence.eraseContextTokenRanges([{ start: prefix.length, end: sequence.nextTokenIndex }])
  await target.inPhase(prefix.length, () => sequence.controlledEvaluate(prefix.map((t) => t as Token)))
  const evaluate = (tokens: number[], generateNext: object) =>
    target.inPhase(tokens.length, () => sequence.controlledEvaluate(tokens.map((t) => [t as Token, { generateNext }] as const) as never))
  const t1 = await timed(REPEATS, async () => {
    await evaluate(next.slice(0, 1), { token: true, options: { temperature: 0 } })
    await reset()
  })
  const full = await timed(REPEATS, async () => {
    await evaluate(next.slice(0, 1), { logits: { filter: { tokens: [], includeTop: target.info.vocabularySize } } })
    await reset()
  })
  sequence.dispose()

  const session = await target.createSession(WARP)
  await session.append(prefix, prefix.length - 1)
  const topK = await timed(REPEATS, async () => {
    await session.append(next.slice(0, 1), 0)
    await session.truncate(prefix.length)
  })
  const verify = await timed(REPEATS, async () => {
    await session.append(next, 0)
    await session.truncate(prefix.length)
  })
  await session.dispose()

  const draftSession = await draft.createSession(WARP)
  await draftSession.append(prefix, prefix.length - 1)
  const draftTopK = await timed(REPEATS, async () => {
    await draftSession.append(next.slice(0, 1), 0)
    await draftSession.truncate(prefix.length)
  })
  await draftSession.dispose()
  return { t1, topK, full, verify, draftTopK }
}

async function endToEnd(target: LlamaCppModel, draft: LlamaCppModel) {
  const out = { ar: 0, sd: 0, acceptance: 0 }
  let proposed = 0
  let accepted = 0
  for (const [method, decoder] of [
    ['ar', () => autoregressive],
    ['sd', () => prepare('sd', { gamma: GAMMA, params: {} }).newRun()()]
  ] as const) {
    let tokens = 0
    let ms = 0
    for (const [stream, text] of PROMPTS.entries()) {
      const promptTokens = [target.info.bos!, ...target.tokenize(text)]
      const started = performance.now()
      const outcome = await decodeOnce({
        decoder: decoder(),
        models: { target, draft },
        promptTokens,
        maxTokens: 64,
        warp: WARP,
        seed: 1,
        stream,
        onEvent: (event) => {
          if (event.type !== 'step') return
          proposed += event.record.proposed
          accepted += event.record.accepted
        }
      })
      ms += performance.now() - started
      tokens += outcome.tokens.length
    }
    out[method] = (tokens * 1000) / ms
  }
  out.acceptance = proposed > 0 ? accepted / proposed : 0
  return out
}

const models = sharedModelsDirectory()
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-vocab-bench-'))
const rows: Record<string, number>[] = []
try {
  for (const size of sizes) {
    const files = { target: path.join(models, 'family/stories-target5M-f32.gguf'), draft: path.join(models, 'stories260K-f32.gguf') }
    if (size > 512) {
      for (const [role, file] of Object.entries(files)) {
        const padded = path.join(dir, `${role}-${size}.gguf`)
        writePaddedGguf(file, padded, { size, seed: role === 'target' ? 1 : 2, scale: PAD_SCALE })
        files[role as keyof typeof files] = padded
      }
    }
    const target = await loadLlamaModel(files.target, { threads: 1, batchThreads: Math.min(2, os.cpus().length), contextSize: 512 })
    const draft = await loadLlamaModel(files.draft, { threads: 1, contextSize: 512 })
    try {
      const prefix = [target.info.bos!, ...target.tokenize(PROMPTS[0]!)]
      const costs = await positionCosts(target, draft, prefix)
      const speed = await endToEnd(target, draft)
      rows.push({ vocabulary: target.info.vocabularySize, ...costs, ...speed })
      process.stderr.write(`${size}: done\n`)
    } finally {
      await target.dispose()
      await draft.dispose()
    }
    for (const file of fs.readdirSync(dir)) fs.rmSync(path.join(dir, file))
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}

if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(rows)}\n`)
else {
  const ms = (v: number) => v.toFixed(2)
  const lines = [
    '| vocabulary | t1 (llama.cpp) ms | t1 + top-64 (SpecLab) ms | t1 + full vocabulary ms | verify(6) + top-64 ms | draft t1 + top-64 ms | draft cost ratio | ar tok/s | sd tok/s | sd/ar | acceptance |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) =>
      `| ${r.vocabulary} | ${ms(r.t1!)} | ${ms(r.topK!)} | ${ms(r.full!)} | ${ms(r.verify!)} | ${ms(r.draftTopK!)} | ${(r.draftTopK! / r.topK!).toFixed(3)} | ${r.ar!.toFixed(1)} | ${r.sd!.toFixed(1)} | ${(r.sd! / r.ar!).toFixed(2)}× | ${r.acceptance!.toFixed(3)} |`
    )
  ]
  process.stdout.write(`${lines.join('\n')}\n`)
}
