/**
 * Layout checks for the e2e screenshots (issue "The app a new user keeps"): at a given viewport, every visible
 * button, input, select and textarea must be the element found at its own centre (`document.elementFromPoint`
 * returns it or a descendant) once it is scrolled into view — nothing covers it — and neither the page nor the
 * scrolling main pane may scroll sideways.
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
