// Message search: a search box with a list of hits under it (the map's toolbar, the chat's sidebar), and
// opening a hit: the conversation that holds the message, scrolled to it and highlighted. Snippets and labels
// are model or user text: they are only ever set as text (the highlights are <mark> elements around text).

import { api } from './api.js';
import { clear, h, timeAgo } from './dom.js';
import { t } from './i18n.js';
import { go } from './shared.js';

const DEBOUNCE_MS = 250;
const PAGE = 20;
let pending = null; // { id, seq } a hit opened, until the conversation shows that message
let boxes = 0;

export async function searchMessages(query, { archived = false, offset = 0, limit = PAGE, signal } = {}) {
  const params = new URLSearchParams({ q: query, limit: String(limit), offset: String(offset) });
  if (archived) params.set('archived', 'true');
  return api('/search?' + params, { signal });
}

// The snippet as text nodes, each highlighted range wrapped in <mark>.
export function snippetNode(hit) {
  const out = h('span', { class: 'snippet', translate: 'no' });
  let at = 0;
  for (const [start, end] of hit.highlights) {
    if (start > at) out.append(hit.snippet.slice(at, start));
    out.append(h('mark', { text: hit.snippet.slice(start, end) }));
    at = end;
  }
  if (at < hit.snippet.length) out.append(hit.snippet.slice(at));
  return out;
}

export function openHit(hit) {
  pending = { id: hit.session_id, seq: hit.seq };
  const hash = '#/chat/' + encodeURIComponent(hit.session_id);
  if (location.hash === hash) {
    const messages = document.querySelector('.chat-page .messages');
    if (messages) revealHit(messages, hit.session_id);
  } else go(hash);
}

// Called by the conversation once it has rendered a session: scrolls to the opened hit and highlights it.
export function revealHit(messages, sessionId) {
  if (!pending || pending.id !== sessionId) return false;
  const target = messages.querySelector(`[data-seq="${Number(pending.seq)}"]`);
  if (!target) return false;
  pending = null;
  for (const old of messages.querySelectorAll('.search-target')) old.classList.remove('search-target');
  target.classList.add('search-target');
  target.setAttribute('tabindex', '-1');
  target.scrollIntoView({ block: 'center' });
  target.focus({ preventScroll: true });
  return true;
}

// A search box over the space's messages: type, then pick a hit with the mouse or the arrow keys and Enter.
// ``input`` may be an existing field (the map's label filter): it keeps its own behaviour too.
export class MessageSearch {
  constructor({ input = null, onOpen = openHit } = {}) {
    this.onOpen = onOpen;
    this.id = `message-search-${++boxes}`;
    // A field of its own is a combobox; a field lent by a page (the map's filter) keeps its role, a searchbox.
    this.combobox = !input;
    this.input = input || h('input', { type: 'search', class: 'search', role: 'combobox', 'aria-autocomplete': 'list',
      'aria-expanded': 'false', placeholder: t('search.placeholder'), 'aria-label': t('search.placeholder') });
    this.input.setAttribute('aria-controls', this.id);
    this.archived = h('input', { type: 'checkbox', onchange: () => this.run() });
    this.status = h('span', { class: 'muted', role: 'status' });
    this.list = h('ul', { id: this.id, role: 'listbox', 'aria-label': t('search.results') });
    this.more = h('button', { type: 'button', class: 'linkish', text: t('search.more'), onclick: () => this.run(true) });
    this.panel = h('div', { class: 'search-results' },
      h('div', { class: 'search-head' }, this.status,
        h('label', { class: 'inline' }, this.archived, ' ', t('search.archived'))),
      this.list, this.more);
    this.panel.hidden = true;
    this.element = h('div', { class: 'message-search' }, this.input, this.panel);
    this.hits = [];
    this.active = -1;
    this.input.addEventListener('input', () => this.schedule());
    this.input.addEventListener('keydown', (event) => this.key(event));
    this.input.addEventListener('focus', () => { if (this.hits.length || this.status.textContent) this.show(true); });
    this.element.addEventListener('focusout', (event) => {
      if (!this.element.contains(event.relatedTarget)) this.show(false);
    });
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), DEBOUNCE_MS);
  }

  async run(more = false) {
    const query = this.input.value.trim();
    if (this.controller) this.controller.abort();
    if (!query) { this.hits = []; this.render(null); this.show(false); return; }
    const controller = (this.controller = new AbortController());
    const offset = more ? this.nextOffset || 0 : 0;
    this.status.textContent = t('search.searching');
    this.show(true);
    let page;
    try {
      page = await searchMessages(query, { archived: this.archived.checked, offset, signal: controller.signal });
    } catch (error) {
      if (controller.signal.aborted) return;
      this.hits = [];
      this.render(null);
      this.status.textContent = t('search.failed', { code: error.code || '' });
      return;
    }
    if (controller.signal.aborted) return;
    this.hits = more ? [...this.hits, ...page.hits] : page.hits;
    this.nextOffset = page.next_offset;
    if (!more) this.active = -1;
    this.render(page);
  }

  render(page) {
    clear(this.list);
    this.hits.forEach((hit, index) => this.list.append(this.hitNode(hit, index)));
    this.more.hidden = !page || page.next_offset === null;
    this.status.textContent = !page ? '' : this.hits.length ? t('search.count', { n: this.hits.length }) : t('search.none');
    this.mark();
  }

  hitNode(hit, index) {
    const where = [t('role.' + hit.role), t('search.turn', { n: hit.turn }), timeAgo(hit.time, t)].join(' · ');
    return h('li', { id: `${this.id}-${index}`, role: 'option', class: 'hit', 'aria-selected': 'false',
      dataset: { session: hit.session_id, seq: hit.seq },
      onmousedown: (event) => event.preventDefault(), // keep the focus in the box until the hit opens
      onclick: () => this.open(index) },
    h('div', { class: 'hit-head' }, h('strong', { translate: 'no', text: hit.label || hit.session_id }),
      hit.archived ? h('span', { class: 'badge archived', text: t('status.archived') }) : null,
      h('span', { class: 'muted', text: where })),
    snippetNode(hit));
  }

  key(event) {
    if (event.isComposing || event.keyCode === 229) return;
    const count = this.hits.length;
    if (event.key === 'ArrowDown' && count) { this.active = (this.active + 1) % count; this.show(true); }
    else if (event.key === 'ArrowUp' && count) { this.active = (this.active - 1 + count) % count; this.show(true); }
    else if (event.key === 'Enter' && this.active >= 0) this.open(this.active);
    else if (event.key === 'Escape' && !this.panel.hidden) this.show(false);
    else return;
    event.preventDefault();
    this.mark();
  }

  mark() {
    [...this.list.children].forEach((li, index) => li.setAttribute('aria-selected', String(index === this.active)));
    const current = this.list.children[this.active];
    if (current) {
      this.input.setAttribute('aria-activedescendant', current.id);
      current.scrollIntoView({ block: 'nearest' });
    } else this.input.removeAttribute('aria-activedescendant');
  }

  show(open) {
    this.panel.hidden = !open;
    if (this.combobox) this.input.setAttribute('aria-expanded', String(open));
  }

  open(index) {
    const hit = this.hits[index];
    if (!hit) return;
    this.show(false);
    this.onOpen(hit);
  }
}
