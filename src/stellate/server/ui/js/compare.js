// The compare view (#/compare/A/B): two sessions side by side from their common ancestor. The turns both hold
// are folded; the turns after the split are aligned by number, with token and latency totals per side, and a
// turn whose tool calls differ is marked. Every message is model or user text: shown as text, never as HTML.

import { api } from './api.js';
import { fill, h } from './dom.js';
import { t } from './i18n.js';
import { forest } from './live.js';
import { emptyState, errorNode, go } from './shared.js';

export function mount(container, params) {
  const [a = '', b = ''] = (params.id || '').split('/');
  const page = new ComparePage(container, a, b);
  return () => page.destroy();
}

class ComparePage {
  constructor(container, a, b) {
    this.body = h('div', { class: 'compare-body' });
    this.a = picker(t('compare.a'), a);
    this.b = picker(t('compare.b'), b);
    this.list = h('datalist', { id: 'compare-sessions' });
    const form = h('form', { class: 'compare-pick', onsubmit: (event) => {
      event.preventDefault();
      go(`#/compare/${encodeURIComponent(this.a.input.value.trim())}/${encodeURIComponent(this.b.input.value.trim())}`);
    } }, this.a.field, this.b.field, this.list, h('button', { type: 'submit', class: 'primary', text: t('compare.submit') }));
    fill(container, h('section', { class: 'page compare-page' }, h('h1', { text: t('nav.compare') }), form, this.body));
    this.offForest = forest.on(() => this.fillList());
    if (forest.loaded) this.fillList(); else forest.refresh(0);
    if (a && b) this.load(a, b);
    else emptyState(this.body, t('compare.pick'));
  }

  destroy() { this.offForest(); }

  fillList() {
    fill(this.list, [...forest.nodes.values()].map((node) =>
      h('option', { value: node.id, label: `${node.label || node.id} · ${node.id.slice(-6)}` })));
  }

  async load(a, b) {
    emptyState(this.body, t('compare.loading'));
    try {
      this.render(await api(`/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`));
    } catch (error) {
      emptyState(this.body, errorNode(error));
    }
  }

  render(found) {
    const ancestor = found.ancestor_id ? (forest.nodes.get(found.ancestor_id)?.label || found.ancestor_id) : null;
    const shared = h('details', { class: 'compare-shared' },
      h('summary', { text: ancestor
        ? t('compare.shared', { n: found.shared_turns.length, ancestor })
        : t('compare.unrelated') }),
      found.shared_turns.map((turn) => h('div', { class: 'compare-turn' }, turnHead(turn.turn), turnCell(turn))));
    const rows = found.rows.map((row) => h('div', { class: 'compare-row' + (row.tools_differ ? ' differs' : ''),
      dataset: { turn: row.turn } },
      h('div', { class: 'compare-row-head' }, turnHead(row.turn),
        row.tools_differ ? h('span', { class: 'badge differs', text: t('compare.toolsDiffer') }) : null,
        row.replies_differ ? null : h('span', { class: 'badge', text: t('compare.sameReply') })),
      h('div', { class: 'compare-cells' }, cellOrMissing(row.a), cellOrMissing(row.b))));
    fill(this.body,
      h('div', { class: 'compare-cells compare-sides' }, side(found.a), side(found.b)),
      h('p', { class: 'muted', text: t('compare.costNote') }),
      shared,
      rows.length ? rows : h('p', { class: 'empty', text: t('compare.noRows') }));
  }
}

function picker(label, value) {
  const input = h('input', { type: 'text', list: 'compare-sessions', value, required: true, 'aria-label': label,
    placeholder: t('compare.placeholder') });
  return { input, field: h('label', { class: 'field' }, h('span', { text: label }), input) };
}

function side(found) {
  const totals = found.totals;
  const tokens = !totals.calls ? t('compare.noCalls')
    : totals.input_tokens === null || totals.output_tokens === null ? t('compare.unknown')
      : t('compare.tokens', { input: totals.input_tokens, output: totals.output_tokens });
  return h('div', { class: 'compare-side', dataset: { id: found.id } },
    h('h2', {}, h('a', { href: '#/chat/' + encodeURIComponent(found.id), translate: 'no', text: found.label || found.id })),
    h('p', { class: 'muted mono', translate: 'no', text: found.id }),
    h('dl', { class: 'compare-totals' },
      h('dt', { text: t('compare.calls') }), h('dd', { class: 'calls', text: String(totals.calls) }),
      h('dt', { text: t('compare.tokensLabel') }), h('dd', { class: 'tokens', text: tokens }),
      h('dt', { text: t('compare.latency') }), h('dd', { class: 'latency', text: t('compare.ms', { ms: totals.latency_ms }) })));
}

function turnHead(number) {
  return h('h3', { text: t('compare.turn', { n: number }) });
}

function cellOrMissing(turn) {
  return turn ? turnCell(turn) : h('div', { class: 'compare-cell missing', text: t('compare.noTurn') });
}

function turnCell(turn) {
  return h('div', { class: 'compare-cell' },
    turn.user !== null ? h('div', { class: 'compare-user', translate: 'no', text: turn.user }) : null,
    turn.tool_calls.length ? h('ul', { class: 'compare-tools' }, turn.tool_calls.map((call) =>
      h('li', { class: call.is_error ? 'error' : '', translate: 'no', text: `${call.name}(${call.arguments})` }))) : null,
    h('div', { class: 'compare-reply', translate: 'no', text: turn.reply }),
    h('p', { class: 'muted turn-usage' }, turn.model ? h('span', { translate: 'no', text: turn.model + ' · ' }) : null,
      turn.reason ? t('compare.reason.' + turn.reason) : t('compare.reason.open'),
      turn.usage.calls ? ` · ${t('compare.turnUsage', { calls: turn.usage.calls, ms: turn.usage.latency_ms })}` : null));
}
