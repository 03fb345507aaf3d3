// Where each session sits on the star map: a radial tree per root (angles shared out by leaf count, one
// ring per depth), the trees packed in rows. Pure: no DOM, so the benchmark can time it alone.

const MIN_GAP = 90; // world units between rings
const LEAF_SPACING = 26; // world units of arc per leaf on the outer ring

export function layoutForest(nodes, roots) {
  const positions = new Map();
  const trees = roots.map((rootId) => layoutTree(nodes, rootId, positions));
  // Pack the trees in rows of about sqrt(n), left to right.
  const perRow = Math.max(1, Math.ceil(Math.sqrt(trees.length)));
  let x = 0;
  let y = 0;
  let rowHeight = 0;
  trees.forEach((tree, index) => {
    if (index > 0 && index % perRow === 0) {
      x = 0;
      y += rowHeight;
      rowHeight = 0;
    }
    const size = tree.radius * 2 + MIN_GAP;
    const cx = x + size / 2;
    const cy = y + size / 2;
    for (const id of tree.ids) {
      const p = positions.get(id);
      p.x += cx;
      p.y += cy;
    }
    x += size;
    rowHeight = Math.max(rowHeight, size);
  });
  return positions;
}

function layoutTree(nodes, rootId, positions) {
  const leaves = new Map();
  const order = [];
  // Iterative post-order, so 10,000-deep chains do not overflow the stack.
  const stack = [[rootId, 0, false]];
  let maxDepth = 0;
  while (stack.length) {
    const [id, depth, visited] = stack.pop();
    const node = nodes.get(id);
    if (!node) continue;
    if (visited) {
      const kids = node.children.filter((c) => nodes.has(c));
      leaves.set(id, kids.length ? kids.reduce((sum, c) => sum + leaves.get(c), 0) : 1);
      continue;
    }
    order.push([id, depth]);
    maxDepth = Math.max(maxDepth, depth);
    stack.push([id, depth, true]);
    for (const child of node.children) stack.push([child, depth + 1, false]);
  }
  const total = leaves.get(rootId) || 1;
  const gap = Math.max(MIN_GAP, (total * LEAF_SPACING) / (2 * Math.PI * Math.max(1, maxDepth)));
  positions.set(rootId, { x: 0, y: 0, angle: 0 });
  const spans = new Map([[rootId, [-Math.PI / 2, (3 * Math.PI) / 2]]]);
  const ids = [];
  for (const [id, depth] of order) {
    ids.push(id);
    const [start, end] = spans.get(id);
    const node = nodes.get(id);
    if (depth > 0) {
      const angle = (start + end) / 2;
      positions.set(id, { x: Math.cos(angle) * depth * gap, y: Math.sin(angle) * depth * gap, angle });
    }
    let cursor = start;
    for (const child of node.children) {
      if (!nodes.has(child)) continue;
      const share = ((end - start) * leaves.get(child)) / leaves.get(id);
      spans.set(child, [cursor, cursor + share]);
      cursor += share;
    }
  }
  return { ids, radius: Math.max(60, maxDepth * gap + 40) };
}
