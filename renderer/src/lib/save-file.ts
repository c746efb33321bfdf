/**
 * Saves text as a file the way a page can in both modes: a Blob URL on a temporary link with `download` (Chromium
 * and Electron both show their usual save flow).
 */
export function saveFile(fileName: string, content: string | Uint8Array<ArrayBuffer>, mimeType: string): void {
  const url = URL.createObjectURL(new Blob([content], { type: mimeType }))
  const a = document.createElement('a')
  a.href = url
  a.download = fileName
  document.body.append(a)
  a.click()
  a.remove()
  // Revoked later: the download reads the URL after click() returns.
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
