/**
 * The Theory panel's what-if, end to end in browser mode: a small greedy run (ar, sd, pld, pearl on target5M-q8 ←
 * stories260K) made with the CLI, opened in Runs; the "Replayed on this run" section lists sd at γ 1…8 with the run's
 * own γ badged and the γ beyond the recorded rounds greyed with their reason, and switches to the lookup and to PEARL
 * (parallel drafting: its windows priced from its own rounds, timed beside the draft). Screenshots
 * (test-results/e2e/what-if-*) at laptop and desktop sizes in light and dark, with the layout and contrast checks of
 * test/helpers/layout.ts.
 *
 * Needs: a built renderer (`npx electron-vite build`), Chromium (SPECLAB_CHROMIUM, default /usr/bin/chromium) and the
 * shared models (SPECLAB_MODELS, default ../shared/models).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type BrowserApp, closeBrowserApp, missingForE2e, models, openBrowserApp, root, serveDatabase, shotLightAndDark, tsx } from '../helpers/browser-app'

const target = path.join(models, 'family/stories-target5M-q8_0.gguf')
const draft = path.join(models, 'stories260K-f32.gguf')
const missing = missingForE2e([target, draft])
if (missing.length > 0) console.warn(`\n!!! what-if e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

let dir: string
let app: BrowserApp

/** Layout and contrast in light and dark at every size, a full-page and a Theory panel screenshot each; returns the problems. */
const shoot = (name: string) => shotLightAndDark(app.page, name, { name: 'panel', element: app.page.getByTestId('theory-panel') })

describe.skipIf(missing.length > 0)('what if in the Theory panel (browser mode)', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-what-if-'))
    const env = { ...process.env, SPECLAB_THREAD_CALIBRATION_CACHE: path.join(dir, 'thread-calibration.json') }
    const run = spawnSync(
      tsx,
      ['electron/cli.ts', 'run', '--target', target, '--draft', draft, '--methods', 'ar,sd,pld,pearl', '--limit', '2', '--max-tokens', '32', '--temperature', '0', '--seed', '1', '--gamma', '4', '--threads', '1', '--db', serveDatabase(dir)],
      { cwd: root, encoding: 'utf8', env }
    )
    if (run.status !== 0) throw new Error(`speclab run failed: ${run.stderr}`)
    app = await openBrowserApp(dir)
    await app.page.goto(app.url.toString())
  }, 180_000)

  afterAll(() => closeBrowserApp(app, dir))

  it('a run opened in Runs shows its what-if: γ 1…8, the run’s own badged, unsupported ones greyed with the reason; the lookup too', async () => {
    const { page } = app
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
    await section.getByTestId('replay-source').selectOption('pearl')
    await section.getByText('pearl γ = 1').waitFor()
    const pearlLabels = (await rows.locator('td:first-child').allInnerTexts()).map((t) => t.trim())
    expect(pearlLabels).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((g) => `pearl γ = ${g}${g === 4 ? 'this run' : ''}`))
    expect(((await section.locator('p').first().textContent()) ?? '').replace(/\s+/g, ' ')).toMatch(/verification beside the draft c‖_T\(k\) 1: [\d.]+ ms/)
    problems.push(...(await shoot('what-if-parallel')))
    expect(problems).toEqual([])
    expect(app.pageErrors).toEqual([])
  }, 180_000)
})
