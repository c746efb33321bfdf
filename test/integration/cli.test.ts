/**
 * The `speclab` CLI end to end on the shared models: `run --json` fields, `runs` / `show` / `diff`, exit code 2
 * with one clear line for every kind of bad input, and a run killed mid-way is marked interrupted with its
 * finished rows kept.
 */
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { METHOD_IDS } from '../../electron/engine/methods/ids'
import { RunStore } from '../../electron/store/run-store'
import { killCli } from '../helpers/kill-cli'
import { describeWithModels, modelPath } from '../helpers/gguf'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const TARGET = 'stories260K-f32.gguf'
const DRAFT = 'stories260K-q4_0.gguf'
const OTHER_VOCABULARY = 'tinystories-656k-f32.gguf'
const withModels = describeWithModels('test/integration/cli.test.ts', [TARGET, DRAFT, OTHER_VOCABULARY])

const target = modelPath(TARGET)
const draft = modelPath(DRAFT)
const tsx = path.join(root, 'node_modules/.bin/tsx')
const cli = path.join(root, 'electron/cli.ts')

let dir: string
let db: string

/** Thread calibrations go to the test's own cache directory, not the user's. */
const env = () => ({ ...withoutThreadpoolSize(process.env), SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'thread-calibration.json') })

function withoutThreadpoolSize(environment: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { UV_THREADPOOL_SIZE: _, ...rest } = environment
  return rest
}

function speclab(...args: string[]) {
  const result = spawnSync(tsx, [cli, ...args, '--db', db], { cwd: root, encoding: 'utf8', env: env() })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

const smallRun = ['run', '--target', target, '--draft', draft, '--limit', '2', '--max-tokens', '24', '--seed', '3']

withModels('speclab CLI', () => {
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-cli-'))
    db = path.join(dir, 'runs.sqlite')
  })
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it('run --json prints one object with the contract fields', () => {
    const { code, stdout } = speclab(...smallRun, '--methods', 'ar,sd,nlc-draft', '--temperature', '0', '--set', 'nlc.minTokens=1', '--json')
    expect(code).toBe(0)
    const report = JSON.parse(stdout)
    expect(report.runId).toBe(1)
    // The record holds the resolved parameters of the run's methods (defaults filled in), not the raw --set.
    expect(report.config.params).toEqual({ 'sd.parallel': false, 'nlc.minConfidence': 0.6, 'nlc.minTokens': 1 })
    expect(report.config.seed).toBe(3)
    expect(report.config.models.target).toBe(target)
    expect(report.methods.map((m: { method: string }) => m.method)).toEqual(['ar', 'sd', 'nlc-draft'])
    const fields = ['method', 'prompts', 'outputTokens', 'wallMs', 'tokensPerSecond', 'speedup', 'sigma', 'eta', 'acceptanceRate', 'meanAcceptedLength', 'targetCalls', 'draftTokens', 'acceptedTokens', 'gammaTrajectory', 'outputs']
    for (const m of report.methods) for (const f of fields) expect(m).toHaveProperty(f)
    const [ar, sd] = report.methods
    expect(ar.speedup).toBe(1)
    expect(sd.outputs).toEqual(ar.outputs) // greedy sd reproduces greedy ar
    expect(sd.prompts).toBe(2)
    expect(sd.sigma).toBeCloseTo(1 - sd.acceptedTokens / sd.draftTokens, 10)
    expect(sd.eta).toBeCloseTo(sd.targetCalls / sd.outputTokens, 10)
    expect(sd.gammaTrajectory).toHaveLength(2)
    expect(sd.gammaTrajectory[0].every((g: number) => g >= 1 && g <= 5)).toBe(true)
    // The run records libuv's workers, which decide how an OpenMP build's threads wait (libuv-workers.ts); SpecLab
    // leaves UV_THREADPOOL_SIZE as it finds it (unset here: libuv's 4).
    expect(report.machine.native.libuvWorkers).toBe(4)
  })

  it('runs, show and diff read the store', () => {
    expect(speclab(...smallRun, '--methods', 'ar,sd', '--gamma', '3', '--name', 'γ 3 check', '--json').code).toBe(0)
    const runs = JSON.parse(speclab('runs', '--json').stdout)
    expect(runs.map((r: { id: number }) => r.id)).toEqual([2, 1])
    expect(runs.map((r: { name: string | null }) => r.name)).toEqual(['γ 3 check', null])
    expect(speclab('runs').stdout).toMatch(/γ 3 check/)
    expect(runs[0].status).toBe('done')

    const shown = JSON.parse(speclab('show', '2', '--json').stdout)
    expect(shown.config.gamma).toBe(3)
    expect(shown.results).toHaveLength(4)

    const diff = JSON.parse(speclab('diff', '1', '2', '--json').stdout)
    const keys = diff.configDifferences.map((d: { key: string }) => d.key)
    expect(keys).toEqual(expect.arrayContaining(['gamma', 'methods', 'sampling.temperature']))
    const sd = diff.methods.find((m: { method: string }) => m.method === 'sd')
    expect(sd.metrics.tokensPerSecond.delta).toBeCloseTo(sd.metrics.tokensPerSecond.b - sd.metrics.tokensPerSecond.a, 9)
    expect(diff.methods.find((m: { method: string }) => m.method === 'nlc-draft').inB).toBe(false)

    const text = speclab('diff', '1', '2')
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/gamma\s+5\s+3/)
  })

  it.each([
    ['a missing model file', ['run', '--methods', 'ar', '--target', '/no/such/model.gguf'], /model file not found: \/no\/such\/model.gguf/],
    ['a file that is not a GGUF', ['run', '--methods', 'ar', '--target', cli], /not a GGUF model file/],
    ['mismatched vocabularies', ['run', '--target', target, '--draft', modelPath(OTHER_VOCABULARY)], /vocabulary mismatch between .*stories260K-f32.gguf and .*tinystories-656k-f32.gguf: .*; only sd-tli\b.* with another tokenizer/],
    ['an invalid --top-p', ['run', '--target', target, '--top-p', '1.5', '--methods', 'ar'], /'--top-p <p>' argument '1\.5' is invalid\. expected a number above 0 and at most 1$/],
    ['a non-numeric --max-tokens', ['run', '--target', target, '--max-tokens', 'many'], /--max-tokens/],
    ['an unknown method', ['run', '--target', target, '--methods', 'ar,warp-drive'], /unknown method 'warp-drive'/],
    ['a method without its draft', ['run', '--target', target, '--methods', 'sd'], /method 'sd' needs a draft model/],
    ['a duplicate method', ['run', '--target', target, '--methods', 'ar,ar'], /method 'ar' is listed twice/],
    ['a misspelled parameter', ['run', '--target', target, '--draft', draft, '--methods', 'svip', '--set', 'svp.h=0.2'], /svp\.h is not a parameter of svip \(svip takes svip\.parallel, svip\.h, svip\.c, svip\.maxDraft, svip\.warpedEntropy\)/],
    ['a parameter of a method not in the run', ['run', '--target', target, '--draft', draft, '--methods', 'ar,sd', '--set', 'svip.h=0.2'], /svip\.h is not a parameter of ar or sd \(ar takes no parameters; sd takes sd\.parallel\): it belongs to svip, which is not in this run/],
    ['a non-numeric nlc parameter', ['run', '--target', target, '--draft', draft, '--methods', 'nlc-draft', '--set', 'nlc.minConfidence=abc'], /nlc\.minConfidence \(nlc-draft\) must be a number in \[0, 1\], got "abc"/],
    ['an out-of-range nlc parameter', ['run', '--target', target, '--draft', draft, '--methods', 'nlc-draft', '--set', 'nlc.minTokens=1e9'], /nlc\.minTokens \(nlc-draft\) must be an integer in \[0, 1024\], got 1000000000/],
    ['an unknown nlc parameter', ['run', '--target', target, '--draft', draft, '--methods', 'nlc-draft', '--set', 'nlc.typo=1'], /nlc\.typo is not a parameter of nlc-draft \(nlc-draft takes nlc\.minConfidence, nlc\.minTokens\)/],
    ['a missing prompt file', ['run', '--target', target, '--methods', 'ar', '--prompts', '/no/prompts.jsonl'], /prompt file not found/],
    // Read until memory runs out, it once crashed the model process and blamed the model file.
    ['/dev/zero as the prompt file', ['run', '--target', target, '--methods', 'ar', '--prompts', '/dev/zero'], /^speclab: prompt file \/dev\/zero is a character device, not a regular file: save the text to a file and give that$/],
    ['an unknown run id', ['show', '999'], /no run with id 999/],
    // 0 once listed nothing and said "no runs yet" on a database holding runs.
    ['runs --limit 0', ['runs', '--limit', '0'], /^speclab: option '--limit <n>' argument '0' is invalid\. expected an integer from 1 to 1000000$/],
    ['a missing --target', ['run'], /required option '--target/],
    // llama-server peers: a URL where no llama-server answers, or that is not http(s), refused before any prompt.
    ['a --llama-server-url where nothing listens', ['run', '--target', target, '--methods', 'llama-server:ar', '--llama-server-url', 'http://127.0.0.1:9'], /--llama-server-url http:\/\/127\.0\.0\.1:9: no llama-server answers \/props/],
    ['a --llama-server-url that is not http', ['run', '--target', target, '--methods', 'llama-server:ar', '--llama-server-url', 'ftp://gpu-box/'], /llamaserver\.url \(llama-server:ar\) must be an http:\/\/ or https:\/\/ URL/],
    ['--llama-server-url and --set llamaserver.url that disagree', ['run', '--target', target, '--methods', 'llama-server:ar', '--llama-server-url', 'http://a:1', '--set', 'llamaserver.url=http://b:1'], /--llama-server-url and --set llamaserver\.url disagree/],
    // Bad prompt lines, a BOM, a file that is not a model as --target, a huge numeric option: one line, exit 2.
    ...((promptFile: (name: string, content: string) => string) => [
      ['a prompt line that is null', ['run', '--target', target, '--methods', 'ar', '--prompts', promptFile('null.jsonl', '{"text": "ok"}\nnull\n')], /null\.jsonl:2: expected a JSON object with a "turns", "question", "prompt" or "text" field, got null/],
      ['a prompt line that is an array', ['run', '--target', target, '--methods', 'ar', '--prompts', promptFile('array.jsonl', '[1, 2]\n')], /array\.jsonl:1: expected a JSON object .*, got an array/],
      // The BOM is stripped: line 1 is read, and the error is the real one on line 2.
      ['a prompt file with a byte that is not UTF-8', ['run', '--target', target, '--methods', 'ar', '--prompts', promptFile('latin1.jsonl', '{"text": "ok"}\n{"text": "caf\xe9"}\n')], /latin1\.jsonl:2: not UTF-8 at byte offset 28 \(0xe9\); save the prompt file as UTF-8$/],
      ['a prompt file with a UTF-8 BOM', ['run', '--target', target, '--methods', 'ar', '--prompts', promptFile('bom.jsonl', '\uFEFF{"text": "ok"}\n{oops\n')], /bom\.jsonl:2: not valid JSON/],
      ['README.md as --target', ['run', '--target', path.join(root, 'README.md')], /README\.md: not a GGUF model file$/],
      ['README.md as --draft', ['run', '--target', target, '--draft', path.join(root, 'README.md'), '--methods', 'ar,sd'], /README\.md: not a GGUF model file$/],
      ['a huge --limit', ['run', '--target', target, '--methods', 'ar', '--limit', '99999999999999999999'], /'--limit <n>' argument '99999999999999999999' is invalid\. expected an integer from 1 to 1000000$/],
      ['a huge --context-size', ['run', '--target', target, '--methods', 'ar', '--context-size', '9007199254740993'], /--context-size .* expected an integer from 64 to 1048576$/],
      ['a huge suite --seed', ['suite', 'smoke', '--quick', '--seed', '99999999999'], /--seed .* expected an integer from 0 to 4294967295$/]
    ])((name, content) => {
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-cli-prompts-'))
      afterAll(() => fs.rmSync(folder, { recursive: true, force: true }))
      // Written as bytes: a char below 0x100 is that byte (the Latin-1 file keeps its 0xE9, as an editor would write it).
      fs.writeFileSync(path.join(folder, name), Buffer.from(content, content.includes('\xe9') ? 'latin1' : 'utf8'))
      return path.join(folder, name)
    })
  ])('%s exits 2 with one clear line', (_name, args, message) => {
    const { code, stderr } = speclab(...(args as string[]))
    expect(code).toBe(2)
    const lines = stderr.trim().split('\n').filter((l) => l.startsWith('speclab:'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(message as RegExp)
  })

  it('peer-bench refuses a bad arm in one line, exit 2, before loading anything', () => {
    const result = spawnSync(tsx, [cli, 'peer-bench', '--arms', 'ar@1,sd+sd.parallel=perhaps@1'], { cwd: root, encoding: 'utf8' })
    expect(result.status).toBe(2)
    const lines = result.stderr.trim().split('\n').filter((l) => l.startsWith('speclab:'))
    expect(lines).toEqual(["speclab: arm 'sd+sd.parallel=perhaps@1': sd.parallel (sd) must be true or false, got \"perhaps\""])
  })

  it('a run killed mid-way is marked interrupted and keeps its finished rows', async () => {
    const crashDb = path.join(dir, 'crash.sqlite')
    // node --import tsx: no tsx wrapper between us and the CLI (its supervised worker is killCli's business).
    const child = spawn(process.execPath, ['--import', 'tsx', cli, 'run', '--target', target, '--draft', draft, '--methods', 'ar,sd', '--max-tokens', '200', '--db', crashDb], {
      cwd: root,
      stdio: 'ignore'
    })
    // Wait until at least one prompt result is finished, then kill the process without a chance to clean up.
    const deadline = Date.now() + 60_000
    let finished = 0
    while (finished === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200))
      if (!fs.existsSync(crashDb)) continue
      try {
        const peek = RunStore.open(crashDb, { readonly: true })
        finished = peek.getPromptResults(1).filter((r) => r.status === 'done').length
        peek.close()
      } catch {
        // the writer may hold the schema lock while migrating; try again
      }
    }
    await killCli(child)
    expect(finished).toBeGreaterThan(0)

    const store = RunStore.open(crashDb)
    try {
      expect(store.recoveredInterruptedRuns).toBe(1)
      expect(store.listRuns()[0].status).toBe('interrupted')
      const results = store.getPromptResults(1)
      expect(results.filter((r) => r.status === 'done').length).toBeGreaterThanOrEqual(finished)
      expect(results.every((r) => r.status !== 'running')).toBe(true)
    } finally {
      store.close()
    }
  })

  it('SIGTERM cancels a run like Ctrl-C: marked cancelled, finished rows kept, exit 143', async () => {
    const termDb = path.join(dir, 'sigterm.sqlite')
    const child = spawn(process.execPath, ['--import', 'tsx', cli, 'run', '--target', target, '--draft', draft, '--methods', 'sd', '--limit', '4', '--max-tokens', '400', '--db', termDb], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe']
    })
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
    // Wait until a prompt is finished and the next one is early in its decoding (a few steps stored), then SIGTERM.
    const deadline = Date.now() + 60_000
    let finished = 0
    let inFlight = false
    while (!(finished > 0 && inFlight) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
      if (!fs.existsSync(termDb)) continue
      try {
        const peek = RunStore.open(termDb)
        const results = peek.getPromptResults(1)
        finished = results.filter((r) => r.status === 'done').length
        const running = results.find((r) => r.status === 'running')
        const steps = running ? peek.getSteps(running.id).length : 0
        inFlight = steps > 0 && steps <= 30
        peek.close()
      } catch {
        // the writer may hold the schema lock while migrating; try again
      }
    }
    child.kill('SIGTERM')
    expect({ code: await exited, stderr }).toMatchObject({ code: 143 })
    expect(finished).toBeGreaterThan(0)

    const store = RunStore.open(termDb)
    try {
      expect(store.recoveredInterruptedRuns).toBe(0) // the process finished the run itself
      expect(store.listRuns()[0].status).toBe('cancelled')
      const results = store.getPromptResults(1)
      expect(results.filter((r) => r.status === 'done').length).toBeGreaterThanOrEqual(finished)
      expect(results.every((r) => r.status === 'done' || r.status === 'cancelled')).toBe(true)
      // The prompt in flight is cancelled and keeps the output it had so far.
      const cancelled = results.filter((r) => r.status === 'cancelled')
      expect(cancelled).toHaveLength(1)
      expect(cancelled[0].outputText.length).toBeGreaterThan(0)
    } finally {
      store.close()
    }
  })
  it('run prints a random seed on a line of its own and in the report; no bar and no ETA in a log', () => {
    const { code, stdout, stderr } = speclab('run', '--target', target, '--draft', draft, '--methods', 'ar,sd', '--limit', '1', '--max-tokens', '16')
    expect(code).toBe(0)
    const seed = /^seed (\d+)$/m.exec(stderr)?.[1]
    expect(seed).toBeDefined()
    expect(stdout.split('\n')[0]).toMatch(new RegExp(`^run \\d+ \\(done\\) · seed ${seed}$`))
    // stderr is not a terminal here: the progress bar prints nothing at all.
    expect(stderr).not.toMatch(/ETA|cell \d|\u2588|\u2591|\x1b\[/)
    expect(stdout).toMatch(/^method\s+tokens\s+tok\/s \[95% CI\]\s+speedup \[95% CI\]\s+accept\s+mean acc\s+σ\s+η\s+target calls\s+overhead ms\/step$/m)
    expect(stdout).not.toMatch(/\d\.\d{5,}/)
    // ar against sd is a speed comparison: 3 timed repeats by default, medians with intervals, the machine's load.
    expect(stdout).toMatch(/^tok\/s and speedup: median of 3 timed decodes \(1 prompt × 3 repeats\) with a 95 % bootstrap interval/m)
    expect(stdout).toMatch(/^machine: load \d+\.\d\d → \d+\.\d\d on \d+ cores/m)
    expect(stdout).toMatch(/^sd theory: α̂ \d\.\d\d, c \d\.\d{3}, verify \d+\.\d\d, γ 5; tokens\/call/m)
  })

  it('runs lists target file, prompt source and best speedup over ar; --json is unchanged', () => {
    const { code, stdout } = speclab('runs')
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^id\s+created\s+status\s+target\s+prompts\s+methods\s+results\s+best vs ar\s+suite\s+name$/)
    const run1 = lines.find((l) => /^1\s/.test(l))!
    expect(run1).toMatch(/\sdone\s+stories260K-f32\.gguf\s+stories\s+ar,sd,nlc-draft\s+6\s+\d+\.\d\d× (sd|nlc-draft)\s+–$/)
    const json = JSON.parse(speclab('runs', '--json').stdout)
    // The contract's keys stay; name and notes (run labels), the machine's load and origin (where an imported run was
    // first recorded; null otherwise) were added beside them.
    expect(Object.keys(json[0]).sort()).toEqual(['createdAt', 'error', 'finishedAt', 'id', 'machine', 'methods', 'name', 'notes', 'origin', 'promptCount', 'status', 'suite'])
  })

  it('diff prints one settings table and one metrics table with human labels', () => {
    const { code, stdout } = speclab('diff', '1', '2')
    expect(code).toBe(0)
    expect(stdout).toMatch(/^run 1 vs run 2: \d+ settings differ$/m)
    expect(stdout.match(/^method\s+metric\s+run 1\s+run 2\s+Δ\s+change\s+Δ of medians \[95% CI\]$/gm)).toHaveLength(1)
    expect(stdout).toMatch(/^sd\s+tokens\/s\s/m)
    expect(stdout).toMatch(/^nlc-draft \(run 1 only\)\s/m)
    for (const label of ['acceptance', 'mean accepted length', 'σ', 'η', 'target calls']) expect(stdout).toContain(label)
    expect(stdout).not.toMatch(/tokensPerSecond|acceptanceRate|meanAcceptedLength|\d\.\d{5,}/)
    expect(stdout.trim().split('\n').length).toBeLessThan(45)
  })

  it('run --help aligns the method list to the longest id', () => {
    const { code, stdout } = speclab('run', '--help')
    expect(code).toBe(0)
    const lines = stdout.split('\n')
    // The longest id is followed by exactly two spaces; every summary and its facts line start in that column.
    const longest = [...METHOD_IDS].sort((a, b) => b.length - a.length)[0]!
    const column = 2 + longest.length + 2
    const widest = lines.find((l) => l.startsWith(`  ${longest}  `))!
    expect(widest[column - 1]).toBe(' ')
    expect(widest[column]).not.toBe(' ')
    const summary = lines.find((l) => l.startsWith('  adaptive-cache-fsm '))!
    const facts = lines[lines.indexOf(summary) + 1]
    expect(summary.indexOf('on-the-fly')).toBe(column)
    expect(facts.search(/\S/)).toBe(column)
  })

  it('a prompt the tokenizer cannot encode is one line, exit 2 — not a llama.cpp abort', () => {
    // tinystories-656k is SentencePiece without <0xNN> byte tokens: llama.cpp throws std::out_of_range (an abort) on "~".
    const prompts = path.join(dir, 'tilde.jsonl')
    fs.writeFileSync(prompts, '{"text":"The cat said ~hello~ to the dog."}\n')
    const { code, stderr } = speclab('run', '--target', modelPath(OTHER_VOCABULARY), '--methods', 'ar', '--prompts', prompts, '--max-tokens', '4', '--seed', '1')
    expect(code).toBe(2)
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/tinystories-656k-f32\.gguf: its tokenizer has no token for "~" and no byte fallback/)])
  })

  it('models calibrate measures each model per phase, then finds it cached; run records it; a bad mode is one line', () => {
    const calibrate = (...args: string[]) => {
      const result = spawnSync(tsx, [cli, 'models', 'calibrate', target, draft, ...args], { cwd: root, encoding: 'utf8', env: env() })
      return { code: result.status, stdout: result.stdout, stderr: result.stderr }
    }
    const measured = calibrate()
    expect(measured.code).toBe(0)
    expect(measured.stdout).toMatch(/^role\s+file\s+source\s+one token, per thread count\s+batch of 6, per thread count\s+chosen token\/batch$/m)
    expect(measured.stdout).toMatch(/^target\s+stories260K-f32\.gguf\s+measured now\s+1\*?: [\d.]+.* ms\s+1\*?: [\d.]+.* ms\s+\d+\/\d+$/m)
    expect(measured.stdout).toMatch(/^draft\s+stories260K-q4_0\.gguf\s+measured now\s+.* ms\s+–\s+\d+\/\d+$/m)
    expect(measured.stdout).toMatch(/mean ms per evaluation at 128 tokens of context, \d+ interleaved rounds/)
    const cached = JSON.parse(calibrate('--calibration', 'auto', '--json').stdout)
    expect(cached.calibrations.map((c: { role: string; source: string }) => `${c.role} ${c.source}`)).toEqual(['target cached', 'draft cached'])
    expect(cached.cores).toBe(os.cpus().length)

    const run = JSON.parse(speclab(...smallRun, '--methods', 'ar,sd', '--temperature', '0', '--json').stdout)
    expect(run.config.threadCalibration.map((c: { source: string }) => c.source)).toEqual(['cached', 'cached'])
    expect(run.config.targetThreads).toBe(cached.calibrations[0].chosen.threads)
    expect(run.config.draftThreads).toBe(cached.calibrations[1].chosen.threads)
    const given = JSON.parse(speclab(...smallRun, '--methods', 'ar', '--threads', '1', '--json').stdout)
    expect(given.config.threadCalibration).toBeNull()
    expect(speclab(...smallRun, '--methods', 'ar').stdout).toMatch(/^threads: target \d+ per token, \d+ per batch; draft \d+ — measured at an earlier load \(cached\)$/m)

    const bad = speclab(...smallRun, '--methods', 'ar', '--calibration', 'sometimes')
    expect(bad.code).toBe(2)
    expect(bad.stderr.trim().split('\n')).toEqual([expect.stringMatching(/--calibration.*'sometimes' is invalid.*auto, refresh, off/)])
  })

  it('models inspect says what a load would take and whether the drafts share the vocabulary, without loading', () => {
    // No database: inspect reads model headers only.
    const inspect = (...args: string[]) => {
      const result = spawnSync(tsx, [cli, 'models', 'inspect', ...args], { cwd: root, encoding: 'utf8' })
      return { code: result.status, stdout: result.stdout, stderr: result.stderr }
    }
    const other = modelPath(OTHER_VOCABULARY)
    const { code, stdout } = inspect(target, other, '--context-size', '256')
    expect(code).toBe(0)
    expect(stdout).toMatch(/^role\s+file\s+architecture\s+quant\s+vocab\s+layers\s+context\s+template$/m)
    expect(stdout).toMatch(/^target\s+stories260K-f32\.gguf\s+llama\s+F32\s+512\s/m)
    expect(stdout).toMatch(/^draft: vocabulary differs — /m)
    expect(stdout).toMatch(/^target\s+stories260K-f32\.gguf\s+[\d.]+ [KMG]B\s+[\d.]+ [KMG]B\s+256\s+\d+\/\d+\s/m)
    expect(stdout).toMatch(/Loading needs about [\d.]+ MB of RAM \(weights .* at 256 tokens × 4 sequences\)/)
    expect(stdout).toMatch(/^fits: a load with these settings would be accepted$/m)
    const json = JSON.parse(inspect(target, '--json').stdout)
    expect(json).toMatchObject({ files: [{ role: 'target', vocabularySize: 512 }], vocabulary: [], fits: true, memory: { sequences: 4 } })
    const bad = inspect(path.join(dir, 'missing.gguf'))
    expect(bad.code).toBe(2)
    expect(bad.stderr.trim().split('\n')).toHaveLength(1)
  })
})
