// Translations: every visible string goes through t(); the dictionaries are ui/i18n/<lang>.json.

const LANG_KEY = 'stellate.lang';
export const LANGUAGES = ['en', 'zh'];
const dictionaries = {};
let current = 'en';
const listeners = new Set();

async function load(lang) {
  if (!dictionaries[lang]) {
    const response = await fetch(`/ui/i18n/${lang}.json`);
    dictionaries[lang] = await response.json();
  }
  return dictionaries[lang];
}

export function preferredLanguage() {
  const saved = localStorage.getItem(LANG_KEY);
  if (LANGUAGES.includes(saved)) return saved;
  return (navigator.language || '').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

export async function setLanguage(lang, { remember = true } = {}) {
  await load('en');
  await load(lang);
  current = lang;
  if (remember) localStorage.setItem(LANG_KEY, lang);
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  for (const listener of listeners) listener(lang);
}

export function language() {
  return current;
}

export function onLanguage(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function t(key, vars = {}) {
  let text = (dictionaries[current] || {})[key];
  if (text === undefined) {
    console.warn('missing translation', current, key);
    text = (dictionaries.en || {})[key] ?? key;
  }
  return text.replace(/\{(\w+)\}/g, (_, name) => (vars[name] === undefined ? '' : String(vars[name])));
}
