/**
 * Shared setup of the browser-mode e2e tests: `electron/serve.ts` on a temporary database, Debian's Chromium through
 * playwright-core, text waits, and shots of a screen at laptop and desktop sizes with the layout checks of
 * test/helpers/layout.ts; `openBrowserApp` / `shot` for a file that needs one page (light or dark, contrast checked).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContextOptions, type Locator, type Page } from 'playwright-core'
import { contrastProblems, LAPTOP_AND_DESKTOP, layoutProblems } from './layout'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const models = process.env.SPECLAB_MODELS ?? path.resolve(root, '../shared/models')
export const chromiumPath = process.env.SPECLAB_CHROMIUM ?? '/usr/bin/chromium'
export const shots = path.join(root, 'test-results/e2e')
/** How the tests run the TypeScript entry points (electron/serve.ts, electron/cli.ts) without a build. */
export const tsx = path.join(root, 'node_modules/.bin/tsx')
/** The size flows run at. */
export const VIEWPORT = { width: 1440, height: 900 }
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update']

/** What a browser-mode e2e test cannot run without: Chromium, the built renderer and the given files. */
export function missingForE2e(files: readonly string[]): string[] {
  return [
    ...files.filter((f) => !fs.existsSync(f)),
    ...(fs.existsSync(chromiumPath) ? [] : [chromiumPath]),
    ...(fs.existsSync(path.join(root, 'out/renderer/index.html')) ? [] : ['out/renderer (run `npm run build`)'])
  ]
}

/** The database the server in `dir` opens: a test that needs runs before the page opens writes them here first. */
export function serveDatabase(dir: string): string {
  return path.join(dir, 'runs.sqlite')
}

/** Starts `npm run serve` on a random port with its database in `dir`; resolves with the printed URL (token included). */
export function startServe(dir: string): Promise<{ server: ChildProcess; url: URL }> {
  const server = spawn(
    tsx,
    ['electron/serve.ts', '--port', '0', '--db', serveDatabase(dir), '--download-dir', path.join(dir, 'downloads')],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SPECLAB_DB: '', SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'thread-calibration.json'), SPECLAB_SERVER_COST_CACHE: path.join(dir, 'server-costs.json') } }
  )
  let stderr = ''
  server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) => {
    let stdout = ''
    // A minute: tsx compiles the server first, slow on a 2-core machine shared with other work.
    const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), 60_000)
    server.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /SpecLab browser mode: (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve({ server, url: new URL(match[1]) })
      }
    })
    server.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)))
  })
}

/** SIGTERM, then SIGKILL after 5 s. */
export async function stopServe(server: ChildProcess | undefined): Promise<void> {
  if (!server || server.exitCode !== null) return
  const exited = new Promise((resolve) => server.once('exit', resolve))
  server.kill('SIGTERM')
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))])
  if (server.exitCode === null) server.kill('SIGKILL')
}

/** Polls until the locator's text matches. */
export async function waitForText(locator: Locator, pattern: RegExp, timeout = 60_000): Promise<string> {
  const deadline = Date.now() + timeout
  let last = ''
  while (Date.now() < deadline) {
    last = (await locator.first().textContent({ timeout: 1000 }).catch(() => null)) ?? ''
    if (pattern.test(last)) return last
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${pattern} (last text: ${JSON.stringify(last.slice(0, 300))})`)
}

/** `text` as a pattern that matches it literally. */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Adds model files on the Models screen (which must be open), each awaited until the library lists it. */
export async function addModelFiles(page: Page, files: readonly string[]): Promise<void> {
  for (const file of files) {
    await page.getByTestId('model-path').fill(file)
    await page.getByTestId('model-add').click()
    await waitForText(page.getByTestId('model-table'), new RegExp(escapeRegExp(path.basename(file))))
  }
}

/**
 * On the Models screen (which must be open): adds `target` and `draft`, loads them as the trio with a 512-token
 * context on one thread (small and quick), and waits until the screen says they are loaded.
 */
export async function loadTargetAndDraft(page: Page, target: string, draft: string): Promise<void> {
  await addModelFiles(page, [target, draft])
  await page.getByTestId('trio-target').selectOption({ label: path.basename(target) })
  await page.getByTestId('trio-draft').selectOption({ label: path.basename(draft) })
  await page.getByTestId('context-size').fill('512')
  await page.getByTestId('threads').fill('1')
  await page.getByTestId('trio-load').click()
  await waitForText(page.getByTestId('trio-loaded'), new RegExp(escapeRegExp(`Loaded: ${path.basename(target)} · ${path.basename(draft)}`)))
}

/**
 * On the Advisor screen: the form set for the small advice the e2e tests run — `limit` prompts ('' = the whole set),
 * 32 tokens, greedy, seed 4, the best candidate measured beside ar with 2 repeats, and only sd and pld in the grid
 * (the full grid's cost measurement takes minutes on a shared machine).
 */
export async function fillSmallAdvice(page: Page, limit: string): Promise<void> {
  await page.getByTestId('adv-limit').fill(limit)
  await page.getByTestId('adv-maxTokens').fill('32')
  await page.getByTestId('adv-temperature').fill('0')
  await page.getByTestId('adv-seed').fill('4')
  await page.getByTestId('adv-verify').selectOption('1')
  await page.getByTestId('adv-repeats').fill('2')
  for (const m of ['sd-pmin', 'svip', 'sd+ngram', 'ngram-simple']) await page.getByTestId(`adv-method-${m}`).uncheck()
}

/** Waits until the advice on the Advisor screen has finished, however it ended, within `timeout` ms. */
export async function adviceFinished(page: Page, timeout: number): Promise<void> {
  await page.waitForFunction(() => document.querySelector('[data-testid="adv-progress"]')?.getAttribute('data-phase') === 'finished', null, { timeout })
}

/** A full-page screenshot into `shots`: the app scrolls inside <main>, so the page is let grow for the shot. */
async function screenshotWholeScreen(page: Page, file: string): Promise<void> {
  const style = await page.addStyleTag({ content: 'html, body, #app, .shell { height: auto !important } .content { overflow: visible !important }' })
  await page.screenshot({ path: path.join(shots, file), fullPage: true })
  await style.evaluate((node) => (node as HTMLElement).remove())
}

/**
 * The screen at laptop and desktop sizes: the layout problems (one line each, prefixed with the shot's name and
 * size) and a full-screen screenshot per size (the app scrolls inside <main>, so the page grows for the shot).
 * Returns to `viewport` afterwards.
 */
export async function shootScreen(page: Page, name: string, viewport: { width: number; height: number }): Promise<string[]> {
  const problems: string[] = []
  for (const size of LAPTOP_AND_DESKTOP) {
    await page.setViewportSize(size)
    await page.waitForTimeout(50)
    for (const problem of await layoutProblems(page)) problems.push(`${name} at ${size.width}×${size.height}: ${problem}`)
    await screenshotWholeScreen(page, `${name}-${size.width}x${size.height}.png`)
  }
  await page.setViewportSize(viewport)
  return problems
}

/** Whether the element's box lies within the viewport as the page is scrolled now (what the user sees without scrolling). */
export async function inViewport(locator: Locator): Promise<boolean> {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect()
    return r.top >= 0 && r.left >= 0 && r.top < innerHeight && r.right <= innerWidth + 1 && r.height > 0
  })
}

export interface BrowserApp {
  url: URL
  browser: Browser
  page: Page
  /** Page errors and console errors seen so far. */
  pageErrors: string[]
  close(): Promise<void>
}

/** An afterAll's clean-up: closes `app` and removes its folder (either may be missing when the set-up failed). */
export async function closeBrowserApp(app: BrowserApp | undefined, dir: string | undefined): Promise<void> {
  await app?.close()
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
}

/** The server on a database in `dir`, and Chromium with one page at VIEWPORT. */
export async function openBrowserApp(dir: string, context: BrowserContextOptions = {}): Promise<BrowserApp> {
  fs.mkdirSync(shots, { recursive: true })
  const { server, url } = await startServe(dir)
  const browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS })
  const page = await (await browser.newContext({ viewport: VIEWPORT, ...context })).newPage()
  const pageErrors: string[] = []
  page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(`console: ${message.text()}`)
  })
  page.setDefaultTimeout(60_000)
  return {
    url,
    browser,
    page,
    pageErrors,
    async close() {
      await browser.close()
      await stopServe(server)
    }
  }
}

/**
 * The screen at 1280×800, 1440×900 and 1920×1080 in `scheme`: layout problems (nothing covered, nothing scrolling
 * sideways) and contrast problems, one line each, and a full-page screenshot `<name>[-dark]-<w>x<h>.png`. With
 * `closeUp`, that element is photographed too, scrolled into view: `<name>-<closeUp.name>[-dark]-<w>x<h>.png`.
 * Contrast is checked once per scheme: the app's colours do not change with the window's width.
 */
export async function shot(page: Page, name: string, scheme: 'light' | 'dark' = 'light', closeUp?: { name: string; element: Locator }): Promise<string[]> {
  const problems: string[] = []
  const dark = scheme === 'dark' ? '-dark' : ''
  await page.emulateMedia({ colorScheme: scheme })
  for (const size of LAPTOP_AND_DESKTOP) {
    await page.setViewportSize(size)
    await page.waitForTimeout(80) // let charts re-draw at the new size and scheme
    for (const problem of await layoutProblems(page)) problems.push(`${name} (${scheme}) at ${size.width}×${size.height}: ${problem}`)
    if (closeUp) {
      await closeUp.element.scrollIntoViewIfNeeded()
      await closeUp.element.screenshot({ path: path.join(shots, `${name}-${closeUp.name}${dark}-${size.width}x${size.height}.png`) })
    }
    await screenshotWholeScreen(page, `${name}${dark}-${size.width}x${size.height}.png`)
  }
  for (const problem of await contrastProblems(page)) problems.push(`${name} (${scheme}): ${problem}`)
  await page.setViewportSize(VIEWPORT)
  await page.emulateMedia({ colorScheme: 'light' })
  return problems
}

/** `shot` in light, then in dark: the problems of both. */
export async function shotLightAndDark(page: Page, name: string, closeUp?: { name: string; element: Locator }): Promise<string[]> {
  return [...(await shot(page, name, 'light', closeUp)), ...(await shot(page, name, 'dark', closeUp))]
}
