/** Where the shared models and datasets live: $SPECLAB_MODELS / $SPECLAB_DATASETS, default ../shared/* beside the checkout. */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const sharedRoot = (): string => path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared')

export function sharedModelsDirectory(): string {
  return process.env.SPECLAB_MODELS ?? path.join(sharedRoot(), 'models')
}

export function sharedDatasetsDirectory(): string {
  return process.env.SPECLAB_DATASETS ?? path.join(sharedRoot(), 'datasets')
}

/** ../shared/papers: the seed papers the suite reports cite. */
export function sharedPapersDirectory(): string {
  return process.env.SPECLAB_PAPERS ?? path.join(sharedRoot(), 'papers')
}
