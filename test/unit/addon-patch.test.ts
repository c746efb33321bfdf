/**
 * SpecLab's patch to node-llama-cpp's addon (electron/engine/model/addon-patch.ts): it applies to the node-llama-cpp
 * this checkout installs, is recognised where a killed build left it applied, refuses another version's source
 * without writing anything, and always puts npm's files back. What the patched build does is checked on the real
 * binary by test/integration/direct-evaluation-gguf.test.ts.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ADDON_PATCH_REVISION, applyAddonPatch, patchedAddonSources } from '../../electron/engine/model/addon-patch'
import { cpuBuildKey, nodeLlamaCppDir } from '../../electron/engine/model/native-cpu-build'

const installed = nodeLlamaCppDir()
const SOURCES = ['llama/addon/AddonContext.cpp', 'llama/addon/AddonContext.h']

describe('the addon patch', () => {
  let copy: string

  beforeEach(() => {
    // A copy of the installed package's parts the patch and the build key read.
    copy = fs.mkdtempSync(path.join(os.tmpdir(), 'speclab-addon-patch-'))
    for (const file of [...SOURCES, 'package.json', 'llama/gitRelease.bundle']) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true })
      fs.copyFileSync(path.join(installed, file), path.join(copy, file))
    }
  })
  afterEach(() => fs.rmSync(copy, { recursive: true, force: true }))

  const read = (file: string) => fs.readFileSync(path.join(copy, file), 'utf8')

  it('applies to the installed node-llama-cpp and adds the two calls, then puts npm’s files back', () => {
    const npm = SOURCES.map(read)
    const restore = applyAddonPatch(copy)
    expect(restore, 'the patch no longer applies to this node-llama-cpp: update addon-patch.ts').not.toBeNull()
    expect(read(SOURCES[0]!)).toContain('InstanceMethod("decodeBatchNow", &AddonContext::DecodeBatchNow)')
    expect(read(SOURCES[0]!)).toContain('InstanceMethod("sampleTokenNow", &AddonContext::SampleTokenNow)')
    expect(read(SOURCES[1]!)).toContain('Napi::Value DecodeBatchNow(const Napi::CallbackInfo& info);')
    restore!()
    expect(SOURCES.map(read)).toEqual(npm)
    expect(cpuBuildKey(copy).addonPatch).toBe(ADDON_PATCH_REVISION)
  })

  it('recognises sources a killed build left patched, and restores npm’s text from them', () => {
    const npm = SOURCES.map(read)
    applyAddonPatch(copy) // never restored: the build was killed
    const patched = SOURCES.map(read)
    const restore = applyAddonPatch(copy)
    expect(restore).not.toBeNull()
    expect(SOURCES.map(read)).toEqual(patched)
    restore!()
    expect(SOURCES.map(read)).toEqual(npm)
  })

  it('another version’s source: nothing is written, and the build key says the build is unpatched', () => {
    const foreign = read(SOURCES[0]!).replace('InstanceMethod("sampleToken", &AddonContext::SampleToken),', 'InstanceMethod("sampleToken", &AddonContext::SampleTokenV2),')
    fs.writeFileSync(path.join(copy, SOURCES[0]!), foreign)
    const header = read(SOURCES[1]!)
    expect(patchedAddonSources(copy)).toBeNull()
    expect(applyAddonPatch(copy)).toBeNull()
    expect(read(SOURCES[0]!)).toBe(foreign)
    expect(read(SOURCES[1]!)).toBe(header)
    expect(cpuBuildKey(copy).addonPatch).toBe(0)
  })
})
