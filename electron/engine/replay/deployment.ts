/**
 * How to deploy a configuration the advisor measured: the `speclab run` line, the llama-server command line of the
 * same configuration at the bundled llama.cpp's flag names (or why llama-server has none), and what to pick in LM
 * Studio. The llama-server arguments come from the peer methods' own code (methods/catalog.ts
 * llamaServerSpeculativeArguments, peers/llama-server-process.ts deploymentArguments), so what is printed is what
 * SpecLab itself starts when it runs the `llama-server:*` equivalent.
 */
import path from 'node:path'
import { findMethod, prepare } from '../methods/prepare'
import { isLlamaServerMethod, llamaServerSpeculativeArguments } from '../methods/catalog'
import type { ParamValue } from '../methods/param-spec'
import { deploymentArguments } from '../peers/llama-server-process'

export interface Configuration {
  method: string
  gamma: number
  /** As given (`--set` keys); the catalog's defaults fill the rest. */
  params: Readonly<Record<string, ParamValue>>
  /** The draft model's file; null without one. */
  draftFile: string | null
  /** The mid model's file of a three-model method; absent or null for the others. */
  midFile?: string | null
}

export interface DeployThreads {
  /** The target's threads for one token (`-t`). */
  threads: number
  /** The target's threads for a batch: verification, prompt (`-tb`). */
  batchThreads: number
  /** The draft's (`-td`, `-tbd`). */
  draftThreads: number
}

/** Always said beside a llama-server command: the trap that makes a draft model do nothing. */
export const MD_ALONE_NOTE = '`-md` alone drafts nothing in this llama.cpp: `--spec-type` defaults to none, so give `--spec-type draft-simple` with it'

export type ServerEquivalent = { method: string; gamma: number; params: Record<string, ParamValue>; note: string | null } | { method: null; reason: string }

/** The catalog-resolved parameters of a SpecLab method (full keys, defaults filled in). */
const resolved = (c: Configuration) => prepare(c.method, { gamma: c.gamma, params: c.params }).params

const draftServer = (nMax: number, nMin: number, pMin: number, note: string | null): ServerEquivalent => ({
  method: 'llama-server:draft',
  gamma: nMax,
  params: { 'llamaserver.nMax': nMax, 'llamaserver.nMin': nMin, 'llamaserver.pMin': pMin },
  note
})

/** The `llama-server:*` method that runs the same configuration, or why llama-server has none. */
export function llamaServerEquivalent(c: Configuration): ServerEquivalent {
  const definition = findMethod(c.method)
  if (definition && isLlamaServerMethod(definition)) return { method: c.method, gamma: c.gamma, params: { ...c.params }, note: null }
  switch (c.method) {
    case 'ar':
      return { method: 'llama-server:ar', gamma: c.gamma, params: {}, note: null }
    case 'sd': {
      if (resolved(c)['sd.parallel'] === true) return { method: null, reason: 'llama-server drafts and verifies one after the other; it has no parallel drafting (sd.parallel)' }
      return draftServer(c.gamma, 0, 0, null)
    }
    case 'sd-pmin': {
      const p = resolved(c)
      if (p['pmin.parallel'] === true) return { method: null, reason: 'llama-server drafts and verifies one after the other; it has no parallel drafting (pmin.parallel)' }
      return draftServer(Number(p['pmin.max']), Number(p['pmin.min']), Number(p['pmin.p']), "SpecLab still verifies the token below p_min, and n_min is a floor for the check rather than llama.cpp's \"discard shorter drafts\"")
    }
    case 'ngram-simple': {
      const p = resolved(c)
      return { method: 'llama-server:ngram-simple', gamma: c.gamma, params: { 'llamaserver.ngramN': Number(p['ngramsimple.n']), 'llamaserver.ngramM': Number(p['ngramsimple.m']) }, note: null }
    }
    case 'svip':
      return { method: null, reason: "llama-server has no entropy-bounded draft length (SVIP); its nearest is a confidence floor, --spec-draft-p-min (SpecLab's sd-pmin)" }
    case 'sd+ngram':
      return { method: null, reason: 'llama-server runs one speculative type at a time: a draft model or an n-gram lookup, not one after the other (sd+ngram)' }
    case 'hier-chen':
      return { method: null, reason: 'llama-server drafts with one draft model; it has no hierarchy of draft models (hier-chen)' }
    case 'pearl':
      return { method: null, reason: 'llama-server drafts and verifies one after the other; it has no parallel drafting (PEARL)' }
    case 'pld':
      return { method: null, reason: "llama-server has no prompt lookup decoding (pld); its nearest is --spec-type ngram-simple (SpecLab's ngram-simple)" }
    default:
      return { method: null, reason: `llama-server has no equivalent of ${c.method}` }
  }
}

/** POSIX shell quoting where needed, so a printed command can be pasted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

export interface ServerCommand {
  /** ['llama-server', '-m', T, …]; null when llama-server has no equivalent. */
  args: string[] | null
  /** The one line to paste; null as `args`. */
  command: string | null
  /** The `llama-server:*` method it is (what `speclab run --methods` measures it as); null as `args`. */
  method: string | null
  /** Why there is none, or what differs from SpecLab's method; null when nothing does. */
  reason: string | null
}

/** The llama-server command line that runs `c` on `targetFile` with these threads. */
export function llamaServerCommand(c: Configuration, targetFile: string, threads: DeployThreads): ServerCommand {
  const equivalent = llamaServerEquivalent(c)
  if (equivalent.method === null) return { args: null, command: null, method: null, reason: equivalent.reason }
  const usesDraft = findMethod(equivalent.method)?.needs.draft ?? false
  if (usesDraft && c.draftFile === null) return { args: null, command: null, method: null, reason: `${equivalent.method} needs a draft model` }
  const args = [
    'llama-server',
    ...deploymentArguments({
      target: targetFile,
      draft: usesDraft ? c.draftFile : null,
      threads: threads.threads,
      batchThreads: threads.batchThreads,
      draftThreads: threads.draftThreads,
      speculative: llamaServerSpeculativeArguments(equivalent.method, equivalent.gamma, equivalent.params)
    })
  ]
  return { args, command: args.map(shellWord).join(' '), method: equivalent.method, reason: equivalent.note }
}

/** `speclab run` with the method, γ where the method reads it, and the given parameters. */
export function speclabCommand(c: Configuration, targetFile: string): string {
  const gamma = findMethod(c.method)?.gamma ? ['--gamma', String(c.gamma)] : []
  const params = Object.entries(c.params).flatMap(([key, value]) => ['--set', `${key}=${value}`])
  const draft = c.draftFile === null ? [] : ['--draft', c.draftFile]
  const mid = c.midFile ? ['--mid', c.midFile] : []
  return ['speclab', 'run', '--target', targetFile, ...mid, ...draft, '--methods', c.method, ...gamma, ...params].map(shellWord).join(' ')
}

/**
 * What to choose in LM Studio, whose speculative decoding is llama.cpp's draft-model speculation: the draft model
 * file in its Speculative Decoding draft model picker. null when no draft model applies (ar, the lookups) or when
 * the method maps between vocabularies (sd-tli, sd-uad): llama.cpp's speculation needs the target's vocabulary, and
 * drafts with one model (no hierarchy).
 */
export function lmStudioChoice(c: Configuration): string | null {
  const definition = findMethod(c.method)
  if (c.draftFile === null || !definition?.needs.draft || definition.needs.mid || definition.vocabulary === 'any') return null
  const equivalent = llamaServerEquivalent(c)
  const cap = equivalent.method === 'llama-server:draft' ? `; its draft-length limit, where the version shows one: ${equivalent.gamma}` : ''
  return `Speculative Decoding → Draft Model: ${path.basename(c.draftFile)}${cap}`
}
