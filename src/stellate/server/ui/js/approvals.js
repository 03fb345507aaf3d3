// Tool calls waiting for a person: Approve / Deny / Edit on the tool card of a paused turn, and the
// "waits for approval" badge the tree, the map and the conversation show. A decision is POSTed to
// /v1/sessions/{id}/approvals/{call_id}; the last one of the turn resumes it on the server, and the page
// reloads the log to show the rest of the turn. The arguments and reasons are the model's and the person's
// text: they only ever go through textContent and input values.

import { api, sid } from './api.js';
import { h, pretty } from './dom.js';
import { t } from './i18n.js';
import { errorNode, toast } from './shared.js';

// The badge of a session whose turn waits for `count` approvals (nothing when none waits).
export function awaitingBadge(count) {
  if (!count) return null;
  return h('span', { class: 'badge awaiting', title: t('approval.badgeHint'), text: t('approval.badge', { n: count }) });
}

// The controls of a waiting tool card: Approve, Deny (with an optional reason), Edit (the arguments, then approve).
export function approvalActions(item, sessionId, onDecided) {
  const box = h('div', { class: 'approval', role: 'group', 'aria-label': t('approval.group') });
  const deadline = item.approval && item.approval.deadline
    ? h('p', { class: 'muted', text: t('approval.deadline', { when: new Date(item.approval.deadline).toLocaleString(),
      outcome: t('approval.onTimeout.' + item.approval.onTimeout) }) }) : null;
  const decide = async (body, buttons) => {
    for (const button of buttons) button.disabled = true;
    box.setAttribute('aria-busy', 'true');
    try {
      await api(`/sessions/${sid(sessionId)}/approvals/${encodeURIComponent(item.callId)}`, { method: 'POST', body });
    } catch (error) {
      toast(errorNode(error), 'error');
    }
    onDecided();
  };
  const approve = h('button', { type: 'button', class: 'primary approve', text: t('approval.approve') });
  const deny = h('button', { type: 'button', class: 'danger deny', text: t('approval.deny') });
  const edit = h('button', { type: 'button', class: 'edit', text: t('approval.edit') });
  const buttons = [approve, deny, edit];
  const row = h('div', { class: 'buttons' }, approve, deny, edit);
  approve.addEventListener('click', () => decide({ decision: 'approve' }, buttons));
  deny.addEventListener('click', () => {
    const reason = h('input', { type: 'text', class: 'reason', placeholder: t('approval.reason'), 'aria-label': t('approval.reason') });
    const send = h('button', { type: 'button', class: 'danger confirm-deny', text: t('approval.confirmDeny') });
    send.addEventListener('click', () => decide({ decision: 'deny', reason: reason.value.trim() || null }, [...buttons, send]));
    row.replaceWith(h('div', { class: 'buttons' }, reason, send));
    reason.focus();
  });
  edit.addEventListener('click', () => {
    const area = h('textarea', { class: 'edited', rows: 5, 'aria-label': t('approval.editLabel') });
    area.value = pretty(item.args ?? '{}');
    const send = h('button', { type: 'button', class: 'primary confirm-edit', text: t('approval.approveEdited') });
    send.addEventListener('click', () => {
      let text;
      try { text = JSON.stringify(JSON.parse(area.value)); } catch { toast(t('approval.badJson'), 'error'); return; }
      decide({ decision: 'approve', arguments: text }, [...buttons, send]);
    });
    row.replaceWith(h('div', { class: 'buttons column' }, area, send));
    area.focus();
  });
  box.append(h('p', { class: 'approval-note', text: t('approval.waiting') }), deadline, row);
  return box;
}

// What a decided card says: who decided, how, and why.
export function decisionNote(approval) {
  if (!approval || !approval.decision) return null;
  const key = approval.decision.decision === 'approved' ? 'approval.approvedBy' : 'approval.deniedBy';
  const text = t(key, { by: approval.decision.by });
  return h('p', { class: 'approval-note decided', translate: 'no', text: approval.decision.reason ? `${text}: ${approval.decision.reason}` : text });
}
