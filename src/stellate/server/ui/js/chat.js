// The conversation page: the forest as a filterable tree on the left, the chat in the middle. A turn streams
// every round over SSE (text, tool cards, the result); Stop cancels it; each assistant message that closes
// a completed turn offers "Branch from here" (a fork anchored at its seq).

import { allEvents, api, sid, sse } from './api.js';
import { adoptBranchTurn, messageActions } from './branching.js';
import { approvalActions, awaitingBadge, decisionNote } from './approvals.js';
import { append, clear, clip, fill, h, pretty } from './dom.js';
import { t } from './i18n.js';
import { ImagePicker, thumbnails } from './images.js';
import { forest } from './live.js';
import { renderMarkdown } from './markdown.js';
import { distinction, turnsText } from './names.js';
import { MessageSearch, revealHit } from './search.js';
import { emptyState, errorNode, go, toast } from './shared.js';
import { conversationOf } from './transcript.js';
import { loadUsage, usageLine } from './usage.js';

export function mount(container, params) {
  const page = new ChatPage(container, params.id || null);
  return () => page.destroy();
}

class ChatPage {
  constructor(container, id) {
    this.id = id;
    this.filter = '';
    this.streaming = null;
    this.build(container);
    this.offForest = forest.on(() => { this.renderTree(); this.renderHeader(); });
    this.onVisibility = (event) => {
      if (!event.detail && this.tail) this.tail.abort();
      else if (event.detail && this.id && !this.streaming) this.load();
    };
    window.addEventListener('stellate-visibility', this.onVisibility);
    if (forest.loaded) this.renderTree(); else forest.refresh(0);
    if (id) this.load().then(() => adoptBranchTurn(this));
    else emptyState(this.messages, t('chat.pick'));
  }

  destroy() {
    this.offForest();
    window.removeEventListener('stellate-visibility', this.onVisibility);
    if (this.tail) this.tail.abort();
  }

  build(container) {
    const filter = h('input', { type: 'search', placeholder: t('chat.filter'), 'aria-label': t('chat.filter') });
    filter.addEventListener('input', () => { this.filter = filter.value.trim().toLowerCase(); this.renderTree(); });
    this.tree = h('ul', { class: 'tree', 'aria-label': t('chat.sessions') });
    this.header = h('header', { class: 'chat-header' });
    this.messages = h('div', { class: 'messages', role: 'log', 'aria-live': 'polite', 'aria-label': t('chat.messages') });
    this.input = h('textarea', { rows: 3, placeholder: t('chat.placeholder'), 'aria-label': t('chat.placeholder') });
    this.input.addEventListener('keydown', (event) => {
      // Enter sends; Shift+Enter is a new line; Enter that confirms an IME composition does nothing here.
      if (event.key !== 'Enter' || event.shiftKey || event.isComposing || event.keyCode === 229) return;
      event.preventDefault();
      this.send();
    });
    this.sendButton = h('button', { type: 'button', class: 'primary', text: t('chat.send'), onclick: () => this.send() });
    this.stopButton = h('button', { type: 'button', class: 'danger', text: t('chat.stop'), onclick: () => this.stop() });
    this.stopButton.hidden = true;
    this.picker = new ImagePicker(this.input, (message) => toast(message, 'error'));
    this.composer = h('div', { class: 'composer' }, this.picker.chips, this.input, this.picker.input,
      h('div', { class: 'buttons' }, this.picker.button, this.stopButton, this.sendButton));
    fill(container, h('section', { class: 'page chat-page' },
      h('aside', { class: 'tree-pane' }, h('h2', { text: t('chat.sessions') }), new MessageSearch().element, filter, this.tree),
      h('div', { class: 'chat-pane' }, this.header, this.messages, this.composer)));
  }

  // -- the tree -------------------------------------------------------------------------------------

  renderTree() {
    clear(this.tree);
    const visible = (id) => {
      const node = forest.nodes.get(id);
      if (!node) return false;
      if (!this.filter || node.label.toLowerCase().includes(this.filter)) return true;
      return node.children.some(visible);
    };
    const row = (id) => {
      const node = forest.nodes.get(id);
      if (!visible(id)) return null;
      const kids = node.children.map(row).filter(Boolean);
      const button = h('button', { type: 'button', class: 'tree-row' + (id === this.id ? ' current' : ''),
        'aria-current': id === this.id ? 'page' : null, onclick: () => go('#/chat/' + encodeURIComponent(id)) },
        h('i', { class: 'dot ' + (node.status === 'archived' ? 'archived' : !node.parent_id ? 'root' : node.children.length ? 'inner' : 'leaf') }),
        h('span', { class: 'label', translate: 'no', text: node.label || node.id }),
        distinction(node) ? h('span', { class: 'distinction muted', translate: 'no', text: distinction(node) }) : null,
        h('span', { class: 'count', title: turnsText(node), text: String(node.turn_count - (node.inherited_turns || 0)) }),
        forest.running.has(id) ? h('span', { class: 'busy-dot', title: t('common.running'), 'aria-label': t('common.running') }) : null,
        awaitingBadge(node.awaiting_approval));
      return h('li', { dataset: { id } }, button, kids.length ? h('ul', {}, kids) : null);
    };
    const rows = forest.roots.map(row).filter(Boolean);
    if (!rows.length) this.tree.append(h('li', { class: 'muted', text: forest.nodes.size ? t('chat.noMatch') : t('map.empty') }));
    this.tree.append(...rows);
  }

  // -- the session ----------------------------------------------------------------------------------

  async load() {
    try {
      const [detail, log, usage] = await Promise.all([api(`/sessions/${sid(this.id)}`), allEvents(this.id),
        loadUsage(this.id).catch(() => null)]); // the conversation shows without its figures if they fail
      this.detail = detail;
      this.events = log.events;
      this.usage = usage;
      this.items = conversationOf(log.events);
    } catch (error) {
      this.detail = null;
      this.renderHeader();
      emptyState(this.messages, error.status === 404 ? t('chat.notFound') : errorNode(error));
      this.composer.hidden = true;
      return;
    }
    this.composer.hidden = this.detail.status === 'archived';
    this.renderHeader();
    this.renderMessages();
    revealHit(this.messages, this.id);
    this.follow();
  }

  // Tail the session's log, so a turn run elsewhere (another tab, a script, another process) shows up round
  // by round, and its messages become branchable the moment its turn completes.
  follow() {
    if (this.tail) this.tail.abort();
    const controller = (this.tail = new AbortController());
    const after = this.events.length ? this.events[this.events.length - 1].seq : -1;
    sse(`/sessions/${sid(this.id)}/events/stream?after=${after}`, {
      signal: controller.signal,
      onEvent: (type, data) => {
        if (type !== 'log' || controller.signal.aborted) return;
        const last = this.events[this.events.length - 1];
        if (last && data.seq <= last.seq) return;
        this.events.push(data);
        if (data.type === 'model/called') this.usageStale = true;
        if (!this.streaming) this.scheduleRender();
      },
    }).catch(() => null);
  }

  scheduleRender() {
    if (this.renderPending) return;
    this.renderPending = requestAnimationFrame(() => {
      this.renderPending = null;
      if (this.streaming) return;
      this.items = conversationOf(this.events);
      this.renderMessages();
      if (this.usageStale) this.refreshUsage();
    });
  }

  async refreshUsage() {
    this.usageStale = false;
    const usage = await loadUsage(this.id).catch(() => null);
    if (usage && usage.id === this.id && !this.streaming) { this.usage = usage; this.renderMessages(); }
  }

  renderHeader() {
    if (this.renaming) return; // the tree refreshes often: a name being typed must survive it
    clear(this.header);
    if (!this.detail) return;
    const node = forest.nodes.get(this.id);
    const label = (node && node.label) || this.detail.label || this.id;
    const title = h('h1', {}, h('button', { type: 'button', class: 'rename', translate: 'no', title: t('chat.renameHint'), text: label,
      onclick: () => this.rename(title, label) }));
    append(this.header, [title,
      h('span', { class: 'muted turns', text: turnsText(node || this.detail) }),
      node && distinction(node) ? h('span', { class: 'muted', translate: 'no', text: distinction(node) }) : null,
      this.detail.status === 'archived' ? h('span', { class: 'badge archived', text: t('status.archived') }) : null,
      awaitingBadge(this.detail.awaiting_approval),
      h('span', { class: 'spacer' }),
      h('button', { type: 'button', text: t('action.inspect'), onclick: () => go('#/inspect/' + encodeURIComponent(this.id)) }),
      h('button', { type: 'button', text: t('action.compare'), onclick: () => go(`#/compare/${encodeURIComponent(this.detail.source_id || '')}/${encodeURIComponent(this.id)}`) }),
      h('button', { type: 'button', text: t('action.replay'), onclick: () => go('#/replay/' + encodeURIComponent(this.id)) }),
      h('button', { type: 'button', text: t('action.showOnMap'), onclick: () => go('#/map/' + encodeURIComponent(this.id)) })]);
  }

  rename(title, current) {
    const input = h('input', { type: 'text', value: current, 'aria-label': t('chat.rename') });
    this.renaming = true;
    const done = async (save) => {
      if (!this.renaming) return; // Enter, then the blur of the removed field: save once
      this.renaming = false;
      if (save && input.value.trim() && input.value.trim() !== current) {
        try {
          await api(`/sessions/${sid(this.id)}`, { method: 'PATCH', body: { label: input.value.trim() } });
          this.detail.label = input.value.trim();
          forest.refresh(0);
        } catch (error) { toast(errorNode(error), 'error'); }
      }
      this.renderHeader();
    };
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.isComposing) { event.preventDefault(); done(true); }
      else if (event.key === 'Escape') done(false);
    });
    input.addEventListener('blur', () => done(true), { once: true });
    fill(title, input);
    input.select();
  }

  renderMessages() {
    // Rendering again (the log grew) keeps what the person opened, and their place if they scrolled up.
    const opened = new Set([...this.messages.querySelectorAll('details[open]')].map((d) => d.dataset.seq));
    const atEnd = this.messages.scrollHeight - this.messages.scrollTop - this.messages.clientHeight < 40;
    const top = this.messages.scrollTop;
    clear(this.messages);
    if (!this.items.length) emptyState(this.messages, t('chat.emptySession'));
    for (const item of this.items) this.messages.append(this.renderItem(item));
    if (this.problem) this.messages.append(this.problemNode());
    for (const card of this.messages.querySelectorAll('details')) if (opened.has(card.dataset.seq)) card.open = true;
    if (atEnd) this.scrollDown(); else this.messages.scrollTop = top;
  }

  renderItem(item) {
    if (item.kind === 'user') {
      return h('div', { class: 'msg user' + (item.inherited ? ' inherited' : ''), dataset: { seq: item.seq } },
        h('div', { class: 'bubble', translate: 'no', text: item.text }, thumbnails(item.images)), messageActions(this, item));
    }
    if (item.kind === 'tool') return toolCard(item, this.approvalOf(item));
    if (item.kind === 'note') return h('div', { class: 'msg note' }, t('chat.summary'), ' ', h('span', { translate: 'no', text: clip(item.text, 400) }));
    const body = h('div', { class: 'bubble markdown', translate: 'no' });
    body.append(renderMarkdown(item.text));
    const wrapper = h('div', { class: 'msg assistant' + (item.inherited ? ' inherited' : ''), dataset: { seq: item.seq } }, body);
    if (item.text) wrapper.append(h('div', { class: 'msg-actions' }, this.branchButton(item), messageActions(this, item)));
    const line = usageLine(this.usage, item.seq);
    if (line) wrapper.append(line);
    return wrapper;
  }

  approvalOf(item) {
    if (!item.approval) return null;
    if (item.approval.decision) return decisionNote(item.approval);
    if (!this.detail || this.detail.status === 'archived') return null;
    return approvalActions(item, this.id, () => { forest.refresh(0); this.load(); });
  }

  branchButton(item) {
    const ok = item.branch && item.branch.ok && this.detail && this.detail.status !== 'archived';
    const why = !item.branch || item.branch.ok ? t('branch.archived') : t('branch.why.' + item.branch.why);
    const button = h('button', { type: 'button', class: 'branch', text: t('branch.label'),
      title: ok ? t('branch.hint') : why, 'aria-disabled': ok ? 'false' : 'true' });
    button.addEventListener('click', () => { if (ok) this.branch(item); });
    return button;
  }

  async branch(item) {
    const label = `${(this.detail && this.detail.label) || this.id} · ${t('branch.suffix', { seq: item.seq })}`;
    try {
      const child = await api(`/sessions/${sid(this.id)}/forks`, { method: 'POST', body: { label, at_seq: item.seq } });
      forest.refresh(0);
      go('#/chat/' + encodeURIComponent(child.id));
    } catch (error) { toast(errorNode(error), 'error'); }
  }

  scrollDown() {
    this.messages.scrollTop = this.messages.scrollHeight;
  }

  // -- a turn -------------------------------------------------------------------------------------

  async send() {
    const content = this.input.value.trim();
    if (!content || this.streaming || !this.id) return;
    this.input.value = '';
    this.problem = null;
    const turn = { controller: new AbortController(), bubble: null, text: '', cards: new Map() };
    this.streaming = turn;
    this.setBusy(true);
    if (this.messages.querySelector('.empty')) clear(this.messages);
    // Until the first token (or tool call) arrives, the person sees that the model is at work.
    turn.thinking = h('div', { class: 'msg assistant thinking', role: 'status' }, h('span', { class: 'dots', 'aria-hidden': 'true' }), t('chat.thinking'));
    try {
      const images = await this.picker.take(); // uploaded first: the turn refers to them by hash
      this.messages.append(h('div', { class: 'msg user' }, h('div', { class: 'bubble', translate: 'no', text: content },
        thumbnails(images))));
      this.messages.append(turn.thinking);
      this.scrollDown();
      await sse(`/sessions/${sid(this.id)}/turns?wait=true`, { // behind another writer's turn: wait, and say so
        method: 'POST', body: { content, images: images.map((i) => ({ sha256: i.sha256 })) }, signal: turn.controller.signal,
        onEvent: (type, data) => this.onTurnEvent(turn, type, data),
      });
    } catch (error) {
      if (!turn.controller.signal.aborted) this.showProblem(error);
    }
    turn.thinking?.remove();
    this.streaming = null;
    this.setBusy(false);
    // A failed or cancelled turn publishes no turn_finished: stop showing it as running here.
    forest.running.delete(this.id);
    forest.emit('running');
    forest.refresh(0);
    await this.load();
    if (turn.problem) this.showProblem(turn.problem);
  }

  setBusy(busy) {
    this.stopButton.hidden = !busy;
    this.sendButton.disabled = busy;
    this.messages.setAttribute('aria-busy', String(busy));
  }

  liveBubble(turn) {
    if (!turn.bubble) {
      turn.text = '';
      turn.body = h('div', { class: 'bubble markdown streaming', translate: 'no' });
      const pending = h('button', { type: 'button', class: 'branch', text: t('branch.label'), title: t('branch.why.open'),
        'aria-disabled': 'true' });
      turn.bubble = h('div', { class: 'msg assistant live' }, turn.body, h('div', { class: 'msg-actions' }, pending));
      this.messages.append(turn.bubble);
    }
    return turn.bubble;
  }

  onTurnEvent(turn, type, data) {
    if (['text', 'assistant_reply', 'tool_call', 'problem'].includes(type)) turn.thinking?.remove();
    if (type === 'text') {
      this.liveBubble(turn);
      turn.text += data.text;
      fill(turn.body, renderMarkdown(turn.text));
    } else if (type === 'assistant_reply') {
      if (turn.bubble && !data.content) turn.bubble.remove();
      turn.bubble = null;
    } else if (type === 'tool_call') {
      const card = toolCard({ name: data.call.name, args: data.call.arguments, result: null });
      turn.cards.set(data.call.id, card);
      this.messages.append(card);
    } else if (type === 'tool_result') {
      const card = turn.cards.get(data.call.id);
      if (card) card.replaceWith(toolCard({ name: data.call.name, args: data.call.arguments, result: data.content,
        isError: data.is_error, duration: data.duration_ms }));
    } else if (type === 'approval_requested') {
      this.messages.append(toolCard({ name: data.call.name, args: data.call.arguments, result: null, approval: {} }));
    } else if (type === 'turn_waiting') {
      const since = data.held_since ? new Date(data.held_since).toLocaleTimeString() : '?';
      const holder = data.holder || t('chat.waitingUnknown');
      this.messages.append(h('div', { class: 'msg note waiting', role: 'status',
        text: t('chat.waiting', { holder, since, seconds: Math.round(data.wait_seconds) }) }));
    } else if (type === 'problem') {
      turn.problem = data;
    }
    this.scrollDown();
  }

  // The last turn's problem stays under the conversation until the next turn, whatever renders it again.
  showProblem(problem) {
    this.problem = problem;
    this.messages.append(this.problemNode());
    this.scrollDown();
  }

  problemNode() {
    const cancelled = this.problem.code === 'turn_cancelled';
    return h('div', { class: 'msg problem', role: 'alert' }, cancelled ? t('chat.stopped') : errorNode(this.problem));
  }

  async stop() {
    try { await api(`/sessions/${sid(this.id)}/turns/current/cancel`, { method: 'POST' }); }
    catch (error) { toast(errorNode(error), 'error'); }
  }

}

export function toolCard(item, extra = null) {
  const waiting = item.approval && !item.approval.decision && (item.result === null || item.result === undefined);
  const state = waiting ? 'waiting' : item.result === null || item.result === undefined ? 'running' : item.isError ? 'error' : 'ok';
  const summary = h('summary', {},
    h('span', { class: 'tool-name', translate: 'no', text: item.name }),
    h('span', { class: 'tool-state ' + state, text: t('tool.' + state) }),
    item.duration !== undefined && item.duration !== null ? h('span', { class: 'muted', text: t('tool.duration', { ms: Math.round(item.duration) }) }) : null);
  return h('details', { class: 'msg tool-card ' + state + (item.inherited ? ' inherited' : ''), dataset: { seq: item.seq ?? '' },
    open: waiting ? true : null }, summary,
    h('div', { class: 'tool-section' }, h('h4', { text: t('tool.arguments') }), h('pre', { translate: 'no', text: pretty(item.args ?? '') })),
    state === 'running' || state === 'waiting' ? null
      : h('div', { class: 'tool-section' }, h('h4', { text: item.isError ? t('tool.error') : t('tool.result') }), h('pre', { translate: 'no', text: pretty(item.result) }),
        thumbnails(item.images)),
    extra);
}
