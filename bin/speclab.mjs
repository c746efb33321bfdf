#!/usr/bin/env node
// `npx speclab …`: runs the TypeScript CLI through tsx (a runtime dependency), so no build step is needed.
import { register } from 'tsx/esm/api'

register()
await import('../electron/cli.ts')
