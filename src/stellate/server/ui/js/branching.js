// Edit and Regenerate in the conversation: a past turn runs again in a new branch, cut just before it (by
// reference), beside the session on the map; the session keeps its turns. The new turn streams over SSE: the
// first event names the branch, the page opens it, and the branch's page takes the rest of the stream over.

import { sid, sse } from './api.js';
import { fill, h } from './dom.js';
import { t } from './i18n.js';
import { forest } from './live.js';
import { errorNode, go, toast } from './shared.js';

// The stream of a branch's first turn, waiting for the branch's page to take it over.
let pending = null;

// The Edit button of a user message, and the Regenerate button of a reply that ends a completed turn.
export function messageActions(page, item) {
  if (!page.detail || page.detail.status === 'archived' || !item.turn) return null;
  if (item.kind === 'user') {
    return h('div', { class: 'msg-actions' }, h('button', { type: 'button', class: 'branch edit', text: t('edit.label'),
      title: t('edit.hint'), onclick: (event) => startEdit(page, item, event.target.closest('.msg')) }));
  }
  if (item.kind === 'assistant' && item.branch && item.branch.ok) {
    return h('button', { type: 'button', class: 'branch regenerate', text: t('regenerate.label'),
      title: t('regenerate.hint'), onclick: () => runAgain(page, 'regenerate', { turn: item.turn }, item.turn, null) });
  }
  return null;
}

function startEdit(page, item, message) {
  if (page.streaming || message.querySelector('form')) return;
  const box = h('textarea', { rows: 3, 'aria-label': t('edit.field') });
  box.value = item.text;
  const original = [...message.childNodes];
  const cancel = () => fill(message, original);
  const form = h('form', { class: 'edit-form', onsubmit: (event) => {
    event.preventDefault();
    const content = box.value.trim();
    if (!content) return;
    runAgain(page, 'edit', { turn: item.turn, content }, item.turn, content);
  } }, box, h('div', { class: 'buttons' },
    h('button', { type: 'button', text: t('action.cancel'), onclick: cancel }),
    h('button', { type: 'submit', class: 'primary', text: t('edit.submit') })));
  box.addEventListener('keydown', (event) => { if (event.key === 'Escape') cancel(); });
  fill(message, form);
  box.focus();
}

// POST .../edit or .../regenerate as a stream; open the branch as soon as the server names it.
async function runAgain(page, action, body, turn, content) {
  if (page.streaming) return;
  const handoff = { turn, content, events: [], listener: null, done: null, problem: null };
  let opened = false;
  handoff.done = sse(`/sessions/${sid(page.id)}/${action}`, {
    method: 'POST', body,
    onEvent: (type, data) => {
      if (type === 'branch') {
        opened = true;
        pending = { id: data.session.id, state: handoff };
        forest.refresh(0);
        go('#/chat/' + encodeURIComponent(data.session.id));
        return;
      }
      if (handoff.listener) handoff.listener(type, data); else handoff.events.push([type, data]);
    },
  }).catch((error) => {
    if (!opened) toast(errorNode(error), 'error'); else handoff.problem = error;
  });
}

// Called by the conversation page once it has loaded: if the branch it shows is running its first turn from
// an edit or a regeneration, show that turn streaming, as a turn sent from this page would.
export async function adoptBranchTurn(page) {
  if (!pending || pending.id !== page.id) return;
  const { state } = pending;
  pending = null;
  if (!page.detail) return; // the branch could not be loaded: the page says why
  const turn = { controller: new AbortController(), bubble: null, text: '', cards: new Map() };
  page.streaming = turn;
  page.setBusy(true);
  // What the log already holds of the new turn is drawn again from the stream, which starts at the turn's start.
  page.items = page.items.filter((item) => item.turn !== state.turn);
  page.renderMessages();
  const shown = state.content;
  if (shown) page.messages.append(h('div', { class: 'msg user' }, h('div', { class: 'bubble', translate: 'no', text: shown })));
  const onEvent = (type, data) => {
    if (type === 'message_received' && !shown) {
      page.messages.append(h('div', { class: 'msg user' }, h('div', { class: 'bubble', translate: 'no', text: data.content })));
    }
    page.onTurnEvent(turn, type, data);
  };
  for (const [type, data] of state.events) onEvent(type, data);
  state.listener = onEvent;
  await state.done;
  page.streaming = null;
  page.setBusy(false);
  forest.refresh(0);
  await page.load();
  if (turn.problem) page.showProblem(turn.problem);
  else if (state.problem) page.showProblem(state.problem);
}
