/**
 * `speclab ngram-cache build --model M.gguf --corpus FILE --out FILE`: the static cache of the `ngram-cache` method
 * (engine/lookup/ngram-cache.ts), as llama.cpp's examples/lookup/lookup-create.cpp builds it — the corpus tokenised with
 * the model's tokenizer as one text (BOS first), every 2-gram counted with its follower, written in llama.cpp's
 * common_ngram_cache_save format (a file llama.cpp's lookup tools read, and the other way round). The corpus is a
 * text file, or a JSONL prompt file (`turns` / `question` / `prompt` / `text`, the prompts joined by blank lines).
 * Only the model's vocabulary is loaded (node-llama-cpp `vocabOnly`). Use the target of the runs that will read it:
 * ids of another tokenizer are refused when a run starts.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Command } from 'commander'
import { UserInputError } from '../engine/errors'
import { buildStaticCache } from '../engine/lookup/ngram-cache'
import { assertEncodableBy, assertGgufFile, sharedLlama, spmPiecesWithoutByteFallback } from '../engine/model/llama-cpp-model'
import { loadPromptFile } from '../experiments/prompts'

interface BuildOptions {
  model: string
  corpus: string
  out: string
  json?: boolean
}

/** The corpus as one text: a JSONL prompt file's prompts joined by blank lines, any other file as it is. */
function corpusText(file: string): string {
  let stat: fs.Stats
  try {
    stat = fs.statSync(file)
  } catch {
    throw new UserInputError(`${file}: no such corpus file`)
  }
  if (!stat.isFile()) throw new UserInputError(`${file}: the corpus must be a file`)
  if (file.endsWith('.jsonl')) return loadPromptFile(file).map((p) => p.text).join('\n\n')
  const text = fs.readFileSync(file, 'utf8')
  if (text.includes('\u0000')) throw new UserInputError(`${file}: a binary file, not a text corpus`)
  return text
}

async function tokenizeCorpus(modelFile: string, text: string): Promise<number[]> {
  await assertGgufFile(modelFile)
  const llama = await sharedLlama()
  let model
  try {
    model = await llama.loadModel({ modelPath: modelFile, vocabOnly: true })
  } catch (error) {
    throw new UserInputError(`${modelFile}: not a valid GGUF model (${(error as Error).message})`)
  }
  try {
    // A SentencePiece vocabulary without byte fallback aborts llama.cpp on a character it lacks: refuse first.
    const tokenizer = model.fileInfo.metadata.tokenizer?.ggml
    const pieces = spmPiecesWithoutByteFallback(
      (tokenizer?.tokens as string[] | undefined) ?? [],
      typeof tokenizer?.model === 'string' ? tokenizer.model : null,
      model.vocabularyType
    )
    assertEncodableBy(pieces, text, modelFile)
    const bos = model.tokens.bos
    const tokens = model.tokenize(text) as number[]
    return bos !== null && model.tokens.shouldPrependBosToken ? [bos, ...tokens] : tokens
  } finally {
    await model.dispose()
  }
}

async function buildAction(options: BuildOptions): Promise<void> {
  const modelFile = path.resolve(options.model)
  const corpus = path.resolve(options.corpus)
  const out = path.resolve(options.out)
  const text = corpusText(corpus)
  if (text.trim() === '') throw new UserInputError(`${corpus}: the corpus is empty`)
  const started = performance.now()
  const tokens = await tokenizeCorpus(modelFile, text)
  const cache = buildStaticCache(tokens)
  const bytes = cache.serialize()
  try {
    fs.writeFileSync(out, bytes)
  } catch (error) {
    throw new UserInputError(`${out}: cannot write the cache (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
  const summary = { out, model: modelFile, corpus, tokens: tokens.length, ngrams: cache.size, bytes: bytes.length, ms: Math.round(performance.now() - started) }
  if (options.json) process.stdout.write(`${JSON.stringify(summary)}\n`)
  else
    process.stderr.write(
      `wrote ${out}: ${cache.size} 2-grams from ${tokens.length} tokens of ${path.basename(corpus)} (${bytes.length} bytes, ${summary.ms} ms)\n` +
        `use it with: --methods ngram-cache --set ngramcache.static=${out}\n`
    )
}

export function ngramCacheCommand(): Command {
  const build = new Command('build')
    .description("build a static n-gram cache (llama.cpp's lookup-create format) from a corpus, for the ngram-cache method")
    .requiredOption('--model <gguf>', "the model whose tokenizer the runs use (the target; only its vocabulary is loaded)")
    .requiredOption('--corpus <file>', 'a text file, or a JSONL prompt file')
    .requiredOption('--out <file>', 'the cache file to write')
    .option('--json', 'print a one-line JSON summary on stdout')
    .action(buildAction)
  return new Command('ngram-cache').description("llama.cpp's n-gram cache files for the ngram-cache method").addCommand(build)
}
