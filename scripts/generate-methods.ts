/**
 * Regenerates what is derived from the method catalog and checked in: electron/engine/methods/ids.ts (the
 * contract's METHOD_IDS) and the README's method table. `npm run methods:readme`; test/unit/method-catalog.test.ts
 * fails when either is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { idsModule, withMethodTable } from '../electron/engine/methods/docs'

const root = (relative: string) => fileURLToPath(new URL(`../${relative}`, import.meta.url))

writeFileSync(root('electron/engine/methods/ids.ts'), idsModule())
const readme = root('README.md')
writeFileSync(readme, withMethodTable(readFileSync(readme, 'utf8')))
process.stdout.write('wrote electron/engine/methods/ids.ts and the README method table\n')
