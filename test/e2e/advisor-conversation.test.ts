/**
 * A chat conversation as the Advisor's workload, end to end in browser mode: load target5M-f32 ← 260K, hold a
 * three-turn conversation in Chat, choose it as the Advisor's prompt set and run a small advice (the user's three
 * messages × 32 tokens, greedy, sd and pld in the grid, the best candidate measured beside ar with 2 repeats) to its
 * end. The user sees the recommendation card naming the conversation's prompt file; the file written beside the
 * database (advice-workloads/) holds exactly the user's messages, one prompt each, and the stored run's prompt
 * source on the Runs screen is that file. Screenshots (light and dark, three sizes) go to
 * test-results/e2e/advisor-conversation*.png with the layout and contrast checks.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adviceFinished, type BrowserApp, closeBrowserApp, escapeRegExp, fillSmallAdvice, loadTargetAndDraft, missingForE2e, models, openBrowserApp, shot, waitForText } from '../helpers/browser-app'

const target = path.join(models, 'family/stories-target5M-f32.gguf')
const draft = path.join(models, 'stories260K-f32.gguf')
const missing = missingForE2e([target, draft])
if (missing.length > 0) console.warn(`\n!!! advisor-conversation e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

/** The user's turns, as typed: a quote and a non-ASCII letter check that the file keeps the text as it is. */
const TURNS = ['Once upon a time, a little fox found a shiny stone.', 'Lily said "hello" to the big dog.', 'The café by the sea was full of happy birds.']

let dir: string
let app: BrowserApp
let conversationId: number
let runId: string
const problems: string[] = []

describe.skipIf(missing.length > 0)('Advisor on a chat conversation (browser mode)', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-advisor-conversation-'))
    app = await openBrowserApp(dir)
  }, 60_000)
  afterAll(() => closeBrowserApp(app, dir))

  it('holds a three-turn conversation in Chat on the loaded small models', async () => {
    const { page } = app
    await page.goto(app.url.toString())
    await page.getByTestId('nav-models').click()
    await loadTargetAndDraft(page, target, draft)

    await page.getByTestId('nav-chat').click()
    await page.getByTestId('chat-method').selectOption('sd')
    await page.getByText('Decoding settings').click()
    await page.getByTestId('max-tokens').fill('16')
    await page.getByTestId('temperature').fill('0')
    await page.getByText('Decoding settings').click()
    for (const [i, turn] of TURNS.entries()) {
      await page.getByTestId('chat-input').fill(turn)
      await page.getByTestId('chat-input').press('Enter')
      // Each reply stored (its statistics shown) before the next turn is sent.
      await page.waitForFunction(
        (n) => document.querySelectorAll('[data-testid="message-assistant"] [data-testid="reply-stats"]').length === n && !document.querySelector('[data-testid="message-streaming"]'),
        i + 1
      )
    }
    expect(await page.getByTestId('message-user').allTextContents()).toEqual(TURNS.map((t) => expect.stringContaining(t)))
  }, 180_000)

  it('the conversation is the workload: the advice runs to its end and the card names the conversation’s prompts', async () => {
    const { page } = app
    await page.getByTestId('nav-advisor').click()
    // Listed under the chat conversations, titled by its first message.
    const option = page.getByTestId('adv-dataset').locator('optgroup option', { hasText: TURNS[0].slice(0, 20) })
    await option.waitFor({ state: 'attached' })
    const value = (await option.getAttribute('value'))!
    expect(value).toMatch(/^conversation:\d+$/)
    conversationId = Number(value.split(':')[1])
    await page.getByTestId('adv-dataset').selectOption(value)
    await waitForText(page.getByTestId('adv-dataset').locator('option:checked'), /· 6 messages$/)

    await fillSmallAdvice(page, '')
    await page.getByTestId('adv-run').click()
    await page.getByTestId('adv-progress').waitFor()
    await adviceFinished(page, 330_000)
    expect(await page.getByTestId('adv-job-error').count()).toBe(0)
    expect(await page.getByTestId('adv-progress').getAttribute('data-status')).toBe('done')

    const card = page.getByTestId('adv-card')
    await card.waitFor()
    expect(await page.getByTestId('adv-headline').textContent()).toMatch(/faster than ar \(95 % interval [\d.]+× – [\d.]+×\)|Speculation does not pay here: keep plain decoding \(ar\)/)
    await waitForText(page.getByTestId('adv-speclab-command'), /^speclab /)
    // Three prompts, from the conversation's prompt file.
    await waitForText(card, new RegExp(`3 prompts, \\d+ tokens \\(conversation-${conversationId}-[\\w-]+\\.jsonl\\)`))
    runId = (await page.getByTestId('adv-open-run').textContent())!.replace('#', '')
    problems.push(...(await shot(page, 'advisor-conversation')))
    problems.push(...(await shot(page, 'advisor-conversation', 'dark')))
  }, 400_000)

  it('the file beside the database holds exactly the user’s messages, and the stored run names it as its prompts', async () => {
    const { page } = app
    const workloads = path.join(dir, 'advice-workloads')
    const files = fs.readdirSync(workloads)
    expect(files).toEqual([expect.stringMatching(new RegExp(`^conversation-${conversationId}-[\\w-]+\\.jsonl$`))])
    const file = path.join(workloads, files[0])
    const lines = fs.readFileSync(file, 'utf8').split('\n')
    expect(lines.pop()).toBe('')
    expect(lines.map((line) => JSON.parse(line))).toEqual(TURNS.map((t) => ({ turns: [t] })))

    await page.getByTestId('adv-open-run').click()
    await page.getByTestId(`run-open-${runId}`).waitFor()
    await waitForText(page.getByTestId('run-prompts'), new RegExp(`^${escapeRegExp(file)}$`))
    problems.push(...(await shot(page, 'advisor-conversation-run')))
    problems.push(...(await shot(page, 'advisor-conversation-run', 'dark')))
  }, 60_000)

  it('holds at every size in light and dark, with no page errors', () => {
    expect(problems, problems.join('\n')).toEqual([])
    expect(app.pageErrors).toEqual([])
  })
})
