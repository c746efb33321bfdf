/**
 * Regenerates what is derived from the method catalog and checked in: electron/engine/methods/ids.ts (the
 * contract's METHOD_IDS), docs/methods.md's method table, the README's short one and docs/settings.md's settings
 * table (from the run-settings catalog). `npm run methods:docs`
 * (`npm run methods:readme` is the same script); test/unit/method-catalog.test.ts fails when any of them is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { idsModule, METHOD_SUMMARY, METHOD_TABLE, withGeneratedBlock, type GeneratedBlock } from '../electron/engine/methods/docs'
import { SETTINGS_TABLE } from '../electron/engine/settings/docs'

const root = (relative: string) => fileURLToPath(new URL(`../${relative}`, import.meta.url))

function regenerate(relative: string, block: GeneratedBlock): void {
  const file = root(relative)
  writeFileSync(file, withGeneratedBlock(readFileSync(file, 'utf8'), block, relative))
}

writeFileSync(root('electron/engine/methods/ids.ts'), idsModule())
regenerate('docs/methods.md', METHOD_TABLE)
regenerate('README.md', METHOD_SUMMARY)
regenerate('docs/settings.md', SETTINGS_TABLE)
process.stdout.write('wrote electron/engine/methods/ids.ts, the method table of docs/methods.md, the README method summary and the settings table of docs/settings.md\n')
