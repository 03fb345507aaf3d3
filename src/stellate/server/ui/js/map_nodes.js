// The star map's nodes on its canvas, for `StarMap.paint`: nodes of one colour and alpha fill as one path (a
// forest of 100,000 is a few fills, not 100,000); those off screen are skipped, and one smaller than a pixel
// and a half is a square. Rings, halos and labels are drawn per node, for the few nodes that have them.

import { clip } from './dom.js';
import { forest } from './live.js';
import { distinction } from './names.js';

const POP_MS = 500;

// Paints `map.positions` (in world units, the transform already set); returns whether an animation goes on.
export function paintNodes(map, ctx, c, time, matches, showLabels) {
  let animating = false;
  const view = { x0: -map.tx / map.k, y0: -map.ty / map.k, x1: (map.width - map.tx) / map.k, y1: (map.height - map.ty) / map.k };
  const tiny = 1.5 / map.k;
  const fills = new Map();
  const marked = [];
  for (const [id, p] of map.positions) {
    const node = forest.nodes.get(id);
    let r = map.radius(node);
    if (p.x + r + 24 < view.x0 || p.x - r - 24 > view.x1 || p.y + r + 24 < view.y0 || p.y - r - 24 > view.y1) continue;
    const born = map.born.get(id);
    if (born !== undefined) {
      const progress = (time - born) / POP_MS;
      if (progress >= 1) map.born.delete(id);
      else { r *= easeOutBack(Math.max(0, progress)); animating = true; }
    }
    const running = forest.running.has(id);
    const alpha = matches(node) ? (node.status === 'archived' ? 0.55 : 1) : 0.18;
    const color = running ? c.running : node.status === 'archived' ? c.archived
      : !node.parent_id ? c.root : node.children.length ? c.inner : c.leaf;
    const key = color + '|' + alpha;
    let path = fills.get(key);
    if (!path) fills.set(key, (path = { color, alpha, path: new Path2D() }));
    if (r < tiny) path.path.rect(p.x - r, p.y - r, r * 2, r * 2);
    else { path.path.moveTo(p.x + r, p.y); path.path.arc(p.x, p.y, r, 0, Math.PI * 2); }
    if (running || node.awaiting_approval || map.lit.has(id) || id === map.selected || id === map.hover
      || (map.query && matches(node)) || showLabels) marked.push([id, p, node, r, running, alpha, color]);
  }
  for (const [id, p, node, r, running, alpha, color] of marked) {
    if (!running) continue;
    animating = true; // a running turn: a pulsing halo under its node
    const pulse = 0.5 + 0.5 * Math.sin(time / 220);
    ctx.fillStyle = c.running;
    ctx.globalAlpha = alpha * (0.25 + 0.25 * pulse);
    ctx.beginPath(); ctx.arc(p.x, p.y, r + 4 + 6 * pulse, 0, Math.PI * 2); ctx.fill();
  }
  for (const { color, alpha, path } of fills.values()) {
    ctx.globalAlpha = alpha;
    ctx.fillStyle = color;
    ctx.fill(path);
  }
  for (const [id, p, node, r, running, alpha, color] of marked) {
    ctx.globalAlpha = alpha;
    if (running) { ctx.fillStyle = color; ctx.beginPath(); ctx.arc(p.x, p.y, r, 0, Math.PI * 2); ctx.fill(); }
    if (node.awaiting_approval) { // a paused turn: a steady ring in the awaiting colour
      ctx.strokeStyle = c.awaiting; ctx.lineWidth = 3 / Math.max(map.k, 0.5);
      ctx.beginPath(); ctx.arc(p.x, p.y, r + 5, 0, Math.PI * 2); ctx.stroke();
    }
    if (map.lit.has(id)) {
      ctx.strokeStyle = c.insight; ctx.lineWidth = 4 / Math.max(map.k, 0.5);
      ctx.beginPath(); ctx.arc(p.x, p.y, r + 6, 0, Math.PI * 2); ctx.stroke();
    }
    if (id === map.selected || id === map.hover || (map.query && matches(node))) {
      ctx.strokeStyle = c.selected; ctx.lineWidth = 2.5 / Math.max(map.k, 0.5);
      ctx.beginPath(); ctx.arc(p.x, p.y, r + 3, 0, Math.PI * 2); ctx.stroke();
    }
    if (showLabels || id === map.hover || id === map.selected) {
      ctx.fillStyle = c.text;
      ctx.font = `${node.parent_id ? 500 : 700} ${(node.parent_id ? 11 : 13) / Math.max(map.k, 0.6)}px ${c.font}`;
      const extra = distinction(node); // two trees with the same labels: age and id tail tell them apart
      ctx.fillText(clip(node.label || node.id, 32) + (extra ? ` · ${extra}` : ''), p.x + r + 4, p.y + 4);
    }
  }
  return animating;
}

function easeOutBack(x) {
  const c1 = 1.70158; const c3 = c1 + 1;
  return 1 + c3 * (x - 1) ** 3 + c1 * (x - 1) ** 2;
}
