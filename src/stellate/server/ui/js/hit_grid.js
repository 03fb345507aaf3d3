// A grid over the star map's positions, so finding the session under the pointer looks at the nodes near it,
// not at every node (a hover over a forest of 100,000 stays well under a millisecond). Pure: no DOM.

const CELL = 64; // world units per cell side
const SPAN = 1 << 20; // cells per row of the key space (a forest spans far fewer)

export class HitGrid {
  constructor(positions) {
    this.cells = new Map();
    for (const [id, p] of positions) {
      const key = cellKey(Math.floor(p.x / CELL), Math.floor(p.y / CELL));
      const cell = this.cells.get(key);
      if (cell) cell.push(id); else this.cells.set(key, [id]);
    }
  }

  // The ids of the nodes within about `reach` world units of (x, y) (more, never fewer).
  near(x, y, reach) {
    const x0 = Math.floor((x - reach) / CELL); const x1 = Math.floor((x + reach) / CELL);
    const y0 = Math.floor((y - reach) / CELL); const y1 = Math.floor((y + reach) / CELL);
    const out = [];
    if ((x1 - x0 + 1) * (y1 - y0 + 1) > this.cells.size) { // zoomed far out: every cell is cheaper
      for (const cell of this.cells.values()) for (const id of cell) out.push(id);
      return out;
    }
    for (let i = x0; i <= x1; i += 1) {
      for (let j = y0; j <= y1; j += 1) {
        const cell = this.cells.get(cellKey(i, j));
        if (cell) for (const id of cell) out.push(id);
      }
    }
    return out;
  }
}

function cellKey(i, j) {
  return i * SPAN + j;
}
