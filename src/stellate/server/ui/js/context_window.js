// The context window of a past model call: one bar whose segments are the parts of the context the server
// rebuilt from the log (system prompt, identity, insight, summary, history, tool definitions), against the
// model's window, with the compression threshold marked.

import { api, sid } from './api.js';
import { fill, h } from './dom.js';
import { t } from './i18n.js';
import { errorNode } from './shared.js';

export function contextBar(id, replySeq) {
  const box = h('div', { class: 'ctx-window', dataset: { seq: replySeq ?? '' }, 'aria-busy': 'true' },
    h('p', { class: 'muted', text: '…' }));
  const query = replySeq === null || replySeq === undefined ? '' : `?reply_seq=${replySeq}`;
  api(`/sessions/${sid(id)}/context-window${query}`)
    .then((found) => { renderWindow(box, found); box.setAttribute('aria-busy', 'false'); })
    .catch((error) => { fill(box, errorNode(error)); box.setAttribute('aria-busy', 'false'); });
  return box;
}

function renderWindow(box, found) {
  // Estimates may pass the window (the provider refused such a call, or the window was changed since).
  const scale = Math.max(found.window, found.total_tokens, 1);
  const percent = (n) => `${((100 * n) / scale).toFixed(2)}%`;
  const bar = h('div', { class: 'ctx-bar', role: 'img',
    'aria-label': t('ctx.summary', { total: found.total_tokens.toLocaleString(), window: found.window.toLocaleString(),
      percent: Math.round((100 * found.total_tokens) / Math.max(found.window, 1)), threshold: found.threshold.toLocaleString() }) });
  for (const part of found.parts) {
    const segment = h('div', { class: 'ctx-seg part-' + part.name, dataset: { part: part.name, tokens: part.tokens },
      title: `${t('ctx.part.' + part.name)}: ${part.tokens.toLocaleString()}` });
    segment.style.width = percent(part.tokens);
    bar.append(segment);
  }
  const threshold = h('div', { class: 'ctx-threshold', title: t('ctx.threshold', { n: found.threshold.toLocaleString() }) });
  threshold.style.left = percent(found.threshold);
  bar.append(threshold);
  const legend = h('ul', { class: 'ctx-legend' }, found.parts.map((part) => h('li', { dataset: { part: part.name } },
    h('i', { class: 'swatch part-' + part.name }), t('ctx.part.' + part.name), ' ',
    h('span', { class: 'num', text: part.tokens.toLocaleString() }))));
  fill(box,
    h('p', { class: 'ctx-total' }, t('ctx.summary', { total: found.total_tokens.toLocaleString(),
      window: found.window.toLocaleString(), percent: Math.round((100 * found.total_tokens) / Math.max(found.window, 1)),
      threshold: found.threshold.toLocaleString() }),
    found.reported_input_tokens === null ? null : [' · ', t('ctx.reported', { n: found.reported_input_tokens.toLocaleString() })]),
    bar, legend, h('p', { class: 'muted', text: t('ctx.note') }));
}
