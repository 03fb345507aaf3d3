// The space's live events (GET /v1/events over SSE), reconnecting, with a bounded history for the Events
// page (loaded from the server's event history on start, so a reload still lists recent events; a reconnect
// resumes after the last event id seen); and the forest as the pages share it, refreshed when events say so.

import { api, allSessions, sse } from './api.js';

const HISTORY = 500;
const FIRST_PAGE = 2000; // nodes of the forest's first page: drawn at once, however big the forest
const NEXT_PAGE = 5000;
// Everything but the text chunks, which only the page running a turn needs (from the turn's own stream).
const TYPES = [
  'session_created', 'session_forked', 'session_archived', 'message_received', 'round_start', 'assistant_reply',
  'tool_call', 'tool_result', 'round_end', 'turn_finished', 'memory_updated', 'insight_updated',
  'consolidation_done', 'error', 'session_erased', 'approval_requested', 'approval_decided',
];
const FOREST_TYPES = new Set([
  'session_created', 'session_forked', 'session_archived', 'turn_finished', 'memory_updated', 'insight_updated',
  'consolidation_done', 'session_erased', 'approval_requested', 'approval_decided',
]);

export const live = {
  history: [],
  lastId: null,
  listeners: new Set(),
  connected: false,
  statusListeners: new Set(),
  controller: null,

  on(listener) { this.listeners.add(listener); return () => this.listeners.delete(listener); },
  onStatus(listener) { this.statusListeners.add(listener); return () => this.statusListeners.delete(listener); },

  setConnected(value) {
    if (this.connected === value) return;
    this.connected = value;
    for (const listener of this.statusListeners) listener(value);
  },

  start() {
    this.stop();
    const controller = (this.controller = new AbortController());
    const run = async () => {
      while (!controller.signal.aborted) {
        try {
          if (this.lastId === null) await this.loadHistory();
          const opened = sse(`/events?types=${TYPES.join(',')}&after=${this.lastId}`, {
            signal: controller.signal,
            lastEventId: this.lastId,
            onEvent: (type, data, id) => {
              if (id !== null && /^\d+$/.test(id)) this.lastId = Number(id);
              if (type === 'reset') { this.loadHistory(); forest.refresh(); return; }
              this.dispatch(type, data);
            },
          });
          this.setConnected(true);
          forest.running.clear(); // a turn_finished missed while disconnected must not pulse forever
          forest.refresh(); // events missed while disconnected are in the forest's current state
          await opened;
        } catch (error) {
          if (controller.signal.aborted || (error && error.status === 401)) break;
        }
        this.setConnected(false);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    };
    run();
  },

  // The newest kept events, oldest first (what the Events page lists on open), and the id to go on after.
  async loadHistory() {
    const page = await api(`/events/history?limit=${HISTORY}&types=${TYPES.join(',')}`);
    this.history = page.events.map((e) => ({ ...e.data, type: e.type, received: e.time }));
    this.lastId = page.last_id;
    for (const listener of this.statusListeners) listener(this.connected);
  },

  stop() {
    if (this.controller) this.controller.abort();
    this.controller = null;
    this.setConnected(false);
  },

  dispatch(type, data) {
    if (typeof data !== 'object' || data === null) return;
    const event = { ...data, type: data.type || type, received: Date.now() };
    if (type !== 'text') {
      this.history.push(event);
      if (this.history.length > HISTORY) this.history.splice(0, this.history.length - HISTORY);
    }
    forest.observe(event);
    for (const listener of this.listeners) listener(event);
  },
};

// The forest: nodes by id (with digest fields), roots, and which sessions run a turn now.
export const forest = {
  nodes: new Map(),
  digests: new Map(),
  roots: [],
  running: new Set(),
  loaded: false,
  listeners: new Set(),
  pending: null,
  loading: null,

  on(listener) { this.listeners.add(listener); return () => this.listeners.delete(listener); },
  emit(reason) { for (const listener of this.listeners) listener(reason); },

  // The forest in pages of its nodes (GET /v1/forest/nodes, parents first), the digests (memory and insight,
  // paged) after. The first load shows each page as it arrives, so the map draws a big forest from its first
  // page on; a reload builds the new forest aside and swaps it in whole (no shrinking, no flicker).
  async load() {
    const ticket = (this.loadTicket = (this.loadTicket || 0) + 1);
    const progressive = !this.loaded;
    const running = api('/turns');
    const byId = this.digests;
    const nodes = new Map();
    const roots = [];
    const labelCounts = new Map();
    const add = (item) => {
      const digest = byId.get(item.id) || {};
      const parent = item.parent_id ? nodes.get(item.parent_id) : undefined;
      const node = {
        id: item.id, label: item.label, status: item.status, parent_id: parent ? parent.id : null,
        source_id: item.source_id, turn_count: item.turn_count, last_activity: item.last_activity,
        depth: parent ? parent.depth + 1 : 0, children: [], memory: digest.memory ?? null,
        insight: digest.insight ?? null, turn_open: Boolean(digest.turn_open), awaiting_approval: item.awaiting_approval || 0,
        inherited_turns: item.inherited_turns || 0, created_at: item.created_at || 0,
      };
      nodes.set(node.id, node);
      if (parent) parent.children.push(node.id); else roots.push(node.id);
      labelCounts.set(node.label, (labelCounts.get(node.label) || 0) + 1);
    };
    const show = (complete) => {
      this.nodes = nodes;
      this.labelCounts = labelCounts;
      this.roots = roots;
      this.loaded = true;
      this.complete = complete;
      this.emit('load');
    };
    const fetchPage = (cursor, limit) =>
      api(`/forest/nodes?limit=${limit}` + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    let pending = fetchPage(null, FIRST_PAGE);
    let first = true;
    while (pending) {
      const page = await pending;
      if (ticket !== this.loadTicket) return this; // a newer load took over
      // The next page is on its way while this one is added and drawn.
      pending = page.next_cursor ? fetchPage(page.next_cursor, NEXT_PAGE) : null;
      for (const item of page.items) add(item);
      if (first) {
        // Turns this server's API runs now, plus those the events said started (in-process turns included);
        // turn_finished events take them out again.
        for (const id of (await running).session_ids) this.running.add(id);
        first = false;
      }
      if (progressive && pending) show(false);
    }
    show(true);
    this.loadDigests();
    return this;
  },

  // The first load's first page, then the rest in the background (what the page waits for before it renders).
  start() {
    return new Promise((resolve, reject) => {
      const off = this.on((reason) => { if (reason === 'load') { off(); resolve(this); } });
      this.loading = this.load().catch((error) => { off(); reject(error); return null; })
        .finally(() => { this.loading = null; });
    });
  },

  async loadDigests() {
    const ticket = (this.digestTicket = (this.digestTicket || 0) + 1);
    let digests;
    try { digests = await allSessions(); } catch { return; }
    if (ticket !== this.digestTicket) return; // a newer load asked again
    this.digests = new Map(digests.map((d) => [d.id, d]));
    for (const node of this.nodes.values()) {
      const digest = this.digests.get(node.id);
      if (digest) { node.memory = digest.memory ?? null; node.insight = digest.insight ?? null; }
    }
    this.emit('digests');
  },

  // Coalesces bursts of changes into one reload.
  refresh(delay = 60) {
    if (this.pending) return;
    this.pending = setTimeout(async () => {
      this.pending = null;
      if (this.loading) { await this.loading; this.refresh(0); return; }
      this.loading = this.load().catch(() => null);
      await this.loading;
      this.loading = null;
    }, delay);
  },

  observe(event) {
    const id = event.session_id;
    if (event.type === 'message_received' || event.type === 'round_start') {
      if (!this.running.has(id)) { this.running.add(id); this.emit('running'); }
    } else if (event.type === 'turn_finished' || (event.type === 'error' && event.source === 'turn')) {
      this.running.delete(id);
      this.emit('running');
    }
    if (FOREST_TYPES.has(event.type)) this.refresh();
  },

  label(id) {
    const node = this.nodes.get(id);
    return node ? node.label || id : id;
  },

  // How many sessions carry this label (two demo runs grow two trees with the same names).
  sharedLabel(label) {
    return (this.labelCounts && this.labelCounts.get(label)) || 0;
  },

  // Ancestors by topology parent, nearest first.
  ancestors(id) {
    const out = [];
    let node = this.nodes.get(id);
    while (node && node.parent_id) {
      node = this.nodes.get(node.parent_id);
      if (node) out.push(node);
    }
    return out;
  },
};

function countLabels(nodes) {
  const counts = new Map();
  for (const node of nodes.values()) counts.set(node.label, (counts.get(node.label) || 0) + 1);
  return counts;
}
