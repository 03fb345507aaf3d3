// A searchable session picker (a combobox): type to filter the sessions by label or id, move with the arrow
// keys (Home/End, PageUp/PageDown), Enter or a click picks. Only the first matches are drawn, so it stays quick
// with thousands of sessions; the count says how many match.

import { clear, h } from './dom.js';
import { t } from './i18n.js';
import { sessionName } from './names.js';

const SHOWN = 50;
let pickers = 0;

export class SessionPicker {
  // sessions(): the sessions to choose from ({ id, label, status }); onPick(id) is called with the one picked.
  constructor({ sessions, onPick, label }) {
    this.sessions = sessions;
    this.onPick = onPick;
    this.id = `session-picker-${++pickers}`;
    this.current = null;
    this.input = h('input', { type: 'text', role: 'combobox', 'aria-autocomplete': 'list', 'aria-expanded': 'false',
      'aria-controls': this.id, 'aria-label': label, placeholder: t('picker.placeholder'), autocomplete: 'off',
      spellcheck: 'false' });
    this.list = h('ul', { id: this.id, role: 'listbox', class: 'picker-list', 'aria-label': label });
    this.count = h('div', { class: 'muted picker-count', role: 'status' });
    this.popup = h('div', { class: 'picker-popup' }, this.list, this.count);
    this.popup.hidden = true;
    this.element = h('div', { class: 'session-picker' }, this.input, this.popup);
    this.matches = [];
    this.active = -1;
    this.input.addEventListener('input', () => { this.active = 0; this.filter(); this.show(true); });
    this.input.addEventListener('focus', () => { this.input.select(); this.filter(); this.show(true); });
    this.input.addEventListener('keydown', (event) => this.key(event));
    this.element.addEventListener('focusout', (event) => {
      if (!this.element.contains(event.relatedTarget)) { this.show(false); this.showCurrent(); }
    });
  }

  // The session shown when the picker is closed.
  set value(id) {
    this.current = id || null;
    this.showCurrent();
  }

  showCurrent() {
    const node = this.current && this.sessions().find((s) => s.id === this.current);
    this.input.value = node ? `${node.label || node.id} (${node.id})` : '';
  }

  filter() {
    const words = this.input.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const shownValue = this.current && this.input.value === this.displayed();
    const all = this.sessions();
    this.matches = !words.length || shownValue ? all
      : all.filter((s) => { const text = `${s.label || ''} ${s.id}`.toLowerCase(); return words.every((w) => text.includes(w)); });
    if (this.active >= this.matches.length) this.active = this.matches.length - 1;
    if (this.active < 0 && this.matches.length) this.active = Math.max(0, this.matches.findIndex((s) => s.id === this.current));
    this.render();
  }

  displayed() {
    const node = this.sessions().find((s) => s.id === this.current);
    return node ? `${node.label || node.id} (${node.id})` : '';
  }

  render() {
    clear(this.list);
    // Draw a window of the matches around the active one.
    const start = Math.max(0, Math.min(this.active - Math.floor(SHOWN / 2), this.matches.length - SHOWN));
    this.matches.slice(start, start + SHOWN).forEach((s, offset) => {
      const index = start + offset;
      this.list.append(h('li', { id: `${this.id}-${index}`, role: 'option', class: 'picker-option',
        'aria-selected': String(index === this.active), dataset: { id: s.id },
        onmousedown: (event) => event.preventDefault(), onclick: () => this.pick(index) },
      h('span', { class: 'label', translate: 'no', text: sessionName(s) }),
      h('span', { class: 'muted mono', translate: 'no', text: s.id }),
      s.status === 'archived' ? h('span', { class: 'badge archived', text: t('status.archived') }) : null));
    });
    this.count.textContent = this.matches.length ? t('picker.count', { n: this.matches.length }) : t('picker.none');
    const current = document.getElementById(`${this.id}-${this.active}`);
    if (current) {
      this.input.setAttribute('aria-activedescendant', current.id);
      current.scrollIntoView({ block: 'nearest' });
    } else this.input.removeAttribute('aria-activedescendant');
  }

  key(event) {
    if (event.isComposing || event.keyCode === 229) return;
    const last = this.matches.length - 1;
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10 };
    if (event.key in moves) {
      if (this.popup.hidden) { this.filter(); this.show(true); }
      this.active = Math.max(0, Math.min(last, this.active + moves[event.key]));
    } else if (event.key === 'Home' && !this.popup.hidden) this.active = 0;
    else if (event.key === 'End' && !this.popup.hidden) this.active = last;
    else if (event.key === 'Enter' && this.active >= 0 && !this.popup.hidden) { event.preventDefault(); this.pick(this.active); return; }
    else if (event.key === 'Escape' && !this.popup.hidden) { this.show(false); this.showCurrent(); }
    else return;
    event.preventDefault();
    this.render();
  }

  show(open) {
    this.popup.hidden = !open;
    this.input.setAttribute('aria-expanded', String(open));
  }

  pick(index) {
    const chosen = this.matches[index];
    if (!chosen) return;
    this.current = chosen.id;
    this.show(false);
    this.showCurrent();
    this.onPick(chosen.id);
  }
}
