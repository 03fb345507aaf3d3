// The space's live events (GET /v1/events over SSE), reconnecting, with a bounded history for the Events
// page; and the forest as the pages share it, refreshed when the events say it changed.

import { api, allSessions, sse } from './api.js';

const HISTORY = 500;
const FOREST_TYPES = new Set([
  'session_created', 'session_forked', 'session_archived', 'turn_finished', 'memory_updated', 'insight_updated',
  'consolidation_done',
]);

export const live = {
  history: [],
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
          const opened = sse('/events', {
            signal: controller.signal,
            onEvent: (type, data) => this.dispatch(type, data),
          });
          this.setConnected(true);
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
  roots: [],
  running: new Set(),
  loaded: false,
  listeners: new Set(),
  pending: null,
  loading: null,

  on(listener) { this.listeners.add(listener); return () => this.listeners.delete(listener); },
  emit(reason) { for (const listener of this.listeners) listener(reason); },

  async load() {
    const [roots, digests, running] = await Promise.all([api('/forest'), allSessions(), api('/turns')]);
    const byId = new Map(digests.map((d) => [d.id, d]));
    const nodes = new Map();
    const walk = (node, parent) => {
      const digest = byId.get(node.id) || {};
      nodes.set(node.id, {
        id: node.id, label: node.label, status: node.status, parent_id: parent ? parent.id : null,
        source_id: node.source_id, turn_count: node.turn_count, last_activity: node.last_activity,
        depth: node.depth, children: node.children.map((c) => c.id), memory: digest.memory ?? null,
        insight: digest.insight ?? null, turn_open: Boolean(digest.turn_open),
      });
      for (const child of node.children) walk(child, node);
    };
    for (const root of roots) walk(root, null);
    // Turns this server runs now; events keep the set current between loads.
    this.running = new Set(running.session_ids);
    this.nodes = nodes;
    this.roots = roots.map((r) => r.id);
    this.loaded = true;
    this.emit('load');
    return this;
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
