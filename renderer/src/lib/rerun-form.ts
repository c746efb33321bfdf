/**
 * "Run again with these settings": a stored run's config as the Workbench's form — its methods, prompt set and
 * limit, repeats, models (found in the model library by path), context size and decoding settings with every method
 * parameter it ran with. What cannot be filled (a model that is not in the library) is said in `notes`, so the user
 * knows what to choose before Run. Threads are left as the form has them: the run's counts were chosen for the
 * machine it ran on.
 */
import type { RunConfig } from '../../../electron/api/runs'
import type { MethodId } from '../../../electron/api/methods'
import type { DecodeForm } from './decode-form'

export interface RerunForm {
  methods: MethodId[]
  /** `builtin:<id>` or `file:<path>` (a file the Workbench imports before it can be chosen). */
  dataset: string
  limit: string
  repeats: string
  suite: string
  models: { target: number | null; mid: number | null; draft: number | null }
  contextSize: string
  fullVocabulary: boolean
  decode: DecodeForm
  /** One sentence per setting that could not be filled. */
  notes: string[]
}

const fileName = (p: string) => p.split(/[\\/]/).pop() ?? p

export function rerunForm(config: RunConfig, library: readonly { id: number; path: string }[], suites: readonly string[]): RerunForm {
  const notes: string[] = []
  const find = (role: string, p: string | null | undefined): number | null => {
    if (!p) return null
    const entry = library.find((m) => m.path === p)
    if (!entry) notes.push(`The ${role} ${fileName(p)} is not in the model library: add it on the Models screen (${p}), or choose another.`)
    return entry?.id ?? null
  }
  const models = { target: find('target', config.models.target), mid: find('mid model', config.models.mid), draft: find('draft', config.models.draft) }
  if (config.suite && !suites.includes(config.suite)) notes.push(`The run was part of suite '${config.suite}', which this SpecLab does not know: it runs as an ad-hoc run.`)
  const dataset = config.prompts.file ? `file:${config.prompts.file}` : `builtin:${config.prompts.dataset ?? 'stories'}`
  return {
    methods: [...config.methods],
    dataset,
    limit: config.prompts.limit === undefined ? '' : String(config.prompts.limit),
    repeats: String(config.repeats),
    suite: config.suite && suites.includes(config.suite) ? config.suite : '',
    models,
    contextSize: String(config.contextSize),
    fullVocabulary: config.sampling.fullVocabulary,
    decode: {
      maxTokens: String(config.maxTokens),
      temperature: String(config.sampling.temperature),
      topK: String(config.sampling.topK),
      topP: String(config.sampling.topP),
      gamma: String(config.gamma),
      seed: String(config.seed),
      params: Object.fromEntries(Object.entries(config.params).map(([k, v]) => [k, String(v)])),
      extra: ''
    },
    notes
  }
}
