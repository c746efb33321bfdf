/**
 * The papers' published numbers, copied from ../shared/papers/*.txt with the line numbers they are printed on, and
 * the models and hardware they were measured with. Reports show them beside our measurements, labelled as the
 * paper's: they come from 7B–70B models on data-centre GPUs, ours from ~0.3–78M-parameter models on a CPU, so
 * they are a reference for the SHAPE of a result (which method wins, how a curve bends), never a target value.
 */
import type { PaperReference, ReportTable, TableColumn, TableValue } from './model'

const table = (id: string, title: string, columns: TableColumn[], rows: TableValue[][], caption?: string): ReportTable => ({
  kind: 'table',
  id: `paper-${id}`,
  title,
  columns,
  rows,
  caption
})
const text = (label: string): TableColumn => ({ label, format: 'text' })
const x = (label: string): TableColumn => ({ label, format: 'speedup' })
const num = (label: string, digits = 2): TableColumn => ({ label, format: 'number', digits })

// ─── HSDDW ──────────────────────────────────────────────────────────────────────────────────────────────────────
const HSDDW_FILE = 'hsddw-hierarchical-sd-dynamic-window.txt'
const HSDDW_SETUP =
  'Llama-2-chat 70B target M_p, Llama-2-chat 7B mid draft M_q2, Llama-68M small draft M_q1 (lines 85, 101); ' +
  'temperature 1, K = 10, max length 2048 (line 279); 8× NVIDIA V100-32G, Hugging Face Transformers, FP16 (lines 283–290); ' +
  'MT-Bench single-turn for the analyses (line 81)'

export const HSDDW_TABLE2: PaperReference = {
  file: HSDDW_FILE,
  lines: '157–165',
  setup: HSDDW_SETUP,
  table: table(
    'table2',
    'HSDDW Table 2 (paper): speedup over autoregressive decoding',
    [text('Pre-verify'), text('Self-verify'), text('HSDDW'), x('MT-Bench'), x('HumanEval'), x('GSM8K'), x('Alpaca')],
    [
      ['', '', '', 2.4, 2.22, 2.51, 2.5],
      ['✓', '', '', 2.53, 2.31, 2.47, 2.48],
      ['', '✓', '', 2.63, 2.57, 2.68, 2.54],
      ['✓', '✓', '', 2.69, 2.66, 2.65, 2.63],
      ['', '', '✓', 2.95, 2.92, 2.64, 2.99]
    ]
  ),
  statements: ['The first row is vanilla SD with the 7B model as the draft ("70b-7b", line 85).']
}

export const HSDDW_TABLE3: PaperReference = {
  file: HSDDW_FILE,
  lines: '187–193',
  setup: HSDDW_SETUP,
  table: table('table3', 'HSDDW Table 3 (paper): MT-Bench, math prompts vs the rest', [text('method'), x('All'), x('only Math'), x('rm Math')], [
    ['AT', 1, 1, 1],
    ['SD', 2.4, 2.29, 2.41],
    ['HSDDW', 2.95, 2.08, 3.04]
  ]),
  statements: ['"HSDDW experiences a more significant drop" on math prompts, attributed to the 68M draft (lines 171–173).']
}

export const HSDDW_TABLE4: PaperReference = {
  file: HSDDW_FILE,
  lines: '217–224',
  setup: HSDDW_SETUP,
  table: table('table4', 'HSDDW Table 4 (paper): σ and η in percent', [text('model'), num('σ (%)'), num('η (%)'), x('speedup')], [
    ['70b-7b', 39.87, 14.42, 2.4],
    ['70b-68m', 89.69, 49.3, 1.69],
    ['Pre+Self-verify', 39.6, 14.85, 2.69],
    ['HSDDW', 44.36, 14.46, 2.95]
  ]),
  statements: ['σ = 1 − accepted / drafted tokens (line 199), η = target inferences / output length (line 203).']
}

export const HSDDW_FIGURE6: PaperReference = {
  file: HSDDW_FILE,
  lines: '141–149, 177',
  setup: '70b-7b and 70b-68m vanilla SD on MT-Bench (line 177); the entropy analysis ran on a single GPU (line 283)',
  statements: [
    'Figure 6 prints no numbers. Caption (line 177): "showing the entropy values for accepted and rejected tokens on the MT-Bench dataset. A clear decision boundary is observed between acceptance and rejection based on entropy."',
    'Line 143: the results "reveal a distinct decision boundary in entropy between accepted and rejected tokens".'
  ]
}

export const HSDDW_FIGURE7: PaperReference = {
  file: HSDDW_FILE,
  lines: '169, 181',
  setup: HSDDW_SETUP,
  statements: [
    'Figure 7 prints no numbers. Line 169: Self/Pre-verify and HSDDW "demonstrate smaller variations in speed across different window sizes compared to vanilla SD", and "the speed of HSDDW consistently surpasses that of vanilla SD at all window sizes".'
  ]
}

export const HSDDW_FIGURE8: PaperReference = {
  file: HSDDW_FILE,
  lines: '213, 226–228',
  setup: 'The 28th MT-Bench question, configurations 70b-7b, 70b-68m and 70b-7b-68m (line 213)',
  statements: [
    'Figure 8 prints no numbers. Line 228: "HSDDW exhibits dynamic window sizes at different steps", with "a significantly higher acceptance rate compared to Vanilla-SD with the 70b-68m setup".'
  ]
}

// ─── SVIP ───────────────────────────────────────────────────────────────────────────────────────────────────────
const SVIP_FILE = 'svip-self-verification-length-policy.txt'
const SVIP_SETUP =
  'Targets Pythia 6.9B, Qwen2.5 14B, LLaMA-3 70B with drafts Pythia-160M, Qwen2.5 0.5B, LLaMA-3 8B (line 160); ' +
  'baselines: constant γ = 5 and the Hugging Face heuristic (line 162); draft length capped at 40; Pythia and Qwen on one ' +
  '40GB A100, LLaMA on five (line 164)'

export const SVIP_TABLE1: PaperReference = {
  file: SVIP_FILE,
  lines: '148–158, 164',
  setup: `${SVIP_SETUP}; Spec-Bench, temperature 0, h = 0.4 (Pythia) / 0.3 (Qwen, LLaMA) chosen from {0.2, 0.3, 0.4, 0.5} (line 164)`,
  table: table(
    'table1',
    'SVIP Table 1 (paper): speedup over target-only decoding on Spec-Bench',
    [text('model'), text('method'), x('MT-Bench'), x('Trans.'), x('Sum.'), x('QA'), x('Math'), x('RAG'), x('Avg.')],
    [
      ['Pythia 6.9B / 160M', 'Const.', 1.45, 1.47, 1.24, 1.43, 1.52, 1.42, 1.42],
      ['', 'Heuristics', 1.51, 1.58, 1.34, 1.58, 1.64, 1.51, 1.53],
      ['', 'SVIP', 1.63, 1.62, 1.45, 1.67, 1.72, 1.66, 1.63],
      ['Qwen2.5 14B / 0.5B', 'Const.', 1.08, 0.87, 1.11, 0.92, 1.43, 0.99, 1.07],
      ['', 'Heuristics', 1.1, 0.91, 1.1, 0.92, 1.34, 1.03, 1.07],
      ['', 'SVIP', 1.33, 1.12, 1.37, 1.14, 1.57, 1.23, 1.29],
      ['LLaMA-3 70B / 8B', 'Const.', 2.04, 2.48, 2.56, 2.34, 2.32, 2.28, 2.34],
      ['', 'Heuristics', 2.3, 3.13, 3.33, 2.61, 2.52, 2.63, 2.76],
      ['', 'SVIP', 2.31, 3.04, 3.48, 2.63, 2.89, 2.59, 2.83]
    ]
  ),
  statements: ['Spec-Bench categories: MT-Bench (its 8 categories together), translation, summarization, QA, math reasoning, RAG.']
}

export const SVIP_FIGURE5: PaperReference = {
  file: SVIP_FILE,
  lines: '172–174',
  setup: 'Qwen2.5 14B / 0.5B and LLaMA-3 70B / 8B on Spec-Bench, temperature 0 (lines 164, 172)',
  statements: [
    'Figure 5 prints no bar values. Line 174: SVIP "leads to shorter draft lengths and a much higher acceptance rate (close to or more than 80% on all domains for Qwen, and more than 90% for LLaMA)"; LLaMA-3 reaches 99% acceptance on summarization.'
  ]
}

export const SVIP_TABLE2: PaperReference = {
  file: SVIP_FILE,
  lines: '178–193',
  setup: `${SVIP_SETUP}; MT-Bench, temperature 1, generation up to 8K tokens (line 178)`,
  table: table(
    'table2',
    'SVIP Table 2 (paper): speedup on MT-Bench by generation length',
    [text('model'), text('method'), x('128'), x('256'), x('512'), x('1K'), x('2K'), x('4K'), x('6K'), x('8K')],
    [
      ['Pythia 6.9B / 160M', 'Const.', 0.68, 0.69, 0.69, 0.7, 0.72, 0.9, 0.89, 0.87],
      ['', 'Heuristics', 0.88, 0.88, 0.88, 0.88, 0.9, 1.21, 1.25, 1.23],
      ['', 'SVIP', 1.07, 1.08, 1.08, 1.07, 1.08, 1.43, 1.44, 1.41],
      ['Qwen2.5 14B / 0.5B', 'Const.', 0.98, 0.97, 0.95, 0.96, 0.98, 1.0, 1.02, 1.04],
      ['', 'Heuristics', 1.01, 0.99, 0.98, 1.0, 1.02, 1.03, 1.04, 1.06],
      ['', 'SVIP', 1.29, 1.29, 1.3, 1.31, 1.32, 1.33, 1.33, 1.35],
      ['LLaMA-3 70B / 8B', 'Const.', 1.74, 1.74, 1.77, 1.78, 1.82, 1.9, 1.93, 1.94],
      ['', 'Heuristics', 1.53, 1.56, 1.61, 1.63, 1.68, 1.77, 1.83, 1.84],
      ['', 'SVIP', 1.69, 1.72, 1.75, 1.78, 1.86, 1.96, 2.01, 2.02]
    ]
  ),
  statements: ['Line 193: the baselines fall below 1× for Pythia and Qwen while SVIP stays above; speedups generally grow with length.']
}

// ─── On-the-fly adaptation (004) ────────────────────────────────────────────────────────────────────────────────
const OTF_FILE = 'on-the-fly-adaptation-speculative-decoding.txt'

export const OTF_FIGURE3: PaperReference = {
  file: OTF_FILE,
  lines: '189–213, 241–245',
  setup: 'OPT 13B target / OPT 125M draft on an NVIDIA A100 80GB, BF16, greedy (lines 245, 543, 560); Hugging Face Transformers 4.38.2 (line 535)',
  table: table(
    'fig3',
    'On-the-fly Table 1 (paper), OPT 13B/125M rows: analytic window vs sd (SPS) and vs autoregressive (ARS)',
    [text('dataset'), num('A100 SPS (%)'), x('A100 ARS'), num('V100 SPS (%)'), x('V100 ARS')],
    [
      ['finance-alpaca', 4.82, 2.32, 3.41, 3.4],
      ['humaneval', 11.4, 2.29, 2.15, 3.34],
      ['gsm8k', 5.95, 2.24, 10.52, 3.36],
      ['xsum', 10.64, 1.02, 7.91, 2.43]
    ],
    'Figure 3 itself prints no numbers; these are Table 1\'s rows for its model pair (lines 195, 201, 207, 213).'
  ),
  statements: [
    'Line 245: "(i) the analytical model-guided online window size optimization method gives the best overall performance. (ii) Even though RL-based speculation gives better acceptance rates than the other methods, it shows lower throughput … (iii) cache-based and state-based speculation perform better when prompts are longer (e.g., the humaneval dataset)."'
  ]
}

export const OTF_TABLE12: PaperReference = {
  file: OTF_FILE,
  lines: '645, 679–691',
  setup: 'BLOOM 7B target / BLOOM 560M draft on an NVIDIA A100 80GB (line 645)',
  table: table(
    'table12',
    'On-the-fly Table 12 (paper): throughput (tok/s) by history length and γ_max',
    [text('dataset'), { label: 'history', format: 'integer' }, num('γmax 5'), num('γmax 6'), num('γmax 7'), num('γmax 8')],
    [
      ['Alpaca', 5, 52.28, 52.49, 52.05, 52.37],
      ['', 6, 54.18, 53.46, 52.71, 53.0],
      ['', 7, 53.03, 53.01, 54.32, 53.36],
      ['Humaneval', 5, 93.98, 94.48, 94.21, 94.21],
      ['', 6, 94.84, 95.18, 93.39, 93.39],
      ['', 7, 94.54, 94.3, 93.41, 93.41],
      ['gsm8k', 5, 62.69, 62.15, 63.42, 64.03],
      ['', 6, 61.48, 61.78, 63.72, 61.84],
      ['', 7, 64.77, 61.38, 62.74, 64.27]
    ]
  ),
  statements: ['The paper highlights the best throughput per γ_max; differences are within ~4%.']
}

export const OTF_TABLE2: PaperReference = {
  file: OTF_FILE,
  lines: '215–226',
  setup: 'LLaMA 70B (drafts 7B, 13B) on 2× A100 80GB; BLOOM 7B (drafts 560M, 1B1, 1B7) on A100 / V100 / RTX 4090 (lines 215, 179)',
  table: table(
    'selection',
    'On-the-fly Table 2 (paper): throughput improvement over speculative decoding',
    [text('target'), num('alpaca A100 (%)'), num('alpaca V100 (%)'), num('alpaca 4090 (%)'), num('humaneval A100 (%)'), num('humaneval V100 (%)'), num('humaneval 4090 (%)'), num('gsm8k A100 (%)'), num('gsm8k V100 (%)'), num('gsm8k 4090 (%)')],
    [
      ['LLaMA 70B w/o draft selection', 6.43, null, null, 10.35, null, null, 9.66, null, null],
      ['LLaMA 70B w/ draft selection', 6.46, null, null, 11.11, null, null, 9.66, null, null],
      ['BLOOM 7B w/o draft selection', 4.36, 7.69, 3.7, 8.14, 3.57, 3.51, 9.76, 2.52, 4.84],
      ['BLOOM 7B w/ draft selection', 4.94, 16.48, 8.15, 8.57, 4.96, 4.17, 9.76, 3.55, 6.83]
    ],
    '"–" in the paper (not run) is shown as –.'
  ),
  statements: ['Line 215: "The overall throughput speedups range from 3.55% to 16.48% using adaptive draft model selection."']
}

// ─── Chen ───────────────────────────────────────────────────────────────────────────────────────────────────────
const CHEN_FILE = 'hierarchical-sd-exploration-chen.txt'

export const CHEN_FIGURE1: PaperReference = {
  file: CHEN_FILE,
  lines: '127–129, 141–145, 153–163',
  setup: 'No experiments and no hardware: "Due to a lack of hardware support, we only further analyze the performance of Algorithm 2" (line 153; also lines 26, 178). Figure 1 plots Theorems 3.2 and 3.4 at "a fixed but representative α" whose value is not printed (line 158).',
  statements: [
    'Theorem 3.2 (line 129): E[tokens] = (1 − β^{n+1})/(1 − β) · (1 − Q^m)/(1 − Q) + Q^m, Q = α·β^n.',
    'Theorem 3.4 (line 145): E[time improvement] = E[tokens] / (1 + m·c + m·n·c·c_s), c = t(M_q)/t(M_p), c_s = t(M_s)/t(M_q) (line 141).',
    'Line 162: "Under most practical cases, introducing a smaller model M_s will not lead to a better performance, and as n … increases, the expected time improvement tends to decrease in general, some even reduce to less than 1."',
    'Line 163: "as β (along with c_s) increases … will permit more choices of m that can bring a further speed up".'
  ]
}

// ─── DSBD ───────────────────────────────────────────────────────────────────────────────────────────────────────
const DSBD_FILE = 'dsbd-dynamic-width-speculative-beam.txt'
const DSBD_SETUP =
  'Llama-2-13B / Llama-68M and OPT-13B / OPT-125M (line 225) on one NVIDIA L40, top-k 10, top-p 0.8 (lines 218–223); SQuAD (exact match) and Spider (execution accuracy) (line 227)'

export const DSBD_FIGURES: PaperReference = {
  file: DSBD_FILE,
  lines: '229–250',
  setup: DSBD_SETUP,
  statements: [
    'Grid (line 231): beam sampling W = 1…4; DSBD W_S ∈ {2, 3, 4, 5, 6}, t ∈ {0.7, 0.9}, γ ∈ {2, 3}, W_min = 1; plus SD and SpecInfer.',
    'Figures 4–6 print no point values. Line 241: DSBD "consistently outperforms beam sampling"; at fixed effectiveness it is "1.5–1.9× faster than beam sampling, while simultaneously reducing energy consumption by 1.8–2.5×".',
    'Figure 6 (line 250) is the one with perplexity (OPT on Spider, lower is better) — the quality measure used here.'
  ]
}

export const DSBD_TABLE1: PaperReference = {
  file: DSBD_FILE,
  lines: '252–276',
  setup: DSBD_SETUP,
  table: table(
    'table1',
    'DSBD Table 1 (paper): one KV cache sequence per method',
    [text('group (as extracted)'), text('method'), num('EM/EA', 0), num('PPL'), num('tokens/s'), num('J/token')],
    [
      ['Llama-2', 'Multinomial', 74, 1.82, 21.14, 12.36],
      ['', 'SpecDecode', 75, 1.79, 27.11, 8.34],
      ['', 'SpecInfer', 74, 1.78, 27.15, 9.22],
      ['', 'DSBD', 86, 1.54, 26.67, 8.75],
      ['OPT', 'Multinomial', 66, 1.98, 23.47, 11.14],
      ['', 'SpecDecode', 66, 1.94, 39.68, 5.25],
      ['', 'SpecInfer', 66, 1.95, 38.73, 6.3],
      ['', 'DSBD', 73, 1.59, 36.76, 5.54],
      ['SQuAD', 'Multinomial', 20, 1.37, 21.98, 11.14],
      ['', 'SpecDecode', 19, 1.38, 31.74, 7.06],
      ['', 'SpecInfer', 19, 1.36, 32.0, 8.01],
      ['', 'DSBD', 31, 1.26, 30.3, 7.17],
      ['Spider', 'Multinomial', 0, 1.9, 23.81, 11.58],
      ['', 'SpecDecode', 0, 1.85, 37.17, 5.92],
      ['', 'SpecInfer', 0, 1.91, 37.73, 6.34],
      ['', 'DSBD', 1, 1.64, 34.48, 6.23]
    ],
    'The text extraction flattened the table: its row-group labels (Llama-2, OPT, SQuAD, Spider) are printed as the file has them.'
  ),
  statements: ['Line 256: DSBD "delivers a significant improvement in output quality" with "speed and energy efficiency close to that of speculative decoding".']
}

// ─── Headlines for the smoke suite ──────────────────────────────────────────────────────────────────────────────
export const HEADLINES: PaperReference = {
  file: '',
  lines: 'per row',
  setup: "Each row is one paper's own setup (7B–70B models on data-centre GPUs); see the suites named in the last column.",
  table: table(
    'headlines',
    'Headline numbers of the papers (theirs, not ours)',
    [text('method'), text('paper'), text('result'), text('source (../shared/papers)'), text('suite')],
    [
      ['sd', 'HSDDW Table 2 (70b-7b)', '2.40× on MT-Bench', `${HSDDW_FILE}:159`, 'hsddw-ablation'],
      ['svip', 'SVIP Table 1 (Qwen2.5 14B/0.5B)', '1.29× avg on Spec-Bench vs 1.07× constant γ', `${SVIP_FILE}:152–154`, 'svip'],
      ['hsddw', 'HSDDW Table 2', '2.95× on MT-Bench', `${HSDDW_FILE}:163`, 'hsddw-ablation'],
      ['dsbd', 'DSBD Table 1 (Llama-2, memory-constrained)', 'PPL 1.54 vs 1.82 multinomial at 26.67 vs 21.14 tok/s', `${DSBD_FILE}:261–264`, 'dsbd']
    ]
  ),
  statements: []
}
