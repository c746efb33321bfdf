/**
 * How an advised configuration is deployed (engine/replay/deployment.ts): the llama-server command line at the
 * bundled llama.cpp's flag names, built from the peer methods' own argument code, or null with the reason where
 * llama-server has no equivalent; the `speclab run` line; LM Studio's draft model.
 */
import { describe, expect, it } from 'vitest'
import { llamaServerCommand, llamaServerEquivalent, lmStudioChoice, MD_ALONE_NOTE, speclabCommand, type Configuration } from '../../electron/engine/replay/deployment'
import { serverArguments } from '../../electron/engine/peers/llama-server-process'
import { llamaServerSpeculativeArguments } from '../../electron/engine/methods/catalog'

const THREADS = { threads: 1, batchThreads: 2, draftThreads: 1 }
const T = '/models/target.gguf'
const D = '/models/draft 260K.gguf'
const config = (method: string, gamma: number, params: Configuration['params'] = {}, draftFile: string | null = D): Configuration => ({ method, gamma, params, draftFile })

describe('llamaServerCommand', () => {
  it('sd γ: draft-simple with n_max γ, n_min 0, p_min 0, the draft and every thread count', () => {
    const command = llamaServerCommand(config('sd', 4), T, THREADS)
    expect(command.method).toBe('llama-server:draft')
    expect(command.args).toEqual([
      'llama-server', '-m', T, '-t', '1', '-tb', '2', '-md', D, '-td', '1', '-tbd', '1',
      '--spec-type', 'draft-simple', '--spec-draft-n-max', '4', '--spec-draft-n-min', '0', '--spec-draft-p-min', '0'
    ])
    expect(command.command).toContain("-md '/models/draft 260K.gguf'")
    expect(command.reason).toBeNull()
  })

  it('sd-pmin: its p_min, n_min and n_max (defaults filled in), with what differs from llama.cpp', () => {
    const command = llamaServerCommand(config('sd-pmin', 5, { 'pmin.p': 0.3, 'pmin.max': 8 }), T, THREADS)
    expect(command.args?.slice(-7)).toEqual(['draft-simple', '--spec-draft-n-max', '8', '--spec-draft-n-min', '0', '--spec-draft-p-min', '0.3'])
    expect(command.reason).toMatch(/below p_min/)
    const defaults = llamaServerCommand(config('sd-pmin', 5), T, THREADS)
    expect(defaults.args?.slice(-6)).toEqual(['--spec-draft-n-max', '16', '--spec-draft-n-min', '0', '--spec-draft-p-min', '0.75'])
  })

  it('ngram-simple: its sizes, no draft model', () => {
    const command = llamaServerCommand(config('ngram-simple', 5, { 'ngramsimple.n': 3, 'ngramsimple.m': 8 }, null), T, THREADS)
    expect(command.args).toEqual(['llama-server', '-m', T, '-t', '1', '-tb', '2', '--spec-type', 'ngram-simple', '--spec-ngram-simple-size-n', '3', '--spec-ngram-simple-size-m', '8'])
  })

  it('ar: the server without speculation', () => {
    expect(llamaServerCommand(config('ar', 1, {}, null), T, THREADS).args).toEqual(['llama-server', '-m', T, '-t', '1', '-tb', '2'])
  })

  it('null with the reason where llama-server has no equivalent', () => {
    for (const [method, reason] of [['svip', /entropy/], ['sd+ngram', /one speculative type/], ['pld', /prompt lookup/], ['hier-chen', /no hierarchy/]] as const) {
      const command = llamaServerCommand(config(method, 5), T, THREADS)
      expect(command.command).toBeNull()
      expect(command.reason).toMatch(reason)
    }
    expect(llamaServerEquivalent(config('sd', 3, { 'sd.parallel': true })).method).toBeNull()
  })

  it('the same speculative arguments a llama-server:draft run starts its server with', () => {
    const speculative = llamaServerSpeculativeArguments('llama-server:draft', 3, {})
    expect(speculative).toEqual(['--spec-type', 'draft-simple', '--spec-draft-n-max', '3', '--spec-draft-n-min', '0', '--spec-draft-p-min', '0'])
    const served = serverArguments({ binary: 'x', target: T, draft: D, threads: 1, batchThreads: 2, draftThreads: 1, contextSize: 512, speculative }, 8080)
    const deployed = llamaServerCommand(config('llama-server:draft', 3), T, THREADS).args!
    expect(served.slice(-speculative.length - 6)).toEqual(deployed.slice(-speculative.length - 6))
  })
})

describe('speclabCommand and LM Studio', () => {
  it('the method, γ where it reads it, and the given parameters', () => {
    expect(speclabCommand(config('sd', 4), T)).toBe(`speclab run --target ${T} --draft '${D}' --methods sd --gamma 4`)
    expect(speclabCommand(config('sd-pmin', 5, { 'pmin.p': 0.3 }), T)).toBe(`speclab run --target ${T} --draft '${D}' --methods sd-pmin --set pmin.p=0.3`)
    // A hierarchy names its mid model too.
    const hierarchy = { ...config('hier-chen', 1, { 'chen.m': 2, 'chen.n': 1, 'chen.residual': true }), midFile: '/models/mid.gguf' }
    expect(speclabCommand(hierarchy, T)).toBe(`speclab run --target ${T} --mid /models/mid.gguf --draft '${D}' --methods hier-chen --set chen.m=2 --set chen.n=1 --set chen.residual=true`)
    expect(lmStudioChoice(hierarchy)).toBeNull() // LM Studio drafts with one model
  })

  it('LM Studio: the draft file where a draft model applies', () => {
    expect(lmStudioChoice(config('sd', 4))).toBe('Speculative Decoding → Draft Model: draft 260K.gguf; its draft-length limit, where the version shows one: 4')
    expect(lmStudioChoice(config('ngram-simple', 5, {}, null))).toBeNull()
    // A draft of another vocabulary: llama.cpp's speculation (LM Studio's) needs the target's vocabulary.
    expect(lmStudioChoice(config('sd-tli', 2))).toBeNull()
    expect(lmStudioChoice(config('sd-uad', 2))).toBeNull()
    expect(MD_ALONE_NOTE).toMatch(/-md.*alone drafts nothing.*--spec-type.*none/)
  })
})
