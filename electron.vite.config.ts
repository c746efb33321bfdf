/**
 * electron-vite 6 build: out/main/index.js (ESM, package.json "type": "module") and out/main/host.js (the engine
 * host's utilityProcess entry, ESM), out/preload/index.cjs (CommonJS,
 * because a sandboxed preload cannot be an ES module), out/renderer/index.html (Svelte 5).
 */
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'electron-vite'
import { svelte } from '@sveltejs/vite-plugin-svelte'

const root = dirname(fileURLToPath(import.meta.url))

export default defineConfig({
  main: {
    build: {
      // Every package.json dependency stays external (the default); native modules are listed again so they
      // can never be bundled, even if they move out of "dependencies".
      externalizeDeps: { include: ['better-sqlite3', 'node-llama-cpp'] },
      rolldownOptions: {
        // host: the engine host's utilityProcess entry (out/main/host.js), forked by main/host-process.ts.
        input: { index: resolve(root, 'electron/main/index.ts'), host: resolve(root, 'electron/host/utility-entry.ts') }
      }
    }
  },
  preload: {
    build: {
      // A sandboxed preload may only require('electron') (and a few polyfilled builtins): one self-contained
      // CommonJS file, nothing left external but electron itself.
      externalizeDeps: false,
      rolldownOptions: {
        input: { index: resolve(root, 'electron/preload/index.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' }
      }
    }
  },
  renderer: {
    root: resolve(root, 'renderer'),
    plugins: [svelte({ configFile: resolve(root, 'svelte.config.js') })],
    build: {
      rolldownOptions: {
        input: { index: resolve(root, 'renderer/index.html') }
      }
    }
  }
})
