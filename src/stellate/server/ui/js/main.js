// The shell: navigation, routing by location hash, language and theme, and the API key prompt.

import { api, auth } from './api.js';
import { fill, h, svgIcon } from './dom.js';
import { onLanguage, preferredLanguage, setLanguage, t } from './i18n.js';
import { forest, live } from './live.js';
import { modal, resetCaches } from './shared.js';
import { setTheme, theme } from './theme.js';
import * as chat from './chat.js';
import * as events from './events.js';
import * as inspector from './inspector.js';
import * as map from './map.js';
import * as settings from './settings.js';
import * as compare from './compare.js';
import * as replay from './replay.js';

const PAGES = { map, chat, inspect: inspector, events, settings, compare, replay };
const NAV = [['map', 'map'], ['chat', 'chat'], ['inspect', 'inspect'], ['events', 'events'], ['settings', 'settings']];

window.stellate = { map: null, ready: false, forest, live };

let unmount = null;
const view = document.getElementById('view');

function route() {
  const [, name = 'map', id] = location.hash.match(/^#\/([^/]+)\/?(.*)$/) || [];
  return { name: PAGES[name] ? name : 'map', id: id ? decodeURIComponent(id) : null };
}

function render() {
  const { name, id } = route();
  if (unmount) unmount();
  unmount = PAGES[name].mount(view, { id }) || null;
  for (const link of document.querySelectorAll('#nav a')) {
    link.setAttribute('aria-current', link.dataset.page === name ? 'page' : 'false');
  }
  document.title = `${t('nav.' + name)} · stellate`;
}

function renderShell() {
  const nav = document.getElementById('nav');
  fill(nav, h('span', { class: 'brand', title: 'stellate', text: '✶' }),
    NAV.map(([page, icon]) => h('a', { href: '#/' + page, dataset: { page }, title: t('nav.' + page) },
      svgIcon(icon), h('span', { text: t('nav.' + page) }))),
    h('span', { class: 'spacer' }),
    h('button', { type: 'button', id: 'lang-toggle', class: 'nav-button', title: t('settings.language'),
      text: t('nav.otherLanguage'), onclick: () => setLanguage(t('nav.otherLanguageCode')) }),
    h('button', { type: 'button', id: 'theme-toggle', class: 'nav-button', title: t('settings.theme'),
      text: theme() === 'dark' ? '☀' : '☾', 'aria-label': t('settings.theme'),
      onclick: () => { setTheme(theme() === 'dark' ? 'light' : 'dark'); renderShell(); } }),
    h('span', { id: 'live-dot', class: live.connected ? 'on' : 'off', title: live.connected ? t('events.live') : t('events.offline'),
      'aria-label': live.connected ? t('events.live') : t('events.offline') }));
  document.getElementById('skip').textContent = t('nav.skip');
}

async function askForKey(message) {
  const key = await modal(t('auth.title'), (body, close) => {
    const input = h('input', { type: 'password', autocomplete: 'off', required: true, 'aria-label': t('auth.key') });
    body.append(h('form', { onsubmit: (event) => { event.preventDefault(); close(input.value.trim()); } },
      h('p', { text: t('auth.explain') }),
      message ? h('p', { class: 'error', role: 'alert', text: message }) : null,
      h('label', { class: 'field' }, h('span', { text: t('auth.key') }), input),
      h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary', text: t('auth.submit') }))));
    setTimeout(() => input.focus(), 0);
  });
  auth.key = key || null;
}

async function connect() {
  let message = null;
  for (;;) {
    try {
      const info = await api('/info');
      return info;
    } catch (error) {
      if (error.status !== 401) throw error;
      if (auth.key) message = t('auth.rejected');
      auth.key = null;
      await askForKey(message);
    }
  }
}

async function boot() {
  setTheme(theme(), { remember: false });
  await setLanguage(preferredLanguage(), { remember: false });
  renderShell();
  try {
    window.stellate.info = await connect();
  } catch (error) {
    fill(view, h('p', { class: 'error', role: 'alert', text: `${t('error.prefix')} ${error.message}` }));
    return;
  }
  let prompting = false;
  auth.onUnauthorized = async () => {
    if (prompting) return;
    prompting = true;
    auth.key = null;
    await askForKey(t('auth.rejected'));
    prompting = false;
    resetCaches();
    live.start();
    forest.refresh(0);
    render();
  };
  onLanguage(() => { renderShell(); render(); });
  live.onStatus(() => renderShell());
  window.addEventListener('hashchange', () => {
    // The map rewrites its own hash when a node is selected; that is not a page change.
    if (window.stellate.map && route().name === 'map') return;
    render();
  });
  // A browser opens at most six connections to one server: hidden tabs give theirs back (their streams stop,
  // and resume with a fresh state when the tab is shown again).
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) live.stop(); else live.start();
    window.dispatchEvent(new CustomEvent('stellate-visibility', { detail: !document.hidden }));
  });
  live.start();
  await forest.start().catch(() => null); // the forest's first page: the rest streams in behind
  render();
  window.stellate.ready = true;
  document.body.dataset.ready = 'true';
}

boot();
