// What several pages use: toasts, modal dialogs (confirm, fork), the space's capabilities, navigation.

import { api, sid } from './api.js';
import { fill, h } from './dom.js';
import { t } from './i18n.js';

let capabilitiesCache = null;

export function capabilities() {
  if (!capabilitiesCache) capabilitiesCache = api('/capabilities').catch((error) => { capabilitiesCache = null; throw error; });
  return capabilitiesCache;
}

export function resetCaches() {
  capabilitiesCache = null;
}

export function go(hash) {
  if (location.hash !== hash) location.hash = hash;
}

export function toast(message, kind = 'info') {
  const area = document.getElementById('toasts');
  const item = h('div', { class: `toast ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
  area.append(item);
  setTimeout(() => item.remove(), kind === 'error' ? 6000 : 3000);
}

// An error as DOM: the translated prefix, then the server's code and message (English data) untranslated.
export function errorNode(error) {
  const detail = error && error.code ? `${error.code}: ${error.message || error.detail || ''}` : String((error && (error.message || error.detail)) || error);
  return h('span', {}, t('error.prefix'), ' ', h('span', { translate: 'no', text: detail }));
}

// A modal <dialog>; build(body, close) fills it; resolves with what close() was given.
export function modal(title, build, { wide = false } = {}) {
  return new Promise((resolve) => {
    const body = h('div', { class: 'dialog-body' });
    const dialog = h('dialog', { class: wide ? 'wide' : '', 'aria-label': title }, h('h2', { text: title }), body);
    const close = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    dialog.addEventListener('cancel', (event) => { event.preventDefault(); close(null); });
    build(body, close);
    document.body.append(dialog);
    dialog.showModal();
  });
}

export function confirmDialog(title, message, confirmLabel) {
  return modal(title, (body, close) => {
    body.append(
      h('p', { text: message }),
      h('div', { class: 'buttons' },
        h('button', { type: 'button', text: t('action.cancel'), onclick: () => close(false) }),
        h('button', { type: 'button', class: 'danger', text: confirmLabel, onclick: () => close(true) })),
    );
  });
}

let fieldCount = 0;

// A labelled form control (label, control, optional hint), linked by ids for assistive technology.
export function field(label, control, hint) {
  fieldCount += 1;
  control.id = control.id || `field-${fieldCount}`;
  const note = hint ? h('small', { id: `${control.id}-hint`, text: hint }) : null;
  if (note) control.setAttribute('aria-describedby', note.id);
  return h('div', { class: 'field' }, h('label', { for: control.id, text: label }), control, note);
}

function parseVars(text) {
  const vars = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) vars[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return vars;
}

// The fork dialog: label, context, profile + vars, system prompt; returns the child's digest or null.
export async function forkDialog(source, extra = {}) {
  let profiles = [];
  try { profiles = (await capabilities()).profiles; } catch { /* the dialog still works without them */ }
  return modal(t('fork.title', { label: source.label || source.id }), (body, close) => {
    const label = h('input', { type: 'text', required: true, value: `${source.label || source.id} · ${t('fork.suffix')}` });
    const context = h('select', {},
      ['inherit', 'none', 'compress'].map((c) => h('option', { value: c, text: t('fork.context.' + c) })));
    const profile = h('select', {}, h('option', { value: '', text: t('fork.noProfile') }),
      profiles.map((p) => h('option', { value: p.name, translate: 'no', text: p.description ? `${p.name} — ${p.description}` : p.name })));
    const vars = h('textarea', { rows: 2, placeholder: t('fork.varsPlaceholder') });
    const varsField = field(t('fork.vars'), vars);
    varsField.hidden = true;
    profile.addEventListener('change', () => { varsField.hidden = !profile.value; });
    const prompt = h('textarea', { rows: 3, placeholder: t('fork.systemPromptPlaceholder') });
    const error = h('p', { class: 'error', role: 'alert' });
    const submit = async (event) => {
      event.preventDefault();
      const payload = { label: label.value.trim(), ...extra };
      if (extra.at_seq === undefined) payload.context = context.value;
      if (profile.value) {
        payload.profile = profile.value;
        const parsed = parseVars(vars.value);
        if (Object.keys(parsed).length) payload.profile_vars = parsed;
      }
      if (prompt.value.trim()) payload.system_prompt = prompt.value;
      try {
        close(await api(`/sessions/${sid(source.id)}/forks`, { method: 'POST', body: payload }));
      } catch (err) {
        fill(error, errorNode(err));
      }
    };
    const form = h('form', { onsubmit: submit },
      field(t('fork.label'), label),
      extra.at_seq === undefined ? field(t('fork.context'), context) : null,
      profiles.length ? field(t('fork.profile'), profile) : null,
      varsField,
      field(t('fork.systemPrompt'), prompt, t('fork.systemPromptHint')),
      error,
      h('div', { class: 'buttons' },
        h('button', { type: 'button', text: t('action.cancel'), onclick: () => close(null) }),
        h('button', { type: 'submit', class: 'primary', text: t('fork.create') })));
    body.append(form);
    setTimeout(() => label.select(), 0);
  });
}

// The new-root dialog: label and system prompt; returns the new session's digest or null.
export function newSessionDialog() {
  return modal(t('create.title'), (body, close) => {
    const label = h('input', { type: 'text', required: true });
    const prompt = h('textarea', { rows: 3 });
    const error = h('p', { class: 'error', role: 'alert' });
    const submit = async (event) => {
      event.preventDefault();
      const payload = { label: label.value.trim() };
      if (prompt.value.trim()) payload.system_prompt = prompt.value;
      try { close(await api('/sessions', { method: 'POST', body: payload })); } catch (err) { fill(error, errorNode(err)); }
    };
    body.append(h('form', { onsubmit: submit },
      field(t('fork.label'), label), field(t('fork.systemPrompt'), prompt), error,
      h('div', { class: 'buttons' },
        h('button', { type: 'button', text: t('action.cancel'), onclick: () => close(null) }),
        h('button', { type: 'submit', class: 'primary', text: t('create.submit') }))));
    setTimeout(() => label.focus(), 0);
  });
}

export function emptyState(el, text) {
  fill(el, h('p', { class: 'empty' }, text));
}
