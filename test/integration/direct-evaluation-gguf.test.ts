/**
 * The direct evaluation path (electron/engine/model/direct-evaluation.ts): a session alone on its context evaluates
 * through node-llama-cpp's addon instead of `controlledEvaluate`. It must return exactly the logits
 * `controlledEvaluate` returns (top-k and whole vocabulary, single tokens and batches), leave the sequence's state as
 * node-llama-cpp keeps it (so erase and later evaluations agree), step aside for evaluations issued together (they
 * stay one batched decode), and never interleave with a node-llama-cpp batch on the same context. node-llama-cpp
 * 3.22.1's internals are pinned: the first test fails when an upgrade removes them.
 *
 * With SpecLab's CPU build (its addon patch, addon-patch.ts) an evaluation alone in the process runs on the JS
 * thread: the same logits (the comparisons below then compare the JS thread with node-llama-cpp's worker path),
 * evaluations that could overlap and long ones on workers, a failed decode rejected as before, and an idle engine
 * using no CPU afterwards (libgomp's spinning bounded, llama-cpp-model.ts).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { ControlledEvaluateInputItem, Token } from 'node-llama-cpp'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { EVENT_LOOP_TURN_MS, JS_THREAD_MAX_TOKENS } from '../../electron/engine/model/direct-evaluation'
import { llamaBackendChoice, loadLlamaModel, nativeBackend, type LlamaCppModel } from '../../electron/engine/model/llama-cpp-model'
import { cpuBuildStatus } from '../../electron/engine/model/native-cpu-build'
import type { Distribution } from '../../electron/engine/sampling/distribution'
import { warp, type WarpConfig } from '../../electron/engine/sampling/warp'
import { describeWithModels, modelPath } from '../helpers/gguf'
import { writePaddedGguf } from '../helpers/gguf-pad'

const TARGET = 'family/stories-target5M-f32.gguf'
const DRAFT = 'stories260K-f32.gguf'
const withModels = describeWithModels('test/integration/direct-evaluation-gguf.test.ts', [TARGET, DRAFT])
const GREEDY_TOP64: WarpConfig = { temperature: 0, topK: 64, topP: 1 }
const WHOLE_VOCABULARY: WarpConfig = { temperature: 1, topK: 0, topP: 1 }

withModels('direct evaluation through the addon = controlledEvaluate', () => {
  let model: LlamaCppModel
  let prompt: number[]
  let batch: number[]

  beforeAll(async () => {
    model = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 4 })
    prompt = [model.info.bos!, ...model.tokenize('Once upon a time, there was a little dog named Max. He liked to')]
    batch = model.tokenize(' play in the park with his')
  })

  afterAll(async () => {
    await model?.dispose()
  })

  /** The same evaluations through node-llama-cpp's own path, on a raw sequence, with the session's request. */
  async function throughControlledEvaluate(warp: WarpConfig): Promise<{ ids: number[]; logits: number[] }[]> {
    const sequence = model.context.getSequence()
    const generateNext =
      warp.topK > 0
        ? { logits: { filter: { tokens: [] as Token[], includeTop: warp.topK } }, options: { topK: warp.topK, temperature: 1, topP: 1, minP: 0, seed: 0 } }
        : { logits: true as const }
    try {
      const ask = (tokens: number[], from: number): ControlledEvaluateInputItem[] => tokens.map((t, i) => (i >= from ? [t as Token, { generateNext }] : (t as Token)))
      const first = await sequence.controlledEvaluate(ask(prompt, prompt.length - 1))
      const rest = await sequence.controlledEvaluate(ask(batch, 0))
      return [first[prompt.length - 1]!, ...rest].map((o) => ({ ids: [...o!.next.logits!.keys()], logits: [...o!.next.logits!.values()] }))
    } finally {
      sequence.dispose()
    }
  }

  it('node-llama-cpp 3.22.1 has the internals the path uses', () => {
    expect(model.direct, 'node-llama-cpp changed its internals: review direct-evaluation.ts').not.toBeNull()
  })

  it('SpecLab’s own CPU build, and only it, evaluates on the JS thread and reads top-k in one pass; runs record both', async () => {
    const status = cpuBuildStatus()
    const patchedBuild = llamaBackendChoice()?.binary === 'cpu-openmp-build' && status.installed === 'speclab' && status.key.addonPatch > 0
    const jsThreadOff = process.env.SPECLAB_JS_THREAD_EVALUATION === '0'
    const build = `binary ${llamaBackendChoice()?.binary}, build ${status.installed ?? (status.stale ? 'stale' : 'none')}`
    expect(model.direct!.jsThread, build).toBe(patchedBuild && !jsThreadOff)
    // The top-k read came with the addon patch's revision 2.
    expect(model.direct!.topLogitsRead, build).toBe(patchedBuild && status.key.addonPatch >= 2)
    const native = await nativeBackend()
    expect([native.jsThreadEvaluation, native.topLogitsRead]).toEqual([model.direct!.jsThread, model.direct!.topLogitsRead])
  })

  it.each([
    ['top-64, greedy', GREEDY_TOP64],
    ['whole vocabulary', WHOLE_VOCABULARY]
  ] as const)('%s: the same ids and logits per position, single token and batch', async (_label, warp_) => {
    const reference = await throughControlledEvaluate(warp_)
    const before = model.direct!.evaluations
    const session = await model.createSession(warp_)
    try {
      const beforeJsThread = model.direct!.jsThreadEvaluations
      const ours = [...(await session.append(prompt, prompt.length - 1)), ...(await session.append(batch, 0))]
      expect(model.direct!.evaluations - before, 'both evaluations took the direct path').toBe(2)
      expect(model.direct!.jsThreadEvaluations - beforeJsThread, 'alone in the process: on the JS thread where the binary can').toBe(model.direct!.jsThread ? 2 : 0)
      // The session warps what it received exactly as it would have warped controlledEvaluate's logits.
      expectSame(ours, reference.map(({ ids, logits }) => warp(Int32Array.from(ids), Float64Array.from(logits), warp_)))
    } finally {
      await session.dispose()
    }
  })

  it('keeps the sequence as node-llama-cpp does: erase, then evaluate again, gives the same logits', async () => {
    const session = await model.createSession(GREEDY_TOP64)
    const sequence = model.context.getSequence()
    try {
      await session.append(prompt, prompt.length - 1)
      const first = await session.append(batch, 0)
      const llamaSequence = (session as unknown as { sequence: { contextTokens: readonly number[]; nextTokenIndex: number } }).sequence
      expect([...llamaSequence.contextTokens]).toEqual([...prompt, ...batch])
      expect(llamaSequence.nextTokenIndex).toBe(prompt.length + batch.length)
      await session.truncate(prompt.length)
      expect(llamaSequence.nextTokenIndex).toBe(prompt.length)
      const again = await session.append(batch, 0)
      expectSame(again, first)
    } finally {
      sequence.dispose()
      await session.dispose()
    }
  })

  it('an empty append returns nothing and changes nothing, as through controlledEvaluate', async () => {
    const session = await model.createSession(GREEDY_TOP64)
    try {
      await session.append(prompt, prompt.length - 1)
      expect(await session.append([], 0)).toEqual([])
      expect(session.tokens).toEqual(prompt)
    } finally {
      await session.dispose()
    }
  })

  it('evaluations issued together skip the path and stay one batch; their results are the lone ones', async () => {
    const a = await model.createSession(GREEDY_TOP64)
    const b = await model.createSession(GREEDY_TOP64)
    try {
      const alone = await a.append(prompt, prompt.length - 1)
      await a.truncate(0)
      const before = model.direct!.evaluations
      const [fromA, fromB] = await Promise.all([a.append(prompt, prompt.length - 1), b.append(prompt, prompt.length - 1)])
      expect(model.direct!.evaluations, 'concurrent evaluations went through node-llama-cpp').toBe(before)
      // A batch of two sequences is other arithmetic than one sequence alone (and other KV cells): equal to rounding.
      expectClose(fromA, alone)
      expectClose(fromB, alone)
    } finally {
      await a.dispose()
      await b.dispose()
    }
  })

  it('evaluations of two models issued together go to workers, so that they overlap; each is still direct and alone on its context', async () => {
    const other = await loadLlamaModel(modelPath(TARGET), { threads: 1, contextSize: 256, sequences: 1 })
    const a = await model.createSession(GREEDY_TOP64)
    const b = await other.createSession(GREEDY_TOP64)
    try {
      const alone = await a.append(prompt, prompt.length - 1)
      await a.truncate(0)
      const before = [model.direct!.evaluations, model.direct!.jsThreadEvaluations, other.direct!.evaluations, other.direct!.jsThreadEvaluations]
      const [fromA, fromB] = await Promise.all([a.append(prompt, prompt.length - 1), b.append(prompt, prompt.length - 1)])
      const after = [model.direct!.evaluations, model.direct!.jsThreadEvaluations, other.direct!.evaluations, other.direct!.jsThreadEvaluations]
      expect(after.map((count, i) => count - before[i]!)).toEqual([1, 0, 1, 0])
      expectSame(fromA, alone)
      expectSame(fromB, alone)
    } finally {
      await a.dispose()
      await b.dispose()
      await other.dispose()
    }
  })

  it('SpecLab’s top-k read (its CPU build): the k highest raw logits, ties to the lower id, on a worker and on the JS thread alike', async () => {
    const status = cpuBuildStatus()
    const readBuild = llamaBackendChoice()?.binary === 'cpu-openmp-build' && status.installed === 'speclab' && status.key.addonPatch >= 2
    expect(model.direct!.topLogitsRead, `binary ${llamaBackendChoice()?.binary}, addon patch ${status.key.addonPatch}`).toBe(readBuild)
    if (!readBuild) return
    type Read = (batchLogitIndex: number, k: number) => Promise<number[] | null>
    const addon = (model.context as unknown as { _ctx: { topLogits: Read; topLogitsNow: Read } })._ctx
    const sequence = model.context.getSequence()
    try {
      // Every logit of the prompt's last three positions through node-llama-cpp's own path; the context keeps that
      // batch's logits until its next decode, so the reads below see the same positions (batch indexes = positions).
      const last = [prompt.length - 3, prompt.length - 2, prompt.length - 1]
      const output = await sequence.controlledEvaluate(prompt.map((t, i) => (i >= last[0]! ? [t as Token, { generateNext: { logits: true as const } }] : (t as Token))))
      for (const position of last) {
        const all = [...output[position]!.next.logits!.entries()] as [number, number][]
        const expected = (k: number) => [...all].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k).flat()
        const [onWorker, onJsThread] = [await addon.topLogits(position, 64), await addon.topLogitsNow(position, 64)]
        expect(onWorker).toEqual(expected(64).map(Math.fround))
        expect(onJsThread).toEqual(onWorker)
        // k beyond the vocabulary: every logit, sorted.
        expect(await addon.topLogitsNow(position, all.length + 100)).toEqual(expected(all.length).map(Math.fround))
      }
      // A position without logits (not requested in the batch) reads as null, as sampleToken reads as none.
      expect(await addon.topLogitsNow(0, 64)).toBeNull()
    } finally {
      sequence.dispose()
    }

    // Exact ties and a vocabulary that is no multiple of 16 (the read compares 16 logits at a time, the rest one by
    // one): the 260K draft padded to 1,003 entries whose first padded rows copy real tokens' rows exactly, so those
    // ids tie their real tokens' logits and must follow them.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-top-logits-'))
    const padded = writePaddedGguf(modelPath(DRAFT), path.join(dir, 'draft-1003.gguf'), { size: 1003, aliases: ['▁the', '.', '▁was', '▁and', '▁a', ','], aliasNoise: 0 })
    const draft = await loadLlamaModel(padded.file, { threads: 1, contextSize: 128, sequences: 1 })
    const draftSequence = draft.context.getSequence()
    try {
      const draftPrompt = [draft.info.bos!, ...draft.tokenize('Once upon a time, there was a little dog named Max. He liked to play in the park with')]
      const output = await draftSequence.controlledEvaluate(draftPrompt.map((t) => [t as Token, { generateNext: { logits: true as const } }]))
      const draftAddon = (draft.context as unknown as { _ctx: { topLogitsNow: Read } })._ctx
      let ties = 0
      for (const [position, step] of output.entries()) {
        const all = ([...step!.next.logits!.entries()] as [number, number][]).sort((a, b) => b[1] - a[1] || a[0] - b[0])
        expect(all.length).toBe(1003)
        const top = all.slice(0, 64)
        ties += top.filter(([id, logit], i) => i > 0 && logit === top[i - 1]![1] && padded.aliasOf.get(id) === top[i - 1]![0]).length
        expect(await draftAddon.topLogitsNow(position, 64), `position ${position}`).toEqual(top.flat().map(Math.fround))
      }
      expect(ties, 'padded ids tying their real tokens among the top 64').toBeGreaterThan(draftPrompt.length)
    } finally {
      draftSequence.dispose()
      await draft.dispose()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it(`an evaluation of more than ${JS_THREAD_MAX_TOKENS} tokens goes to a worker, with the same logits`, async () => {
    const long = [model.info.bos!, ...model.tokenize(' and then they ran home.'.repeat(8))].slice(0, JS_THREAD_MAX_TOKENS + 8)
    expect(long.length).toBeGreaterThan(JS_THREAD_MAX_TOKENS)
    const session = await model.createSession(GREEDY_TOP64)
    try {
      const inParts = [...(await session.append(long.slice(0, JS_THREAD_MAX_TOKENS), JS_THREAD_MAX_TOKENS - 4)), ...(await session.append(long.slice(JS_THREAD_MAX_TOKENS), 0))]
      await session.truncate(0)
      const before = [model.direct!.evaluations, model.direct!.jsThreadEvaluations]
      const whole = await session.append(long, JS_THREAD_MAX_TOKENS - 4)
      expect([model.direct!.evaluations - before[0]!, model.direct!.jsThreadEvaluations - before[1]!]).toEqual([1, 0])
      // One batch of 40 against 32 + 8: the same positions, other batch arithmetic.
      expectClose(whole, inParts)
    } finally {
      await session.dispose()
    }
  })

  it('the event loop keeps turning while evaluations run on the JS thread one after the other', async () => {
    const session = await model.createSession(GREEDY_TOP64)
    let turns = 0
    const timer = setInterval(() => turns++, 1)
    try {
      const started = performance.now()
      let [next] = await session.append(prompt, prompt.length - 1)
      for (let i = 0; i < 80; i++) [next] = await session.append([next!.ids[0]!], 0)
      const elapsed = performance.now() - started
      // A timer fires only when the loop turns: about once per EVENT_LOOP_TURN_MS (never, were the decode all microtasks).
      expect(turns, `${elapsed.toFixed(0)} ms of evaluations`).toBeGreaterThanOrEqual(Math.min(5, Math.floor(elapsed / (4 * EVENT_LOOP_TURN_MS))))
      expect(turns).toBeGreaterThan(0)
    } finally {
      clearInterval(timer)
      await session.dispose()
    }
  })

  it('a decode that fails on the JS thread rejects as on a worker, and the context goes on working', async () => {
    if (!model.direct!.jsThread) return // the prebuilt binary has no calls on the JS thread
    const addon = (model.context as unknown as { _ctx: { initBatch(n: number): void; addToBatch(s: number, i: number, t: Uint32Array, l: Uint32Array): Uint32Array; decodeBatchNow(): Promise<void> } })._ctx
    const sequence = model.context.getSequence()
    try {
      const id = (sequence as unknown as { _sequenceId: number })._sequenceId
      // A token id beyond the vocabulary: llama.cpp refuses the batch (llama_decode returns -1).
      addon.initBatch(1)
      addon.addToBatch(id, 0, Uint32Array.from([model.info.vocabularySize + 5]), Uint32Array.from([0]))
      await expect(addon.decodeBatchNow()).rejects.toThrow(/Eval has failed|KV slot/)
    } finally {
      sequence.dispose()
    }
    const session = await model.createSession(GREEDY_TOP64)
    try {
      expect(await session.append(prompt, prompt.length - 1)).toHaveLength(1)
    } finally {
      await session.dispose()
    }
  })

  it('an engine that evaluated on the JS thread with two OpenMP threads uses no CPU once idle', () => {
    // A process of its own, with SpecLab's OpenMP defaults as a user gets them (not this process's environment).
    const env = { ...process.env }
    delete env.OMP_WAIT_POLICY
    delete env.GOMP_SPINCOUNT
    const root = path.resolve(__dirname, '../..')
    const result = spawnSync(path.join(root, 'node_modules/.bin/tsx'), [path.join(root, 'test/fixtures/idle-after-evaluations.ts'), modelPath(TARGET), '2'], {
      cwd: root,
      env,
      encoding: 'utf8'
    })
    expect(result.status, result.stderr).toBe(0)
    const { jsThreadEvaluations, idleCpuMs } = JSON.parse(result.stdout.trim().split('\n').pop()!) as { jsThreadEvaluations: number; idleCpuMs: number }
    expect(jsThreadEvaluations).toBe(model.direct!.jsThread ? 25 : 0)
    // One second idle: a thread spinning without end would use about 1,000 ms.
    expect(idleCpuMs).toBeLessThan(150)
  })

  it('never interleaves with a node-llama-cpp batch on the same context', async () => {
    const reference = await throughControlledEvaluate(GREEDY_TOP64)
    const session = await model.createSession(GREEDY_TOP64)
    const lone = await session.append(prompt, prompt.length - 1)
    await session.truncate(0)
    try {
      for (let round = 0; round < 5; round++) {
        // node-llama-cpp's evaluation (not counted as SpecLab's) and a direct one race for the context.
        const [raw, ours] = await Promise.all([throughControlledEvaluate(GREEDY_TOP64), session.append(prompt, prompt.length - 1)])
        // Interleaved batches fail llama_decode or give other logits; the cells a sequence lands in may differ by rounding.
        raw.forEach((r, i) => {
          expect(r.ids).toEqual(reference[i]!.ids)
          r.logits.forEach((l, j) => expect(l).toBeCloseTo(reference[i]!.logits[j]!, 4))
        })
        expectClose(ours, lone)
        await session.truncate(0)
      }
    } finally {
      await session.dispose()
    }
  })
})

function expectSame(actual: Distribution[], expected: Distribution[]): void {
  expect(actual).toHaveLength(expected.length)
  actual.forEach((d, i) => {
    expect([...d.ids], `position ${i}`).toEqual([...expected[i]!.ids])
    expect([...d.probs], `position ${i}`).toEqual([...expected[i]!.probs])
  })
}

function expectClose(actual: Distribution[], expected: Distribution[]): void {
  expect(actual).toHaveLength(expected.length)
  actual.forEach((d, i) => {
    expect([...d.ids], `position ${i}`).toEqual([...expected[i]!.ids])
    d.probs.forEach((p, j) => expect(p, `position ${i}, entry ${j}`).toBeCloseTo(expected[i]!.probs[j]!, 5))
  })
}
