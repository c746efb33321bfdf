/**
 * End to end through browser mode: what a new user stumbles on. A second tab or a bookmark of the server works
 * without the token in its address; a tab without a valid token shows one sentence saying how to open the app. The
 * Models screen shows an Inspect result where the user is looking, and a failed download's badge stays inside its
 * panel. Chat keeps regenerated replies as alternatives (‹ 1/2 › switches, the next turn follows the one shown),
 * the provenance legend collapses to one line (remembered), and conversations rename, search and export as
 * Markdown and JSON. Screenshots at laptop and desktop sizes, light and dark, go to test-results/e2e/chat-comfort-*.
 */
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addModelFiles, CHROMIUM_ARGS, chromiumPath, inViewport, missingForE2e, models, shootScreen, shots, startServe, stopServe, waitForText } from '../helpers/browser-app'
import { contrastProblems } from '../helpers/layout'

const trio = {
  target: path.join(models, 'family/stories-target5M-f32.gguf'),
  mid: path.join(models, 'family/stories-mid1M-f32.gguf'),
  draft: path.join(models, 'stories260K-f32.gguf')
}
const missing = missingForE2e(Object.values(trio))
if (missing.length > 0) console.warn(`\n!!! chat-comfort e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

const VIEWPORT = { width: 1440, height: 900 }
let dir: string
let server: ChildProcess
let url: URL
let browser: Browser
let context: BrowserContext
let page: Page
const layoutFailures: string[] = []
const pageErrors: string[] = []

const shot = async (name: string) => layoutFailures.push(...(await shootScreen(page, `chat-comfort-${name}`, VIEWPORT)))
const replies = () => page.getByTestId('message-assistant')

/** Waits until no reply streams and the shown reply has its statistics (a stored reply). */
async function replyStored(): Promise<void> {
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-streaming"]') && !!document.querySelector('[data-testid="message-assistant"] [data-testid="reply-stats"]'))
}

describe.skipIf(missing.length > 0)('chat comfort and browser-mode tabs (Playwright + Chromium)', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-comfort-'))
    fs.mkdirSync(shots, { recursive: true })
    ;({ server, url } = await startServe(dir))
    browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS })
    context = await browser.newContext({ viewport: VIEWPORT, acceptDownloads: true })
    page = await context.newPage()
    page.on('pageerror', (error) => pageErrors.push(`pageerror: ${error.message}`))
    page.setDefaultTimeout(60_000)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await stopServe(server)
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('a second tab and a bookmark of the server work without the token; a tab without one says how to open the app, once', async () => {
    await page.goto(url.toString())
    await page.getByTestId('nav-models').waitFor()
    expect(page.url()).not.toContain('token=')

    // The same browser profile, the address without ?token= (a new tab, a bookmark): it connects.
    const second = await context.newPage()
    await second.goto(`${url.origin}/`)
    await waitForText(second.getByTestId('loaded-trio'), /no models loaded/)
    await second.getByTestId('nav-models').click()
    await second.getByTestId('model-path').waitFor()
    expect(await second.getByTestId('connection-banner').count()).toBe(0)
    expect(await second.getByTestId('no-token').count()).toBe(0)
    await second.close()

    // Another profile (nothing stored), and one with a token of another server: one sentence, nothing else.
    const fresh = await browser.newContext({ viewport: VIEWPORT })
    for (const address of [`${url.origin}/`, `${url.origin}/?token=not-this-servers-token`]) {
      const stranger = await fresh.newPage()
      await stranger.goto(address)
      const sentence = await waitForText(stranger.getByTestId('no-token'), /open the address that `npm run serve` printed/)
      expect(sentence).toMatch(/^To open SpecLab, open the address that `npm run serve` printed \(http:\/\/127\.0\.0\.1:<port>\/\?token=…\) — [^.]*\.$/)
      await stranger.waitForTimeout(300) // a retry would show a second message by now
      expect(await stranger.getByRole('alert').count()).toBe(1)
      const body = await stranger.locator('body').innerText()
      expect(body).not.toMatch(/no models loaded/i)
      expect(body.split(/open the address/).length).toBe(2)
      expect(await stranger.getByTestId('nav-chat').count()).toBe(0)
      // A refused token is forgotten, and never shown in the address bar.
      expect(await stranger.evaluate(() => localStorage.getItem('speclab.token'))).toBeNull()
      expect(stranger.url()).not.toContain('token=')
      if (address.endsWith('/')) layoutFailures.push(...(await shootScreen(stranger, 'chat-comfort-no-token', VIEWPORT)))
      await stranger.close()
    }
    await fresh.close()
  })

  it('Models: Inspect shows its result in view; a failed download keeps its badge and error inside the panel', async () => {
    await page.getByTestId('nav-models').click()
    await addModelFiles(page, Object.values(trio))
    await page.getByTestId('trio-target').selectOption({ label: 'stories-target5M-f32.gguf' })
    await page.getByTestId('trio-mid').selectOption({ label: 'stories-mid1M-f32.gguf' })
    await page.getByTestId('trio-draft').selectOption({ label: 'stories260K-f32.gguf' })
    await page.getByTestId('threads').fill('1')
    await page.getByTestId('trio-load').click()
    await waitForText(page.getByTestId('loaded-trio'), /stories260K-f32\.gguf/)

    for (const size of [{ width: 1280, height: 800 }, VIEWPORT]) {
      await page.setViewportSize(size)
      await page.getByRole('button', { name: 'Inspect' }).last().click()
      await waitForText(page.getByTestId('inspection'), /llama · \d+ layers/)
      await page.waitForTimeout(400) // the smooth scroll to the result
      expect(await inViewport(page.getByTestId('inspection'))).toBe(true)
      await page.getByTestId('inspection').getByRole('button', { name: 'Close' }).click()
      await page.locator('main').evaluate((main) => main.scrollTo(0, 0))
    }

    // A download that fails at once (this server answers 404), with a long address.
    await page.getByTestId('download-uri').fill(`http://127.0.0.1:${url.port}/${'a-very-long-repository-name/'.repeat(3)}model-Q4_K_M.gguf`)
    await page.getByTestId('download-start').click()
    const item = page.getByTestId('download-item')
    await waitForText(item, /failed/, 30_000)
    await shot('models-download-failed')
    const outside = await item.evaluate((el) => {
      const panel = el.closest('.panel')!.getBoundingClientRect()
      return [el, ...el.querySelectorAll('*')]
        .map((child) => ({ child, r: child.getBoundingClientRect() }))
        .filter(({ r }) => r.width > 0 && (r.left < panel.left - 1 || r.right > panel.right + 1))
        .map(({ child, r }) => `${child.tagName.toLowerCase()}.${child.className} ${Math.round(r.left)}–${Math.round(r.right)} outside ${Math.round(panel.left)}–${Math.round(panel.right)}`)
    })
    expect(outside).toEqual([])
  })

  it('Chat: Regenerate keeps the earlier reply (‹ 1/2 › switches) and the next turn follows the one shown', async () => {
    await page.getByTestId('nav-chat').click()
    await page.getByTestId('chat-method').selectOption('sd')
    // Sampled with a random seed, so the regenerated reply differs.
    await page.getByText('Decoding settings').click()
    await page.getByTestId('temperature').fill('1')
    await page.getByTestId('seed').fill('')
    await page.getByTestId('max-tokens').fill('24')
    layoutFailures.push(...(await shootScreen(page, 'chat-comfort-settings-open', VIEWPORT)))
    await page.getByText('Decoding settings').click()

    await page.getByTestId('chat-input').fill('Once upon a time, there was a dragon.')
    await page.getByTestId('chat-input').press('Enter')
    await replyStored()
    const first = (await replies().locator('.generated').textContent())!
    expect(await page.getByTestId('message-alternatives').count()).toBe(0)

    await replies().getByTestId('message-regenerate').click()
    await page.waitForFunction(() => document.querySelector('[data-testid="alternative-position"]')?.textContent === '2/2')
    await replyStored()
    const second = (await replies().locator('.generated').textContent())!
    expect(await replies().count()).toBe(1)
    expect(await page.getByTestId('message-user').count()).toBe(1)

    await page.getByTestId('alternative-previous').click()
    await waitForText(page.getByTestId('alternative-position'), /^1\/2$/)
    expect(await replies().locator('.generated').textContent()).toBe(first)
    await page.getByTestId('alternative-next').click()
    await waitForText(page.getByTestId('alternative-position'), /^2\/2$/)
    expect(await replies().locator('.generated').textContent()).toBe(second)
    await page.getByTestId('alternative-previous').click()
    await waitForText(page.getByTestId('alternative-position'), /^1\/2$/)

    // The choice is stored: the conversation reopens on it, and the next turn is sent after it.
    await page.getByTestId('chat-new').click()
    await page.getByTestId('conversation-item').first().click()
    await waitForText(page.getByTestId('alternative-position'), /^1\/2$/)
    expect(await replies().locator('.generated').textContent()).toBe(first)
    await page.getByTestId('chat-input').fill('The end.')
    await page.getByTestId('chat-input').press('Enter')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="message-assistant"] [data-testid="reply-stats"]').length === 2 && !document.querySelector('[data-testid="message-streaming"]'))
    // An earlier reply no longer switches: the later turn followed the one shown.
    expect(await page.getByTestId('alternative-next').first().isDisabled()).toBe(true)
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('chat-export-json').click()])
    const exported = JSON.parse(fs.readFileSync((await json.path())!, 'utf8'))
    expect(exported.messages.map((m: { text: string }) => m.text)).toEqual([
      'Once upon a time, there was a dragon.',
      first,
      'The end.',
      expect.any(String)
    ])
    expect(exported.messages[1].otherAlternatives.map((m: { text: string }) => m.text)).toEqual([second])
    await shot('alternatives')
  })

  it('Chat: the legend is one line with a remembered toggle; conversations rename, search and export as Markdown', async () => {
    const legend = page.getByTestId('provenance-legend')
    expect(await legend.getAttribute('data-collapsed')).toBe('true')
    const oneLine = await legend.evaluate((el) => el.getBoundingClientRect().height)
    expect(oneLine).toBeLessThan(30)
    await page.getByTestId('legend-toggle').click()
    expect(await legend.getAttribute('data-collapsed')).toBe('false')
    await waitForText(legend, /accepted from the small draft/)
    expect(await legend.evaluate((el) => el.getBoundingClientRect().height)).toBeGreaterThan(oneLine * 2)
    await page.reload()
    await page.getByTestId('nav-chat').click()
    expect(await page.getByTestId('provenance-legend').getAttribute('data-collapsed')).toBe('false')
    await page.getByTestId('legend-toggle').click()
    await page.reload()
    await page.getByTestId('nav-chat').click()
    expect(await page.getByTestId('provenance-legend').getAttribute('data-collapsed')).toBe('true')

    // A second conversation, then rename the first and find each by its name or its text.
    await waitForText(page.getByTestId('loaded-trio'), /stories260K-f32\.gguf/) // Send waits for the loaded trio after a reload
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-input').fill('Tom had a big red ball.')
    await page.getByTestId('chat-input').press('Enter')
    await replyStored()
    const items = page.getByTestId('conversation-item')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 2)
    await page.getByTestId('conversation-rename').last().click()
    await page.getByTestId('conversation-rename-text').fill('  The dragon  story ')
    await page.getByTestId('conversation-rename-save').click()
    await waitForText(items.last(), /^The dragon story$/)
    await page.getByTestId('conversation-search').fill('DRAGON')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 1)
    expect(await items.textContent()).toBe('The dragon story')
    await page.getByTestId('conversation-search').fill('red ball')
    await waitForText(items, /^Tom had a big red ball\.$/)
    expect(await items.count()).toBe(1)
    await page.getByTestId('conversation-search').fill('no such words anywhere')
    await waitForText(page.getByTestId('conversation-none'), /No conversation's name or messages contain “no such words anywhere”/)
    await shot('search-empty')
    await page.getByTestId('conversation-search').fill('')
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 2)

    await items.last().click()
    await waitForText(page.getByTestId('alternative-position'), /^1\/2$/)
    const [markdown] = await Promise.all([page.waitForEvent('download'), page.getByTestId('chat-export-markdown').click()])
    expect(markdown.suggestedFilename()).toMatch(/^speclab-chat-\d+-The-dragon-story\.md$/)
    const text = fs.readFileSync((await markdown.path())!, 'utf8')
    expect(text).toMatch(/^# The dragon story\n/)
    expect(text).toContain('## You\n\nOnce upon a time, there was a dragon.\n')
    expect(text).toMatch(/## Model\n\n\*sd · completion · seed \d+ · \d+ tokens · [\d.]+ tok\/s · acceptance [\d.]+ % · reply 1 of 2\*/)
    await shot('chat')
  })

  it('dark theme: the chat screen reads at WCAG AA and holds at laptop and desktop sizes', async () => {
    await page.emulateMedia({ colorScheme: 'dark' })
    const problems = await contrastProblems(page)
    await shot('chat-dark')
    await page.emulateMedia({ colorScheme: 'light' })
    expect(problems).toEqual([])
  })

  it('every screen above holds at 1280×800, 1440×900 and 1920×1080, and the page logged no errors', () => {
    expect(layoutFailures).toEqual([])
    expect(pageErrors).toEqual([])
  })
})
