/**
 * End to end through browser mode (`electron/serve.ts`): the same engine host and renderer the Electron app uses,
 * driven by Playwright (playwright-core) in Debian's Chromium. Adds the shared trio by path, chats with `sd`
 * (coloured tokens, live statistics, the conversation reopens), runs the Workbench (progress, results, charts,
 * cancel), browses, filters, exports, deletes and diffs runs, and checks the WebSocket's token and Origin guard.
 * Screenshots of every screen go to test-results/e2e/.
 *
 * Needs: a built renderer (`npm test` builds first), Chromium (`.ci/run` installs Debian's; override with
 * SPECLAB_CHROMIUM) and the shared models (SPECLAB_MODELS, default ../shared/models).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Locator, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findLlamaServer } from '../../electron/engine/peers/llama-server-binary'
import WebSocket from 'ws'
import { contrastProblems, LAPTOP_AND_DESKTOP, layoutProblems } from '../helpers/layout'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const models = process.env.SPECLAB_MODELS ?? path.resolve(root, '../shared/models')
const chromiumPath = process.env.SPECLAB_CHROMIUM ?? '/usr/bin/chromium'
const shots = path.join(root, 'test-results/e2e')
/** The largest shared model: its load lasts long enough to be interrupted. */
const bigModel = path.join(models, 'family/stories-target5M-inflated-78M-f16.gguf')
const trio = {
  target: path.join(models, 'family/stories-target5M-f32.gguf'),
  mid: path.join(models, 'family/stories-mid1M-f32.gguf'),
  draft: path.join(models, 'stories260K-f32.gguf'),
  foreign: path.join(models, 'tinystories-656k-q8_0.gguf')
}
const missing = [
  ...[...Object.values(trio), bigModel].filter((f) => !fs.existsSync(f)),
  ...(fs.existsSync(chromiumPath) ? [] : [chromiumPath]),
  ...(fs.existsSync(path.join(root, 'out/renderer/index.html')) ? [] : ['out/renderer (run `npm run build`)'])
]
if (missing.length > 0) console.warn(`\n!!! browser-mode e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

const STEP_TIMEOUT = 60_000
/** The size the flows run at; shot() also checks and photographs every screen at LAPTOP_AND_DESKTOP sizes. */
const VIEWPORT = { width: 1440, height: 900 }

let dir: string
let server: ChildProcess
let url: URL
let browser: Browser
let page: Page
const pageErrors: string[] = []

/** Polls until the locator's text matches. */
async function waitForText(locator: Locator, pattern: RegExp, timeout = STEP_TIMEOUT): Promise<string> {
  const deadline = Date.now() + timeout
  let last = ''
  while (Date.now() < deadline) {
    last = (await locator.first().textContent().catch(() => null)) ?? ''
    if (pattern.test(last)) return last
    await page.waitForTimeout(50)
  }
  throw new Error(`timed out waiting for ${pattern} (last text: ${JSON.stringify(last.slice(0, 300))})`)
}

async function waitForAttribute(locator: Locator, name: string, pattern: RegExp, timeout = STEP_TIMEOUT): Promise<string> {
  const deadline = Date.now() + timeout
  let last: string | null = null
  while (Date.now() < deadline) {
    last = await locator.getAttribute(name).catch(() => null)
    if (last !== null && pattern.test(last)) return last
    await page.waitForTimeout(20)
  }
  throw new Error(`timed out waiting for ${name}=${pattern} (last: ${last})`)
}

/** Clicks Run and waits for that job (a new job id) to finish; returns its final status. */
async function runWorkbench(): Promise<string | null> {
  const progress = page.getByTestId('wb-progress')
  const before = await progress.getAttribute('data-job')
  await page.getByTestId('wb-run').click()
  await page.waitForFunction(
    (previous) => {
      const panel = document.querySelector('[data-testid="wb-progress"]')
      return !!panel && panel.getAttribute('data-job') !== previous && panel.getAttribute('data-phase') === 'finished'
    },
    before,
    { timeout: STEP_TIMEOUT }
  )
  return progress.getAttribute('data-status')
}

/**
 * The screen as it stands, at laptop and desktop sizes: no control covered, nothing scrolling sideways (test/helpers/
 * layout.ts), and a screenshot of the whole screen at each size — the app scrolls inside <main>, so the page is let
 * grow for the shot. Problems are collected for the last test, which lists them all.
 */
async function shot(name: string): Promise<void> {
  const problems: string[] = []
  for (const size of LAPTOP_AND_DESKTOP) {
    await page.setViewportSize(size)
    await page.waitForTimeout(50) // let charts and layout settle at the new size
    for (const problem of await layoutProblems(page)) problems.push(`${name} at ${size.width}×${size.height}: ${problem}`)
    const style = await page.addStyleTag({ content: 'html, body, #app, .shell { height: auto !important } .content { overflow: visible !important }' })
    await page.screenshot({ path: path.join(shots, `${name}-${size.width}x${size.height}.png`), fullPage: true })
    await style.evaluate((node) => (node as HTMLElement).remove())
  }
  await page.setViewportSize(VIEWPORT)
  layoutFailures.push(...problems)
}

/** Every layout problem any screen showed; the last test lists them all at once. */
const layoutFailures: string[] = []

function startServer(): Promise<URL> {
  server = spawn(
    path.join(root, 'node_modules/.bin/tsx'),
    ['electron/serve.ts', '--port', '0', '--db', path.join(dir, 'runs.sqlite'), '--download-dir', path.join(dir, 'downloads')],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SPECLAB_DB: '', SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'thread-calibration.json') } }
  )
  let stderr = ''
  server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) => {
    let stdout = ''
    const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), 30_000)
    server.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /SpecLab browser mode: (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve(new URL(match[1]))
      }
    })
    server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)))
  })
}

/** Resolves with the HTTP status of a refused upgrade, or 101 when the socket opened. */
function tryWebSocket(target: string, origin: string): Promise<{ status: number; socket: WebSocket | null }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(target, { origin })
    ws.once('open', () => resolve({ status: 101, socket: ws }))
    ws.once('unexpected-response', (_request, response) => {
      resolve({ status: response.statusCode ?? 0, socket: null })
      response.resume()
    })
    ws.once('error', (error) => reject(error))
  })
}

describe.skipIf(missing.length > 0)('browser mode (Playwright + Chromium)', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-'))
    fs.mkdirSync(shots, { recursive: true })
    url = await startServer()
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update']
    })
    const context = await browser.newContext({ viewport: VIEWPORT, acceptDownloads: true })
    page = await context.newPage()
    page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`)
    })
    page.setDefaultTimeout(STEP_TIMEOUT)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve))
      server.kill('SIGTERM')
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))])
      if (server.exitCode === null) server.kill('SIGKILL')
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('guards the api: WebSocket needs the token and our Origin; HTTP needs our Host', async () => {
    const origin = `http://127.0.0.1:${url.port}`
    const token = url.searchParams.get('token')!
    const api = `ws://127.0.0.1:${url.port}/api`
    expect((await tryWebSocket(api, origin)).status).toBe(401)
    expect((await tryWebSocket(`${api}?token=wrong-${token}`, origin)).status).toBe(401)
    expect((await tryWebSocket(`${api}?token=${token}`, 'http://evil.example')).status).toBe(403)
    expect((await tryWebSocket(`${api}?token=${token}`, `http://127.0.0.1:${Number(url.port) + 1}`)).status).toBe(403)

    const { status, socket } = await tryWebSocket(`${api}?token=${token}`, origin)
    expect(status).toBe(101)
    const replies = new Map<number, { ok: boolean; error?: string; result?: unknown }>()
    socket!.on('message', (data) => {
      const message = JSON.parse(data.toString())
      if (message.kind === 'response') replies.set(message.id, message)
    })
    socket!.send(JSON.stringify({ kind: 'request', id: 1, channel: 'app:info', payload: {} }))
    socket!.send(JSON.stringify({ kind: 'request', id: 2, channel: 'app:open-database', payload: { path: '/tmp/x.sqlite' } }))
    socket!.send(JSON.stringify({ kind: 'request', id: 3, channel: 'models:add', payload: { path: 42 } }))
    socket!.send(JSON.stringify({ kind: 'request', id: 4, channel: 'no:such', payload: {} }))
    await new Promise<void>((resolve) => {
      const check = () => (replies.size === 4 ? resolve() : setTimeout(check, 20))
      check()
    })
    socket!.close()
    expect(replies.get(1)).toMatchObject({ ok: true, result: { mode: 'browser' } })
    expect(replies.get(2)).toMatchObject({ ok: false, error: expect.stringMatching(/not available/) })
    expect(replies.get(3)).toMatchObject({ ok: false, error: expect.stringMatching(/Invalid request for models:add/) })
    expect(replies.get(4)).toMatchObject({ ok: false, error: expect.stringMatching(/Unknown api channel/) })

    const hostStatus = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: Number(url.port), path: '/', headers: { Host: 'evil.example' } }, (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        })
        .once('error', reject)
    })
    expect(hostStatus).toBe(421)
  })

  it('Models: a bad path is a visible error; the shared trio is added by path, checked and loaded', async () => {
    await page.goto(url.toString())
    await page.getByTestId('nav-models').click()
    // The token left the address bar (kept in localStorage for this origin).
    expect(page.url()).not.toContain('token=')
    await shot('models-empty')

    await page.getByTestId('model-path').fill(path.join(models, 'no-such-model.gguf'))
    await page.getByTestId('model-add').click()
    await waitForText(page.getByTestId('model-error'), /model file not found/)

    await page.getByTestId('model-path').fill(path.join(root, 'README.md'))
    await page.getByTestId('model-add').click()
    await waitForText(page.getByTestId('model-error'), /\.gguf/)

    for (const file of [trio.target, trio.mid, trio.draft, trio.foreign]) {
      await page.getByTestId('model-path').fill(file)
      await page.getByTestId('model-add').click()
      const name = new RegExp(path.basename(file).replace(/\./g, '\\.'))
      await waitForText(page.getByTestId('model-added'), name)
      await waitForText(page.getByTestId('model-table'), name)
    }
    expect(await page.getByTestId('model-table').locator('tbody tr').count()).toBe(4)

    // Dropping files: browser mode cannot learn where they are stored, says so in one sentence and uploads nothing.
    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer()
      transfer.items.add(new File(['x'], 'model.gguf'))
      transfer.items.add(new File(['x'], 'notes.txt'))
      return transfer
    })
    await page.getByTestId('add-panel').dispatchEvent('dragenter', { dataTransfer: dropped })
    await waitForText(page.getByTestId('drop-hint'), /Browser mode cannot add a dropped file/)
    await page.getByTestId('add-panel').dispatchEvent('drop', { dataTransfer: dropped })
    await waitForText(
      page.getByTestId('drop-message'),
      /^notes\.txt is not a \.gguf file: only GGUF models can be added\. Browser mode cannot see where a dropped file is stored: type or paste its path above/
    )
    expect(await page.getByTestId('drop-hint').count()).toBe(0)
    expect(await page.getByTestId('model-table').locator('tbody tr').count()).toBe(4)

    await page.getByTestId('trio-target').selectOption({ label: 'stories-target5M-f32.gguf' })
    await page.getByTestId('trio-mid').selectOption({ label: 'stories-mid1M-f32.gguf' })
    await page.getByTestId('trio-draft').selectOption({ label: 'tinystories-656k-q8_0.gguf' })
    await page.getByTestId('trio-check').click()
    await waitForText(page.getByTestId('trio-check-result'), /^Vocabularies differ: only sd-tli\b.*sizes differ by 1,536 \(2,048 vs the target's 512 tokens/)

    await page.getByTestId('trio-draft').selectOption({ label: 'stories260K-f32.gguf' })
    await page.getByTestId('trio-check').click()
    await waitForText(page.getByTestId('trio-check-result'), /Compatible: all three models share one vocabulary/)
    // What the GPU layers do on this machine (CI has no GPU: llama.cpp runs on the CPU), then the RAM.
    const memory = /^(No GPU in this build: all layers run on the CPU|GPU \(\w+\).*)\. Loading needs about [\d.]+ MB of RAM \(weights .* at 512 tokens × 4 sequences\); [\d.]+ [MG]B free\.$/
    await waitForText(page.getByTestId('trio-memory'), memory)
    // A shown check follows the context size and the GPU layers without another click.
    await page.getByTestId('context-size').fill('256')
    await waitForText(page.getByTestId('trio-memory'), /at 256 tokens × 4 sequences/)
    await page.getByTestId('context-size').fill('2048')
    await page.getByTestId('gpu-layers').fill('many')
    await waitForText(page.getByTestId('trio-check-error'), /GPU layers: expected an integer from 0 to 1000, or auto/)
    await page.getByTestId('gpu-layers').fill('auto')
    await waitForText(page.getByTestId('trio-memory'), memory)
    await page.getByTestId('trio-load').click()
    await waitForText(page.getByTestId('trio-loaded'), /Loaded: stories-target5M-f32\.gguf · stories-mid1M-f32\.gguf · stories260K-f32\.gguf/)
    await waitForText(page.getByTestId('trio-loaded'), /context \d+ tokens, 4 KV sequences, GPU layers \S+, target \d+ thread\(s\) per token and \d+ per batch, drafts \d+/)
    await waitForText(page.getByTestId('loaded-trio'), /stories260K-f32\.gguf/)
    // Threads left empty: each model's threads were measured at load (a fresh cache), shown per phase; measured again on demand.
    const calibration = page.getByTestId('thread-calibration')
    await waitForText(calibration, /Threads per model and phase — measured at load/)
    expect(await calibration.locator('tbody tr').allTextContents()).toEqual([
      expect.stringMatching(/^target\s*stories-target5M-f32\.gguf.*1\*?: [\d.]+.*ms.*\d+ \/ \d+$/),
      expect.stringMatching(/^mid\s*stories-mid1M-f32\.gguf/),
      expect.stringMatching(/^draft\s*stories260K-f32\.gguf.*uses its one-token count/)
    ])
    await waitForText(calibration, /mean ms per evaluation at \d+ tokens of context/)
    // The same choice in words: the chosen count against the fastest other one, and how it was chosen.
    await waitForText(page.getByTestId('thread-calibration-words'), /target stories-target5M-f32\.gguf: \d+ threads? per token \([\d.]+ ms(; \d+ threads?: [\d.]+ ms)?\), \d+ threads? per batch .* — measured at load/)
    const before = await calibration.locator('tbody tr').first().textContent()
    await page.getByTestId('recalibrate').click()
    await page.waitForFunction(
      (previous) => document.querySelector('[data-testid="thread-calibration"] tbody tr')?.textContent !== previous,
      before
    )
    await waitForText(page.getByTestId('recalibrate'), /^Measure again$/)
    await page.getByRole('button', { name: 'Inspect' }).first().click()
    await waitForText(page.getByTestId('inspection'), /llama · 6 layers/)
    await shot('models')
  })

  it('Chat: sd streams tokens coloured by provenance with live statistics; the conversation reopens', async () => {
    await page.getByTestId('nav-chat').click()
    await page.getByTestId('chat-method').selectOption('sd')
    // Enter sends (Shift+Enter would break the line).
    await page.getByTestId('chat-input').fill('Once upon a time, there was a little girl named Lily.')
    await page.getByTestId('chat-input').press('Enter')
    // Tokens appear while the answer is generated, not only at the end.
    await page.getByTestId('message-streaming').locator('.tok').first().waitFor()
    const answer = page.getByTestId('message-assistant')
    await answer.waitFor({ state: 'visible' })
    expect(await answer.locator('.tok-draft').count()).toBeGreaterThan(0)
    expect(await answer.locator('.tok-resampled, .tok-bonus').count()).toBeGreaterThan(0)
    expect((await answer.textContent())!.length).toBeGreaterThan(40)
    expect(await page.getByTestId('stat-tps').textContent()).toMatch(/^\d+\.\d$/)
    expect(await page.getByTestId('stat-acceptance').textContent()).toMatch(/^\d+\.\d%$/)
    expect(await page.getByTestId('stat-sigma').textContent()).toMatch(/^0\.\d{3}$/)
    expect(await page.getByTestId('stat-eta').textContent()).toMatch(/^\d\.\d{3}$/)
    expect(Number(await page.getByTestId('gamma-sparkline').getAttribute('data-points'))).toBeGreaterThan(1)
    // The reply keeps its own statistics under it, time to first token included.
    await waitForText(answer.getByTestId('reply-stats'), /\d+ tokens · [\d.]+ tok\/s · first token \d+ ms · acceptance [\d.]+%/)
    await page.getByTestId('provenance-legend').waitFor()
    await shot('chat')

    await page.getByTestId('chat-new').click()
    expect(await page.getByTestId('message-assistant').count()).toBe(0)
    await page.getByTestId('conversation-item').first().click()
    await page.getByTestId('message-assistant').waitFor({ state: 'visible' })
    expect(await page.getByTestId('message-assistant').locator('.tok-draft').count()).toBeGreaterThan(0)
    expect(await page.getByTestId('message-user').textContent()).toContain('Lily')
  })

  it('Chat: a message copies; replies render as Markdown; the last reply regenerates; a message edits in place', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url.origin })
    const reply = page.getByTestId('message-assistant')
    await reply.getByTestId('message-copy').click()
    await waitForText(reply.getByTestId('message-copy'), /^Copied$/)
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(await reply.locator('.generated').textContent())

    await page.getByTestId('chat-reply-view').selectOption('markdown')
    await reply.getByTestId('markdown').waitFor()
    expect(await reply.locator('.tok').count()).toBe(0)
    await shot('chat-markdown')
    await page.getByTestId('chat-reply-view').selectOption('provenance')
    await reply.locator('.tok').first().waitFor()

    /** Marks what is on screen, so the wait sees the new reply (keyed by message id) rather than the old one. */
    const newReply = async () => {
      await page.waitForFunction(() => !document.querySelector('[data-testid="message-streaming"]') && !!document.querySelector('[data-testid="message-assistant"]:not([data-old]) [data-testid="reply-stats"]'))
      return page.locator('[data-testid="message-assistant"]:not([data-old])')
    }
    await reply.evaluate((el) => el.setAttribute('data-old', ''))
    await reply.getByTestId('message-regenerate').click()
    await newReply()
    expect(await page.getByTestId('message-assistant').count()).toBe(1)
    expect(await page.getByTestId('message-user').count()).toBe(1)

    await page.getByTestId('message-assistant').evaluate((el) => el.setAttribute('data-old', ''))
    await page.getByTestId('message-user').getByTestId('message-edit').click()
    await page.getByTestId('message-edit-text').fill('Tom had a big red ball.')
    await page.getByTestId('message-edit-send').click()
    await newReply()
    expect(await page.getByTestId('message-user').textContent()).toContain('Tom had a big red ball.')
    expect(await page.getByTestId('message-assistant').count()).toBe(1)
    await waitForText(page.locator('[data-testid="conversation-item"]'), /^Tom had a big red ball\.$/)

    // The reply's speedup over ar, measured on its own prompt and pinned under it with its interval.
    await page.getByTestId('message-assistant').getByTestId('message-baseline').click()
    await waitForText(page.getByTestId('message-assistant').getByTestId('reply-stats'), /speedup \d+\.\d\d× \[\d+\.\d\d–\d+\.\d\d\] vs ar on this prompt \(3 repeats\)/)
    expect(await page.getByTestId('message-assistant').getByTestId('message-baseline').count()).toBe(0)
  })

  it('Chat: sd-tree+ngram colours each accepted token by its source (n-gram chain, a tree branch, the draft)', async () => {
    await page.getByTestId('nav-chat').click()
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-method').selectOption('sd-tree+ngram')
    const settings = page.locator('summary', { hasText: 'Decoding settings' })
    await settings.click()
    const temperature = await page.getByTestId('temperature').inputValue()
    await page.getByTestId('temperature').fill('0')
    // A prompt that repeats itself: the n-gram chain finds what the model re-tells.
    const story = 'Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog.'
    await page.getByTestId('chat-input').fill(`${story} ${story}`)
    await page.getByTestId('chat-send').click()
    const answer = page.getByTestId('message-assistant')
    await waitForText(answer.getByTestId('reply-stats'), /\d+ tokens · [\d.]+ tok\/s/)
    const bySource = { ngram: await answer.locator('.tok-ngram').count(), branch: await answer.locator('.tok-branch').count(), draft: await answer.locator('.tok-draft').count() }
    expect(bySource.ngram + bySource.branch, JSON.stringify(bySource)).toBeGreaterThan(0)
    expect(bySource.draft).toBeGreaterThan(0)
    await shot('chat-tree')
    await page.getByTestId('temperature').fill(temperature)
    await settings.click()
  })

  it('Workbench: runs methods × prompts with progress, shows results and charts; cancel stops a run', async () => {
    await page.getByTestId('nav-workbench').click()
    await waitForText(page.getByTestId('wb-dataset'), /Stories/)
    // Methods come in groups with a filter; a llama-server method says why it cannot run when no server is built.
    await page.getByTestId('wb-group-cross-tokenizer').waitFor()
    await page.getByTestId('wb-method-filter').fill('tree')
    expect(await page.getByTestId('wb-methods').locator('[data-testid^="wb-group-"]').evaluateAll((groups) => groups.map((g) => g.getAttribute('data-testid')))).toEqual(['wb-group-trees'])
    await page.getByTestId('wb-method-filter').fill('')
    const peer = page.getByTestId('wb-method-llama-server:draft').locator('xpath=..')
    const server = findLlamaServer()
    expect(await peer.getAttribute('data-unavailable')).toBe(server.path === null ? server.reason : '')
    if (!(await page.getByTestId('wb-method-hsddw').isChecked())) await page.getByTestId('wb-method-hsddw').check()
    await page.getByTestId('wb-limit').fill('3')
    await page.getByTestId('max-tokens').fill('96')
    await page.getByTestId('temperature').fill('0')
    await page.getByTestId('seed').fill('7')
    // A bad repeat count is one line and starts nothing; 2 timed repeats of each (prompt, method) are 18 decodes.
    await page.getByTestId('wb-repeats').fill('0')
    await page.getByTestId('wb-run').click()
    await waitForText(page.getByRole('alert'), /Timed repeats: expected an integer from 1 to 50/)
    await page.getByTestId('wb-repeats').fill('2')
    await page.getByTestId('wb-run').click()
    const progress = page.getByTestId('wb-progress')
    await waitForAttribute(progress, 'data-phase', /running/)
    await waitForAttribute(progress, 'data-phase', /finished/)
    expect(await progress.getAttribute('data-status')).toBe('done')
    expect(await page.getByTestId('wb-progress-cells').getByRole('progressbar').getAttribute('aria-valuenow')).toBe('18')
    await page.getByTestId('wb-results').waitFor()
    const rows = page.getByTestId('wb-results').getByTestId('metrics-table').locator('tbody tr')
    expect(await rows.count()).toBe(3)
    // tokens/s and speedups as medians with their 95 % interval under them; the counts exact.
    await waitForText(page.getByTestId('metrics-note'), /3 prompts × 2 timed repeats/)
    expect(await rows.nth(1).getByTestId('cell-speedup').textContent()).toMatch(/^\s*\d+\.\d\d×\s*\d+\.\d\d–\d+\.\d\d×\s*$/)
    await page.getByTestId('chart-gamma').waitFor()
    await page.getByTestId('chart-speedup').waitFor()
    await page.getByTestId('chart-entropy').waitFor()
    await page.getByTestId('chart-positions').waitFor()
    // Theory beside measurement, and a what-if that recomputes without running a model.
    const theory = page.getByTestId('theory-panel')
    await waitForText(theory.getByTestId('theory-table'), /Tokens per target call.*Speedup \(Thm 3\.8\)/s)
    await theory.getByTestId('what-if').locator('summary').click()
    const whatIf = theory.getByTestId('what-if-result')
    await theory.getByTestId('what-if-gamma').fill('1')
    const atOne = await waitForText(whatIf, /predicted speedup \d+\.\d\d×/)
    await theory.getByTestId('what-if-gamma').fill('8')
    await waitForText(whatIf, /predicted speedup \d+\.\d\d×/)
    expect(await whatIf.textContent()).not.toBe(atOne)
    await shot('workbench')

    // A second, different run (γ 3, sampled, two prompts, no hsddw) to diff against.
    await page.getByTestId('wb-method-hsddw').uncheck()
    await page.getByTestId('wb-limit').fill('2')
    await page.getByTestId('gamma').fill('3')
    await page.getByTestId('temperature').fill('1')
    expect(await runWorkbench()).toBe('done')

    // A long run, cancelled while it decodes.
    await page.getByTestId('wb-limit').fill('')
    await page.getByTestId('max-tokens').fill('300')
    const before = await progress.getAttribute('data-job')
    await page.getByTestId('wb-run').click()
    await page.waitForFunction((previous) => {
      const panel = document.querySelector('[data-testid="wb-progress"]')!
      return panel.getAttribute('data-job') !== previous && panel.getAttribute('data-phase') === 'running' && Number(panel.getAttribute('data-cells')) >= 1
    }, before)
    await shot('workbench-running')
    await page.getByTestId('wb-cancel').click()
    await waitForAttribute(progress, 'data-phase', /finished/)
    expect(await progress.getAttribute('data-status')).toBe('cancelled')

    // A suite from the registry (electron/experiments/suites.ts): choosing it pre-fills the form with its preset.
    const suites = await page.getByTestId('wb-suite').locator('option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))
    expect(suites).toContain('smoke')
    await page.getByTestId('wb-suite').selectOption('smoke')
    const checked = await page.getByTestId('wb-methods').locator('input:checked').count()
    expect(checked).toBeGreaterThanOrEqual(2)
    await page.getByTestId('wb-limit').fill('1')
    await page.getByTestId('max-tokens').fill('32')
    expect(await runWorkbench()).toBe('done')
    await waitForText(page.getByTestId('wb-results'), /run #4/)
    expect(await page.getByTestId('wb-results').getByTestId('metrics-table').locator('tbody tr').count()).toBe(checked)
    if (await page.getByTestId('wb-method-dsbd').isChecked()) await page.getByTestId('chart-ppl').waitFor() // beam methods: PPL vs speed
    await shot('workbench-suite')
  })

  it('Runs: filter, open (config, metrics, charts, outputs, steps), export CSV/JSON, diff two runs, delete', async () => {
    await page.getByTestId('nav-runs').click()
    const rows = page.getByTestId('runs-table').getByTestId('run-row')
    const rowCount = (n: number) =>
      page.waitForFunction((count) => document.querySelectorAll('[data-testid="run-row"]').length === count, n)
    await rowCount(4)
    await page.getByTestId('runs-suite').selectOption('smoke')
    await rowCount(1)
    expect(await rows.first().textContent()).toContain('#4')
    await page.getByTestId('runs-suite').selectOption('')
    await page.getByTestId('runs-status').selectOption('cancelled')
    await rowCount(1)
    await waitForText(rows, /cancelled/) // the smoke filter's one row may still be shown for a moment
    await page.getByTestId('runs-status').selectOption('')
    await rowCount(4)
    await page.getByTestId('runs-method').selectOption('hsddw') // run 1 and the smoke suite's run, not runs 2 and 3
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="run-row"]')]
      return rows.length > 0 && rows.length < 4 && rows.every((row) => row.textContent!.includes('hsddw'))
    })
    expect(await rows.last().textContent()).toContain('#1')
    await page.getByTestId('runs-method').selectOption('')
    await page.getByTestId('runs-search').fill('no-such-thing-anywhere')
    await page.getByTestId('runs-empty').waitFor()
    await page.getByTestId('runs-search').fill('')
    await rowCount(4)
    // Each run's best speedup (runs with ar and another method), sortable; runs without one go last either way.
    const speedups = async () =>
      (await rows.getByTestId('run-best-speedup').allTextContents()).map((t) => (/^([\d.]+)×/.exec(t.trim()) ? Number(/^([\d.]+)×/.exec(t.trim())![1]) : null))
    expect((await speedups()).filter((x) => x !== null).length).toBeGreaterThan(0)
    await page.getByTestId('runs-sort-speedup').click()
    await page.waitForFunction(() => document.querySelector('[data-testid="runs-table"] th[aria-sort="descending"] [data-testid="runs-sort-speedup"]') !== null)
    const descending = await speedups()
    const known = descending.filter((x): x is number => x !== null)
    expect(known).toEqual([...known].sort((a, b) => b - a))
    expect(descending.slice(known.length).every((x) => x === null)).toBe(true)
    await page.getByTestId('runs-sort-speedup').click()
    const ascending = (await speedups()).filter((x): x is number => x !== null)
    expect(ascending).toEqual([...known].reverse())
    await page.getByTestId('runs-sort-run').click()
    expect(await rows.first().textContent()).toContain('#4')

    await page.getByTestId('run-open-1').click()
    const detail = page.getByTestId('run-detail')
    await waitForText(detail.getByTestId('run-config'), /stories-target5M-f32\.gguf/)
    await waitForText(detail.getByTestId('run-timing'), /2 timed repeats per prompt and method\s*· load \d+\.\d\d → \d+\.\d\d on \d+ cores/)
    expect(await detail.getByTestId('metrics-table').locator('tbody tr').count()).toBe(3)
    await detail.getByTestId('chart-entropy').waitFor()
    expect(await detail.getByTestId('run-results').locator('tbody tr').count()).toBe(9)
    await detail.getByTestId('result-steps').nth(1).click()
    await detail.getByTestId('step-table').locator('tbody tr').first().waitFor()

    // A name and notes: saved, shown in the list, found by the search box.
    await detail.getByTestId('run-name').fill('first look, hsddw vs sd')
    await detail.getByTestId('run-notes').fill('greedy; the machine was quiet')
    await detail.getByTestId('run-label-save').click()
    await waitForText(page.getByTestId('run-row').filter({ hasText: '#1' }), /first look, hsddw vs sd/)

    const [csv] = await Promise.all([page.waitForEvent('download'), detail.getByTestId('run-export-csv').click()])
    expect(csv.suggestedFilename()).toBe('speclab-run-1.csv')
    const csvText = fs.readFileSync((await csv.path())!, 'utf8')
    expect(csvText.split('\r\n')[0]).toMatch(/^run_id,method,prompt_index/)
    expect(csvText.trim().split('\r\n')).toHaveLength(10)
    const [json] = await Promise.all([page.waitForEvent('download'), detail.getByTestId('run-export-json').click()])
    const exported = JSON.parse(fs.readFileSync((await json.path())!, 'utf8'))
    expect(exported.runId).toBe(1)
    expect(exported.results).toHaveLength(9)
    expect(exported.results[1].steps.length).toBeGreaterThan(0)
    await shot('runs')

    await page.getByTestId('run-pick-1').check()
    await page.getByTestId('run-pick-2').check()
    await page.getByTestId('runs-diff').click()
    await waitForText(page.getByTestId('diff-config'), /gamma/)
    expect(await page.getByTestId('config-diff-row').count()).toBeGreaterThanOrEqual(4) // gamma, methods, limit, temperature
    await waitForText(page.getByTestId('diff-metrics'), /tokens\/s/)
    // Timed differences carry the interval of the difference and say whether it is beyond the noise.
    await waitForText(page.getByTestId('diff-noise'), /^\s*(within|beyond) noise\s*\[[-+]?\d/)
    await page.getByTestId('diff-gamma-chart').waitFor()
    await waitForText(page.getByTestId('diff-outputs'), /prompt 1/)
    expect(await page.getByTestId('output-diff').locator('.diff-add').count()).toBeGreaterThan(0)
    await shot('diff')

    await page.getByTestId('nav-runs').click()
    await page.getByTestId('run-open-3').click()
    await page.getByTestId('run-delete').click()
    await page.getByTestId('run-delete-confirm').click()
    await rowCount(3)
    expect(pageErrors).toEqual([])
  })

  it('Suites: the smoke suite (quick) runs from the Workbench with progress, ETA and completion; Runs opens its report', async () => {
    await page.getByTestId('nav-workbench').click()
    await page.getByTestId('wb-suite').selectOption('smoke')
    await page.getByTestId('wb-suite-quick').check()
    // Record every phase and ETA the progress panel shows (the quick grid is over in seconds).
    await page.evaluate(() => {
      const seen = { phases: [] as string[], eta: [] as string[] }
      ;(window as unknown as { suiteSeen: typeof seen }).suiteSeen = seen
      new MutationObserver(() => {
        const panel = document.querySelector('[data-testid="wb-suite-progress"]')
        if (!panel) return
        const phase = panel.getAttribute('data-phase') ?? ''
        if (seen.phases.at(-1) !== phase) seen.phases.push(phase)
        const eta = panel.querySelector('[data-testid="wb-suite-eta"]')?.textContent
        if (eta && !seen.eta.includes(eta)) seen.eta.push(eta)
      }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true })
    })
    // A suite on other files than the loaded trio asks first (they are unloaded while it runs, loaded again after).
    const dialogs: string[] = []
    const acceptDialog = (dialog: import('playwright-core').Dialog) => {
      dialogs.push(dialog.message())
      void dialog.accept()
    }
    page.on('dialog', acceptDialog)
    await page.getByTestId('wb-suite-run').click()
    const panel = page.getByTestId('wb-suite-progress')
    await waitForAttribute(panel, 'data-phase', /finished/, 90_000)
    expect(await panel.getAttribute('data-status')).toBe('done')
    const seen = await page.evaluate(() => (window as unknown as { suiteSeen: { phases: string[]; eta: string[] } }).suiteSeen)
    expect(seen.phases).toContain('running')
    expect(seen.phases.at(-1)).toBe('finished')
    expect(seen.eta.some((t) => /^ETA /.test(t))).toBe(true)
    expect(await page.getByTestId('wb-suite-bar').getByRole('progressbar').getAttribute('aria-valuenow')).toBe('1')
    const suiteRunId = Number(await panel.getAttribute('data-suite-run'))
    expect(suiteRunId).toBeGreaterThan(0)
    page.off('dialog', acceptDialog)
    expect(dialogs.every((message) => /unloaded while it runs and loaded again when it ends/.test(message))).toBe(true)
    await shot('workbench-suite-run')

    // Runs lists the suite run and opens its report (self-contained HTML in a sandboxed iframe).
    await page.getByTestId('nav-runs').click()
    await waitForText(page.getByTestId('suite-runs-table'), /Smoke test[\s\S]*quick[\s\S]*1\/1[\s\S]*done/)
    await page.getByTestId(`suite-run-open-${suiteRunId}`).click()
    const frameElement = page.getByTestId('suite-report-frame')
    expect(await frameElement.getAttribute('sandbox')).toBe('')
    const frame = page.frameLocator('[data-testid="suite-report-frame"]')
    await frame.locator('h2', { hasText: 'Every method on the same prompts' }).waitFor()
    expect(await frame.locator('table th').count()).toBeGreaterThan(3)
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('suite-report-md').click()])
    expect(download.suggestedFilename()).toBe(`smoke-${suiteRunId}.md`)
    expect(fs.readFileSync((await download.path())!, 'utf8')).toMatch(/^# /m)
    const [html] = await Promise.all([page.waitForEvent('download'), page.getByTestId('suite-report-html').click()])
    expect(html.suggestedFilename()).toBe(`smoke-${suiteRunId}.html`)
    await shot('suite-report')
    expect(pageErrors).toEqual([])
  }, 120_000)

  it('Models: a load that kills the engine process is one message; the file is marked and loads again only on "Try again"', async () => {
    await page.getByTestId('nav-models').click()
    await page.getByTestId('model-path').fill(bigModel)
    await page.getByTestId('model-add').click()
    await waitForText(page.getByTestId('model-added'), /inflated/)
    // The big file in all three roles: three loads in a row leave time to interrupt one.
    await page.getByTestId('trio-target').selectOption({ label: path.basename(bigModel) })
    await page.getByTestId('trio-mid').selectOption({ label: path.basename(bigModel) })
    await page.getByTestId('trio-draft').selectOption({ label: path.basename(bigModel) })
    await page.getByTestId('trio-load').click()
    // What a GGML_ASSERT does to the engine process, sent as soon as it reports loading the file.
    await page.getByText(`Loading ${path.basename(bigModel)}`).waitFor({ timeout: STEP_TIMEOUT })
    process.kill(enginePid(), 'SIGABRT')
    await waitForText(page.getByTestId('load-error'), new RegExp(`the model process crashed while loading ${path.basename(bigModel).replace(/\./g, '\\.')}`))
    await waitForText(page.getByTestId('model-table'), /failed to load/)
    await page.getByTestId('trio-retry').waitFor()
    await shot('models-load-failed')
    await page.getByTestId('trio-retry').click()
    await waitForText(page.getByTestId('trio-loaded'), new RegExp(`Loaded: ${path.basename(bigModel).replace(/\./g, '\\.')}`))
    expect(await page.getByTestId('load-failed').count()).toBe(0)
    expect(pageErrors).toEqual([])
  }, 120_000)

  it('dark theme: the app follows prefers-color-scheme; every screen reads at WCAG AA in light and dark, charts re-draw, provenance colours stay apart', async () => {
    const schemes = ['light', 'dark'] as const
    /** Contrast in both schemes, no large bright box in dark (a panel left white), and a dark screenshot. */
    const check = async (name: string) => {
      for (const colorScheme of schemes) {
        await page.emulateMedia({ colorScheme })
        await page.waitForTimeout(50) // let the charts re-draw
        for (const problem of await contrastProblems(page)) layoutFailures.push(`${name} (${colorScheme}): ${problem}`)
      }
      const bright = await page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>('body *')]
          .filter((el) => {
            const m = /^rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)$/.exec(getComputedStyle(el).backgroundColor)
            const rect = el.getBoundingClientRect()
            // A primary button's accent fill is bright by design; a sandboxed report is its own (light) document.
            return !!m && Number(m[4] ?? 1) > 0.5 && rect.width * rect.height > 2000 && !el.matches('button.primary, iframe') && (0.2126 * Number(m[1]) + 0.7152 * Number(m[2]) + 0.0722 * Number(m[3])) / 255 > 0.6
          })
          .map((el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} is bright (${getComputedStyle(el).backgroundColor})`)
      )
      layoutFailures.push(...bright.map((problem) => `${name} (dark): ${problem}`))
      await page.setViewportSize({ width: 1280, height: 800 })
      await page.waitForTimeout(50)
      const style = await page.addStyleTag({ content: 'html, body, #app, .shell { height: auto !important } .content { overflow: visible !important }' })
      await page.screenshot({ path: path.join(shots, `${name}-dark-1280x800.png`), fullPage: true })
      await style.evaluate((node) => (node as HTMLElement).remove())
      await page.setViewportSize(VIEWPORT)
      await page.emulateMedia({ colorScheme: 'light' })
    }
    const canvasImage = (testid: string) => page.getByTestId(testid).locator('canvas').evaluate((canvas) => (canvas as HTMLCanvasElement).toDataURL())
    try {
      await page.getByTestId('nav-models').click()
      await page.getByTestId('model-table').waitFor()
      await check('models')

      await page.getByTestId('nav-chat').click()
      await page.getByTestId('conversation-item').first().click()
      await page.getByTestId('message-assistant').locator('.tok').first().waitFor()
      // Provenance colours: the seven legend swatches stay apart (underline colours) in both schemes, and the
      // reply's tokens wear exactly their swatch's colours.
      for (const colorScheme of schemes) {
        await page.emulateMedia({ colorScheme })
        const { distance, mismatched } = await page.evaluate(() => {
          const rgb = (css: string) => (/rgba?\(([\d.]+), ([\d.]+), ([\d.]+)/.exec(css) ?? []).slice(1, 4).map(Number)
          const swatches = [...document.querySelectorAll<HTMLElement>('[data-testid="provenance-legend"] .swatch')].map((el) => ({
            kind: [...el.classList].find((c) => c.startsWith('tok-'))!,
            background: getComputedStyle(el).backgroundColor,
            line: getComputedStyle(el).boxShadow
          }))
          let distance = Infinity
          for (const [i, a] of swatches.entries())
            for (const b of swatches.slice(i + 1)) distance = Math.min(distance, Math.hypot(...rgb(a.line).map((v, k) => v - rgb(b.line)[k])))
          const mismatched = [...document.querySelectorAll<HTMLElement>('[data-testid="message-assistant"] .tok')]
            .map((el) => ({ el, swatch: swatches.find((s) => el.classList.contains(s.kind)) }))
            .filter(({ el, swatch }) => !swatch || getComputedStyle(el).backgroundColor !== swatch.background || getComputedStyle(el).boxShadow !== swatch.line)
            .map(({ el }) => el.className)
          return { distance: swatches.length === 7 ? distance : 0, mismatched }
        })
        expect(distance, `closest two provenance underline colours (${colorScheme})`).toBeGreaterThan(60)
        expect(mismatched, `tokens coloured unlike their legend swatch (${colorScheme})`).toEqual([])
      }
      await check('chat')
      await page.getByTestId('chat-reply-view').selectOption('markdown')
      await page.getByTestId('message-assistant').getByTestId('markdown').waitFor()
      await check('chat-markdown')
      await page.getByTestId('chat-reply-view').selectOption('provenance')

      await page.getByTestId('nav-workbench').click()
      await waitForText(page.getByTestId('wb-dataset'), /Stories/)
      await check('workbench')

      await page.getByTestId('nav-runs').click()
      await page.getByTestId('run-open-1').click()
      await page.getByTestId('run-detail').getByTestId('chart-entropy').waitFor()
      // Chart.js draws on a canvas: it must re-draw in the other palette when the system scheme flips.
      const lightChart = await canvasImage('chart-entropy')
      await page.emulateMedia({ colorScheme: 'dark' })
      await page.waitForFunction((before) => document.querySelector<HTMLCanvasElement>('[data-testid="chart-entropy"] canvas')?.toDataURL() !== before, lightChart)
      await page.emulateMedia({ colorScheme: 'light' })
      await page.waitForFunction((before) => document.querySelector<HTMLCanvasElement>('[data-testid="chart-entropy"] canvas')?.toDataURL() === before, lightChart)
      await check('runs')

      await page.getByTestId('nav-diff').click()
      await page.getByTestId('diff-gamma-chart').waitFor()
      await check('diff')
    } finally {
      await page.emulateMedia({ colorScheme: 'light' })
    }
    expect(pageErrors).toEqual([])
  }, 120_000)

  it('every screen above holds at 1280×800, 1440×900 and 1920×1080: no control covered, nothing scrolls sideways', () => {
    expect(layoutFailures, layoutFailures.join('\n')).toEqual([])
  })
})

/** The engine process of browser mode: the server's descendant running the host entry (electron/host/child-host.ts). */
function enginePid(): number {
  const children = (pid: number): number[] => {
    try {
      return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number)
    } catch {
      return [] // pgrep exits 1 when there is none
    }
  }
  const descendants = (pid: number): number[] => children(pid).flatMap((child) => [child, ...descendants(child)])
  const engine = descendants(server.pid!).find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('utility-entry'))
  if (engine === undefined) throw new Error('no engine process under the server')
  return engine
}
