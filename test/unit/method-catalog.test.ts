/**
 * The method catalog is the one source of truth: schemas round-trip their defaults, every bad key or
 * value of every method is refused with one message naming the key and the valid ones, duplicate ids are refused,
 * what is generated from the catalog (ids.ts, the method tables of docs/methods.md and the README, the UI's knobs,
 * --help) is current, and the engine
 * imports nothing from api/, host/, store/ or electron.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { UserInputError } from '../../electron/engine/errors'
import { CATALOG, checkCatalog, isLlamaServerMethod } from '../../electron/engine/methods/catalog'
import { idsModule, METHOD_SUMMARY, methodHelp, methodInfos, methodTable, withGeneratedBlock, withMethodTable } from '../../electron/engine/methods/docs'
import { METHOD_IDS } from '../../electron/engine/methods/ids'
import { METHOD_GROUPS } from '../../electron/engine/methods/groups'
import { keysOf, prepare, prepareRun } from '../../electron/engine/methods/prepare'
import type { ParamSpec } from '../../electron/engine/methods/param-spec'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const read = (relative: string) => fs.readFileSync(path.join(root, relative), 'utf8')

/** The message of the UserInputError fn throws (fails the test if it throws anything else or nothing). */
function refusal(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(UserInputError)
    return (error as Error).message
  }
  throw new Error('expected a UserInputError')
}

/** Values a spec must refuse: the wrong type, and just outside each finite bound. */
function badValues(spec: ParamSpec): (number | string | boolean)[] {
  if (spec.type === 'boolean') return [1, 'yes']
  if (spec.type === 'path') return [1, true, 'x'.repeat(5000), 'a\0b']
  if (spec.type === 'url') return [1, true, 'ftp://host', 'localhost:8080', 'http://', `http://h/${'x'.repeat(3000)}`]
  const bad: (number | string | boolean)[] = ['abc', true, spec.minExclusive ? spec.min : spec.min - 1]
  if (spec.max !== Infinity) bad.push(spec.maxExclusive ? spec.max : spec.max + 1)
  if (spec.type === 'integer') bad.push(spec.min + 0.5)
  return bad
}

describe('method catalog', () => {
  it('lists every contract id exactly once, in the contract order (methods/ids.ts is generated from it)', () => {
    expect(CATALOG.map((m) => m.id)).toEqual([...METHOD_IDS])
    expect(read('electron/engine/methods/ids.ts')).toBe(idsModule())
    // A catalog that declares an id twice, or gives a shared namespace two meanings, does not load.
    expect(() => checkCatalog([...CATALOG, CATALOG[1]])).toThrow("method catalog: 'sd' is declared twice")
    const preVerify = CATALOG.find((m) => m.id === 'pre-verify')!
    expect(() => checkCatalog([...CATALOG.filter((m) => m.id !== 'pre-verify'), { ...preVerify, params: { ...preVerify.params } }])).toThrow(
      "method catalog: pre-verify and pre-self-verify share the namespace 'pre' but not its parameters"
    )
  })

  it('every schema round-trips its defaults: resolving the resolved settings changes nothing', () => {
    for (const definition of CATALOG) {
      // A peer method needs llama-server: built, or a server's URL (refused without both — see below).
      const start: Record<string, string> = isLlamaServerMethod(definition) ? { 'llamaserver.url': 'http://127.0.0.1:8080' } : {}
      const first = prepare(definition.id, { gamma: 5, params: start })
      expect(Object.keys(first.params).sort(), definition.id).toEqual(keysOf(definition).sort())
      const again = prepare(definition.id, { gamma: 5, params: first.params })
      expect(again.params, definition.id).toEqual(first.params)
      expect(typeof first.newRun()(), definition.id).toBe('function')
    }
    // The one default that depends on the run: pre.window = γ.
    expect(prepare('pre-verify', { gamma: 7, params: {} }).params).toEqual({ 'pre.window': 7 })
  })

  it.each(CATALOG.map((m) => [m.id, m] as const))('%s refuses a misspelled key, naming it and the valid keys', (id, definition) => {
    const message = refusal(() => prepare(id, { gamma: 5, params: { [`${definition.namespace}.typo`]: 1 } }))
    const valid = keysOf(definition)
    expect(message).toBe(`${definition.namespace}.typo is not a parameter of ${id} (${id} takes ${valid.length > 0 ? valid.join(', ') : 'no parameters'})`)
  })

  it.each(CATALOG.filter((m) => Object.keys(m.params).length > 0).map((m) => [m.id, m] as const))(
    '%s refuses every out-of-range or mistyped value, naming the key',
    (id, definition) => {
      for (const [name, spec] of Object.entries(definition.params))
        for (const value of badValues(spec)) {
          const key = `${definition.namespace}.${name}`
          const message = refusal(() => prepare(id, { gamma: 64, params: { [key]: value } }))
          expect(message.startsWith(`${key} (${id}) must be `), message).toBe(true)
          expect(message.endsWith(`, got ${JSON.stringify(value)}`), message).toBe(true)
        }
    }
  )

  it('rules between parameters name the offending key', () => {
    expect(refusal(() => prepare('sd-pmin', { gamma: 5, params: { 'pmin.min': 5, 'pmin.max': 3 } }))).toMatch(/^pmin\.min must be at most pmin\.max \(3\)/)
    expect(refusal(() => prepare('dsbd', { gamma: 2, params: { 'dsbd.ws': 2, 'dsbd.wmin': 3 } }))).toMatch(/^dsbd\.wmin must be at most dsbd\.ws/)
    expect(refusal(() => prepare('nlc-draft', { gamma: 3, params: { 'nlc.minTokens': 4 } }))).toMatch(/^nlc\.minTokens must be at most γ \(3\)/)
  })

  it('a key of a method not in the run, of no method, or γ out of range: one message each', () => {
    expect(refusal(() => prepareRun(['ar', 'sd'], { gamma: 5, params: { 'svip.h': 0.2 } }))).toBe(
      'svip.h is not a parameter of ar or sd (ar takes no parameters; sd takes sd.parallel): it belongs to svip, which is not in this run'
    )
    expect(refusal(() => prepareRun(['svip'], { gamma: 5, params: { 'svp.h': 0.2 } }))).toBe(
      'svp.h is not a parameter of svip (svip takes svip.parallel, svip.h, svip.c, svip.maxDraft, svip.warpedEntropy)'
    )
    expect(refusal(() => prepareRun(['pre-verify'], { gamma: 5, params: { 'dsbd.ws': 2 } }))).toMatch(/dsbd\.ws is not a parameter of pre-verify \(pre-verify takes pre\.window\): it belongs to dsbd \/ dsbd-1beam, which are not in this run/)
    expect(refusal(() => prepare('sd', { gamma: 0, params: {} }))).toBe('γ must be an integer in [1, 128], got 0')
    // Shared namespaces: both pre-verify methods take pre.window.
    expect(prepareRun(['pre-verify', 'pre-self-verify'], { gamma: 4, params: { 'pre.window': 6 } }).params).toEqual({ 'pre.window': 6 })
  })

  it('a llama-server:* method without a built llama-server or a server URL is refused before the run, naming the build command', () => {
    const saved = process.env.SPECLAB_LLAMA_SERVER
    process.env.SPECLAB_LLAMA_SERVER = '/nonexistent/llama-server'
    try {
      expect(refusal(() => prepare('llama-server:draft', { gamma: 5, params: {} }))).toBe('SPECLAB_LLAMA_SERVER=/nonexistent/llama-server does not exist')
      expect(prepare('llama-server:draft', { gamma: 5, params: { 'llamaserver.url': 'http://gpu-box:8080' } }).params['llamaserver.nMax']).toBe(5)
    } finally {
      if (saved === undefined) delete process.env.SPECLAB_LLAMA_SERVER
      else process.env.SPECLAB_LLAMA_SERVER = saved
    }
    expect(refusal(() => prepare('llama-server:ar', { gamma: 5, params: { 'llamaserver.url': 'ftp://x' } }))).toMatch(/^llamaserver\.url \(llama-server:ar\) must be an http:\/\/ or https:\/\/ URL/)
  })

  it('refuses duplicate and unknown ids, and missing models', () => {
    expect(refusal(() => prepareRun(['ar', 'sd', 'ar'], { gamma: 5, params: {} }))).toBe("method 'ar' is listed twice")
    expect(refusal(() => prepareRun(['warp-drive'], { gamma: 5, params: {} }))).toMatch(/^unknown method 'warp-drive' \(methods: ar, sd, /)
    expect(refusal(() => prepareRun(['ar', 'hsddw'], { gamma: 5, params: {} }, { draft: true, mid: false }))).toBe("method 'hsddw' needs a mid model")
  })

  it('a run records the resolved parameters of its methods', () => {
    const run = prepareRun(['ar', 'svip', 'dsbd'], { gamma: 3, params: { 'svip.h': 0.2, 'dsbd.ws': 2 } })
    expect(run.params).toEqual({ 'svip.parallel': false, 'svip.h': 0.2, 'svip.c': 0.15, 'svip.maxDraft': 40, 'svip.warpedEntropy': false, 'dsbd.ws': 2, 'dsbd.t': 0.9, 'dsbd.wmin': 1, 'dsbd.fixedWidth': 0 })
    expect(run.sessions).toBe(2 + 3 * 2)
  })

  it('the UI gets every key of every method with type, default, range and help (pre.window and nlc.* included)', () => {
    const infos = methodInfos()
    expect(infos.map((m) => m.id)).toEqual([...METHOD_IDS])
    for (const info of infos) expect(info.params.map((p) => p.key), info.id).toEqual(keysOf(CATALOG.find((m) => m.id === info.id)!))
    const keys = infos.flatMap((m) => m.params)
    expect(keys.find((p) => p.key === 'pre.window')).toMatchObject({ type: 'integer', defaultValue: 'γ', min: 1 })
    expect(keys.find((p) => p.key === 'nlc.minConfidence')).toMatchObject({ type: 'number', defaultValue: 0.6, min: 0, max: 1, range: 'a number in [0, 1]' })
    for (const p of keys) expect(p.help.length, p.key).toBeGreaterThan(5)
    // JSON-safe (the UI receives it over IPC / WebSocket): no Infinity.
    expect(JSON.parse(JSON.stringify(infos))).toEqual(infos)
  })

  it('--help lists every method and every parameter with its default', () => {
    const help = methodHelp()
    for (const info of methodInfos()) {
      expect(help).toContain(`  ${info.id} `)
      for (const p of info.params) expect(help).toContain(`${p.key}=${String(p.defaultValue)}`)
    }
  })

  it('docs/methods.md holds the generated method table (npm run methods:docs)', () => {
    const methods = read('docs/methods.md')
    expect(methods).toContain(methodTable())
    expect(withMethodTable(methods)).toBe(methods)
  })

  it("the README's short method table is the generated one and lists every method (npm run methods:docs)", () => {
    const readme = read('README.md')
    expect(readme).toContain(METHOD_SUMMARY.render())
    expect(withGeneratedBlock(readme, METHOD_SUMMARY)).toBe(readme)
    for (const info of methodInfos()) expect(readme).toContain(`| \`${info.id}\` |`)
    expect(readme).toContain('docs/methods.md')
  })

  it('no engine file imports electron, api/, host/ or store/', () => {
    const files = fs.readdirSync(path.join(root, 'electron/engine'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
    expect(files.length).toBeGreaterThan(30)
    for (const file of files) {
      const source = read(path.join('electron/engine', file))
      const imports = [...source.matchAll(/^import .* from '([^']+)'/gm)].map((m) => m[1])
      for (const specifier of imports) expect(specifier, file).not.toMatch(/^electron$|\/(api|host|store)\//)
    }
  })
})

describe('method picker groups', () => {
  it('puts every method in one group of METHOD_GROUPS, trees and cross-tokenizer drafts apart, and every group is used', () => {
    const infos = methodInfos()
    const groupOf = Object.fromEntries(infos.map((info) => [info.id, info.group]))
    expect(infos.every((info) => (METHOD_GROUPS as readonly string[]).includes(info.group))).toBe(true)
    expect(new Set(infos.map((info) => info.group))).toEqual(new Set(METHOD_GROUPS))
    expect([groupOf['ar'], groupOf['sd'], groupOf['svip'], groupOf['hsddw'], groupOf['dsbd'], groupOf['pld']]).toEqual([
      'baselines',
      'draft model',
      'adaptive draft length',
      'hierarchies',
      'beam',
      'model-free'
    ])
    expect([groupOf['sd-tli'], groupOf['sd-uad'], groupOf['sd-tree'], groupOf['sd-tree+ngram'], groupOf['llama-server:draft']]).toEqual([
      'cross-tokenizer',
      'cross-tokenizer',
      'trees',
      'trees',
      'peers'
    ])
  })
})
