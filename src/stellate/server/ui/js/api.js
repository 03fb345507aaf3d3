// The API client: JSON requests with the browser session's key, and server-sent events read with fetch
// (EventSource cannot send an Authorization header).

const KEY = 'stellate.key';

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.code = (problem && problem.code) || 'http_' + status;
    this.problem = problem;
  }
}

export const auth = {
  get key() { return sessionStorage.getItem(KEY); },
  set key(value) { value ? sessionStorage.setItem(KEY, value) : sessionStorage.removeItem(KEY); },
  onUnauthorized: null,
};

function headers(extra = {}) {
  const out = { ...extra };
  if (auth.key) out.Authorization = 'Bearer ' + auth.key;
  return out;
}

async function failure(response) {
  let problem = null;
  try { problem = await response.json(); } catch { /* not JSON */ }
  const error = new ApiError(response.status, problem);
  if (response.status === 401 && auth.onUnauthorized) auth.onUnauthorized(error);
  return error;
}

export async function api(path, { method = 'GET', body, signal } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch('/v1' + path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  return response.json();
}

// The bytes of a binary resource of this server (an image), as a Blob.
export async function fetchBlob(path) {
  const response = await fetch('/v1' + path, { headers: headers() });
  if (!response.ok) throw await failure(response);
  return response.blob();
}

// Reads a text/event-stream response and calls onEvent(type, data, id) for each event.
export async function sse(path, { method = 'GET', body, signal, onEvent, lastEventId } = {}) {
  const extra = { Accept: 'text/event-stream' };
  if (body !== undefined) extra['Content-Type'] = 'application/json';
  if (lastEventId !== undefined && lastEventId !== null) extra['Last-Event-ID'] = String(lastEventId);
  const response = await fetch('/v1' + path, {
    method, headers: headers(extra), body: body === undefined ? undefined : JSON.stringify(body), signal,
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = { type: 'message', data: [], id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let newline;
    while ((newline = buffer.search(/\r?\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer[newline] === '\r' ? 2 : 1));
      if (line === '') {
        if (event.data.length) {
          let data = event.data.join('\n');
          try { data = JSON.parse(data); } catch { /* plain text */ }
          onEvent(event.type, data, event.id);
        }
        event = { type: 'message', data: [], id: null };
      } else if (line.startsWith(':')) {
        continue;
      } else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event.type = val;
        else if (field === 'data') event.data.push(val);
        else if (field === 'id') event.id = val;
      }
    }
  }
}

// All pages of a cursor listing.
export async function allSessions() {
  const items = [];
  let cursor = null;
  do {
    const page = await api('/sessions?limit=1000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

// A session's whole log (inherited events included), in seq order.
export async function allEvents(id) {
  const events = [];
  let after = -1;
  for (;;) {
    const page = await api(`/sessions/${encodeURIComponent(id)}/events?limit=1000&after=${after}`);
    events.push(...page.events);
    if (!page.events.length || events[events.length - 1].seq >= page.next_seq - 1) return { events, page };
    after = events[events.length - 1].seq;
  }
}

export const sid = (id) => encodeURIComponent(id);
