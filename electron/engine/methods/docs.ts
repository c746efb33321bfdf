/**
 * Everything users read about methods, generated from the catalog: the UI's method infos (knobs with ranges and
 * help), `speclab run --help`'s method list, the full method table of docs/methods.md and the short one of the
 * README (scripts/generate-methods.ts writes both; a unit test fails when either is stale).
 */
import { CATALOG, type MethodDefinition, type MethodFamily } from './catalog'
import type { MethodGroup } from './groups'
import type { MethodId } from './ids'
import { describeRange, type ParamSpec } from './param-spec'
import { keyOf, needsSharedVocabulary } from './prepare'

export interface MethodParamInfo {
  key: string
  type: ParamSpec['type']
  /** The default; for pre.window, the string 'γ' (the run's --gamma). */
  defaultValue: number | boolean | string
  /** Numeric bounds (null: unbounded above), for the UI's input and its validation hint. */
  min: number | null
  max: number | null
  minExclusive: boolean
  maxExclusive: boolean
  /** "a number in [0, 1]" */
  range: string
  help: string
  symbol: string | null
  source: string | null
}

const GROUP_OF_FAMILY: Record<MethodFamily, MethodGroup> = {
  baseline: 'baselines',
  speculative: 'draft model',
  policy: 'adaptive draft length',
  hierarchy: 'hierarchies',
  beam: 'beam',
  lookup: 'model-free',
  peer: 'peers'
}

export function methodGroup(definition: MethodDefinition): MethodGroup {
  if (definition.family === 'speculative' && !needsSharedVocabulary(definition)) return 'cross-tokenizer'
  if (definition.family === 'speculative' && definition.id.startsWith('sd-tree')) return 'trees'
  return GROUP_OF_FAMILY[definition.family]
}

export interface MethodInfo {
  id: MethodId
  family: MethodFamily
  /** The picker's group (methodGroup). */
  group: MethodGroup
  summary: string
  description: string
  needs: { draft: boolean; mid: boolean }
  /** 'shared': compares token ids across models, the trio must share a vocabulary; 'any': target-only, or the draft may use another tokenizer. */
  vocabulary: 'shared' | 'any'
  lossless: boolean
  /** What γ is to the method; null when it ignores γ. */
  gamma: string | null
  params: MethodParamInfo[]
}

function paramInfo(definition: MethodDefinition, name: string, spec: ParamSpec): MethodParamInfo {
  const numeric = spec.type === 'number' || spec.type === 'integer'
  return {
    key: keyOf(definition, name),
    type: spec.type,
    defaultValue: spec.default === 'gamma' ? 'γ' : spec.default,
    min: numeric ? spec.min : null,
    max: numeric && spec.max !== Infinity ? spec.max : null,
    minExclusive: numeric ? (spec.minExclusive ?? false) : false,
    maxExclusive: numeric ? (spec.maxExclusive ?? false) : false,
    range: describeRange(spec),
    help: spec.help,
    symbol: spec.symbol ?? null,
    source: spec.source ?? null
  }
}

export function methodInfo(definition: MethodDefinition): MethodInfo {
  return {
    id: definition.id,
    family: definition.family,
    group: methodGroup(definition),
    summary: definition.summary,
    description: definition.description,
    needs: { ...definition.needs },
    vocabulary: needsSharedVocabulary(definition) ? 'shared' : 'any',
    lossless: definition.lossless,
    gamma: definition.gamma,
    params: Object.entries(definition.params).map(([name, spec]) => paramInfo(definition, name, spec))
  }
}

export const methodInfos = (): MethodInfo[] => CATALOG.map(methodInfo)

export function modelsText(needs: MethodInfo['needs']): string {
  return ['target', needs.mid ? 'mid' : null, needs.draft ? 'draft' : null].filter(Boolean).join(' + ')
}

/** "(h; SVIP §3.1, Alg. 1)" — where a parameter comes from. */
function origin(param: MethodParamInfo): string {
  const parts = [param.symbol, param.source].filter(Boolean)
  return parts.length > 0 ? ` (${parts.join('; ')})` : ''
}

/**
 * `speclab run --help`'s method list: one line per method, one per parameter. The id column is as wide as the
 * longest id + 2, and every continuation line starts under the summary's text.
 */
export function methodHelp(): string {
  const infos = methodInfos()
  const idWidth = Math.max(...infos.map((info) => info.id.length)) + 2
  const setting = (p: MethodParamInfo) => `${p.key}=${String(p.defaultValue)}`
  const settingWidth = Math.max(0, ...infos.flatMap((info) => info.params.map((p) => setting(p).length))) + 2
  const indent = ' '.repeat(2 + idWidth)
  const lines: string[] = []
  for (const info of infos) {
    lines.push(`  ${info.id.padEnd(idWidth)}${info.summary}`)
    const facts = [`models: ${modelsText(info.needs)}${info.vocabulary === 'any' && info.needs.draft ? ' (any vocabulary)' : ''}`, info.gamma ? `γ: ${info.gamma}` : 'ignores γ', info.lossless ? 'lossless' : 'NOT lossless']
    lines.push(`${indent}${facts.join(' · ')}`)
    for (const p of info.params) lines.push(`${indent}  ${setting(p).padEnd(settingWidth)}${p.help}; ${p.range}${origin(p)}`)
  }
  return lines.join('\n')
}

/** A generated block of a Markdown file: its begin marker (a prefix; the rest of the line says who writes it) and end marker. */
export interface GeneratedBlock {
  begin: string
  end: string
  /** The block, markers included. */
  render(): string
}

const GENERATOR = 'generated by `npm run methods:docs` from electron/engine/methods/catalog.ts'

function paramsCell(info: MethodInfo): string {
  if (info.params.length === 0) return '—'
  return info.params.map((p) => `\`${p.key}=${String(p.defaultValue)}\` ${p.help}; ${p.range}${origin(p)}`).join('<br>')
}

const modelsCell = (info: MethodInfo) => modelsText(info.needs) + (info.vocabulary === 'any' && info.needs.draft ? ' (any vocabulary)' : '')
const cell = (text: string) => text.replace(/\|/g, '\\|')

/** docs/methods.md's method table: every method with its parameters and description, markers included. */
export const METHOD_TABLE: GeneratedBlock = {
  begin: '<!-- method-table:begin',
  end: '<!-- method-table:end -->',
  render() {
    const rows = methodInfos().map((info) =>
      [`\`${info.id}\``, modelsCell(info), info.lossless ? 'yes' : '**no**', info.gamma ?? '—', paramsCell(info), cell(info.description)].join(' | ')
    )
    return [`${this.begin} (${GENERATOR}) -->`, '| id | models | lossless | γ | parameters (`key=default`) | what |', '|---|---|---|---|---|---|', ...rows.map((row) => `| ${row} |`), this.end].join('\n')
  }
}

/** The README's short method table: id, models, lossless and the one-line summary, markers included. */
export const METHOD_SUMMARY: GeneratedBlock = {
  begin: '<!-- method-summary:begin',
  end: '<!-- method-summary:end -->',
  render() {
    const rows = methodInfos().map((info) => [`\`${info.id}\``, modelsCell(info), info.lossless ? 'yes' : '**no**', cell(info.summary)].join(' | '))
    return [`${this.begin} (${GENERATOR}) -->`, '| id | models | lossless | what |', '|---|---|---|---|', ...rows.map((row) => `| ${row} |`), this.end].join('\n')
  }
}

/** docs/methods.md's method table, markers included. */
export const methodTable = (): string => METHOD_TABLE.render()

/** `text` with `block` replaced by its generated form (throws when the markers are missing). */
export function withGeneratedBlock(text: string, block: GeneratedBlock, file = 'the file'): string {
  const begin = text.indexOf(block.begin)
  const end = text.indexOf(block.end)
  if (begin < 0 || end < begin) throw new Error(`${file} has no ${block.begin} … ${block.end} markers`)
  return text.slice(0, begin) + block.render() + text.slice(end + block.end.length)
}

/** docs/methods.md with its method table replaced by the generated one (throws when the markers are missing). */
export const withMethodTable = (text: string): string => withGeneratedBlock(text, METHOD_TABLE, 'docs/methods.md')

/** methods/ids.ts: the ids as data only, so the api contract (and the renderer) can import them without the engine. */
export function idsModule(): string {
  const ids = CATALOG.map((m) => `  '${m.id}'`).join(',\n')
  return (
    '// Generated by `npm run methods:docs` from electron/engine/methods/catalog.ts — do not edit.\n' +
    '/** Method ids (DESIGN.md CLI contract — keep stable; add, never rename). */\n' +
    `export const METHOD_IDS = [\n${ids}\n] as const\n` +
    'export type MethodId = (typeof METHOD_IDS)[number]\n'
  )
}
