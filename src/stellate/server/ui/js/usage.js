// What each model call cost: a muted line under each assistant reply (tokens in and out, latency, time to
// first token, cost) and the session's totals in the inspector. Unknown (the provider sent no usage, or the
// model has no price) shows as "—", never as 0.

import { api, sid } from './api.js';
import { append, h } from './dom.js';
import { t } from './i18n.js';
import { contextBar } from './context_window.js';

export const UNKNOWN = '—';

// The session's usage report, indexed for the conversation: each call by the reply it produced, each turn's
// totals, and the last reply of each turn (where a turn of several calls shows its total).
export async function loadUsage(id) {
  const report = await api(`/sessions/${sid(id)}/usage`);
  const byReply = new Map();
  const lastReply = new Map();
  for (const call of report.calls) {
    if (call.reply_seq === null) continue;
    byReply.set(call.reply_seq, call);
    lastReply.set(call.turn, Math.max(lastReply.get(call.turn) ?? -1, call.reply_seq));
  }
  return { id, report, byReply, lastReply, turns: new Map(report.turns.map((turn) => [turn.turn, turn])) };
}

export function tokens(n) {
  return n === null || n === undefined ? UNKNOWN : n.toLocaleString();
}

export function money(cost) {
  if (cost === null || cost === undefined) return UNKNOWN;
  if (cost === 0) return '0';
  return cost >= 1 ? cost.toFixed(2) : cost.toPrecision(2);
}

function ms(value) {
  return value === null || value === undefined ? UNKNOWN : t('usage.ms', { ms: value.toLocaleString() });
}

// The line under the reply at ``replySeq``; null when no recorded call produced it (an old log, a fork's
// opening message).
export function usageLine(usage, replySeq) {
  const call = usage && usage.byReply.get(replySeq);
  if (!call) return null;
  const parts = [
    t('usage.in', { n: tokens(call.input_tokens) }), t('usage.out', { n: tokens(call.output_tokens) }),
    ms(call.latency_ms), t('usage.ttft', { ms: ms(call.ttft_ms) }), t('usage.cost', { cost: money(call.cost) }),
  ];
  const turn = usage.turns.get(call.turn);
  if (turn && turn.calls > 1 && usage.lastReply.get(call.turn) === replySeq) {
    parts.push(t('usage.turnTotal', { n: turn.calls, in: tokens(turn.input_tokens), out: tokens(turn.output_tokens),
      cost: money(turn.cost) }));
  }
  const line = h('div', { class: 'usage-line muted', dataset: { seq: replySeq } },
    h('span', { class: 'usage-model', translate: 'no', text: call.model }), ' · ', parts.join(' · '), ' ');
  let bar = null;
  const toggle = h('button', { type: 'button', class: 'linkish', text: t('usage.context'), 'aria-expanded': 'false',
    onclick: () => {
      if (bar) { bar.remove(); bar = null; toggle.setAttribute('aria-expanded', 'false'); return; }
      bar = contextBar(usage.id, replySeq);
      line.after(bar);
      toggle.setAttribute('aria-expanded', 'true');
    } });
  return append(line, [toggle]);
}

// The inspector's card body: the session's own total, what a fork inherited (counted in its source), per turn.
export function usageSummary(report) {
  if (!report.calls.length) return h('p', { class: 'muted', text: t('usage.noCalls') });
  const totals = (name, sum) => h('tr', { dataset: { total: name } }, h('th', { text: t('usage.' + name) }),
    cells(sum));
  const rows = report.turns.map((turn) => h('tr', { class: turn.inherited ? 'inherited' : '', dataset: { turn: turn.turn } },
    h('td', { text: String(turn.turn) }), cells(turn)));
  return h('div', { class: 'usage-summary' },
    h('table', { class: 'usage-totals' },
      h('thead', {}, h('tr', {}, h('th', {}), header())),
      h('tbody', {}, totals('own', report.own), report.inherited.calls ? totals('inherited', report.inherited) : null)),
    h('h3', { text: t('usage.perTurn') }),
    h('table', { class: 'usage-turns' }, h('thead', {}, h('tr', {}, h('th', { text: t('usage.col.turn') }), header())),
      h('tbody', {}, rows)),
    h('p', { class: 'muted', text: report.priced ? t('usage.unknownNote') : t('usage.noPrices') }));
}

function header() {
  return ['calls', 'in', 'out', 'latency', 'cost'].map((name) => h('th', { text: t('usage.col.' + name) }));
}

function cells(sum) {
  return [String(sum.calls), tokens(sum.input_tokens), tokens(sum.output_tokens), ms(sum.latency_ms), money(sum.cost)]
    .map((text) => h('td', { class: 'num', text }));
}
