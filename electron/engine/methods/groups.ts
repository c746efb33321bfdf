/**
 * The method pickers' groups, in picker order: by what a user chooses between — the catalog's family, with the two
 * kinds of speculative decoding a user looks for by name (trees; cross-tokenizer drafts) apart (methodGroup in
 * engine/methods/docs.ts). Data only, so the renderer may import it through api/renderer-kit.ts.
 */
export const METHOD_GROUPS = [
  'baselines',
  'draft model',
  'adaptive draft length',
  'hierarchies',
  'beam',
  'model-free',
  'cross-tokenizer',
  'trees',
  'peers'
] as const
export type MethodGroup = (typeof METHOD_GROUPS)[number]
