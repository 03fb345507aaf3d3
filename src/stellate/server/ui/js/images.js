// Images in the UI: thumbnails of stored images (fetched from this server with the session's key, shown as
// data: URLs, which the page's img-src allows), and the composer's picker (a file input, or a paste) that
// uploads each image to /v1/blobs and hands the turn their hashes. No image is ever loaded from elsewhere.

import { api, fetchBlob } from './api.js';
import { clear, h } from './dom.js';
import { t } from './i18n.js';

const ACCEPTED = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const cache = new Map(); // sha256 -> Promise of a data: URL

function dataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

function imageUrl(sha256) {
  if (!cache.has(sha256)) {
    const loading = fetchBlob('/blobs/' + encodeURIComponent(sha256)).then(dataUrl);
    loading.catch(() => cache.delete(sha256)); // a failed load may be retried by the next render
    cache.set(sha256, loading);
  }
  return cache.get(sha256);
}

function thumb(alt, src) {
  const img = h('img', { class: 'thumb', alt, loading: 'lazy' });
  Promise.resolve(src).then((url) => { img.src = url; }).catch(() => img.classList.add('broken'));
  return img;
}

// Thumbnails of stored images ({sha256, media_type, width, height}); null when there are none.
export function thumbnails(images) {
  if (!images || !images.length) return null;
  return h('div', { class: 'thumbs' }, images.map((image) => {
    const size = image.width ? `${image.width}×${image.height}` : '';
    const alt = t('image.alt', { type: image.media_type, size });
    const link = h('button', { type: 'button', class: 'thumb-button', title: alt, 'aria-label': alt });
    link.append(thumb(alt, imageUrl(image.sha256)));
    link.addEventListener('click', () => link.classList.toggle('enlarged'));
    return link;
  }));
}

// The composer's images: chosen with the button or pasted into the text field, removable before sending.
export class ImagePicker {
  constructor(textarea, onError) {
    this.files = [];
    this.onError = onError;
    this.input = h('input', { type: 'file', accept: ACCEPTED.join(','), multiple: true, hidden: true,
      'aria-label': t('image.attach'), class: 'image-input' });
    this.input.addEventListener('change', () => { this.add([...this.input.files]); this.input.value = ''; });
    this.button = h('button', { type: 'button', class: 'attach', text: t('image.attach'), title: t('image.attachHint'),
      onclick: () => this.input.click() });
    this.chips = h('div', { class: 'thumbs pending', 'aria-label': t('image.pending') });
    textarea.addEventListener('paste', (event) => {
      const pasted = [...(event.clipboardData ? event.clipboardData.files : [])];
      if (pasted.length) { event.preventDefault(); this.add(pasted); }
    });
  }

  add(files) {
    for (const file of files) {
      if (!ACCEPTED.includes(file.type)) { this.onError(t('image.notAnImage', { name: file.name || '?' })); continue; }
      this.files.push(file);
    }
    this.render();
  }

  render() {
    clear(this.chips);
    this.files.forEach((file, index) => {
      const remove = h('button', { type: 'button', class: 'remove', text: '×', title: t('image.remove'),
        'aria-label': t('image.remove'), onclick: () => { this.files.splice(index, 1); this.render(); } });
      this.chips.append(h('span', { class: 'chip' }, thumb(file.name || t('image.pasted'), dataUrl(file)), remove));
    });
  }

  // Upload every picked image; returns the turn's `images` ([{sha256}]) and local previews, and empties the picker.
  async take() {
    const files = this.files;
    this.files = [];
    this.render();
    const refs = [];
    for (const file of files) {
      const url = await dataUrl(file);
      const stored = await api('/blobs', { method: 'POST', body: { data: url.slice(url.indexOf(',') + 1) } });
      cache.set(stored.sha256, Promise.resolve(url));
      refs.push(stored);
    }
    return refs;
  }
}
