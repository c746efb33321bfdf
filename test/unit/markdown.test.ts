/** Chat replies as Markdown (renderer/src/lib/markdown.ts): what renders, and that model output cannot inject HTML. */
import { describe, expect, it } from 'vitest'
import { renderMarkdown } from '../../renderer/src/lib/markdown'

describe('renderMarkdown', () => {
  it('renders emphasis, lists, tables and fenced code blocks', () => {
    const html = renderMarkdown('**Lily** had:\n\n- a ball\n- a *dog*\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```js\nconst x = 1 < 2\n```')
    expect(html).toContain('<strong>Lily</strong>')
    expect(html).toMatch(/<ul>\s*<li>a ball<\/li>\s*<li>a <em>dog<\/em><\/li>\s*<\/ul>/)
    expect(html).toContain('<td>1</td>')
    expect(html).toContain('<pre><code class="language-js">const x = 1 &lt; 2\n</code></pre>')
  })

  it("escapes the model's HTML, drops script links and images, and opens web links outside the app", () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror=alert(1)>\n\n[click](javascript:alert(1)) ![pic](http://x/p.png) [docs](https://example.com/)')
    expect(html).not.toMatch(/<script|<img/)
    expect(html).toContain('&lt;script&gt;')
    expect(html).not.toMatch(/href="javascript:/)
    expect(html).toContain('<a href="https://example.com/" target="_blank" rel="noopener noreferrer">docs</a>')
  })
})
