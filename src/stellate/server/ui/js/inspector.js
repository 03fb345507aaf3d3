// The inspector: the exact context of any past model call (rebuilt by the server from the log), the stored
// configuration, the slots (editable), the lineage, and the raw event log with inherited events marked.

import { allEvents, api, sid } from './api.js';
import { clock, fill, h, pretty } from './dom.js';
import { t } from './i18n.js';
import { thumbnails } from './images.js';
import { forest } from './live.js';
import { nameOf, sessionName, turnsText } from './names.js';
import { SessionPicker } from './picker.js';
import { emptyState, errorNode, go } from './shared.js';
import { contextBar } from './context_window.js';
import { loadUsage, usageSummary } from './usage.js';

export function mount(container, params) {
  const page = new Inspector(container, params.id || null);
  return () => page.destroy();
}

class Inspector {
  constructor(container, id) {
    this.id = id;
    this.typeFilter = '';
    this.picker = new SessionPicker({ label: t('inspect.session'), sessions: () => [...forest.nodes.values()],
      onPick: (id) => go('#/inspect/' + encodeURIComponent(id)) });
    this.body = h('div', { class: 'inspector' });
    fill(container, h('section', { class: 'page inspect-page' },
      h('div', { class: 'toolbar' }, h('h1', { text: t('inspect.title') }), this.picker.element), this.body));
    this.off = forest.on(() => this.renderPicker());
    if (forest.loaded) this.renderPicker(); else forest.refresh(0);
    if (id) this.load(); else emptyState(this.body, t('inspect.pick'));
  }

  destroy() { this.off(); }

  renderPicker() {
    if (document.activeElement !== this.picker.input) this.picker.value = this.id;
  }

  async load() {
    try {
      const [detail, log] = await Promise.all([api(`/sessions/${sid(this.id)}`), allEvents(this.id)]);
      this.detail = detail;
      this.events = log.events;
    } catch (error) {
      emptyState(this.body, error.status === 404 ? t('chat.notFound') : errorNode(error));
      return;
    }
    this.steps = this.events.filter((e) => e.type === 'assistant/message');
    this.contextBox = h('div', { class: 'context' });
    this.logBox = h('div', { class: 'log' });
    this.usageBox = h('div', { class: 'usage' }, h('p', { class: 'muted', text: '…' }));
    loadUsage(this.id).then((usage) => fill(this.usageBox, usageSummary(usage.report)))
      .catch((error) => fill(this.usageBox, errorNode(error)));
    fill(this.body,
      card(t('inspect.context'), this.stepPicker(), this.contextBox),
      card(t('usage.title'), this.usageBox),
      h('div', { class: 'columns' },
        h('div', {}, card(t('inspect.slots'), this.slots()), card(t('inspect.lineage'), this.lineage())),
        h('div', {}, card(t('inspect.config'), this.config()))),
      card(t('inspect.log'), this.logFilter(), this.logBox));
    this.renderLog();
    if (this.steps.length) this.showContext(this.steps[this.steps.length - 1].seq);
    else emptyState(this.contextBox, t('inspect.noCalls'));
  }

  stepPicker() {
    const select = h('select', { 'aria-label': t('inspect.call') },
      this.steps.map((e, i) => h('option', { value: e.seq, text: t('inspect.callOption', { n: i + 1, seq: e.seq,
        inherited: e.inherited ? t('inspect.inheritedMark') : '' }) })));
    if (this.steps.length) select.value = this.steps[this.steps.length - 1].seq;
    select.addEventListener('change', () => this.showContext(Number(select.value)));
    return h('label', { class: 'field inline' }, h('span', { text: t('inspect.call') }), select);
  }

  async showContext(step) {
    let context;
    try { context = await api(`/sessions/${sid(this.id)}/context?step=${step}`); }
    catch (error) { emptyState(this.contextBox, errorNode(error)); return; }
    const messages = context.messages.map((m) => h('li', { class: 'ctx-msg ' + m.role, dataset: { role: m.role } },
      h('span', { class: 'role', text: t('role.' + m.role) }),
      m.name ? h('span', { class: 'muted', translate: 'no', text: ' ' + m.name }) : null,
      h('pre', { class: 'content', translate: 'no', text: m.content }),
      thumbnails(m.images),
      m.tool_calls && m.tool_calls.length ? h('pre', { class: 'calls', translate: 'no', text: pretty(m.tool_calls) }) : null));
    const tools = context.tools.map((tool) => h('li', {}, h('details', {},
      h('summary', { translate: 'no' }, h('strong', { text: tool.name }), ' ', h('span', { class: 'muted', text: tool.description })),
      h('pre', { translate: 'no', text: pretty(tool.parameters) }))));
    fill(this.contextBox,
      h('p', { class: 'muted', text: t('inspect.contextNote', { seq: context.step }) }),
      h('h3', { text: t('ctx.title') }), contextBar(this.id, context.step),
      h('h3', { text: t('slot.systemPrompt') }), preOrNone(context.system_prompt),
      h('h3', { text: t('inspect.insightConsumed') }), preOrNone(context.insight),
      h('h3', { text: t('inspect.messages', { n: context.messages.length }) }), h('ol', { class: 'ctx-messages' }, messages),
      h('h3', { text: t('inspect.tools', { n: context.tools.length }) }),
      tools.length ? h('ul', { class: 'ctx-tools' }, tools) : h('p', { class: 'muted', text: t('common.none') }));
  }

  slots() {
    const archived = this.detail.status === 'archived';
    const editor = (name, value, save, clearIt) => {
      const area = h('textarea', { rows: 4, 'aria-label': t('slot.' + name), disabled: archived, translate: 'no' });
      area.value = value ?? '';
      const status = h('span', { class: 'muted', role: 'status' });
      const run = async (action) => {
        try { await action(); status.textContent = t('inspect.saved'); forest.refresh(0); }
        catch (error) { fill(status, errorNode(error)); }
      };
      return h('div', { class: 'slot-editor' }, h('label', { class: 'field' }, h('span', { text: t('slot.' + name) }), area),
        h('div', { class: 'buttons' }, status,
          clearIt ? h('button', { type: 'button', disabled: archived, text: t('action.clear'), onclick: () => run(async () => { await clearIt(); area.value = ''; }) }) : null,
          h('button', { type: 'button', class: 'primary', disabled: archived, text: t('action.save'), onclick: () => run(() => save(area.value)) })));
    };
    const path = `/sessions/${sid(this.id)}`;
    return h('div', {},
      editor('systemPrompt', this.detail.system_prompt, (v) => api(path + '/system_prompt', { method: 'PUT', body: { content: v } })),
      editor('memory', this.detail.memory, (v) => api(path + '/memory', { method: 'PUT', body: { content: v } })),
      editor('insight', this.detail.insight, (v) => api(path + '/insight', { method: 'PUT', body: { content: v } }),
        () => api(path + '/insight', { method: 'DELETE' })),
      h('p', { class: 'muted', text: t('inspect.slotsNote') }));
  }

  lineage() {
    const link = (id, label) => h('button', { type: 'button', class: 'linkish', translate: 'no',
      text: forest.nodes.has(id) ? nameOf(id) : label || id,
      onclick: () => go('#/inspect/' + encodeURIComponent(id)) });
    const box = h('div', {}, h('p', { class: 'muted', text: '…' }));
    const origin = (entry) => h('span', { class: 'muted' }, ' ', entry.fork_seq === null || entry.fork_seq === undefined
      ? t('inspect.noHistory') : t('inspect.forkedAt', { seq: entry.fork_seq }),
      entry.source_id && entry.source_id !== entry.parent_id ? [' · ', t('map.contextFrom'), ' ', link(entry.source_id)] : null);
    const tree = (node) => (node.children.length
      ? h('ul', {}, node.children.map((c) => h('li', {}, link(c.id, c.label), tree(c)))) : null);
    api(`/sessions/${sid(this.id)}/lineage`).then((found) => {
      const chain = [...found.ancestors].reverse().map((a) => h('li', {}, link(a.id, a.label), a.parent_id ? origin(a) : null));
      fill(box,
        h('h3', { text: t('inspect.ancestors') }),
        h('ol', { class: 'lineage' }, chain,
          h('li', { class: 'current' }, h('strong', { translate: 'no', text: found.session.label || this.id }),
            found.session.parent_id ? origin(found.session) : null)),
        h('h3', { text: t('inspect.descendants') }),
        tree(found.descendants) || h('p', { class: 'muted', text: t('common.none') }));
    }).catch((error) => fill(box, errorNode(error)));
    return box;
  }

  config() {
    const { sources, ...config } = this.detail.config || {};
    const origins = Object.keys(config).map((key) => h('td', { class: 'muted', dataset: { key } }, '…'));
    const rows = Object.entries(config).map(([key, value], i) => h('tr', {},
      h('th', { translate: 'no', text: key }), h('td', {}, h('pre', { translate: 'no', text: pretty(value) })), origins[i]));
    this.fillOrigins(config, origins, sources);
    const facts = [
      ['id', this.detail.id], ['status', t('status.' + this.detail.status)], ['turns', turnsText(this.detail)],
      ['nextSeq', this.detail.next_seq], ['inherited', this.detail.inherited], ['openTurn', this.detail.open_turn ? t('common.yes') : t('common.no')],
      ['created', stamp(this.detail.created_at)],
    ];
    return h('div', {},
      h('table', { class: 'facts' }, facts.map(([k, v]) => h('tr', {}, h('th', { text: t('inspect.fact.' + k) }), h('td', { translate: k === 'id' ? 'no' : null, text: String(v) })))),
      h('h3', { text: t('inspect.storedConfig') }),
      rows.length ? h('table', { class: 'config' }, rows) : h('p', { class: 'muted', text: t('common.none') }),
      h('p', { class: 'muted', text: t('inspect.configNote') }));
  }

  // Where each stored value came from: recorded by the fork (``sources``: defaults, parent, profile, options or
  // a combination); for sessions without that record, inferred by comparing with the parent's configuration.
  async fillOrigins(config, cells, sources) {
    const layer = (name) => (name === 'profile' && config.profile
      ? t('inspect.layer.profileNamed', { profile: config.profile }) : t('inspect.layer.' + name));
    if (sources) {
      Object.keys(config).forEach((key, i) => {
        const recorded = sources[key] || (key === 'profile' || key === 'profile_vars' ? 'options' : null);
        fill(cells[i], recorded ? recorded.split('+').map(layer).join(' + ') : t('inspect.origin.unrecorded'));
      });
      return;
    }
    const parentId = this.detail.source_id || this.detail.parent_id;
    let parent = null;
    if (parentId) {
      try { parent = (await api(`/sessions/${sid(parentId)}`)).config || {}; } catch { parent = {}; }
    }
    Object.keys(config).forEach((key, i) => {
      let origin;
      if (!parent) origin = t('inspect.origin.creation');
      else if (key === 'profile') origin = t('inspect.origin.fork');
      else if (JSON.stringify(parent[key]) === JSON.stringify(config[key])) origin = t('inspect.origin.parent');
      else if (config.profile) origin = t('inspect.origin.profile', { profile: config.profile });
      else origin = t('inspect.origin.fork');
      fill(cells[i], origin);
    });
  }

  logFilter() {
    const types = [...new Set(this.events.map((e) => e.type))].sort();
    const select = h('select', { 'aria-label': t('inspect.filterType'), translate: 'no' }, h('option', { value: '', text: t('inspect.allTypes') }),
      types.map((type) => h('option', { value: type, text: type })));
    select.addEventListener('change', () => { this.typeFilter = select.value; this.renderLog(); });
    return h('label', { class: 'field inline' }, h('span', { text: t('inspect.filterType') }), select);
  }

  renderLog() {
    const rows = this.events.filter((e) => !this.typeFilter || e.type === this.typeFilter).map((e) =>
      h('tr', { class: e.inherited ? 'inherited' : '', dataset: { seq: e.seq, type: e.type } },
        h('td', { class: 'mono', text: String(e.seq) }),
        h('td', { class: 'mono', translate: 'no', text: e.type }),
        h('td', { class: 'mono', text: clock(e.time) }),
        h('td', {}, e.inherited ? h('span', { class: 'badge inherited', text: t('inspect.inherited') }) : null),
        h('td', { translate: 'no' }, h('details', {}, h('summary', { text: JSON.stringify(e.data).slice(0, 90) }), h('pre', { text: pretty(e.data) })))));
    fill(this.logBox, h('table', { class: 'events-table' },
      h('thead', {}, h('tr', {}, ['seq', 'type', 'time', 'origin', 'data'].map((c) => h('th', { text: t('inspect.col.' + c) })))),
      h('tbody', {}, rows)));
  }
}

function preOrNone(text) {
  return text === null || text === undefined ? h('p', { class: 'muted', text: t('common.none') }) : h('pre', { class: 'slot', translate: 'no', text });
}

function stamp(ms) {
  const d = new Date(ms);
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function card(title, ...content) {
  return h('section', { class: 'card' }, h('h2', { text: title }), ...content);
}

