// The JSON API of docs/web.md. Every call either answers the decoded body or throws an ApiError whose message
// is readable by people: the problem document's title and detail (RFC 9457), or what went wrong on the way.

export class ApiError extends Error {
  constructor({ status = 0, title, detail = '', type = 'about:blank' }) {
    super(detail ? `${title}: ${detail}` : title);
    this.name = 'ApiError';
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.type = type;
  }
}

async function problemFrom(response) {
  let body = null;
  const type = response.headers.get('Content-Type') || '';
  try {
    if (type.includes('json')) body = await response.json();
    else {
      const textBody = (await response.text()).trim();
      if (textBody) body = { detail: textBody.slice(0, 500) };
    }
  } catch {
    body = null;
  }
  return new ApiError({
    status: response.status,
    title: (body && typeof body.title === 'string' && body.title) || `${response.status} ${response.statusText || 'error'}`.trim(),
    detail: body && typeof body.detail === 'string' ? body.detail : '',
    type: body && typeof body.type === 'string' ? body.type : 'about:blank',
  });
}

async function request(path, { method = 'GET', body, json, signal, accept = 'application/json' } = {}) {
  const headers = { Accept: `${accept}, application/problem+json` };
  let payload = body;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(json);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, signal, credentials: 'same-origin', cache: 'default' });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError({ title: 'parleyd is not reachable', detail: `${method} ${path} failed (${error.message})` });
  }
  if (!response.ok) throw await problemFrom(response);
  return response;
}

async function getJSON(path, options) {
  const response = await request(path, options);
  return response.json();
}

function query(parameters) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(parameters)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** filter = {filter, pattern, mode}: only what is set goes into the query. */
function filterParameters(filter = {}) {
  const parameters = { filter: filter.filter, pattern: filter.pattern };
  if (filter.mode === 'hide' && (filter.pattern || filter.filter)) parameters.mode = 'hide';
  return parameters;
}

export const api = {
  /** {canChange}: whether this page may change anything (it was opened from the link with the sign-in token). */
  access: (signal) => getJSON('/api/access', { signal }),
  sessions: ({ after, limit } = {}, signal) => getJSON(`/api/sessions${query({ after, limit })}`, { signal }),
  session: (id, signal) => getJSON(`/api/sessions/${id}`, { signal }),
  deleteSession: (id) => request(`/api/sessions/${id}`, { method: 'DELETE' }),
  entries: (id, { offset = 0, limit = 200, ...filter } = {}, signal) =>
    getJSON(`/api/sessions/${id}/entries${query({ offset, limit, ...filterParameters(filter) })}`, { signal }),
  position: (id, sequence, filter, signal) =>
    getJSON(`/api/sessions/${id}/position${query({ sequence, ...filterParameters(filter) })}`, { signal }),
  /** A page of the session's timeline: {items: [{kind, time, item}], total, offset}; `filter` as items.js's
   *  timelineParameters gives it ({kinds, level, label, q}). */
  timeline: (id, { offset = 0, limit = 200, ...filter } = {}, signal) =>
    getJSON(`/api/sessions/${id}/timeline${query({ offset, limit, ...filter })}`, { signal }),
  timelinePosition: (id, kind, itemId, filter, signal) =>
    getJSON(`/api/sessions/${id}/timeline/position${query({ kind, id: itemId, ...filter })}`, { signal }),
  /** {entry}: the newest state the session recorded before `time` (ns), or null. */
  stateAt: (id, time, signal) => getJSON(`/api/sessions/${id}/state-at${query({ time })}`, { signal }),
  log: (id, signal) => getJSON(`/api/logs/${id}`, { signal }),
  span: (id, signal) => getJSON(`/api/spans/${id}`, { signal }),
  traces: ({ session, limit } = {}, signal) => getJSON(`/api/traces${query({ session, limit })}`, { signal }),
  trace: (traceId, signal) => getJSON(`/api/traces/${encodeURIComponent(traceId)}`, { signal }),
  entry: (seq, signal) => getJSON(`/api/entries/${seq}`, { signal }),
  /** The state exactly as the app sent it, as text. */
  stateText: async (seq, signal) => (await request(`/api/entries/${seq}/state`, { signal })).text(),
  screenshotURL: (seq) => `/api/entries/${seq}/screenshot`,
  diff: ({ from, to }, signal) => getJSON(`/api/diff${query({ from, to })}`, { signal }),
  replay: async (seq, target) => (await request(`/api/entries/${seq}/replay`, { method: 'POST', json: target })).json(),
  exportURL: (id) => `/api/sessions/${id}/export`,
  import: async (file) =>
    (await request('/api/import', { method: 'POST', body: file, accept: 'application/json' })).json(),
  peers: (signal) => getJSON('/api/peers', { signal }),
  /** {fingerprint, paired: [...], pending: [...]}: this debugger's devices (docs/security.md). */
  devices: (signal) => getJSON('/api/devices', { signal }),
  /** Accepts or refuses a pairing request, or takes a paired device back ('accept', 'refuse', 'unpair'); {done}. */
  decideDevice: async (fingerprint, decision) =>
    (await request(`/api/devices/${encodeURIComponent(fingerprint)}/${decision}`, { method: 'POST' })).json(),
  filters: (signal) => getJSON('/api/filters', { signal }),
  drawers: (signal) => getJSON('/api/drawers', { signal }),
  /** Sets a drawer item of app `peer`; answers {value} (the value now in effect in the app). */
  setDrawerValue: async (peer, item, value) =>
    (await request(`/api/drawers/${encodeURIComponent(peer)}/items/${encodeURIComponent(item)}`, { method: 'POST', json: { value } })).json(),
  /** Invokes a drawer action of app `peer`; answers {message} (optional). */
  invokeDrawerAction: async (peer, item) =>
    (await request(`/api/drawers/${encodeURIComponent(peer)}/items/${encodeURIComponent(item)}/invoke`, { method: 'POST' })).json(),
};
