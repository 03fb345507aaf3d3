// The space's live events: created, forked, archived, turns, memory and insight, errors. Filters by kind,
// pause, bounded (the newest 500 kept), each with its session's label.

import { clock, clip, fill, h } from './dom.js';
import { t } from './i18n.js';
import { forest, live } from './live.js';
import { go } from './shared.js';

const KINDS = {
  session: ['session_created', 'session_forked', 'session_archived', 'session_erased'],
  turn: ['message_received', 'round_start', 'assistant_reply', 'tool_call', 'tool_result', 'round_end', 'turn_finished',
    'approval_requested', 'approval_decided'],
  slot: ['memory_updated', 'insight_updated', 'consolidation_done'],
  error: ['error'],
};
const LIMIT = 500;

function kindOf(type) {
  return Object.keys(KINDS).find((k) => KINDS[k].includes(type)) || 'other';
}

export function mount(container) {
  let kind = 'all';
  let paused = false;
  let held = [];
  const list = h('ol', { class: 'event-list', 'aria-live': 'polite' });
  const status = h('span', { class: 'pill' });
  const chips = h('div', { class: 'chips', role: 'group', 'aria-label': t('events.filter') },
    ['all', 'session', 'turn', 'slot', 'error'].map((k) => h('button', { type: 'button', 'aria-pressed': String(k === kind),
      dataset: { kind: k }, text: t('events.kind.' + k), onclick: () => { kind = k; syncChips(); render(); } })));
  const pause = h('button', { type: 'button', 'aria-pressed': 'false', text: t('events.pause'), onclick: () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? t('events.resume') : t('events.pause');
    if (!paused) { held = []; render(); }
  } });
  const clearButton = h('button', { type: 'button', text: t('action.clear'), onclick: () => { live.history.length = 0; render(); } });
  fill(container, h('section', { class: 'page events-page' },
    h('div', { class: 'toolbar' }, h('h1', { text: t('events.title') }), status, chips, pause, clearButton),
    h('p', { class: 'muted', text: t('events.note', { n: LIMIT }) }), list));

  function syncChips() {
    for (const chip of chips.children) chip.setAttribute('aria-pressed', String(chip.dataset.kind === kind));
  }

  function describe(event) {
    switch (event.type) {
      case 'session_created': return t('events.d.created', { label: event.label });
      case 'session_forked': return t('events.d.forked', { label: event.label, source: forest.label(event.source_id) });
      case 'turn_finished': return t('events.d.turn', { reason: event.result.reason, rounds: event.result.rounds, content: clip(event.result.content, 80) });
      case 'message_received': return clip(event.content, 100);
      case 'assistant_reply': return clip(event.content, 100);
      case 'tool_call': return `${event.call.name}(${clip(event.call.arguments, 80)})`;
      case 'tool_result': return `${event.call.name} → ${clip(event.content, 80)}`;
      case 'approval_requested': return `${event.call.name}(${clip(event.call.arguments, 80)}) · ${t('tool.waiting')}`;
      case 'approval_decided': return t(event.decision === 'approved' ? 'approval.approvedBy' : 'approval.deniedBy', { by: event.by })
        + ` · ${event.name}${event.reason ? ': ' + clip(event.reason, 80) : ''}`;
      case 'memory_updated': case 'consolidation_done': return clip(event.memory, 100);
      case 'insight_updated': return event.insight === null ? t('events.d.insightCleared') : clip(event.insight, 100);
      case 'error': return `${event.source} · ${event.code}: ${clip(event.message, 120)}`;
      default: return '';
    }
  }

  function row(event) {
    const k = kindOf(event.type);
    return h('li', { class: 'event ' + k, dataset: { type: event.type } },
      h('span', { class: 'mono muted', text: clock(event.received) }),
      h('span', { class: 'badge ' + k, translate: 'no', text: event.type }),
      event.session_id ? h('button', { type: 'button', class: 'linkish', translate: 'no', text: forest.label(event.session_id),
        onclick: () => go('#/chat/' + encodeURIComponent(event.session_id)) }) : h('span', { class: 'muted', text: t('events.space') }),
      h('span', { class: 'desc', translate: 'no', text: describe(event) }));
  }

  function render() {
    const shown = live.history.filter((e) => kind === 'all' || kindOf(e.type) === kind).slice(-LIMIT).reverse();
    fill(list, ...shown.map(row));
    if (!shown.length) list.append(h('li', { class: 'empty', text: t('events.empty') }));
    status.textContent = live.connected ? t('events.live') : t('events.offline');
    status.classList.toggle('offline', !live.connected);
  }

  const offEvent = live.on((event) => {
    if (event.type === 'text') return;
    if (paused) { held.push(event); status.textContent = t('events.held', { n: held.length }); return; }
    render();
  });
  const offStatus = live.onStatus(render);
  render();
  return () => { offEvent(); offStatus(); };
}
