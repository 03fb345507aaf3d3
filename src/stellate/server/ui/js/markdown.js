// Markdown for untrusted model output, rendered straight to DOM nodes: text is only ever set through text
// nodes, so no markup in a reply can become an element. Links keep http(s) and mailto only; images are never
// loaded (shown as a link with their alt text).

import { h } from './dom.js';

const SAFE_URL = /^(https?:|mailto:)/i;

export function renderMarkdown(source) {
  const root = document.createDocumentFragment();
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      const lang = line.trim().slice(3).trim();
      const body = [];
      i += 1;
      while (i < lines.length && !/^\s*```/.test(lines[i])) body.push(lines[i++]);
      i += 1;
      root.append(h('pre', { class: 'code', 'data-lang': lang || null }, h('code', { text: body.join('\n') })));
    } else if (/^#{1,6}\s/.test(line)) {
      const level = line.match(/^#+/)[0].length;
      root.append(inline(h('h' + Math.min(level + 2, 6)), line.replace(/^#+\s*/, '')));
      i += 1;
    } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? 'ol' : 'ul');
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        list.append(inline(h('li'), lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, '')));
        i += 1;
      }
      root.append(list);
    } else if (/^\s*>/.test(line)) {
      const quote = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quote.push(lines[i++].replace(/^\s*>\s?/, ''));
      root.append(inline(h('blockquote'), quote.join('\n')));
    } else if (/^\s*(---|\*\*\*)\s*$/.test(line)) {
      root.append(h('hr'));
      i += 1;
    } else if (line.trim() === '') {
      i += 1;
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() !== '' && !/^\s*(```|#{1,6}\s|[-*+]\s|\d+[.)]\s|>)/.test(lines[i])) {
        para.push(lines[i++]);
      }
      if (!para.length) para.push(lines[i++]);
      root.append(inline(h('p'), para.join('\n')));
    }
  }
  return root;
}

// Inline spans: `code`, **bold**, *em* / _em_, [text](url), ![alt](url) (never loaded), line breaks.
const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(!?\[[^\]]*\]\([^)\s]*\))|(\n)/;

function inline(el, text) {
  let rest = text;
  while (rest) {
    const match = rest.match(INLINE);
    if (!match) {
      el.append(document.createTextNode(rest));
      break;
    }
    if (match.index > 0) el.append(document.createTextNode(rest.slice(0, match.index)));
    const token = match[0];
    if (match[1]) el.append(h('code', { text: token.slice(1, -1) }));
    else if (match[2]) el.append(inline(h('strong'), token.slice(2, -2)));
    else if (match[3]) el.append(inline(h('em'), token.slice(1, -1)));
    else if (match[4]) el.append(link(token));
    else el.append(h('br'));
    rest = rest.slice(match.index + token.length);
  }
  return el;
}

function link(token) {
  const image = token.startsWith('!');
  const [, label, url] = token.match(/^!?\[([^\]]*)\]\(([^)\s]*)\)$/);
  const text = image ? `[${label || 'image'}]` : label || url;
  if (!SAFE_URL.test(url)) return document.createTextNode(text);
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer nofollow', title: url, text });
}
