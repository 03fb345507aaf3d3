// The star map: the forest on a canvas (pan, zoom, fit, search, hover card), a side panel with actions, a
// Reflect action, and a plain list of the same sessions for keyboards and screen readers. Live: it redraws
// whenever the shared forest changes (the events stream), so a fork made by the model appears at once.

import { api, sid } from './api.js';
import { clear, clip, fill, h, timeAgo } from './dom.js';
import { t } from './i18n.js';
import { HitGrid } from './hit_grid.js';
import { paintNodes } from './map_nodes.js';
import { layoutForest } from './layout.js';
import { forest } from './live.js';
import { awaitingBadge } from './approvals.js';
import { eraseDialog } from './erase.js';
import { nameOf, sessionName, turnsText } from './names.js';
import { reflectControl } from './reflect.js';
import { MessageSearch } from './search.js';
import { confirmDialog, errorNode, forkDialog, go, newSessionDialog, toast } from './shared.js';


export function mount(container, params) {
  const view = new StarMap(container, params);
  return () => view.destroy();
}

class StarMap {
  constructor(container, params) {
    this.container = container;
    this.k = 1; this.tx = 0; this.ty = 0;
    this.positions = new Map();
    this.born = new Map();
    this.selected = params.id || null;
    this.hover = null;
    this.query = '';
    this.lit = new Set();
    this.frame = null;
    this.fitted = false;
    this.userMoved = false; // until the person pans or zooms, the view keeps the whole forest in sight
    this.listMode = false;
    this.build();
    // A new forest is laid out again; new digests or running turns only change what is drawn.
    this.off = forest.on((reason) => (reason === 'load' ? this.scheduleUpdate() : this.refreshDetails()));
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(this.stage);
    this.onTheme = () => this.draw();
    window.addEventListener('stellate-theme', this.onTheme);
    window.stellate.map = this;
    if (forest.loaded) this.update(); else forest.refresh(0);
  }

  destroy() {
    this.off();
    this.cancelUpdate();
    this.resizeObserver.disconnect();
    window.removeEventListener('stellate-theme', this.onTheme);
    if (this.frame) cancelAnimationFrame(this.frame);
    if (window.stellate.map === this) window.stellate.map = null;
  }

  build() {
    this.search = h('input', { type: 'search', class: 'search', placeholder: t('map.search'), 'aria-label': t('map.search') });
    this.search.addEventListener('input', () => { this.query = this.search.value.trim().toLowerCase(); this.renderList(); this.draw(); });
    this.messageSearch = new MessageSearch({ input: this.search }); // the same words, in messages
    this.count = h('span', { class: 'pill' });
    this.listToggle = h('button', { type: 'button', 'aria-pressed': 'false', text: t('map.list'),
      onclick: () => this.toggleList() });
    const toolbar = h('div', { class: 'toolbar' },
      h('h1', { text: t('map.title') }), this.count, this.messageSearch.element,
      h('button', { type: 'button', text: t('map.fit'), title: t('map.fitHint'), onclick: () => { this.userMoved = false; this.fit(); } }),
      h('button', { type: 'button', text: '+', 'aria-label': t('map.zoomIn'), title: t('map.zoomIn'), onclick: () => this.zoomBy(1.25) }),
      h('button', { type: 'button', text: '−', 'aria-label': t('map.zoomOut'), title: t('map.zoomOut'), onclick: () => this.zoomBy(0.8) }),
      this.listToggle,
      h('button', { type: 'button', text: t('create.button'), onclick: () => this.create() }),
      reflectControl({ onInsights: (ids) => { this.lit = new Set(ids); this.draw(); }, onPick: (id) => this.select(id) }));
    this.canvas = h('canvas', { tabindex: '0', role: 'img', 'aria-label': t('map.canvasLabel') });
    this.card = h('div', { class: 'hover-card', role: 'tooltip' });
    this.card.hidden = true;
    this.emptyNote = h('p', { class: 'empty', text: t('map.empty') });
    this.emptyNote.hidden = true;
    this.stage = h('div', { class: 'stage' }, this.canvas, this.card, this.emptyNote);
    this.list = h('ul', { class: 'session-list', 'aria-label': t('map.listLabel') });
    this.list.hidden = true;
    this.panel = h('aside', { class: 'panel', 'aria-live': 'polite' });
    this.panel.hidden = true;
    this.legend = h('div', { class: 'legend' },
      ['root', 'inner', 'leaf', 'archived', 'running', 'insight'].map((kind) =>
        h('span', {}, h('i', { class: 'dot ' + kind }), t('map.legend.' + kind))),
      h('span', {}, h('i', { class: 'dash' }), t('map.legend.source')));
    fill(this.container,
      h('section', { class: 'page map-page' }, toolbar,
        h('div', { class: 'map-body' }, h('div', { class: 'map-main' }, this.stage, this.list, this.legend), this.panel)));
    this.bindPointer();
  }

  // -- data ---------------------------------------------------------------------------------------

  // A complete forest is laid out at once; the pages of a first load that streams in are laid out at most once a
  // frame (a page that arrives meanwhile joins the next layout).
  // While streaming, a layout waits until the last one's cost has passed three times over, so laying out takes
  // at most a quarter of the time and the pages keep arriving.
  scheduleUpdate() {
    if (forest.complete) { this.cancelUpdate(); this.update(); return; }
    if (this.updateTimer || this.updateFrame) return;
    const wait = this.updatedAt === undefined ? 0 : Math.max(0, this.updatedAt + 3 * (this.layoutMs || 0) - performance.now());
    this.updateTimer = setTimeout(() => {
      this.updateTimer = null;
      this.updateFrame = requestAnimationFrame(() => { this.updateFrame = null; this.update(); });
    }, wait);
  }

  cancelUpdate() {
    if (this.updateTimer) clearTimeout(this.updateTimer);
    if (this.updateFrame) cancelAnimationFrame(this.updateFrame);
    this.updateTimer = null; this.updateFrame = null;
  }

  update() {
    const now = performance.now();
    const laidOut = performance.now();
    const next = layoutForest(forest.nodes, forest.roots);
    this.layoutMs = performance.now() - laidOut; // read by the benchmark (bench/ui_map.py)
    this.updatedAt = performance.now();
    if (this.positions.size && this.shownComplete) { // sessions streaming in with the first load do not pop
      for (const id of next.keys()) if (!this.positions.has(id)) this.born.set(id, now);
    }
    this.shownComplete = Boolean(forest.complete);
    this.positions = next;
    this.grid = null; // built again on the next hover
    this.count.textContent = t('map.count', { n: forest.nodes.size });
    this.emptyNote.hidden = forest.nodes.size > 0;
    if (!this.fitted && next.size) { this.resize(); this.fit(); this.fitted = true; }
    else if (!this.userMoved) this.fit();
    this.renderList();
    if (this.selected && forest.nodes.has(this.selected)) this.showPanel(this.selected, false);
    this.draw();
  }

  refreshDetails() {
    if (this.selected && forest.nodes.has(this.selected) && !this.panel.hidden) this.showPanel(this.selected, false);
    if (!this.list.hidden) this.renderList();
    this.draw();
  }

  renderList() {
    if (this.list.hidden) return;
    clear(this.list);
    const rows = [];
    const walk = (id, depth) => {
      const node = forest.nodes.get(id);
      if (!node) return;
      if (!this.query || node.label.toLowerCase().includes(this.query)) rows.push([node, depth]);
      node.children.forEach((c) => walk(c, depth + 1));
    };
    forest.roots.forEach((r) => walk(r, 0));
    for (const [node, depth] of rows.slice(0, 2000)) {
      const button = h('button', { type: 'button', class: 'linkish', translate: 'no', onclick: () => this.select(node.id) },
        sessionName(node));
      const li = h('li', { class: 'depth', dataset: { id: node.id } }, button,
        h('span', { class: 'muted', text: ` ${turnsText(node)} · ${t('status.' + node.status)}` }),
        forest.running.has(node.id) ? h('span', { class: 'busy', text: t('common.running') }) : null,
        awaitingBadge(node.awaiting_approval));
      li.style.paddingInlineStart = `${depth * 1.2}em`;
      this.list.append(li);
    }
  }

  toggleList() {
    this.listMode = !this.listMode;
    this.list.hidden = !this.listMode;
    this.stage.hidden = this.listMode;
    this.listToggle.setAttribute('aria-pressed', String(this.listMode));
    this.listToggle.textContent = this.listMode ? t('map.canvas') : t('map.list');
    this.renderList();
    if (!this.listMode) this.resize();
  }

  // -- view transform -------------------------------------------------------------------------------

  resize() {
    const rect = this.stage.getBoundingClientRect();
    if (!rect.width || !rect.height) return;
    const dpr = window.devicePixelRatio || 1;
    this.width = rect.width; this.height = rect.height;
    this.canvas.width = Math.round(rect.width * dpr);
    this.canvas.height = Math.round(rect.height * dpr);
    this.canvas.style.width = rect.width + 'px';
    this.canvas.style.height = rect.height + 'px';
    if (this.fitted && !this.userMoved) this.fit(); else this.draw();
  }

  fit() {
    if (!this.positions.size || !this.width) return;
    let minX = Infinity; let minY = Infinity; let maxX = -Infinity; let maxY = -Infinity;
    for (const p of this.positions.values()) {
      minX = Math.min(minX, p.x); minY = Math.min(minY, p.y); maxX = Math.max(maxX, p.x); maxY = Math.max(maxY, p.y);
    }
    const pad = 60;
    const k = Math.min((this.width - pad * 2) / Math.max(1, maxX - minX), (this.height - pad * 2) / Math.max(1, maxY - minY));
    this.k = Math.max(0.02, Math.min(2, k));
    this.tx = this.width / 2 - ((minX + maxX) / 2) * this.k;
    this.ty = this.height / 2 - ((minY + maxY) / 2) * this.k;
    this.draw();
  }

  zoomBy(factor, cx = this.width / 2, cy = this.height / 2) {
    this.userMoved = true;
    const k = Math.max(0.02, Math.min(6, this.k * factor));
    this.tx = cx - ((cx - this.tx) * k) / this.k;
    this.ty = cy - ((cy - this.ty) * k) / this.k;
    this.k = k;
    this.draw();
  }

  screenPoint(id) {
    const p = this.positions.get(id);
    if (!p) return null;
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + this.tx + p.x * this.k, y: rect.top + this.ty + p.y * this.k };
  }

  radius(node) {
    return (node.parent_id ? 6 : 10) + Math.min(14, Math.sqrt(node.turn_count) * 3);
  }

  nodeAt(sx, sy) {
    const x = (sx - this.tx) / this.k;
    const y = (sy - this.ty) / this.k;
    let best = null; let bestD = Infinity;
    // A big forest looks only near the pointer: no node is drawn larger than 27 units (a pop included), or 8 pixels.
    if (this.positions.size > 1000 && !this.grid) this.grid = new HitGrid(this.positions);
    const ids = this.grid ? this.grid.near(x, y, Math.max(27, 8 / this.k) + 1) : this.positions.keys();
    for (const id of ids) {
      const p = this.positions.get(id);
      const node = forest.nodes.get(id);
      const r = Math.max(this.radius(node), 8 / this.k);
      const d = (p.x - x) ** 2 + (p.y - y) ** 2;
      if (d <= r * r && d < bestD) { best = id; bestD = d; }
    }
    return best;
  }

  bindPointer() {
    let drag = null;
    const local = (event) => { const r = this.canvas.getBoundingClientRect(); return [event.clientX - r.left, event.clientY - r.top]; };
    this.canvas.addEventListener('pointerdown', (event) => {
      const [x, y] = local(event);
      drag = { x, y, tx: this.tx, ty: this.ty, moved: false };
      this.canvas.setPointerCapture(event.pointerId);
    });
    this.canvas.addEventListener('pointermove', (event) => {
      const [x, y] = local(event);
      if (drag) {
        if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) drag.moved = true;
        if (drag.moved) { this.userMoved = true; this.tx = drag.tx + x - drag.x; this.ty = drag.ty + y - drag.y; this.draw(); }
        return;
      }
      const id = this.nodeAt(x, y);
      if (id !== this.hover) { this.hover = id; this.draw(); }
      this.showCard(id, x, y);
    });
    this.canvas.addEventListener('pointerup', (event) => {
      const [x, y] = local(event);
      if (drag && !drag.moved) {
        const id = this.nodeAt(x, y);
        if (id) this.select(id); else this.closePanel();
      }
      drag = null;
    });
    this.canvas.addEventListener('pointerleave', () => { this.hover = null; this.card.hidden = true; this.draw(); });
    this.canvas.addEventListener('dblclick', (event) => {
      const id = this.nodeAt(...local(event));
      if (id) go('#/chat/' + encodeURIComponent(id));
    });
    this.canvas.addEventListener('wheel', (event) => {
      event.preventDefault();
      const [x, y] = local(event);
      this.zoomBy(event.deltaY < 0 ? 1.12 : 0.89, x, y);
    }, { passive: false });
    this.canvas.addEventListener('keydown', (event) => {
      const step = 40;
      const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
      if (moves[event.key]) { this.userMoved = true; this.tx += moves[event.key][0]; this.ty += moves[event.key][1]; this.draw(); }
      else if (event.key === '+' || event.key === '=') this.zoomBy(1.25);
      else if (event.key === '-') this.zoomBy(0.8);
      else if (event.key === '0') { this.userMoved = false; this.fit(); }
      else return;
      event.preventDefault();
    });
  }

  showCard(id, x, y) {
    if (!id) { this.card.hidden = true; return; }
    const node = forest.nodes.get(id);
    fill(this.card,
      h('strong', { translate: 'no', text: sessionName(node) }),
      h('div', { class: 'muted', text: `${turnsText(node)} · ${t('status.' + node.status)}${forest.running.has(id) ? ' · ' + t('common.running') : ''}` }),
      h('div', { class: 'muted', text: t('map.lastActivity', { when: timeAgo(node.last_activity, t) }) }),
      node.memory ? h('div', { class: 'preview', translate: 'no', text: clip(node.memory, 160) }) : h('div', { class: 'preview', text: t('map.noMemory') }));
    this.card.hidden = false;
    this.card.style.left = Math.min(x + 14, this.width - 260) + 'px';
    this.card.style.top = Math.min(y + 14, this.height - 120) + 'px';
  }

  // -- drawing ------------------------------------------------------------------------------------

  draw() {
    if (this.frame) return;
    this.frame = requestAnimationFrame((time) => { this.frame = null; this.paint(time); });
  }

  colors() {
    const style = getComputedStyle(document.documentElement);
    const get = (name) => style.getPropertyValue(name).trim();
    return {
      edge: get('--edge'), source: get('--edge-source'), root: get('--node-root'), inner: get('--node-inner'),
      leaf: get('--node-leaf'), archived: get('--node-archived'), running: get('--node-running'), awaiting: get('--node-awaiting'),
      insight: get('--node-insight'), text: get('--text'), selected: get('--accent'),
      font: get('--font-ui') || 'system-ui, sans-serif', // the CJK font stack: Chinese labels on the canvas too
    };
  }

  paint(time) {
    const ctx = this.canvas.getContext('2d');
    if (!ctx || !this.width) return;
    const started = performance.now();
    const c = this.colors();
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    ctx.translate(this.tx, this.ty);
    ctx.scale(this.k, this.k);
    const matches = (node) => !this.query || node.label.toLowerCase().includes(this.query);
    let animating = false;
    // Edges: to the topology parent, and dashed from a different context source.
    ctx.lineWidth = 1.4 / Math.max(this.k, 0.3);
    ctx.strokeStyle = c.edge;
    ctx.beginPath();
    for (const [id, p] of this.positions) {
      const node = forest.nodes.get(id);
      const parent = node.parent_id && this.positions.get(node.parent_id);
      if (parent) { ctx.moveTo(parent.x, parent.y); ctx.lineTo(p.x, p.y); }
    }
    ctx.stroke();
    ctx.strokeStyle = c.source;
    ctx.setLineDash([6 / this.k, 4 / this.k]);
    ctx.beginPath();
    for (const [id, p] of this.positions) {
      const node = forest.nodes.get(id);
      const source = node.source_id && node.source_id !== node.parent_id && this.positions.get(node.source_id);
      if (source) { ctx.moveTo(source.x, source.y); ctx.lineTo(p.x, p.y); }
    }
    ctx.stroke();
    ctx.setLineDash([]);
    const showLabels = this.k > 0.45 || this.positions.size < 60;
    if (paintNodes(this, ctx, c, time, matches, showLabels)) animating = true;
    ctx.globalAlpha = 1;
    this.paintMs = performance.now() - started;
    if (this.firstPaintAt === undefined && this.positions.size) this.firstPaintAt = performance.now();
    // Read by the benchmark: the first paint of the whole forest (its last page laid out).
    if (this.fullPaintAt === undefined && this.shownComplete && this.positions.size) this.fullPaintAt = performance.now();
    if (animating) this.draw();
  }

  // -- panel and actions ----------------------------------------------------------------------------

  select(id) {
    this.selected = id;
    if (history.replaceState) history.replaceState(null, '', '#/map/' + encodeURIComponent(id));
    this.showPanel(id, true);
    this.draw();
  }

  closePanel() {
    this.selected = null;
    this.panel.hidden = true;
    if (history.replaceState) history.replaceState(null, '', '#/map');
    this.draw();
  }

  showPanel(id, focus) {
    const node = forest.nodes.get(id);
    if (!node) return;
    const section = (title, content) => h('section', {}, h('h3', { text: title }), content);
    const children = node.children.map((c) => h('li', {}, h('button', { type: 'button', class: 'linkish', translate: 'no',
      text: nameOf(c), onclick: () => this.select(c) })));
    const source = node.source_id && node.source_id !== node.parent_id ? node.source_id : null;
    const heading = h('h2', { tabindex: '-1', translate: 'no', text: sessionName(node) });
    fill(this.panel,
      h('button', { type: 'button', class: 'close', 'aria-label': t('action.close'), title: t('action.close'), text: '×',
        onclick: () => this.closePanel() }),
      heading,
      h('p', { class: 'muted mono', translate: 'no', text: node.id }),
      h('p', {}, h('span', { class: 'badge ' + node.status, text: t('status.' + node.status) }),
        ' ', h('span', { class: 'turns', text: turnsText(node) }),
        forest.running.has(id) ? h('span', { class: 'busy', text: t('common.running') }) : null,
        awaitingBadge(node.awaiting_approval)),
      h('p', { class: 'muted', text: t('map.lastActivity', { when: timeAgo(node.last_activity, t) }) }),
      source ? h('p', { class: 'muted' }, t('map.contextFrom'), ' ', h('span', { translate: 'no', text: nameOf(source) })) : null,
      section(t('slot.memory'), slotText(node.memory)),
      section(t('slot.insight'), slotText(node.insight)),
      section(t('map.children', { n: node.children.length }),
        children.length ? h('ul', { class: 'children' }, children) : h('p', { class: 'muted', text: t('common.none') })),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary', text: t('action.openChat'), onclick: () => go('#/chat/' + encodeURIComponent(id)) }),
        h('button', { type: 'button', text: t('action.inspect'), onclick: () => go('#/inspect/' + encodeURIComponent(id)) }),
        h('button', { type: 'button', text: t('action.fork'), onclick: () => this.fork(node) }),
        h('button', { type: 'button', text: t('action.consolidate'), onclick: () => this.consolidate(node) }),
        h('button', { type: 'button', text: t('action.compare'), onclick: () => go('#/compare/' + encodeURIComponent(id) + '/') }),
        h('button', { type: 'button', text: t('action.replay'), onclick: () => go('#/replay/' + encodeURIComponent(id)) }),
        node.status === 'archived' ? null
          : h('button', { type: 'button', class: 'danger', text: t('action.archive'), onclick: () => this.archive(node) }),
        h('button', { type: 'button', class: 'danger', text: t('action.delete'), onclick: () => this.erase(node) })));
    this.panel.hidden = false;
    if (focus) heading.focus({ preventScroll: true });
  }

  async create() {
    const made = await newSessionDialog();
    if (made) go('#/chat/' + encodeURIComponent(made.id));
  }

  async fork(node) {
    const child = await forkDialog(node);
    if (!child) return;
    toast(t('fork.done', { label: child.label }));
    forest.refresh(0);
    go('#/chat/' + encodeURIComponent(child.id)); // after success the child opens, as a branch from a message does
  }

  async consolidate(node) {
    try {
      await api(`/sessions/${sid(node.id)}/consolidate`, { method: 'POST' });
      toast(t('action.consolidated'));
      forest.refresh(0);
    } catch (error) { toast(errorNode(error), 'error'); }
  }

  async archive(node) {
    if (!(await confirmDialog(t('action.archive'), t('map.archiveConfirm', { label: node.label }), t('action.archive')))) return;
    try {
      await api(`/sessions/${sid(node.id)}/archive`, { method: 'POST' });
      forest.refresh(0);
    } catch (error) { toast(errorNode(error), 'error'); }
  }

  async erase(node) {
    if (await eraseDialog(node)) { this.closePanel(); forest.refresh(0); }
  }
}

function slotText(text) {
  return text ? h('p', { class: 'slot', translate: 'no', text }) : h('p', { class: 'slot muted', text: t('common.none') });
}
