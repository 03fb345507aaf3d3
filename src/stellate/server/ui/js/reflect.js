// The map's Reflect action: a button that asks the server's reflector for a synthesis and targeted insights,
// then shows them. When the server has no reflector (GET /v1/capabilities), the button is disabled and a
// one-line hint says how to configure one.

import { api } from './api.js';
import { h } from './dom.js';
import { t } from './i18n.js';
import { forest } from './live.js';
import { nameOf } from './names.js';
import { capabilities, errorNode, modal, toast } from './shared.js';

// The button and its hint; onInsights(ids) lights the sessions that got one, onPick(id) selects a session.
export function reflectControl({ onInsights, onPick }) {
  const hint = h('small', { class: 'hint reflect-hint', id: 'reflect-hint', text: t('map.reflectOff') });
  hint.hidden = true;
  const button = h('button', { type: 'button', class: 'primary reflect', text: t('map.reflect'), title: t('map.reflectHint'),
    onclick: () => reflect(onInsights, onPick) });
  capabilities().then((found) => {
    if (found.reflector) return;
    button.disabled = true;
    button.title = t('map.reflectOff');
    button.setAttribute('aria-describedby', hint.id);
    hint.hidden = false;
  }).catch(() => null); // without the capabilities the button stays; the server answers a reflect it cannot do
  return [button, hint];
}

async function reflect(onInsights, onPick) {
  let result;
  try { result = await api('/reflect', { method: 'POST', body: {} }); }
  catch (error) { toast(errorNode(error), 'error'); return; }
  onInsights(Object.keys(result.insights));
  await modal(t('reflect.title'), (body, close) => {
    const rows = Object.entries(result.insights).map(([id, text]) =>
      h('li', {}, h('button', { type: 'button', class: 'linkish', translate: 'no', text: nameOf(id),
        onclick: () => { close(); onPick(id); } }), h('p', { translate: 'no', text })));
    body.append(
      h('h3', { text: t('reflect.synthesis') }),
      result.synthesis ? h('p', { class: 'slot', translate: 'no', text: result.synthesis }) : h('p', { class: 'slot muted', text: t('common.none') }),
      h('h3', { text: t('reflect.insights', { n: rows.length }) }),
      rows.length ? h('ul', { class: 'insights' }, rows) : h('p', { class: 'muted', text: t('reflect.noInsights') }),
      h('div', { class: 'buttons' }, h('button', { type: 'button', class: 'primary', text: t('action.close'), onclick: () => close() })));
  }, { wide: true });
  forest.refresh(0);
}
