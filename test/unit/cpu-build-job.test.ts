/**
 * The Models screen's CPU build through the engine host's contract: what it offers on each machine, the job's progress
 * events (validated as the UI validates them), the job lock it holds, failure and cancel. The build itself and the
 * machine are fakes: the real build takes minutes and writes node_modules.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { NativeBackendInfo } from '../../electron/api/app'
import { HostEvent } from '../../electron/api/events'
import type { BuildOptions, CpuBuildStatus } from '../../electron/engine/model/native-cpu-build'
import type { CpuBuildDeps } from '../../electron/host/cpu-build-job'
import { EngineHost } from '../../electron/host/host'

const status = (installed: CpuBuildStatus['installed']): CpuBuildStatus => ({
  key: { commit: 'a'.repeat(40), nodeLlamaCpp: '3.22.1', platform: 'linux', arch: 'x64', cpu: 'Test CPU', cpuHash: '0123456789ab', recipe: 2, addonPatch: 1, ggmlPatch: 1 },
  cacheDir: '/cache/native/x',
  cached: installed !== null,
  installed,
  stale: false
})

/** A build that reports progress and then waits to be told how to end. */
function controllableBuild() {
  let finish!: (seconds: number) => void
  let fail!: (error: Error) => void
  let options!: BuildOptions
  const build = (o: BuildOptions) =>
    new Promise<number>((resolve, reject) => {
      options = o
      finish = resolve
      fail = reject
      o.onProgress?.({ fraction: 0.5, stage: 'compiling (76/152)' })
      o.signal?.addEventListener('abort', () => reject(new Error('killed')))
    })
  return { build, finish: (s: number) => finish(s), fail: (e: Error) => fail(e), options: () => options }
}

let dir: string
let host: EngineHost
let events: HostEvent[]

function openHost(deps: Partial<CpuBuildDeps>): EngineHost {
  events = []
  host = EngineHost.open(
    { databasePath: path.join(dir, 'app.sqlite'), nativeBinding: null, downloadDirectory: path.join(dir, 'downloads'), version: 'test', mode: 'browser' },
    (event) => events.push(HostEvent.parse(event)),
    { cpuBuild: { gpuBackends: async () => [], missingTools: () => [], status: () => status(null), ...deps } }
  )
  return host
}
const jobs = () => events.flatMap((e) => (e.type === 'native:build-progress' ? [e.job] : []))
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5))
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-cpu-build-'))
})
afterEach(async () => {
  await host?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

describe('app:native-backend', () => {
  it('offers the build where the CPU runs the models on the prebuilt binary, and AppInfo says the same', async () => {
    openHost({})
    const info = (await host.request('app:native-backend', {})) as NativeBackendInfo
    expect(info).toMatchObject({ inUse: null, binary: 'cpu-prebuilt', offerBuild: true, cannotBuild: null, restartNeeded: false, job: null })
    expect(((await host.request('app:info', {})) as { native: NativeBackendInfo }).native).toEqual(info)
  })

  it('offers nothing where a GPU backend runs the models', async () => {
    openHost({ gpuBackends: async () => ['cuda'] })
    const info = (await host.request('app:native-backend', {})) as NativeBackendInfo
    expect(info).toMatchObject({ binary: 'gpu', offerBuild: false })
    await expect(host.request('app:build-cpu-backend', {})).rejects.toThrow(/nothing to build: a GPU backend is available \(cuda\)/)
  })

  it('offers nothing once a CPU build is installed', async () => {
    openHost({ status: () => status('speclab') })
    expect(await host.request('app:native-backend', {})).toMatchObject({ binary: 'cpu-openmp-build', offerBuild: false })
  })

  it('says what is missing on a machine without the tools, and refuses to start', async () => {
    openHost({ missingTools: () => ['cmake'] })
    expect(await host.request('app:native-backend', {})).toMatchObject({ offerBuild: true, cannotBuild: expect.stringMatching(/^missing cmake: install/) })
    await expect(host.request('app:build-cpu-backend', {})).rejects.toThrow(/cannot build the CPU backend here: missing cmake/)
  })
})

describe('app:build-cpu-backend', () => {
  it('runs one build at a time under the job lock and pushes its progress until done', async () => {
    const fake = controllableBuild()
    openHost({ build: fake.build })
    const started = (await host.request('app:build-cpu-backend', {})) as NativeBackendInfo
    expect(started.job).toMatchObject({ state: 'running' })
    await until(() => jobs().some((j) => j.fraction === 0.5))
    expect(jobs().at(-1)).toMatchObject({ state: 'running', fraction: 0.5, stage: 'compiling (76/152)' })
    await expect(host.request('app:build-cpu-backend', {})).rejects.toThrow(/already being built/)
    // Nothing else may use the cores meanwhile.
    await expect(host.request('models:unload', {})).rejects.toThrow(/busy \(building the CPU backend\)/)

    fake.finish(321)
    await until(() => jobs().at(-1)?.state === 'done')
    expect(jobs().at(-1)).toEqual({ state: 'done', fraction: 1, stage: 'built', error: null, seconds: 321 })
    expect(await host.request('models:unload', {})).toEqual({ unloaded: false })
    expect(((await host.request('app:native-backend', {})) as NativeBackendInfo).job?.state).toBe('done')
  })

  it('reports a failed build with its output', async () => {
    const fake = controllableBuild()
    openHost({ build: fake.build })
    await host.request('app:build-cpu-backend', {})
    fake.fail(new Error('the CPU build failed (exit 1):\nc++: fatal error'))
    await until(() => jobs().at(-1)?.state === 'failed')
    expect(jobs().at(-1)).toMatchObject({ state: 'failed', error: expect.stringContaining('c++: fatal error') })
  })

  it('cancels', async () => {
    const fake = controllableBuild()
    openHost({ build: fake.build })
    await host.request('app:build-cpu-backend', {})
    expect(await host.request('app:cancel-cpu-build', {})).toEqual({ cancelled: true })
    await until(() => jobs().at(-1)?.state === 'cancelled')
    expect(fake.options().signal?.aborted).toBe(true)
    expect(jobs().at(-1)).toMatchObject({ state: 'cancelled', error: null })
    expect(await host.request('app:cancel-cpu-build', {})).toEqual({ cancelled: false })
  })
})
