/**
 * The Advisor screen end to end in browser mode: load target5M-q8_0 ← 260K on the Models screen, *Recommend a
 * setup…* opens the Advisor with them (a mid model from the library, chosen and cleared, leaves and rejoins the drafts), a small advice (2 prompts × 32 tokens, greedy, the best candidate measured
 * beside ar with 2 repeats) runs with its stages ticked off, then the recommendation card, the predicted-vs-measured
 * chart and the candidate table (a refused prompt file's message goes once another set is chosen, on the Advisor and
 * the Workbench); *Copy method* / *Copy command* put the card's text on the clipboard, *Use in Chat*
 * sets Chat's method and γ, Cancel stops a second advice, and the stored advice opens again from Runs. Screenshots (light and dark, three sizes)
 * go to test-results/e2e/advisor*.png with the layout and contrast checks.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addModelFiles, adviceFinished, type BrowserApp, closeBrowserApp, fillSmallAdvice, loadTargetAndDraft, missingForE2e, models, openBrowserApp, shot, waitForText } from '../helpers/browser-app'

const target = path.join(models, 'family/stories-target5M-q8_0.gguf')
const draft = path.join(models, 'stories260K-f32.gguf')
const mid = path.join(models, 'family/stories-mid1M-f32.gguf')
const missing = missingForE2e([target, draft, mid])
if (missing.length > 0) console.warn(`\n!!! advisor e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

let dir: string
let app: BrowserApp
const problems: string[] = []

describe.skipIf(missing.length > 0)('Advisor screen (browser mode)', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-advisor-'))
    app = await openBrowserApp(dir, { permissions: ['clipboard-read', 'clipboard-write'] })
  }, 60_000)
  afterAll(() => closeBrowserApp(app, dir))

  it('Models → Recommend a setup opens the Advisor with the loaded target and draft', async () => {
    const { page } = app
    await page.goto(app.url.toString())
    await page.getByTestId('nav-models').click()
    await addModelFiles(page, [mid]) // in the library, not loaded: the Advisor offers it as the mid model
    await loadTargetAndDraft(page, target, draft)

    await page.getByTestId('recommend-setup').click()
    await page.getByTestId('adv-run').waitFor()
    expect(await page.getByTestId('adv-target').locator('option:checked').textContent()).toBe(path.basename(target))
    expect(await page.getByTestId('adv-drafts').locator('input:checked').count()).toBe(1)
    await waitForText(page.getByTestId('adv-drafts').locator('label:has(input:checked)'), /stories260K-f32\.gguf \(loaded\)/)
    await waitForText(page.getByTestId('adv-uses-loaded'), /Uses the loaded models/)
    // A mid model is chosen apart from the drafts: it leaves the drafts, and the advice no longer uses the loaded trio.
    expect(await page.getByTestId('adv-mid').inputValue()).toBe('')
    expect(await page.getByTestId('adv-mid').locator('option:checked').textContent()).toBe('none')
    expect(await page.getByTestId('adv-method-hier-chen').isDisabled()).toBe(true) // a hierarchy needs the mid model
    await page.getByTestId('adv-mid').selectOption({ label: path.basename(mid) })
    expect(await page.getByTestId('adv-method-hier-chen').isDisabled()).toBe(false)
    const midBox = page.getByTestId('adv-drafts').locator(`label:has-text("${path.basename(mid)}") input`)
    expect(await midBox.isDisabled()).toBe(true)
    await waitForText(page.getByTestId('adv-drafts').locator(`label:has-text("${path.basename(mid)}")`), /\(the mid model\)/)
    await page.getByTestId('adv-uses-loaded').waitFor({ state: 'detached', timeout: 2000 })
    problems.push(...(await shot(page, 'advisor-mid')))
    await page.getByTestId('adv-mid').selectOption('')
    await waitForText(page.getByTestId('adv-uses-loaded'), /Uses the loaded models/)
    expect(await midBox.isDisabled()).toBe(false)
    problems.push(...(await shot(page, 'advisor-empty')))
  }, 120_000)

  it('runs a small advice with progress per stage; the card, chart and table follow', async () => {
    const { page } = app
    await fillSmallAdvice(page, '2')
    // A prompt file joins the prompt sets and is chosen (the Workbench's import); a broken one says why.
    const prompts = path.join(dir, 'mine.jsonl')
    fs.writeFileSync(prompts, '{"text": "Once upon a time"}\n{"text": "The dog ran"}\n')
    await page.getByTestId('adv-import-path').fill(prompts)
    await page.getByTestId('adv-import').click()
    await waitForText(page.getByTestId('adv-dataset').locator('option:checked'), /mine\.jsonl.*2 prompts/)
    fs.writeFileSync(path.join(dir, 'broken.jsonl'), 'not json\n')
    await page.getByTestId('adv-import-path').fill(path.join(dir, 'broken.jsonl'))
    await page.getByTestId('adv-import').click()
    await waitForText(page.getByTestId('adv-import-error'), /broken\.jsonl/)
    // The refusal goes as soon as another set is chosen: it was about the broken file, not the set now shown.
    await page.getByTestId('adv-dataset').selectOption('builtin:stories')
    await page.getByTestId('adv-import-error').waitFor({ state: 'detached', timeout: 2000 })
    // A good file after a refused one: the same.
    await page.getByTestId('adv-import-path').fill(path.join(dir, 'broken.jsonl'))
    await page.getByTestId('adv-import').click()
    await waitForText(page.getByTestId('adv-import-error'), /broken\.jsonl/)
    await page.getByTestId('adv-import-path').fill(prompts)
    await page.getByTestId('adv-import').click()
    await waitForText(page.getByTestId('adv-dataset').locator('option:checked'), /mine\.jsonl.*2 prompts/)
    await page.getByTestId('adv-import-error').waitFor({ state: 'detached', timeout: 2000 })
    await page.getByTestId('adv-dataset').selectOption('builtin:stories')
    // Bad input is refused on the screen, in the catalog's words, before anything runs.
    await page.getByTestId('adv-budget').fill('soon')
    await page.getByTestId('adv-run').click()
    await waitForText(page.getByTestId('adv-error'), /Time budget: expected a positive number of seconds/)
    await page.getByTestId('adv-budget').fill('')

    await page.getByTestId('adv-run').click()
    const progress = page.getByTestId('adv-progress')
    await progress.waitFor()
    // The stages tick off in order; at the end every one is done.
    // The cost curve alone takes a minute or two on a busy 2-core machine.
    await adviceFinished(page, 330_000)
    expect(await progress.getAttribute('data-status')).toBe('done')
    for (const stage of ['loading', 'trace', 'draft-pass', 'replay', 'costs', 'verify'])
      expect(await page.getByTestId(`adv-stage-${stage}`).getAttribute('data-state'), stage).toBe('done')
    await waitForText(page.getByTestId('adv-cells'), /Verification: \d+ arms × 2 repeats/)
    expect(await page.getByTestId('adv-cells').getByRole('progressbar').getAttribute('aria-valuenow')).toBe(await page.getByTestId('adv-cells').getByRole('progressbar').getAttribute('aria-valuemax'))

    const card = page.getByTestId('adv-card')
    await card.waitFor()
    const headline = await page.getByTestId('adv-headline').textContent()
    expect(headline).toMatch(/faster than ar \(95 % interval [\d.]+× – [\d.]+×\)|Speculation does not pay here: keep plain decoding \(ar\)/)
    expect((await page.getByTestId('adv-reason').textContent())!.length).toBeGreaterThan(20)
    await waitForText(page.getByTestId('adv-speclab-command'), /^speclab /)
    // predicted against measured: a canvas with points drawn
    const drawn = await page.getByTestId('adv-chart').locator('canvas').evaluate((canvas) => {
      const c = canvas as HTMLCanvasElement
      const data = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data
      let painted = 0
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++
      return painted
    })
    expect(drawn).toBeGreaterThan(1000)
    // Every candidate of the grid, ar and the measured one with intervals.
    const rows = page.getByTestId('adv-table').locator('tbody tr')
    expect(await rows.count()).toBeGreaterThan(8) // ar, sd γ 1…8, pld γ 3 / 5
    const measured = await page.getByTestId('adv-table').locator('tbody tr.measured').allTextContents()
    expect(measured.length).toBeGreaterThanOrEqual(2)
    expect(measured.some((r) => /^\d+ar/.test(r))).toBe(true)
    for (const r of measured) expect(r).toMatch(/[\d.]+\s*\[[\d.]+, [\d.]+\]/) // the median, its interval below
    // llama-server's arms (where it is built) are predicted with llama-server's own costs, and the row says so.
    for (const r of await rows.allTextContents()) if (/^\d+llama-server:/.test(r)) expect(r).toMatch(/llama-server costs/)
    problems.push(...(await shot(page, 'advisor')))
    problems.push(...(await shot(page, 'advisor', 'dark')))
  }, 400_000)

  it('copies the method and the command, and Use in Chat sets the method and γ', async () => {
    const { page } = app
    const method = (await page.getByTestId('adv-method').textContent())!.trim()
    await page.getByTestId('adv-copy-method').click()
    await waitForText(page.getByTestId('adv-copy-method'), /Copied/)
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(method)
    if ((await page.getByTestId('adv-copy-command').count()) > 0) {
      await page.getByTestId('adv-copy-command').click()
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe((await page.getByTestId('adv-server-command').textContent())!.trim())
    } else await waitForText(page.getByTestId('adv-server-none'), /^none — .{10,}/)

    await page.getByTestId('adv-use-in-chat').click()
    await page.getByTestId('chat-method').waitFor()
    expect(await page.getByTestId('chat-method').inputValue()).toBe(method.split(' ')[0])
    const gamma = /γ=(\d+)/.exec(method)?.[1]
    if (gamma) expect(await page.getByTestId('gamma').inputValue()).toBe(gamma)
    const params = [...method.matchAll(/ (\S+)=(\S+)/g)].filter(([, key]) => key !== 'γ')
    const stored = JSON.parse((await page.evaluate(() => localStorage.getItem('speclab.chat.form'))) ?? '{}') as { gamma?: string; params?: Record<string, string> }
    if (gamma) expect(stored.gamma).toBe(gamma)
    for (const [, key, value] of params) expect(stored.params?.[key]).toBe(value)
  }, 60_000)

  it('Cancel stops an advice; the stored advice opens again from Runs with the same card, chart and table', async () => {
    const { page } = app
    await page.getByTestId('nav-advisor').click()
    const runId = (await page.getByTestId('adv-open-run').textContent())!.replace('#', '')
    const headline = await page.getByTestId('adv-headline').textContent()
    // A second advice, cancelled at once: it ends cancelled with nothing to show, so what follows comes from Runs.
    const before = await page.getByTestId('adv-progress').getAttribute('data-job')
    await page.getByTestId('adv-run').click()
    await page.waitForFunction((previous) => document.querySelector('[data-testid="adv-progress"]')?.getAttribute('data-job') !== previous, before)
    await page.getByTestId('adv-cancel').click()
    await adviceFinished(page, 60_000)
    expect(await page.getByTestId('adv-progress').getAttribute('data-status')).toBe('cancelled')
    expect(await page.getByTestId('adv-card').count()).toBe(0)

    await page.getByTestId('nav-runs').click()
    await page.getByTestId(`run-open-${runId}`).click()
    await page.getByTestId('run-open-advice').click()
    await waitForText(page.getByTestId('adv-open-run'), new RegExp(`^#${runId}$`))
    expect(await page.getByTestId('adv-headline').textContent()).toBe(headline)
    await page.getByTestId('adv-chart').waitFor()
    expect(await page.getByTestId('adv-table').locator('tbody tr.measured').count()).toBeGreaterThanOrEqual(2)
  }, 90_000)

  it('the Workbench (the same import) drops a refusal once another prompt set is chosen', async () => {
    const { page } = app
    await page.getByTestId('nav-workbench').click()
    await page.getByTestId('wb-import-path').fill(path.join(dir, 'broken.jsonl'))
    await page.getByTestId('wb-import-path').press('Enter')
    await waitForText(page.getByTestId('wb-import-error'), /broken\.jsonl/)
    // The Workbench starts on the stories set; the file added on the Advisor is among its sets too.
    expect(await page.getByTestId('wb-dataset').inputValue()).toBe('builtin:stories')
    await page.getByTestId('wb-dataset').selectOption(`file:${path.join(dir, 'mine.jsonl')}`)
    await page.getByTestId('wb-import-error').waitFor({ state: 'detached', timeout: 2000 })
  }, 60_000)

  it('holds at every size in light and dark, with no page errors', () => {
    expect(problems, problems.join('\n')).toEqual([])
    expect(app.pageErrors).toEqual([])
  })
})
