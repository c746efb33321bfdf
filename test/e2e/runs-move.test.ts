/**
 * The Runs screen's buttons for runs that move and compare, end to end through browser mode (`electron/serve.ts`,
 * Playwright + Debian's Chromium): Import (an upload in chunks; twice adds nothing; a foreign file is one line),
 * Export selected (the download imports elsewhere), the run's report (.md / .html downloads), Run again (the
 * Workbench filled with the run's settings), and a diff of three runs side by side. The runs are written straight
 * through the stores (test/helpers/stored-runs.ts), so no model is loaded. Screenshots of each screen in light and
 * dark at 1280×800, 1440×900 and 1920×1080 go to test-results/e2e/, with the layout and contrast checks of
 * test/helpers/layout.ts.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppStore } from '../../electron/store/app-store'
import { RunStore } from '../../electron/store/run-store'
import { exportRuns, importRuns } from '../../electron/store/run-transfer'
import { type BrowserApp, closeBrowserApp, missingForE2e, models, openBrowserApp, serveDatabase, shotLightAndDark } from '../helpers/browser-app'
import { addStoredRun, storedRunConfig } from '../helpers/stored-runs'

const target = path.join(models, 'stories260K-f32.gguf')
const draft = path.join(models, 'stories260K-q4_0.gguf')
const missing = missingForE2e([target, draft])
if (missing.length > 0) console.warn(`\n!!! runs-move e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

const STEP_TIMEOUT = 30_000

let dir: string
let app: BrowserApp
let page: BrowserApp['page']
const layoutFailures: string[] = []

/** Three runs in the server's database (γ 2, 4, 6) with the models in the library; returns a file of two runs from "another machine". */
function seed(): string {
  const store = RunStore.open(serveDatabase(dir))
  const config = (gamma: number) => storedRunConfig({ gamma, models: { target, draft } })
  addStoredRun(store, config(2), 1.2, { name: 'gamma two' })
  addStoredRun(store, config(4), 1.6)
  addStoredRun(store, config(6), 1.4)
  const library = new AppStore(store.database)
  library.addModel(target, 'file', null)
  library.addModel(draft, 'file', null)
  store.close()
  const other = path.join(dir, 'gpu-box.sqlite')
  const gpu = RunStore.open(other)
  const ids = [addStoredRun(gpu, config(3), 2.1, { name: 'from the GPU box' }), addStoredRun(gpu, config(5), 2.4)]
  const incoming = path.join(dir, 'gpu-box.speclab-runs')
  exportRuns(gpu.database, other, ids, incoming)
  gpu.close()
  return incoming
}

/** The screen in light and dark at laptop and desktop sizes: layout and contrast checked, each photographed. */
const shot = async (name: string) => layoutFailures.push(...(await shotLightAndDark(page, `runs-move-${name}`)))

async function saveDownload(click: () => Promise<void>): Promise<{ name: string; file: string }> {
  const [download] = await Promise.all([page.waitForEvent('download'), click()])
  const file = path.join(dir, 'downloads-seen', download.suggestedFilename())
  await download.saveAs(file)
  return { name: download.suggestedFilename(), file }
}

const text = (testid: string) => page.getByTestId(testid).first().textContent()

describe.skipIf(missing.length > 0)('Runs screen: import, export, report, run again, diff of three runs', () => {
  let incoming: string

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-runs-move-'))
    incoming = seed()
    app = await openBrowserApp(dir, { acceptDownloads: true })
    page = app.page
    page.setDefaultTimeout(STEP_TIMEOUT)
    await page.goto(app.url.href)
    await page.getByTestId('nav-runs').click()
    await page.getByTestId('runs-table').waitFor()
  }, 90_000)

  afterAll(() => closeBrowserApp(app, dir))

  it('Import uploads a runs file: its runs get new ids here, a second import adds nothing, a foreign file is one line', async () => {
    await page.getByTestId('runs-import-file').setInputFiles(incoming)
    await page.getByTestId('runs-move-message').waitFor()
    expect(await text('runs-move-message')).toBe('Imported 2 runs from gpu-box.speclab-runs (#4, #5).')
    await page.getByTestId('run-open-4').click()
    expect(await text('run-origin')).toMatch(/ — run #1 of gpu-box\.sqlite on /)
    expect(await page.getByTestId('run-row').count()).toBe(5)
    await shot('imported')

    await page.getByTestId('runs-import-file').setInputFiles(incoming)
    await page.waitForFunction(() => document.querySelector('[data-testid="runs-move-message"]')?.textContent?.includes('skipped'))
    expect(await text('runs-move-message')).toBe('Imported 0 runs from gpu-box.speclab-runs; 2 already here, skipped.')
    expect(await page.getByTestId('run-row').count()).toBe(5)

    const foreign = path.join(dir, 'notes.txt')
    fs.writeFileSync(foreign, 'not a database\n')
    await page.getByTestId('runs-import-file').setInputFiles(foreign)
    await page.getByTestId('runs-move-error').waitFor()
    expect(await text('runs-move-error')).toBe('not a SpecLab database: notes.txt is not a SQLite database')
    await shot('import-refused')
    expect(await page.getByTestId('run-row').count()).toBe(5)
  }, 120_000)

  it('Export selected downloads a file holding exactly the ticked runs', async () => {
    await page.getByTestId('run-pick-1').check()
    await page.getByTestId('run-pick-4').check()
    expect(await text('runs-picked')).toBe('2 runs chosen')
    const { name, file } = await saveDownload(() => page.getByTestId('runs-export').click())
    expect(name).toBe('speclab-2-runs.speclab-runs')
    const elsewhere = RunStore.open(path.join(dir, 'elsewhere.sqlite'))
    const summary = importRuns(elsewhere.database, file)
    expect(summary.transferred.map((r) => r.from)).toEqual([1, 2])
    expect(elsewhere.listRuns().map((r) => r.name)).toEqual(['from the GPU box', 'gamma two'])
    elsewhere.close()
    await page.getByTestId('run-pick-1').uncheck()
    await page.getByTestId('run-pick-4').uncheck()
  }, 60_000)

  it('a run’s report downloads as Markdown and HTML', async () => {
    await page.getByTestId('run-open-1').click()
    await page.getByTestId('run-config').waitFor()
    await shot('run-detail')
    const md = await saveDownload(() => page.getByTestId('run-report-md').click())
    expect(md.name).toBe('speclab-run-1.md')
    const markdown = fs.readFileSync(md.file, 'utf8')
    expect(markdown).toMatch(/^# Run 1 — gamma two\n/)
    expect(markdown).toMatch(/\| sd \| 2 \| 12 \| /)
    const html = await saveDownload(() => page.getByTestId('run-report-html').click())
    expect(html.name).toBe('speclab-run-1.html')
    expect(fs.readFileSync(html.file, 'utf8')).toMatch(/^<!doctype html>[\s\S]*<title>Run 1 — gamma two<\/title>/)
  }, 60_000)

  it('Run again opens the Workbench with the run’s methods, models and settings', async () => {
    await page.getByTestId('run-again').click()
    await page.getByTestId('wb-rerun-notice').waitFor()
    expect(await text('wb-rerun-notice')).toMatch(/Filled with the settings of run #1/)
    expect(await page.getByTestId('wb-rerun-note').count()).toBe(0)
    expect(await page.getByTestId('gamma').inputValue()).toBe('2')
    expect(await page.getByTestId('max-tokens').inputValue()).toBe('8')
    expect(await page.getByTestId('seed').inputValue()).toBe('7')
    expect(await page.getByTestId('wb-method-ar').isChecked()).toBe(true)
    expect(await page.getByTestId('wb-method-sd').isChecked()).toBe(true)
    const chosen = async (testid: string) => page.getByTestId(testid).evaluate((el) => (el as HTMLSelectElement).selectedOptions[0]?.textContent ?? '')
    expect(await chosen('wb-target')).toContain('stories260K-f32.gguf')
    expect(await chosen('wb-draft')).toContain('stories260K-q4_0.gguf')
    expect(await page.getByTestId('wb-dataset').inputValue()).toBe('builtin:stories')
    await shot('run-again')
  }, 60_000)

  it('three ticked runs diff side by side, each value with its change from the first', async () => {
    await page.getByTestId('nav-runs').click()
    for (const id of [1, 2, 3]) await page.getByTestId(`run-pick-${id}`).check()
    expect(await text('runs-picked')).toBe('3 runs chosen')
    await page.getByTestId('runs-diff').click()
    await page.getByTestId('diff-many-metrics').waitFor()
    const sd = page.getByTestId('diff-many-method').filter({ hasText: 'sd' })
    const header = await sd.locator('thead th').allTextContents()
    expect(header.map((h) => h.trim())).toEqual(['sd', 'A #1', 'B #2', 'C #3'])
    const gamma = page.getByTestId('many-config-diff-row').filter({ hasText: /^gamma/ })
    expect((await gamma.locator('td').allTextContents()).map((t) => t.trim())).toEqual(['gamma', '2', '4', '6'])
    await shot('diff-three')
    expect(app.pageErrors).toEqual([])
    expect(layoutFailures).toEqual([])
  }, 120_000)
})
