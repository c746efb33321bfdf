/**
 * SpecLab's patches to node-llama-cpp's source (addon-patch.ts, ggml-patches.ts): applied for SpecLab's own CPU
 * build (native-cpu-build.ts) and put back right after, so node_modules keeps npm's files.
 *
 * A patch is a unified diff whose paths are relative to node-llama-cpp's package root. jsdiff (`diff`, a dependency
 * for the run diff already) applies it and refuses any hunk that does not match, so another version's source is
 * left as it is; a file a killed build left patched is recognised by reversing the patch.
 */
import fs from 'node:fs'
import path from 'node:path'
import { applyPatch, parsePatch, reversePatch } from 'diff'

/** A file a patch changes: npm's text and the patched one. */
interface PatchedFile {
  file: string
  original: string
  patched: string
}

/**
 * The files `diff` changes under node-llama-cpp's package root `root`, or null where it does not apply. A file found
 * patched already (a build killed before it put npm's files back) counts, with npm's text recovered by reversing
 * the patch.
 */
export function patchedSources(root: string, diff: string): PatchedFile[] | null {
  const files: PatchedFile[] = []
  for (const filePatch of parsePatch(diff)) {
    const relative = (filePatch.oldFileName ?? '').replace(/^a\//, '')
    const file = path.join(root, relative)
    if (!relative || !fs.existsSync(file)) return null
    const text = fs.readFileSync(file, 'utf8')
    const patched = applyPatch(text, filePatch)
    if (patched !== false) {
      files.push({ file, original: text, patched })
      continue
    }
    const original = applyPatch(text, reversePatch(filePatch))
    if (original === false) return null
    files.push({ file, original, patched: text })
  }
  return files.length > 0 ? files : null
}

/**
 * Writes the patched sources into node-llama-cpp's package and returns what puts npm's files back (call it in a
 * `finally`), or null — nothing written — where `diff` does not apply to this source.
 */
export function applySourcePatch(root: string, diff: string): (() => void) | null {
  const files = patchedSources(root, diff)
  if (!files) return null
  const restore = () => {
    for (const { file, original } of files) fs.writeFileSync(file, original)
  }
  try {
    for (const { file, patched } of files) fs.writeFileSync(file, patched)
  } catch (error) {
    restore()
    throw error
  }
  return restore
}
