/**
 * The Theory panel's what-if, end to end in browser mode: a small greedy run (ar, sd, pld on target5M-q8 ←
 * stories260K) made with the CLI, opened in Runs; the "Replayed on this run" section lists sd at γ 1…8 with the run's
 * own γ badged and the γ beyond the recorded rounds greyed with their reason, and switches to the lookup. Screenshots
 * (test-results/e2e/what-if-*) at laptop and desktop sizes in light and dark, with the layout and contrast checks of
 * test/helpers/layout.ts.
 *
 * Needs: a built renderer (`npx electron-vite build`), Chromium (SPECLAB_CHROMIUM, default /usr/bin/chromium) and the
 * shared models (SPECLAB_MODELS, default ../shared/models).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contrastProblems, LAPTOP_AND_DESKTOP, layoutProblems } from '../helpers/layout'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const models = process.env.SPECLAB_MODELS ?? path.resolve(root, '../shared/models')
const chromiumPath = process.env.SPECLAB_CHROMIUM ?? '/usr/bin/chromium'
const shots = path.join(root, 'test-results/e2e')
const target = path.join(models, 'family/stories-target5M-q8_0.gguf')
const draft = path.join(models, 'stories260K-f32.gguf')
const tsx = path.join(root, 'node_modules/.bin/tsx')
const missing = [
  ...[target, draft].filter((f) => !fs.existsSync(f)),
  ...(fs.existsSync(chromiumPath) ? [] : [chromiumPath]),
  ...(fs.existsSync(path.join(root, 'out/renderer/index.html')) ? [] : ['out/renderer (run `npx electron-vite build`)'])
]
if (missing.length > 0) console.warn(`\n!!! what-if e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

const TIMEOUT = 60_000
let dir: string
let server: ChildProcess
let browser: Browser
let page: Page
const pageErrors: string[] = []

function startServer(db: string): Promise<URL> {
  server = spawn(tsx, ['electron/serve.ts', '--port', '0', '--db', db, '--download-dir', path.join(dir, 'downloads')], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SPECLAB_DB: '', SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'thread-calibration.json') }
  })
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

/** Layout and contrast at every size and scheme, a full-page and a panel screenshot each; returns the problems. */
async function shoot(name: string): Promise<string[]> {
  const problems: string[] = []
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme })
    for (const size of LAPTOP_AND_DESKTOP) {
      await page.setViewportSize(size)
      await page.waitForTimeout(50)
      const at = `${name} ${colorScheme} ${size.width}×${size.height}`
      for (const problem of await layoutProblems(page)) problems.push(`${at}: ${problem}`)
      for (const problem of await contrastProblems(page)) problems.push(`${at}: ${problem}`)
      const panel = page.getByTestId('theory-panel')
      await panel.scrollIntoViewIfNeeded()
      await panel.screenshot({ path: path.join(shots, `${name}-panel-${colorScheme}-${size.width}x${size.height}.png`) })
      const style = await page.addStyleTag({ content: 'html, body, #app, .shell { height: auto !important } .content { overflow: visible !important }' })
      await page.screenshot({ path: path.join(shots, `${name}-${colorScheme}-${size.width}x${size.height}.png`), fullPage: true })
      await style.evaluate((node) => (node as HTMLElement).remove())
    }
  }
  await page.emulateMedia({ colorScheme: 'light' })
  return problems
}

describe.skipIf(missing.length > 0)('what if in the Theory panel (browser mode)', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-what-if-'))
    fs.mkdirSync(shots, { recursive: true })
    const db = path.join(dir, 'runs.sqlite')
    const env = { ...process.env, SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'thread-calibration.json') }
    const run = spawnSync(
      tsx,
      ['electron/cli.ts', 'run', '--target', target, '--draft', draft, '--methods', 'ar,sd,pld', '--limit', '2', '--max-tokens', '32', '--temperature', '0', '--seed', '1', '--gamma', '4', '--threads', '1', '--db', db],
      { cwd: root, encoding: 'utf8', env }
    )
    if (run.status !== 0) throw new Error(`speclab run failed: ${run.stderr}`)
    const url = await startServer(db)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'] })
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage()
    page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`)
    })
    page.setDefaultTimeout(TIMEOUT)
    await page.goto(url.toString())
  }, 180_000)

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

  it('a run opened in Runs shows its what-if: γ 1…8, the run’s own badged, unsupported ones greyed with the reason; the lookup too', async () => {
    await page.getByTestId('nav-runs').click()
    await page.getByTestId('run-open-1').click()
    const section = page.getByTestId('replay-what-if')
    await section.waitFor()
    const rows = section.getByTestId('replay-row')
    const labels = (await rows.locator('td:first-child').allInnerTexts()).map((t) => t.trim())
    expect(labels.slice(0, 8)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((g) => `sd γ = ${g}${g === 4 ? 'this run' : ''}`))
    const own = section.locator('tr.own')
    expect(await own.count()).toBe(1)
    expect(await own.getAttribute('data-supported')).toBe('true')
    const greyed = rows.and(section.locator('[data-supported="false"]'))
    expect(await greyed.count()).toBeGreaterThanOrEqual(4)
    expect(await section.locator('tr.reason-row').first().innerText()).toMatch(/outside the recorded rounds: positions 5–5 were never proposed/)
    // Greyed means greyed: an unsupported row's text is the muted colour, a supported one's is not.
    const colour = (selector: string) => section.locator(selector).first().locator('td').first().evaluate((el) => getComputedStyle(el).color)
    expect(await colour('tr[data-supported="false"]')).not.toBe(await colour('tr[data-supported="true"]'))
    const measured = ((await section.locator('p').first().textContent()) ?? '').replace(/\s+/g, ' ')
    expect(measured).toMatch(/Measured: [\d.]+ tok\/s ?\([\d.]+×\)/)

    const problems = await shoot('what-if')
    await section.getByTestId('replay-source').selectOption('pld')
    await section.getByText('pld cap 1').waitFor()
    expect(await section.locator('tr.own').count()).toBe(1)
    problems.push(...(await shoot('what-if-lookup')))
    expect(problems).toEqual([])
    expect(pageErrors).toEqual([])
  }, 180_000)
})
