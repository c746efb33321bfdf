/**
 * Weighs given divergences on this machine's backend, to compare with what the GPU check reported elsewhere:
 *
 *   npx tsx scripts/gpu-check/weigh.ts --target T.gguf --cases PROMPT:POSITION:A:B,… [--max-tokens 128] [--gamma 4]
 *
 * For each story prompt named, decodes `ar` greedily here (prompt in one batch, then one token at a time), prints the
 * token ar chose at POSITION, and the gap ln p(A) − ln p(B) under ar's history and under chunks of 2 … γ + 1 with the
 * prompt's noise (divergence.ts). A and B are the two tokens of a reported divergence (ar's and the arm's there).
 */
import { parseArgs } from 'node:util'
import { loadLlamaModel } from '../../electron/engine/model/llama-cpp-model'
import { loadPrompts } from '../../electron/experiments/prompts'
import { tokenizePrompts } from '../../electron/experiments/runner'
import { gapOf, greedyOutput, historiesOf, noiseOf } from './divergence'

interface Case {
  prompt: number
  position: number
  a: number
  b: number
}

function parseCases(text: string): Case[] {
  return text.split(',').map((part) => {
    const [prompt, position, a, b] = part.split(':').map(Number)
    if (![prompt, position, a, b].every((n) => Number.isInteger(n) && n! >= 0)) throw new Error(`--cases: '${part}' is not PROMPT:POSITION:A:B`)
    return { prompt: prompt!, position: position!, a: a!, b: b! }
  })
}

const { values } = parseArgs({ options: { target: { type: 'string' }, cases: { type: 'string' }, 'max-tokens': { type: 'string', default: '128' }, gamma: { type: 'string', default: '4' } } })
if (!values.target || !values.cases) {
  process.stderr.write('usage: weigh.ts --target T.gguf --cases PROMPT:POSITION:A:B,… [--max-tokens 128] [--gamma 4]\n')
  process.exit(2)
}
const cases = parseCases(values.cases)
const maxTokens = Number(values['max-tokens'])
const model = await loadLlamaModel(values.target, { threads: 2, contextSize: 512, sequences: 1 })
try {
  const prompts = loadPrompts({ dataset: 'stories', limit: Math.max(...cases.map((c) => c.prompt)) + 1 })
  const promptTokens = tokenizePrompts({ target: model }, prompts, { maxTokens, contextSize: 512 })
  const fmt = (gap: number | null) => (gap === null ? 'outside top-64' : gap.toFixed(4))
  for (const prompt of new Set(cases.map((c) => c.prompt))) {
    const tokens = promptTokens[prompt]!
    const { output, distributions } = await greedyOutput(model, tokens, maxTokens)
    const histories = await historiesOf(model, tokens, output, Number(values.gamma) + 1, distributions)
    const noise = noiseOf(histories, output)
    for (const c of cases.filter((x) => x.prompt === prompt))
      process.stdout.write(
        `prompt ${c.prompt} token ${c.position}: ar here chose ${output[c.position]}; gap(${c.a}, ${c.b}) ${fmt(gapOf(histories[0]![c.position]!, c.a, c.b))} under ar's history, ` +
          `${histories.slice(1).map((h) => fmt(gapOf(h[c.position]!, c.a, c.b))).join(' ')} in chunks of 2…; the prompt's noise ${noise.toFixed(4)}\n`
      )
  }
} finally {
  await model.dispose()
}
