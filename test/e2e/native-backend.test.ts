/**
 * The Models screen's llama.cpp panel in browser mode: it says which binary the models load on, offers *Build fast
 * CPU backend* only where the CPU runs them on node-llama-cpp's prebuilt binary, and tells the binary in use once a
 * model is loaded. The button is not clicked here: the real build takes minutes and writes node_modules (the click,
 * progress, lock, failure and cancel are tested through the host in test/unit/cpu-build-job.test.ts). Screenshots in
 * light and dark go to test-results/e2e/.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { getLlamaGpuTypes } from 'node-llama-cpp'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chooseLlamaBackend, requestedGpu, type GpuBackend } from '../../electron/engine/model/llama-backend-choice'
import { cpuBuildStatus } from '../../electron/engine/model/native-cpu-build'
import { contrastProblems, LAPTOP_AND_DESKTOP, layoutProblems } from '../helpers/layout'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const models = process.env.SPECLAB_MODELS ?? path.resolve(root, '../shared/models')
const chromiumPath = process.env.SPECLAB_CHROMIUM ?? '/usr/bin/chromium'
const shots = path.join(root, 'test-results/e2e')
const draft = path.join(models, 'stories260K-f32.gguf')
const missing = [
  ...(fs.existsSync(draft) ? [] : [draft]),
  ...(fs.existsSync(chromiumPath) ? [] : [chromiumPath]),
  ...(fs.existsSync(path.join(root, 'out/renderer/index.html')) ? [] : ['out/renderer (run `npm run build`)'])
]
if (missing.length > 0) console.warn(`\n!!! native-backend e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

let dir: string
let server: ChildProcess
let browser: Browser
let page: Page

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

async function shot(name: string): Promise<string[]> {
  const problems: string[] = []
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    for (const size of LAPTOP_AND_DESKTOP) {
      await page.setViewportSize(size)
      await page.waitForTimeout(50)
      problems.push(...(await layoutProblems(page)).map((p) => `${name} ${scheme} ${size.width}x${size.height}: ${p}`))
      await page.screenshot({ path: path.join(shots, `${name}-${scheme}-${size.width}x${size.height}.png`) })
    }
    problems.push(...(await contrastProblems(page)).map((p) => `${name} ${scheme}: ${p}`))
  }
  await page.emulateMedia({ colorScheme: 'light' })
  return problems
}

describe.skipIf(missing.length > 0)('Models: the llama.cpp binary', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-native-'))
    fs.mkdirSync(shots, { recursive: true })
    const url = await startServer()
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu'] })
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage()
    page.setDefaultTimeout(60_000)
    await page.goto(url.href)
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

  it('says which binary models load on, offers the build only over the prebuilt CPU binary, then names the binary in use', async () => {
    // What this machine has: the same facts the host reads.
    const gpuBackends = (await getLlamaGpuTypes('supported')).filter((gpu): gpu is GpuBackend => gpu !== false)
    const choice = chooseLlamaBackend({ requested: requestedGpu(), gpuBackends, cpuBuildInstalled: cpuBuildStatus().installed !== null })

    await page.getByTestId('nav-models').click()
    const panel = page.getByTestId('native-backend')
    const inUse = panel.getByTestId('native-backend-in-use')
    const before = { gpu: /Models will load on the GPU/, 'cpu-openmp-build': /CPU build made on this machine with OpenMP/, 'cpu-prebuilt': /prebuilt CPU binary \(without OpenMP\)/ }
    await expect.poll(() => inUse.textContent()).toMatch(before[choice.binary])
    const button = panel.getByTestId('cpu-build-start')
    if (choice.binary === 'cpu-prebuilt') {
      await expect.poll(() => button.isVisible()).toBe(true)
      expect(await panel.textContent()).toMatch(/about 1\.4× faster on 2 cores/)
    } else {
      expect(await button.count()).toBe(0)
    }
    const problems = await shot('models-native-backend')

    // A load creates the runtime: the panel then names the binary itself.
    await page.getByTestId('model-path').fill(draft)
    await page.getByTestId('model-add').click()
    await expect.poll(() => page.getByTestId('model-added').isVisible()).toBe(true)
    await page.getByTestId('trio-target').selectOption({ label: path.basename(draft) })
    await page.getByTestId('trio-load').click()
    await expect.poll(() => page.getByTestId('trio-loaded').isVisible(), { timeout: 60_000 }).toBe(true)
    const after = choice.binary === 'gpu' ? /llama\.cpp runs on (cuda|vulkan|metal)/ : choice.binary === 'cpu-openmp-build' ? /runs on the CPU: built on this machine/ : /runs on the CPU: node-llama-cpp's prebuilt binary/
    await expect.poll(() => inUse.textContent(), { timeout: 30_000 }).toMatch(after)
    problems.push(...(await shot('models-native-backend-loaded')))
    expect(problems).toEqual([])
  })
})
