/**
 * Layout checks for the e2e screenshots: at a given viewport, every visible
 * button, input, select and textarea must be the element found at its own centre (`document.elementFromPoint`
 * returns it or a descendant) once it is scrolled into view — nothing covers it — neither the page nor the
 * scrolling main pane may scroll sideways, and no table cell, status badge or form control may be cut off by a box
 * that hides or scrolls its overflow (a table's last column out of its panel, a side column that scrolls sideways).
 */
import type { Page } from 'playwright-core'

export const LAPTOP_AND_DESKTOP = [
  { width: 1280, height: 800 },
  { width: 1440, height: 900 },
  { width: 1920, height: 1080 }
] as const

/** One line per problem: what is covered and by what, or what scrolls sideways. */
export async function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const describe = (el: Element | null): string => {
      if (!el) return 'nothing'
      const h = el as HTMLElement
      const id = h.dataset?.testid ? `[data-testid=${h.dataset.testid}]` : ''
      const text = (h.innerText || (h as HTMLInputElement).placeholder || h.getAttribute('aria-label') || h.title || '').trim().slice(0, 30)
      return `${el.tagName.toLowerCase()}${id}${text ? ` "${text}"` : ''}`
    }
    const problems: string[] = []
    for (const scroller of [document.scrollingElement, ...document.querySelectorAll('.content, main')]) {
      if (scroller && scroller.scrollWidth > scroller.clientWidth + 1)
        problems.push(`${describe(scroller)} scrolls sideways (${scroller.scrollWidth} > ${scroller.clientWidth} px)`)
    }
    // Cut off: a cell, badge or control reaching past the right or left edge of a box that clips (overflow hidden,
    // clip, auto or scroll) — the user sees it cut, or must scroll that box sideways to read it. Checked before the
    // controls below are scrolled into view, at the scroll positions a user first sees.
    const clipping = (el: Element): Element | null => {
      for (let node = el.parentElement; node && node !== document.body; node = node.parentElement) {
        if (getComputedStyle(node).overflowX !== 'visible') return node
      }
      return null
    }
    const cut = new Set<string>()
    for (const el of document.querySelectorAll<HTMLElement>('td, th, .status, button, input, select, textarea')) {
      if (!el.checkVisibility({ contentVisibilityAuto: true, visibilityProperty: true })) continue
      const rect = el.getBoundingClientRect()
      if (rect.width === 0 || rect.height === 0) continue
      const box = clipping(el)
      if (!box || box === document.scrollingElement) continue
      const edge = box.getBoundingClientRect()
      const left = edge.left + box.clientLeft
      const right = left + box.clientWidth
      if (rect.right <= right + 1 && rect.left >= left - 1) continue
      const line = `${describe(el)} is cut off by ${describe(box)} (${Math.round(rect.left)}–${Math.round(rect.right)} px, box ${Math.round(left)}–${Math.round(right)} px)`
      // One line per clipping box: a table cut at its last column names the first cell cut.
      const key = describe(box) + el.tagName
      if (!cut.has(key)) {
        cut.add(key)
        problems.push(line)
      }
    }
    // checkVisibility: rendered, not visibility:hidden, not inside a closed <details> (content-visibility: hidden).
    const controls = [...document.querySelectorAll<HTMLElement>('button, input, select, textarea')].filter(
      (el) => (el as HTMLInputElement).type !== 'hidden' && el.checkVisibility({ contentVisibilityAuto: true, visibilityProperty: true })
    )
    for (const el of controls) {
      el.scrollIntoView({ block: 'center', inline: 'center' })
      const rect = el.getBoundingClientRect()
      if (rect.width === 0 || rect.height === 0) continue
      const x = rect.left + rect.width / 2
      const y = rect.top + rect.height / 2
      if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) {
        problems.push(`${describe(el)} cannot be brought into view (centre at ${Math.round(x)}, ${Math.round(y)})`)
        continue
      }
      const hit = document.elementFromPoint(x, y)
      // A label wrapping the control counts as the control (clicking it reaches the control).
      const label = el.closest('label')
      if (hit && (el === hit || el.contains(hit) || (label !== null && label.contains(hit) && hit.closest('label') === label))) continue
      problems.push(`${describe(el)} is covered by ${describe(hit)}`)
    }
    // Leave every scroll position as it was before the check (tables scrolled sideways too), so the screenshot
    // shows what a user first sees.
    scrollTo(0, 0)
    for (const scroller of document.querySelectorAll('*')) if (scroller.scrollLeft !== 0 || scroller.scrollTop !== 0) scroller.scrollTo(0, 0)
    return problems
  })
}

/**
 * WCAG contrast of the visible text on the page (a dark theme that follows the system must be readable in both
 * palettes): for every element with text of its own (and every filled text field or
 * select), the ratio between its computed text colour and the background it sits on — the first opaque
 * background-color up the ancestor chain, with translucent ones on the way blended in. Below 4.5 is a problem, or
 * below 3 for large text (≥ 24px, or ≥ 18.66px bold). Disabled controls and faded elements (opacity < 1) are exempt,
 * as WCAG exempts inactive components; canvases (charts) are not text. One line per distinct element kind and colour
 * pair, with how many elements share it.
 */
export async function contrastProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number]
    const parse = (css: string): Rgba | null => {
      const m = /^rgba?\(([\d.]+),?\s*([\d.]+),?\s*([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\)$/.exec(css.trim())
      if (!m) return null
      const alpha = m[4] === undefined ? 1 : m[4].endsWith('%') ? parseFloat(m[4]) / 100 : parseFloat(m[4])
      return [Number(m[1]), Number(m[2]), Number(m[3]), alpha]
    }
    const over = (top: Rgba, below: Rgba): Rgba => {
      const a = top[3]
      return [top[0] * a + below[0] * (1 - a), top[1] * a + below[1] * (1 - a), top[2] * a + below[2] * (1 - a), 1]
    }
    const luminance = ([r, g, b]: Rgba): number => {
      const channel = (c: number) => {
        const s = c / 255
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
      }
      return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    }
    const hex = (c: Rgba) => '#' + c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')
    /** The background behind an element: translucent layers blended down to the first opaque one. */
    const backgroundOf = (el: Element): Rgba => {
      const layers: Rgba[] = []
      for (let node: Element | null = el; node; node = node.parentElement) {
        const color = parse(getComputedStyle(node).backgroundColor)
        if (color && color[3] > 0) {
          layers.push(color)
          if (color[3] >= 1) break
        }
      }
      // The canvas of the page when nothing up the chain is opaque (app.css always paints html and body).
      let result: Rgba = matchMedia('(prefers-color-scheme: dark)').matches ? [18, 18, 18, 1] : [255, 255, 255, 1]
      for (const layer of layers.reverse()) result = over(layer, result)
      return result
    }
    const faded = (el: Element): boolean => {
      for (let node: Element | null = el; node; node = node.parentElement) if (Number(getComputedStyle(node).opacity) < 1) return true
      return false
    }
    const fields = 'input:not([type=checkbox]):not([type=radio]):not([type=range]):not([type=hidden]), select, textarea'
    const found = new Map<string, { count: number; sample: string }>()
    for (const el of document.querySelectorAll<HTMLElement>('body *')) {
      if (el.closest('canvas, svg, script, style')) continue
      const ownText = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim() !== '')
      const filledField = el.matches(fields) && ((el as HTMLInputElement).value ?? '') !== ''
      if (!ownText && !filledField) continue
      if (!el.checkVisibility({ contentVisibilityAuto: true, visibilityProperty: true })) continue
      const rect = el.getBoundingClientRect()
      if (rect.width < 2 || rect.height < 2) continue // visually hidden (screen-reader only) text
      if (el.closest(':disabled') || faded(el)) continue
      const style = getComputedStyle(el)
      const text = parse(style.color)
      if (!text || text[3] === 0) continue
      const background = backgroundOf(el)
      const fg = over(text, background)
      const [hi, lo] = [luminance(fg), luminance(background)].sort((a, b) => b - a)
      const ratio = (hi + 0.05) / (lo + 0.05)
      const size = parseFloat(style.fontSize)
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700)
      const needed = large ? 3 : 4.5
      if (ratio >= needed) continue
      const testid = el.closest<HTMLElement>('[data-testid]')?.dataset.testid
      const classes = [...el.classList].filter((c) => !c.startsWith('svelte-'))
      const key = `${el.tagName.toLowerCase()}${classes.map((c) => '.' + c).join('')}${testid ? ` in [data-testid=${testid}]` : ''}: contrast ${ratio.toFixed(2)} < ${needed} (${hex(fg)} on ${hex(background)})`
      const seen = found.get(key)
      if (seen) seen.count++
      else found.set(key, { count: 1, sample: (el.innerText || (el as HTMLInputElement).value || '').trim().slice(0, 30) })
    }
    return [...found].map(([key, { count, sample }]) => `${key}, e.g. "${sample}"${count > 1 ? ` (×${count})` : ''}`)
  })
}
