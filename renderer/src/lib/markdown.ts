/**
 * Replies rendered as Markdown (markdown-it: CommonMark, well kept, no DOM needed). Model output is untrusted, so
 * raw HTML is escaped rather than rendered (`html: false`), markdown-it's own link check drops javascript:/vbscript:/
 * file: links, images are off (the page's CSP would block remote ones anyway) and links open outside the app
 * (Electron hands web links to the system browser; browser mode opens a new tab).
 */
import MarkdownIt from 'markdown-it'

const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true }).disable('image')

const defaultLinkOpen = markdown.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options))
markdown.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]!.attrSet('target', '_blank')
  tokens[idx]!.attrSet('rel', 'noopener noreferrer')
  return defaultLinkOpen(tokens, idx, options, env, self)
}

/** The reply as HTML: safe to insert, since no HTML of the model's own survives. */
export function renderMarkdown(text: string): string {
  return markdown.render(text)
}
