// The delete dialog: it asks the server what an erase would take (GET .../erase-plan), names every session
// that goes and every fork that keeps its own copy, lets the user choose for forks (keep or delete them too)
// and whether the branches go too, and only then erases (DELETE /v1/sessions/{id}). Labels are model/user
// data: always set as text, never as HTML.

import { ApiError, api, sid } from './api.js';
import { fill, h } from './dom.js';
import { t } from './i18n.js';
import { forest } from './live.js';
import { errorNode, modal, toast } from './shared.js';

function query(choice) {
  const params = new URLSearchParams();
  if (choice.subtree) params.set('subtree', 'true');
  if (choice.dependents) params.set('dependents', choice.dependents);
  const text = params.toString();
  return text ? '?' + text : '';
}

// What the erase would take with this choice: the plan, or (without a choice for forks) the forks to choose for.
async function planFor(node, choice) {
  try {
    return { plan: await api(`/sessions/${sid(node.id)}/erase-plan${query(choice)}`) };
  } catch (error) {
    if (error instanceof ApiError && error.code === 'has_dependents') {
      return { dependents: (error.problem.details && error.problem.details.dependents) || [] };
    }
    throw error;
  }
}

function names(ids, cls) {
  return h('ul', { class: 'erase-list ' + cls }, ids.map((id) => h('li', { translate: 'no', text: forest.label(id) })));
}

// Resolves with the erase's result, or null when the user cancelled (nothing was erased then).
export function eraseDialog(node) {
  const choice = { subtree: false, dependents: null };
  return modal(t('erase.title'), (body, close) => {
    const summary = h('div', { class: 'erase-summary', 'aria-live': 'polite' });
    const confirm = h('button', { type: 'button', class: 'danger', text: t('erase.confirm'), disabled: true });
    const radios = h('fieldset', { class: 'erase-dependents', hidden: true },
      h('legend', { text: t('erase.dependentsLegend') }),
      ...['keep', 'cascade'].map((value) => h('label', {},
        h('input', { type: 'radio', name: 'erase-dependents', value,
          onchange: () => { choice.dependents = value; refresh(); } }),
        ' ', t('erase.dependents.' + value))));
    const subtree = h('label', {},
      h('input', { type: 'checkbox', onchange: (event) => { choice.subtree = event.target.checked; refresh(); } }),
      ' ', t('erase.subtree'));

    async function refresh() {
      confirm.disabled = true;
      let found;
      try { found = await planFor(node, choice); } catch (error) { fill(summary, errorNode(error)); return; }
      if (found.dependents) {
        radios.hidden = false;
        fill(summary, h('p', { text: t('erase.hasDependents', { n: found.dependents.length }) }),
          names(found.dependents, 'dependents'));
        return;
      }
      const plan = found.plan;
      fill(summary,
        h('p', { text: t('erase.goes', { n: plan.erased.length }) }), names(plan.erased, 'erased'),
        plan.kept.length ? h('p', { text: t('erase.kept', { n: plan.kept.length }) }) : null,
        plan.kept.length ? names(plan.kept, 'kept') : null,
        h('p', { class: 'muted', text: t('erase.final') }));
      confirm.disabled = false;
    }

    confirm.onclick = async () => {
      confirm.disabled = true;
      try {
        const done = await api(`/sessions/${sid(node.id)}${query(choice)}`, { method: 'DELETE' });
        toast(t('erase.done', { n: done.erased.length }));
        close(done);
      } catch (error) { toast(errorNode(error), 'error'); confirm.disabled = false; }
    };
    body.append(
      h('p', {}, t('erase.intro'), ' ', h('strong', { translate: 'no', text: forest.label(node.id) })),
      subtree, radios, summary,
      h('div', { class: 'buttons' },
        h('button', { type: 'button', text: t('action.cancel'), onclick: () => close(null) }), confirm));
    refresh();
  });
}
