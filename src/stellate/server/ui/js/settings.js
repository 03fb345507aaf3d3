// Settings: language and theme (remembered by this browser), the API key of this tab, and what the server
// offers: named models (never their keys), profiles, tools, skills, background work.

import { api, auth } from './api.js';
import { fill, h } from './dom.js';
import { LANGUAGES, language, setLanguage, t } from './i18n.js';
import { capabilities, emptyState, errorNode } from './shared.js';
import { setTheme, theme } from './theme.js';

export function mount(container) {
  const body = h('div', { class: 'settings' });
  fill(container, h('section', { class: 'page settings-page' }, h('div', { class: 'toolbar' }, h('h1', { text: t('settings.title') })), body));
  const lang = h('select', { id: 'language', 'aria-label': t('settings.language') },
    LANGUAGES.map((l) => h('option', { value: l, text: t('settings.lang.' + l) })));
  lang.value = language();
  lang.addEventListener('change', () => setLanguage(lang.value));
  const themeSelect = h('select', { id: 'theme', 'aria-label': t('settings.theme') },
    ['light', 'dark'].map((v) => h('option', { value: v, text: t('settings.theme.' + v) })));
  themeSelect.value = theme();
  themeSelect.addEventListener('change', () => setTheme(themeSelect.value));
  body.append(section(t('settings.appearance'),
    h('label', { class: 'field inline' }, h('span', { text: t('settings.language') }), lang),
    h('label', { class: 'field inline' }, h('span', { text: t('settings.theme') }), themeSelect),
    h('p', { class: 'muted', text: t('settings.remembered') })));
  const server = h('div', {});
  const caps = h('div', {});
  body.append(section(t('settings.server'), server), caps);
  loadServer(server, caps);
  return () => {};
}

async function loadServer(server, caps) {
  try {
    const [info, found] = await Promise.all([api('/info'), capabilities()]);
    server.append(table([
      [t('settings.version'), data(info.version)], [t('settings.space'), data(info.space)],
      [t('settings.auth'), info.auth === 'keys' ? t('settings.auth.keys') : t('settings.auth.none')],
      [t('settings.access'), info.read_only ? t('settings.readOnly') : t('settings.readWrite')],
      [t('settings.store'), data(info.store || '—')],
    ]));
    if (auth.key) {
      server.append(h('button', { type: 'button', text: t('settings.forgetKey'), onclick: () => { auth.key = null; location.reload(); } }));
    }
    renderCapabilities(caps, found);
  } catch (error) {
    emptyState(caps, errorNode(error));
  }
}

function renderCapabilities(el, c) {
  const model = c.default_model ? [c.default_model.name, c.default_model.provider, c.default_model.model].filter(Boolean).join(' · ') : t('settings.noModel');
  el.append(
    section(t('settings.models'),
      h('p', { class: 'default-model' }, h('strong', { text: t('settings.defaultModel') + ' ' }), c.default_model ? data(model) : model),
      c.default_model && c.default_model.base_url
        ? h('p', { class: 'base-url' }, h('strong', { text: t('settings.baseUrl') + ' ' }), data(c.default_model.base_url)) : null,
      c.models.length ? grid([t('settings.col.name'), t('settings.col.provider'), t('settings.col.model')],
        c.models.map((m) => [m.name, m.provider, m.model])) : h('p', { class: 'muted', text: t('settings.noNamedModels') }),
      h('p', { class: 'muted', text: t('settings.keysNote') })),
    section(t('settings.profiles'), c.profiles.length
      ? grid([t('settings.col.name'), t('settings.col.description'), t('settings.col.mode'), t('settings.col.context')],
        c.profiles.map((p) => [p.name, p.description || '', p.system_prompt_mode, p.context ?? '—']))
      : h('p', { class: 'muted', text: t('common.none') })),
    section(t('settings.tools'),
      c.tools.length ? grid([t('settings.col.name'), t('settings.col.description')], c.tools.map((x) => [x.name, x.description]))
        : h('p', { class: 'muted', text: t('common.none') }),
      h('p', {}, h('strong', { text: t('settings.builtins') + ' ' }), c.builtin_tools.length ? data(c.builtin_tools.join(', ')) : t('common.none'))),
    section(t('settings.skills'), c.skills.length
      ? grid([t('settings.col.name'), t('settings.col.description')], c.skills.map((x) => [x.name, x.description]))
      : h('p', { class: 'muted', text: t('common.none') })),
    section(t('settings.background'), table([
      [t('settings.consolidateEvery'), c.consolidate_every ? t('settings.everyN', { n: c.consolidate_every }) : t('settings.off')],
      [t('settings.consolidateOnArchive'), c.consolidate_on_archive ? t('common.yes') : t('common.no')],
      [t('settings.reflector'), c.reflector ? t('settings.on') : t('settings.off')],
      ...reflectorRows(c.reflection),
      [t('settings.maxRounds'), String(c.max_rounds)],
      [t('settings.splitGuard'), c.split_guard ? t('settings.splitGuardValue', c.split_guard) : t('settings.notReported')],
    ])));
}

// The reflector's model (and its host), prompt and schedule, when the server has one.
function reflectorRows(r) {
  if (!r) return [];
  const model = [r.provider, r.model, r.base_url].filter(Boolean).join(' · ');
  return [
    [t('settings.reflectorModel'), data(model)],
    [t('settings.reflectorPrompt'), t('settings.reflectorPrompt.' + r.prompt)],
    [t('settings.reflectEvery'), r.every_seconds ? t('settings.everySeconds', { n: r.every_seconds }) : t('settings.onRequest')],
  ];
}

function data(text) {
  return h('span', { translate: 'no', text });
}

function section(title, ...content) {
  return h('section', { class: 'card' }, h('h2', { text: title }), ...content);
}

function table(rows) {
  return h('table', { class: 'facts' }, rows.map(([k, v]) => h('tr', {}, h('th', { text: k }), h('td', {}, v))));
}

function grid(head, rows) {
  return h('table', { class: 'grid' }, h('thead', {}, h('tr', {}, head.map((x) => h('th', { text: x })))),
    h('tbody', {}, rows.map((r) => h('tr', { translate: 'no' }, r.map((x) => h('td', { text: x }))))));
}
