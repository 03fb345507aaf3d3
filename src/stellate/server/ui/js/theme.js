// Light or dark, remembered by this browser (the system's preference until chosen).

const KEY = 'stellate.theme';

export function theme() {
  const saved = localStorage.getItem(KEY);
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function setTheme(value, { remember = true } = {}) {
  if (remember) localStorage.setItem(KEY, value);
  document.documentElement.dataset.theme = value;
  window.dispatchEvent(new CustomEvent('stellate-theme', { detail: value }));
}
