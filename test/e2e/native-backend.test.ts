/**
 * The Models screen's llama.cpp panel in browser mode: it says which binary the models load on, offers *Build fast
 * CPU backend* only where the CPU runs them on node-llama-cpp's prebuilt binary, and tells the binary in use once a
 * model is loaded. The button is not clicked here: the real build takes minutes and writes node_modules (the click,
 * progress, lock, failure and cancel are tested through the host in test/unit/cpu-build-job.test.ts). Screenshots in
 * light and dark go to test-results/e2e/.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { getLlamaGpuTypes } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chooseLlamaBackend, requestedGpu, type GpuBackend } from '../../electron/engine/model/llama-backend-choice'
import { cpuBuildStatus, cpuHasAvx512 } from '../../electron/engine/model/native-cpu-build'
import { type BrowserApp, closeBrowserApp, missingForE2e, models, openBrowserApp, shotLightAndDark } from '../helpers/browser-app'

const draft = path.join(models, 'stories260K-f32.gguf')
const missing = missingForE2e([draft])
if (missing.length > 0) console.warn(`\n!!! native-backend e2e SKIPPED: missing ${missing.join(', ')} !!!\n`)

let dir: string
let app: BrowserApp

describe.skipIf(missing.length > 0)('Models: the llama.cpp binary', () => {
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-e2e-native-'))
    app = await openBrowserApp(dir)
    await app.page.goto(app.url.href)
  }, 60_000)

  afterAll(() => closeBrowserApp(app, dir))

  it('says which binary models load on, offers the build only over the prebuilt CPU binary, then names the binary in use', async () => {
    const { page } = app
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
    const problems = await shotLightAndDark(page, 'models-native-backend')

    // A load creates the runtime: the panel then names the binary itself.
    await page.getByTestId('model-path').fill(draft)
    await page.getByTestId('model-add').click()
    await expect.poll(() => page.getByTestId('model-added').isVisible()).toBe(true)
    await page.getByTestId('trio-target').selectOption({ label: path.basename(draft) })
    await page.getByTestId('trio-load').click()
    await expect.poll(() => page.getByTestId('trio-loaded').isVisible(), { timeout: 60_000 }).toBe(true)
    const after = choice.binary === 'gpu' ? /llama\.cpp runs on (cuda|vulkan|metal)/ : choice.binary === 'cpu-openmp-build' ? /runs on the CPU: built on this machine/ : /runs on the CPU: node-llama-cpp's prebuilt binary/
    await expect.poll(() => inUse.textContent(), { timeout: 30_000 }).toMatch(after)
    // SpecLab's own CPU build names what it adds; the small-batch routing only where its patch is built in (AVX-512).
    const status = cpuBuildStatus()
    if (choice.binary === 'cpu-openmp-build' && status.installed === 'speclab') {
      const text = (await inUse.textContent()) ?? ''
      expect(text).toMatch(/SpecLab's additions in use: evaluations on the engine's own thread, the one-pass top-k read/)
      const routed = status.key.ggmlPatch >= 2 && cpuHasAvx512() && process.env.SPECLAB_SMALL_BATCH_MATMUL !== '0'
      expect(text.includes("small f16 batches (verification) on ggml's single-token kernel")).toBe(routed)
    }
    problems.push(...(await shotLightAndDark(page, 'models-native-backend-loaded')))
    expect(problems).toEqual([])
  })
})
