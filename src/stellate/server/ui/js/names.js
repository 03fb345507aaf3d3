// Sessions as people tell them apart: a label that other sessions share gets the session's age and the tail
// of its id ("Study abroad plan · 3 h · …4f2a"), and a fork's turns are split into its own and the inherited.

import { timeAgo } from './dom.js';
import { t } from './i18n.js';
import { forest } from './live.js';

const TAIL = 4;

// What tells the session apart from others with its label ("3 h · …4f2a"), or '' when its label is its own.
export function distinction(node) {
  if (!node || forest.sharedLabel(node.label) < 2) return '';
  const age = node.created_at ? timeAgo(node.created_at, t) : '';
  return [age, '…' + node.id.slice(-TAIL)].filter(Boolean).join(' · ');
}

// The label, with its distinction when another session carries the same label.
export function sessionName(node) {
  if (!node) return '';
  const label = node.label || node.id;
  const extra = distinction(node);
  return extra ? `${label} · ${extra}` : label;
}

// The name of the session with this id (its id when the forest does not know it).
export function nameOf(id) {
  const node = forest.nodes.get(id);
  return node ? sessionName(node) : id;
}

// "5 turns", or for a fork "2 own · 3 inherited".
export function turnsText(node) {
  const inherited = node.inherited_turns || 0;
  if (!inherited) return t('common.turns', { n: node.turn_count });
  return t('common.turnsSplit', { own: node.turn_count - inherited, inherited });
}
