/**
 * The registry of experiment suites: named recipes that reproduce the papers' tables and figures. The
 * app's Experiments menu and the Workbench's suite picker list exactly these entries, so a suite appears in the UI
 * the moment it is registered here.
 *
 * A suite's `preset` is what the Workbench pre-fills when it is chosen (methods, dataset, decoding settings): the
 * suite's main cell as one run, stored with `suite = id`. The whole recipe is the rest of the entry —
 * methods × parameter grid × dataset (`cells`, one ordinary run per cell), the models it loads, and the tables and
 * charts its report contains (`tables`, `charts`; experiments/reports/ builds them from the stored steps). It runs
 * with `speclab suite <id> [--quick]` (cli/suite-command.ts) or from code through experiments/suite-runner.ts.
 *
 * Models (files under $SPECLAB_MODELS, default ../shared/models): speed suites default to the inflated target
 * (target5M's function with a 78M model's compute, so cost ratios are realistic); `--quick` uses target5M-f32,
 * the same function at 1/14 of the cost, so CI runs every suite in seconds. Every file can be replaced with
 * --target/--mid/--draft. This file is pure data (the Electron main process imports it for the menu).
 */
import type { MethodId, ParamValue } from '../api/methods'
import type { SuitePreset } from '../api/suites'
import { UserInputError } from '../engine/errors'

/** A prompt set of a suite: a built-in set, a file of ../shared/datasets, or any JSONL file. */
export interface DatasetSpec {
  /** Short id used in cell keys ('mt-bench'). */
  id: string
  /** Column label in reports ('MT-Bench'). */
  label: string
  builtin?: string
  /** File name in the shared datasets folder ($SPECLAB_DATASETS, default ../shared/datasets). */
  shared?: string
  /** Any JSONL prompt file (absolute path). */
  file?: string
  limit?: number
  perCategory?: number
}

export type SamplingPreset = { temperature: number; topK: number; topP?: number }

/** One grid point = one stored run (executeRun) of `methods` over the cell's prompts. */
export interface SuiteCell {
  /** Stable within the suite: a resumed suite run skips the keys it has finished. */
  key: string
  methods: MethodId[]
  dataset: DatasetSpec
  /** Which loaded model is the draft of the run: M_q1 (`draft`, default) or M_q2 (`mid`, e.g. HSDDW's "70b-7b"). */
  draft?: 'draft' | 'mid'
  /** 004 §5 adaptive draft-model selection between M_q1 and M_q2 (warm-up prompts: 3). */
  selectDraft?: boolean
  gamma: number
  maxTokens: number
  /** Prompts are chosen among those that fit the context with this many new tokens (default maxTokens), so cells
   * sweeping the generation length share one prompt set. */
  fitTokens?: number
  sampling: SamplingPreset
  params?: Record<string, ParamValue>
  /** Score outputs under the raw target (perplexity, stored in result_scores): every method's, or the listed ones'
   * (scoring re-evaluates prompt + output on the target, as costly as a decode's prefill). */
  score?: boolean | MethodId[]
  /** The grid coordinates, for the report ({K: 4}, {h: 0.3}, …). */
  labels: Record<string, string | number>
}

export interface GridContext {
  quick: boolean
  /** The suite's datasets, or the one given with --dataset / --prompts. */
  datasets: DatasetSpec[]
  /** --max-tokens: replaces the tokens per prompt of cells that do not sweep the generation length. */
  maxTokens?: number
}

export interface ReportArtifact {
  id: string
  title: string
}

export interface SuiteDefinition {
  id: string
  name: string
  description: string
  preset: SuitePreset
  /** The paper the suite reproduces (../shared/papers/<file>); null for the smoke suite. */
  paper: { file: string; title: string } | null
  /** Model files relative to the shared models folder; `quick` replaces the target under --quick. */
  models: { target: string; quickTarget: string; mid: string | null; draft: string }
  /** The default datasets (the columns of the paper's tables), full and --quick. */
  datasets(quick: boolean): DatasetSpec[]
  cells(context: GridContext): SuiteCell[]
  /** The report's sections that mirror a table / a figure (section ids; a section may hold more tables and charts
   * than its name says) — the tests check each is rendered with data. */
  tables: ReportArtifact[]
  charts: ReportArtifact[]
  /** Rough wall time on a 2-core CPU, one thread per model (for help texts; the full grids use the inflated target). */
  estimate: { full: string; quick: string }
}

export const MODEL_FILES = {
  inflated: 'family/stories-target5M-inflated-78M-f16.gguf',
  target: 'family/stories-target5M-f32.gguf',
  mid: 'family/stories-mid1M-f32.gguf',
  draft: 'stories260K-f32.gguf'
} as const

const TRIO = { target: MODEL_FILES.inflated, quickTarget: MODEL_FILES.target, mid: MODEL_FILES.mid, draft: MODEL_FILES.draft }
const PAIR = { ...TRIO, mid: null }

const builtin = (id: string, extra: Partial<DatasetSpec> = {}): DatasetSpec => ({ id, label: id, builtin: id, ...extra })
/** MT-Bench lists its 8 categories in blocks of 10: one per category covers writing … math, coding, humanities. */
const MT_BENCH = (limit?: number): DatasetSpec => ({ id: 'mt-bench', label: 'MT-Bench', shared: 'mt_bench.jsonl', perCategory: 1, limit })
const HUMANEVAL = (limit: number): DatasetSpec => ({ id: 'humaneval', label: 'HumanEval', shared: 'humaneval.jsonl', limit })
const GSM8K = (limit: number): DatasetSpec => ({ id: 'gsm8k', label: 'GSM8K', shared: 'gsm8k_test.jsonl', limit })

/** --max-tokens replaces a cell's default length; sweeps of the length keep theirs. */
const tokens = (context: GridContext, full: number, quick: number) => context.maxTokens ?? (context.quick ? quick : full)

// ─── smoke ──────────────────────────────────────────────────────────────────────────────────────────────────────
const smoke: SuiteDefinition = {
  id: 'smoke',
  name: 'Smoke test (ar, sd, svip, hsddw, dsbd)',
  description:
    'A first look: ar, sd, svip, hsddw and dsbd on the trio, one prompt per built-in category; speedup, ' +
    'acceptance, σ, η and perplexity per method, next to each paper\'s headline number. Also the CI suite.',
  preset: { methods: ['ar', 'sd', 'svip', 'hsddw', 'dsbd'], dataset: 'mixed', limit: 4, maxTokens: 64, temperature: 1, topK: 64, gamma: 5, params: { 'dsbd.ws': 2 } },
  paper: null,
  models: TRIO,
  datasets: (quick) => [quick ? builtin('stories', { limit: 1 }) : builtin('mixed', { perCategory: 1 })],
  cells: (context) =>
    context.datasets.map((dataset) => ({
      key: `smoke/${dataset.id}`,
      methods: ['ar', 'sd', 'svip', 'hsddw', 'dsbd'],
      dataset,
      gamma: 5,
      maxTokens: tokens(context, 64, 8),
      sampling: { temperature: 1, topK: 64 },
      params: { 'dsbd.ws': 2 },
      // Beam quality vs multinomial sampling; the lossless methods sample ar's law.
      score: ['ar', 'dsbd'],
      labels: { dataset: dataset.label }
    })),
  tables: [
    { id: 'summary', title: 'Every method on the same prompts' },
    { id: 'categories', title: 'Speedup per prompt category' },
    { id: 'headlines', title: "The papers' headline numbers" }
  ],
  charts: [
    { id: 'speedup', title: 'Speedup over ar' },
    { id: 'gamma', title: 'Draft length per round (first prompt)' }
  ],
  estimate: { full: '~2 min', quick: '~10 s' }
}

// ─── hsddw-ablation ─────────────────────────────────────────────────────────────────────────────────────────────
/** HSDDW App. A.1: K = 10, temperature 1. */
const HSDDW_K = 10
/** K for every method of the cell that has a window parameter (a run refuses keys of methods it does not run). */
const hsddwParams = (K: number, methods: readonly MethodId[]) => ({
  ...(methods.includes('self-verify') ? { 'selfverify.maxDraft': K } : {}),
  ...(methods.includes('pre-verify') || methods.includes('pre-self-verify') ? { 'pre.window': K } : {})
})

const hsddwAblation: SuiteDefinition = {
  id: 'hsddw-ablation',
  name: 'HSDDW ablation (Tables 2–4, Figures 6–8)',
  description:
    'sd, +pre-verify, +self-verify, pre+self and hsddw on the trio (M_q1 = stories260K, M_q2 = mid1M, M_p = target) → ' +
    'speedup per dataset (Table 2), σ/η (Table 4), math vs the rest (Table 3), window size over time (Figure 8), ' +
    'entropies of accepted vs rejected drafts (Figure 6), speed across window sizes K (Figure 7).',
  preset: {
    methods: ['ar', 'sd', 'self-verify', 'pre-verify', 'pre-self-verify', 'hsddw'],
    dataset: 'mixed',
    limit: 4,
    maxTokens: 128,
    temperature: 1,
    topK: 64,
    gamma: HSDDW_K,
    params: hsddwParams(HSDDW_K, ['self-verify', 'pre-verify'])
  },
  paper: { file: 'hsddw-hierarchical-sd-dynamic-window.txt', title: 'Hierarchical Speculative Decoding with Dynamic Windows (HSDDW)' },
  models: TRIO,
  datasets: (quick) => (quick ? [builtin('mixed', { perCategory: 1 })] : [MT_BENCH(), HUMANEVAL(4), GSM8K(4)]),
  cells: (context) => {
    const maxTokens = tokens(context, 128, 12)
    const sampling = { temperature: 1, topK: 64 }
    const cells: SuiteCell[] = []
    const pair = (prefix: string, dataset: DatasetSpec, K: number, trio: MethodId[], labels: Record<string, string | number>) => {
      cells.push({ key: `${prefix}/trio`, methods: trio, dataset, gamma: K, maxTokens, sampling, params: hsddwParams(K, trio), labels })
      // "70b-7b": the mid model as the only draft (a run has one --draft, so this is its own run).
      cells.push({ key: `${prefix}/mid`, methods: ['ar', 'sd'], dataset, draft: 'mid', gamma: K, maxTokens, sampling, labels })
    }
    for (const dataset of context.datasets)
      pair(`table2/${dataset.id}`, dataset, HSDDW_K, ['ar', 'sd', 'self-verify', 'pre-verify', 'pre-self-verify', 'hsddw'], {
        dataset: dataset.label,
        K: HSDDW_K
      })
    // Figure 7 on the first dataset; K = 10 is Table 2's cell.
    const first = context.datasets[0]
    for (const K of context.quick ? [4] : [2, 4, 6, 8, 12])
      pair(`fig7/K=${K}`, first, K, ['ar', 'sd', 'pre-self-verify', 'hsddw'], { dataset: first.label, K })
    return cells
  },
  tables: [
    { id: 'table2', title: 'Table 2: ablation, speedup over ar' },
    { id: 'table3', title: 'Table 3: math prompts vs the rest' },
    { id: 'table4', title: 'Table 4: redundancy σ and target utilisation η' },
    { id: 'levels', title: 'Per-level acceptance and theory' }
  ],
  charts: [
    { id: 'fig6', title: 'Figure 6: draft entropy of accepted vs rejected tokens' },
    { id: 'fig7', title: 'Figure 7: speed across window sizes K' },
    { id: 'fig8', title: 'Figure 8: window size over time for one prompt' }
  ],
  estimate: { full: '~35 min', quick: '~15 s' }
}

// ─── svip ───────────────────────────────────────────────────────────────────────────────────────────────────────
const SVIP_H_GRID = [0.2, 0.3, 0.4, 0.5]
/** §3.1: h = 0.3 for Qwen2.5 and LLaMA-3 (0.4 for Pythia); §3.2 keeps the §3.1 settings. */
export const SVIP_H_MAIN = 0.3
/**
 * §3.1: "we limit the maximum draft length to 40 in both heuristics and SVIP scenarios" (the authors' code,
 * vanilla-sd/eval_specbench.py: `min(num_assistant_tokens + 2, 40)` and every draft cut at `min(40, …)`). SVIP's
 * own cap is svip.maxDraft (default 40, set here too so the suite says it); the heuristic gets heuristic.maxDraft;
 * the constant baseline drafts γ = 5 < 40. The same code restarts the heuristic at 5 for every prompt (HF's
 * "heuristic_transient"), so the suite's heuristic is transient too.
 */
export const SVIP_MAX_DRAFT = 40
const HEURISTIC_AS_SVIP = { 'heuristic.maxDraft': SVIP_MAX_DRAFT, 'heuristic.transient': true } as const
const SVIP_CAPS = { ...HEURISTIC_AS_SVIP, 'svip.maxDraft': SVIP_MAX_DRAFT } as const

const svip: SuiteDefinition = {
  id: 'svip',
  name: 'SVIP (Tables 1–2, Figure 5)',
  description:
    'Constant γ = 5, the Hugging Face heuristic and SVIP over its h grid on the pair target ← stories260K → speedup per ' +
    'dataset category at temperature 0 (Table 1), draft / accepted length and acceptance per category (Figure 5), and ' +
    'speedup across generation lengths at temperature 1 (Table 2).',
  preset: {
    methods: ['ar', 'sd', 'sd-heuristic', 'svip'],
    dataset: 'mixed',
    limit: 4,
    maxTokens: 128,
    temperature: 0,
    topK: 64,
    gamma: 5,
    params: { 'svip.h': SVIP_H_MAIN, ...SVIP_CAPS }
  },
  paper: { file: 'svip-self-verification-length-policy.txt', title: 'Draft Model Knows When to Stop: A Self-Verification Length Policy (SVIP)' },
  models: PAIR,
  datasets: (quick) => (quick ? [builtin('mixed', { perCategory: 1 })] : [{ id: 'spec-bench', label: 'Spec-Bench', shared: 'spec_bench.jsonl', perCategory: 2 }]),
  cells: (context) => {
    const cells: SuiteCell[] = []
    const greedy = { temperature: 0, topK: 64 }
    const maxTokens = tokens(context, 128, 12)
    for (const dataset of context.datasets) {
      const labels = { dataset: dataset.label }
      cells.push({
        key: `table1/${dataset.id}/base`,
        methods: ['ar', 'sd', 'sd-heuristic'],
        dataset,
        gamma: 5,
        maxTokens,
        sampling: greedy,
        params: HEURISTIC_AS_SVIP,
        labels
      })
      for (const h of context.quick ? [SVIP_H_MAIN] : SVIP_H_GRID)
        cells.push({
          key: `table1/${dataset.id}/h=${h}`,
          methods: ['ar', 'svip'],
          dataset,
          gamma: 5,
          maxTokens,
          sampling: greedy,
          params: { 'svip.h': h, 'svip.maxDraft': SVIP_MAX_DRAFT },
          labels: { ...labels, h }
        })
    }
    // Table 2: MT-Bench at temperature 1 over generation lengths (the context of the stories models is 512).
    const lengths = context.quick ? [8, 16] : [32, 64, 128, 256]
    const dataset = context.quick ? builtin('chat', { limit: 1 }) : context.datasets[0].shared === 'spec_bench.jsonl' ? MT_BENCH(4) : context.datasets[0]
    for (const L of lengths)
      cells.push({
        key: `table2/L=${L}`,
        methods: ['ar', 'sd', 'sd-heuristic', 'svip'],
        dataset,
        gamma: 5,
        maxTokens: L,
        fitTokens: Math.max(...lengths),
        sampling: { temperature: 1, topK: 64 },
        params: { 'svip.h': SVIP_H_MAIN, ...SVIP_CAPS },
        labels: { dataset: dataset.label, L }
      })
    return cells
  },
  tables: [
    { id: 'table1', title: 'Table 1: speedup per category (temperature 0)' },
    { id: 'table2', title: 'Table 2: speedup across generation lengths (temperature 1)' }
  ],
  charts: [{ id: 'fig5', title: 'Figure 5: draft length, accepted length and acceptance per category' }],
  estimate: { full: '~30 min', quick: '~10 s' }
}

// ─── adaptive-window ────────────────────────────────────────────────────────────────────────────────────────────
const ADAPTIVE = ['adaptive-analytic', 'adaptive-fsm', 'adaptive-cache-fsm', 'adaptive-rl'] as const satisfies readonly MethodId[]

const adaptiveWindow: SuiteDefinition = {
  id: 'adaptive-window',
  name: 'On-the-fly adaptation (Figure 3, Tables 2 and 12)',
  description:
    'Fixed γ vs the analytic, FSM, cache-FSM and Q-learning window policies (004 Figure 3: throughput and acceptance ' +
    'across γ / γ_max), the history-length sensitivity of the analytic policy (Table 12), and adaptive draft-model ' +
    'selection between stories260K and mid1M vs each fixed draft (Table 2). Greedy, as the paper.',
  preset: { methods: ['ar', 'sd', ...ADAPTIVE], dataset: 'code', limit: 4, maxTokens: 128, temperature: 0, topK: 64, gamma: 6 },
  paper: { file: 'on-the-fly-adaptation-speculative-decoding.txt', title: 'A Drop-In Solution for On-the-Fly Adaptation of Speculative Decoding' },
  models: TRIO,
  datasets: (quick) => (quick ? [builtin('code', { limit: 2 })] : [HUMANEVAL(4), GSM8K(4)]),
  cells: (context) => {
    const cells: SuiteCell[] = []
    const greedy = { temperature: 0, topK: 64 }
    const maxTokens = tokens(context, 128, 12)
    for (const dataset of context.datasets)
      for (const gamma of context.quick ? [4] : [2, 4, 6, 8])
        cells.push({
          key: `fig3/${dataset.id}/g=${gamma}`,
          methods: ['ar', 'sd', ...ADAPTIVE],
          dataset,
          gamma,
          maxTokens,
          sampling: greedy,
          labels: { dataset: dataset.label, gamma }
        })
    for (const dataset of context.quick ? context.datasets.slice(0, 1) : context.datasets)
      for (const history of context.quick ? [5, 7] : [5, 6, 7])
        for (const gamma of context.quick ? [5] : [5, 6, 7, 8])
          cells.push({
            key: `table12/${dataset.id}/history=${history}/g=${gamma}`,
            methods: ['adaptive-analytic'],
            dataset,
            gamma,
            maxTokens,
            sampling: greedy,
            params: { 'analytic.history': history },
            labels: { dataset: dataset.label, history, gamma }
          })
    // Draft selection needs ≥ 3 warm-up prompts (one per feature of Eq 5).
    const first = context.datasets[0]
    const selection = { ...first, limit: Math.max(first.limit ?? 0, context.quick ? 3 : 8), perCategory: undefined }
    const base = { methods: ['ar', 'sd'] as MethodId[], dataset: selection, gamma: 5, maxTokens, sampling: greedy }
    cells.push({ ...base, key: `select/${first.id}/q1`, labels: { dataset: first.label, draft: 'M_q1 (fixed)' } })
    cells.push({ ...base, key: `select/${first.id}/q2`, draft: 'mid', labels: { dataset: first.label, draft: 'M_q2 (fixed)' } })
    cells.push({ ...base, key: `select/${first.id}/auto`, selectDraft: true, labels: { dataset: first.label, draft: 'adaptive selection' } })
    return cells
  },
  tables: [
    { id: 'table12', title: 'Table 12: history length sensitivity (tok/s)' },
    { id: 'selection', title: 'Table 2: adaptive draft-model selection vs each fixed draft' }
  ],
  charts: [{ id: 'fig3', title: 'Figure 3: throughput and acceptance of the adaptive methods' }],
  estimate: { full: '~35 min', quick: '~15 s' }
}

// ─── hierarchy-theory ───────────────────────────────────────────────────────────────────────────────────────────
const hierarchyTheory: SuiteDefinition = {
  id: 'hierarchy-theory',
  name: "Chen's hierarchy theory (Figure 1, Theorems 3.2 / 3.4)",
  description:
    "hier-chen over m × n and sd with M_q2 (n = 0) on the trio; α, β, c and c_s measured on it feed Chen's Theorem 3.2 " +
    '(tokens per target call) and 3.4 (time improvement) curves over n, m and β, with the measured points overlaid.',
  preset: { methods: ['ar', 'hier-chen'], dataset: 'stories', limit: 4, maxTokens: 96, temperature: 1, topK: 64, gamma: 2, params: { 'chen.m': 2, 'chen.n': 2 } },
  paper: { file: 'hierarchical-sd-exploration-chen.txt', title: 'An Exploration of Hierarchical Speculative Decoding (Chen)' },
  models: TRIO,
  datasets: (quick) => [builtin('stories', { limit: quick ? 1 : 4 })],
  cells: (context) => {
    const cells: SuiteCell[] = []
    const sampling = { temperature: 1, topK: 64 }
    const maxTokens = tokens(context, 96, 12)
    const dataset = context.datasets[0]
    const ms = context.quick ? [2] : [1, 2, 3]
    for (const m of ms)
      for (const n of context.quick ? [1, 2] : [1, 2, 3])
        cells.push({
          key: `chen/m=${m}/n=${n}`,
          methods: ['ar', 'hier-chen'],
          dataset,
          gamma: m,
          maxTokens,
          sampling,
          params: { 'chen.m': m, 'chen.n': n },
          labels: { m, n }
        })
    // n = 0 is plain speculative decoding M_q → M_p with γ = m (Chen §3.1, the first special case).
    for (const m of ms)
      cells.push({ key: `sd/m=${m}`, methods: ['ar', 'sd'], dataset, draft: 'mid', gamma: m, maxTokens, sampling, labels: { m, n: 0 } })
    return cells
  },
  tables: [
    { id: 'inputs', title: 'α, β, c, c_s measured on the trio' },
    { id: 'points', title: 'Measured vs Theorem 3.2 / 3.4 per cell' }
  ],
  charts: [
    { id: 'fig1-tokens', title: 'Figure 1 (left): expected tokens per target call over n' },
    { id: 'fig1-speedup', title: 'Figure 1 (right): expected time improvement over n' },
    { id: 'fig1-beta', title: 'Time improvement over β' }
  ],
  estimate: { full: '~8 min', quick: '~10 s' }
}

// ─── dsbd ───────────────────────────────────────────────────────────────────────────────────────────────────────
/** DSBD §4.1: top-k 10, top-p 0.8. */
const DSBD_SAMPLING = { temperature: 1, topK: 10, topP: 0.8 }

const dsbd: SuiteDefinition = {
  id: 'dsbd',
  name: 'Dynamic-width speculative beam decoding (Figures 4–6, Table 1)',
  description:
    'dsbd over W_S ∈ {2..6}, t ∈ {0.7, 0.9}, γ ∈ {2, 3} vs beam sampling W = 1..4 on the pair target ← stories260K → ' +
    'perplexity and tokens/s with both Pareto fronts (Figures 4–6), and ar / sd / dsbd-1beam when only one KV sequence ' +
    'is kept (Table 1). Perplexity: every output scored under the target.',
  preset: { methods: ['ar', 'sd', 'beam', 'dsbd', 'dsbd-1beam'], dataset: 'stories', limit: 3, maxTokens: 32, temperature: 1, topK: 10, gamma: 2, params: { 'dsbd.ws': 3, 'dsbd.t': 0.9, 'beam.width': 2 } },
  paper: { file: 'dsbd-dynamic-width-speculative-beam.txt', title: 'Dynamic-Width Speculative Beam Decoding for Efficient LLM Inference (DSBD)' },
  models: PAIR,
  datasets: (quick) => [builtin('stories', { limit: quick ? 1 : 3 })],
  cells: (context) => {
    const cells: SuiteCell[] = []
    const maxTokens = tokens(context, 32, 8)
    const dataset = context.datasets[0]
    const base = { dataset, maxTokens, sampling: DSBD_SAMPLING, score: true }
    for (const gamma of context.quick ? [2] : [2, 3])
      for (const ws of context.quick ? [2, 3] : [2, 3, 4, 5, 6])
        for (const t of context.quick ? [0.9] : [0.7, 0.9])
          cells.push({
            ...base,
            key: `dsbd/g=${gamma}/ws=${ws}/t=${t}`,
            methods: ['dsbd'],
            gamma,
            params: { 'dsbd.ws': ws, 'dsbd.t': t, 'dsbd.wmin': 1 },
            labels: { gamma, ws, t }
          })
    for (const width of context.quick ? [1, 2] : [1, 2, 3, 4])
      cells.push({ ...base, key: `beam/W=${width}`, methods: ['beam'], gamma: 1, params: { 'beam.width': width }, labels: { W: width } })
    cells.push({
      ...base,
      key: 'table1',
      methods: ['ar', 'sd', 'dsbd-1beam'],
      gamma: context.quick ? 2 : 3,
      params: { 'dsbd.ws': context.quick ? 2 : 4, 'dsbd.t': 0.9, 'dsbd.wmin': 1 },
      labels: {}
    })
    return cells
  },
  tables: [{ id: 'table1', title: 'Table 1: one KV sequence per model' }],
  charts: [{ id: 'fig4-6', title: 'Figures 4–6: perplexity vs tokens/s, Pareto fronts' }],
  estimate: { full: '~25 min', quick: '~10 s' }
}

// ─── model-free ─────────────────────────────────────────────────────────────────────────────────────────────────
/** llama.cpp's ngram-cache (no static file) and the tree methods: sd-tree and sd-tree+ngram (an n-gram chain beside the draft's branches). */
export const MODEL_FREE_ADDED_METHODS: readonly MethodId[] = ['ngram-cache', 'sd-tree', 'sd-tree+ngram']

/** Every method at its defaults: ar (the baseline), sd (the draft-model reference), the lookups, the hybrid. */
export const MODEL_FREE_METHODS: readonly MethodId[] = [
  'ar',
  'sd',
  'pld',
  'ngram-simple',
  'ngram-map-k',
  'ngram-map-k4v',
  'ngram-mod',
  'nlc-lookup',
  'sd+ngram',
  ...MODEL_FREE_ADDED_METHODS
]

/**
 * The short-keys cell: llama.cpp's defaults (key n = 12, draft cap m = 48; ngram-mod n = 24, nMin = 48) draft only
 * after a 12- or 24-token verbatim repeat, which the stories models rarely write in 128 tokens, so the n-gram methods
 * run again with n = 3 (ngram-mod n = 4 and chains from 2 tokens) and the cap m = 8: measured on `copy` (target5M-f32,
 * 128 tokens, greedy), n = 3 with m = 48 drafts long wrong continuations a CPU verification pays for — acceptance
 * 0.06–0.14 and 0.40–0.57× — against 0.23–0.43 and 0.80–0.85× with m = 8.
 */
export const MODEL_FREE_SHORT_KEYS = {
  'ngramsimple.n': 3,
  'ngramsimple.m': 8,
  'ngrammapk.n': 3,
  'ngrammapk.m': 8,
  'ngrammapk4v.n': 3,
  'ngrammapk4v.m': 8,
  'ngrammod.n': 4,
  'ngrammod.nMin': 2,
  'ngrammod.nMax': 8,
  'sdngram.n': 3,
  'sdngram.m': 8
} as const satisfies Record<string, ParamValue>
const MODEL_FREE_SHORT_KEY_METHODS: MethodId[] = ['ar', 'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod', 'sd+ngram']

const modelFree: SuiteDefinition = {
  id: 'model-free',
  name: 'Model-free drafting (prompt lookup, n-grams) per task',
  description:
    'Where the output may copy the input: ar, sd (stories260K, γ = 5), pld, ngram-simple, ngram-map-k, ngram-map-k4v, ' +
    'ngram-mod, ngram-cache, nlc-lookup, sd+ngram, sd-tree and sd-tree+ngram (depth γ, 4 paths, p_split 0.1) on the built-in copy set (summarise / rewrite / extract / code-edit) and on ' +
    "Spec-Bench (2 prompts per category, MT-Bench's 8 as one column), greedy → acceptance, mean accepted length, " +
    'tokens/s and speedup over ar per method and category, and which method wins where. Settings: every method at ' +
    "its defaults (llama.cpp's n = 12, m = 48 and ngram-mod's n = 24, nMin = 48, which draft only after a long verbatim " +
    "repeat, so little on short prompts; HF's pld n ≤ 2, k = γ; node-llama-cpp's lookup), and the n-gram methods again " +
    'with short keys, n = 3 and cap m = 8 (ngram-mod n = 4, nMin = 2, nMax = 8), where they draft at all — a cap of 48 ' +
    'with n = 3 drafts long wrong runs that a CPU verification pays for.',
  preset: { methods: [...MODEL_FREE_METHODS], dataset: 'copy', limit: 4, maxTokens: 128, temperature: 0, topK: 64, gamma: 5 },
  paper: null,
  models: PAIR,
  datasets: (quick) =>
    quick
      ? // Two categories of each: a copy prompt's 140–215-token prefill makes every decode cost ~0.2 s on this
        // 2-core machine, so all four categories (× 15 method arms, plus their warm-ups) took ~19 s; two take ~11 s.
        [builtin('copy', { perCategory: 1, limit: 2 }), builtin('mixed', { perCategory: 1, limit: 2 })]
      : [builtin('copy'), { id: 'spec-bench', label: 'Spec-Bench', shared: 'spec_bench.jsonl', perCategory: 2 }],
  cells: (context) => {
    const cells: SuiteCell[] = []
    const greedy = { temperature: 0, topK: 64 }
    const maxTokens = tokens(context, 128, 16)
    for (const dataset of context.datasets) {
      const base = { dataset, gamma: 5, maxTokens, sampling: greedy }
      cells.push({ ...base, key: `defaults/${dataset.id}`, methods: [...MODEL_FREE_METHODS], labels: { dataset: dataset.label, settings: 'defaults' } })
      cells.push({
        ...base,
        key: `short-keys/${dataset.id}`,
        methods: [...MODEL_FREE_SHORT_KEY_METHODS],
        params: { ...MODEL_FREE_SHORT_KEYS },
        labels: { dataset: dataset.label, settings: 'short keys' }
      })
    }
    return cells
  },
  tables: [
    { id: 'speedup', title: 'Speedup over ar per category' },
    { id: 'categories', title: 'Acceptance, accepted length, tokens/s and speedup per method and category' },
    { id: 'winners', title: 'Which method wins where' }
  ],
  charts: [{ id: 'speedup-chart', title: 'Speedup over ar per category, every method at its defaults' }],
  // Measured: 8 copy prompts × 2 repeats of all 18 method arms took 19 min on the inflated target (2 cores); the full
  // grid (20 copy + ~21 fitting Spec-Bench prompts, 3 repeats) scales to about 2 hours.
  estimate: { full: '~2 h', quick: '~15 s' }
}

// ─── peer ───────────────────────────────────────────────────────────────────────────────────────────────────────
/** SpecLab's side of the peer suite: the baseline, draft-model SD, its best policy on this box, PEARL. */
export const PEER_SPECLAB_METHODS: readonly MethodId[] = ['ar', 'sd', 'sd-pmin', 'pearl']
/** llama.cpp's side: its server without and with the same draft model (npm run build:llama-server). */
export const PEER_LLAMA_METHODS: readonly MethodId[] = ['llama-server:ar', 'llama-server:draft']

const peer: SuiteDefinition = {
  id: 'peer',
  name: 'SpecLab against llama.cpp (llama-server) on the same box',
  description:
    "SpecLab's ar, sd, sd-pmin and pearl next to llama.cpp's own llama-server (the commit node-llama-cpp ships, built " +
    'with npm run build:llama-server) without and with the same draft model, on the same prompts, models and threads, ' +
    'interleaved, greedy: tokens/s with 95 % intervals, every ratio paired per (prompt, repeat), and whether the ' +
    "server's outputs equal SpecLab's ar (same llama.cpp, same tokens). Both engines run the threads SpecLab measured for " +
    'these models (or --threads); `speclab peer-bench` compares each side at several thread settings.',
  preset: { methods: [...PEER_SPECLAB_METHODS, ...PEER_LLAMA_METHODS], dataset: 'stories', limit: 8, maxTokens: 128, temperature: 0, topK: 64, gamma: 5 },
  paper: null,
  models: PAIR,
  datasets: (quick) => [builtin('stories', { limit: quick ? 1 : 8 })],
  cells: (context) =>
    context.datasets.map((dataset) => ({
      key: `peer/${dataset.id}`,
      methods: [...PEER_SPECLAB_METHODS, ...PEER_LLAMA_METHODS],
      dataset,
      gamma: 5,
      maxTokens: tokens(context, 128, 12),
      sampling: { temperature: 0, topK: 64 },
      labels: { dataset: dataset.label }
    })),
  tables: [
    { id: 'summary', title: 'Every method on the same prompts and threads' },
    { id: 'ratios', title: 'SpecLab against llama-server, paired per prompt and repeat' },
    { id: 'greedy', title: "Greedy outputs against SpecLab's ar" }
  ],
  charts: [{ id: 'throughput', title: 'Tokens per second per method' }],
  // 8 prompts × 128 tokens × 3 repeats × 6 methods on the inflated target, 2 cores (peer-bench's arms ran ~110–190 tok/s).
  estimate: { full: '~3 min', quick: '~10 s' }
}

export const SUITES: readonly SuiteDefinition[] = [smoke, hsddwAblation, svip, adaptiveWindow, hierarchyTheory, dsbd, modelFree, peer]

export function findSuite(id: string): SuiteDefinition | undefined {
  return SUITES.find((suite) => suite.id === id)
}

export function requireSuite(id: string): SuiteDefinition {
  const suite = findSuite(id)
  if (!suite) throw new UserInputError(`unknown suite '${id}' (suites: ${SUITES.map((s) => s.id).join(', ')})`)
  return suite
}
