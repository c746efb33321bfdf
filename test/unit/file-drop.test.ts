/**
 * Files dropped on the page (renderer/src/lib/file-drop.ts): which dropped files the Models screen adds by path, the
 * one sentence for the rest (not .gguf, not on disk, browser mode), and the document-wide guard that keeps a file
 * dropped elsewhere from opening in the window while text drags into inputs keep working.
 */
import { describe, expect, it } from 'vitest'
import { BROWSER_DROP_MESSAGE, planDrop, preventFileNavigation } from '../../renderer/src/lib/file-drop'

type Dropped = { name: string; onDisk?: string }
const where = (file: Dropped) => file.onDisk ?? ''

describe('planDrop', () => {
  it('adds every .gguf with a path, in drop order, case-insensitively', () => {
    const files = [
      { name: 'target.gguf', onDisk: '/m/target.gguf' },
      { name: 'DRAFT.GGUF', onDisk: '/m/DRAFT.GGUF' }
    ]
    expect(planDrop(files, where)).toEqual({ paths: ['/m/target.gguf', '/m/DRAFT.GGUF'], message: null })
  })

  it('names the files that are not .gguf in one sentence, and still adds the models', () => {
    expect(planDrop([{ name: 'notes.txt', onDisk: '/n.txt' }], where)).toEqual({
      paths: [],
      message: 'notes.txt is not a .gguf file: only GGUF models can be added.'
    })
    const mixed = [{ name: 'a.bin', onDisk: '/a.bin' }, { name: 'm.gguf', onDisk: '/m.gguf' }, { name: 'b.safetensors' }, { name: 'c.zip' }]
    expect(planDrop(mixed, where)).toEqual({
      paths: ['/m.gguf'],
      message: 'a.bin, b.safetensors and c.zip are not .gguf files: only GGUF models can be added.'
    })
  })

  it('says which .gguf files have no path on this computer', () => {
    expect(planDrop([{ name: 'pasted.gguf' }, { name: 'ok.gguf', onDisk: '/ok.gguf' }], where)).toEqual({
      paths: ['/ok.gguf'],
      message: 'pasted.gguf: not a file on this computer, so it cannot be added by path.'
    })
  })

  it('in browser mode (no way to learn a path) adds nothing and says to type the path', () => {
    expect(BROWSER_DROP_MESSAGE).toBe(
      'Browser mode cannot see where a dropped file is stored: type or paste its path above (the desktop app accepts drops).'
    )
    expect(planDrop([{ name: 'model.gguf' }], null)).toEqual({ paths: [], message: BROWSER_DROP_MESSAGE })
    expect(planDrop([{ name: 'model.gguf' }, { name: 'x.txt' }], null).message).toBe(
      `x.txt is not a .gguf file: only GGUF models can be added. ${BROWSER_DROP_MESSAGE}`
    )
    expect(planDrop([], null)).toEqual({ paths: [], message: null })
  })
})

describe('preventFileNavigation', () => {
  const listeners = new Map<string, (event: any) => void>()
  const target = {
    addEventListener: (type: string, listener: any) => listeners.set(type, listener),
    removeEventListener: (type: string, listener: any) => {
      if (listeners.get(type) === listener) listeners.delete(type)
    }
  }
  const dragEvent = (types: string[], defaultPrevented = false) => {
    const event = {
      defaultPrevented,
      dataTransfer: { types, dropEffect: 'copy' },
      preventDefault() {
        event.defaultPrevented = true
      }
    }
    return event
  }

  it('cancels file drops anywhere and refuses file drags where no drop target took them; text drags pass', () => {
    const uninstall = preventFileNavigation(target as never)
    const fileOver = dragEvent(['Files'])
    listeners.get('dragover')!(fileOver)
    expect(fileOver).toMatchObject({ defaultPrevented: true, dataTransfer: { dropEffect: 'none' } })

    // The Models screen accepted it first (preventDefault, 'copy'): left alone.
    const accepted = dragEvent(['Files'], true)
    listeners.get('dragover')!(accepted)
    expect(accepted.dataTransfer.dropEffect).toBe('copy')

    const fileDrop = dragEvent(['Files'])
    listeners.get('drop')!(fileDrop)
    expect(fileDrop.defaultPrevented).toBe(true)

    const textOver = dragEvent(['text/plain'])
    const textDrop = dragEvent(['text/plain'])
    listeners.get('dragover')!(textOver)
    listeners.get('drop')!(textDrop)
    expect([textOver.defaultPrevented, textDrop.defaultPrevented, textOver.dataTransfer.dropEffect]).toEqual([false, false, 'copy'])

    uninstall()
    expect(listeners.size).toBe(0)
  })
})
