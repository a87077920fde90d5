// Client-side routing with the History API. Every view has its own URL (the list is routes.js):
//   /                                     sessions
//   /sessions/{id}                        a session's timeline
//   /sessions/{id}/entries/{seq}?diff=N   an entry (diffed against N, else the previous entry)
//   /sessions/{id}/logs/{log}             a log record, beside the state the app had then
//   /sessions/{id}/spans/{span}           a span, beside the state the app had when it started
//   /traces?session=N                     recent traces (of one session)
//   /traces/{traceID}?span=N              a trace as a waterfall (span N selected)
//   /peers                                peers
//   /drawers                              connected apps' debug drawers

import routes from './routes.js';

const listeners = new Set();

// Each view's path as a pattern: its `:name` parts are numbers, or hexadecimal text for those listed in `hex`.
const views = routes.views.map((view) => {
  const hex = new Set(view.hex ?? []);
  return {
    name: view.name,
    path: view.path,
    keys: Array.from(view.path.matchAll(/:(\w+)/g), (match) => match[1]),
    hex,
    query: view.query ?? [],
    pattern: new RegExp(`^${view.path.replace(/:(\w+)/g, (_, key) => (hex.has(key) ? '([0-9A-Fa-f]+)' : '(\\d+)'))}$`),
  };
});

const number = (text) => (text !== null && /^\d+$/.test(text) ? Number(text) : null);

export function parse(location = window.location) {
  const path = location.pathname.replace(/\/+$/, '') || '/';
  const query = new URLSearchParams(location.search);
  for (const view of views) {
    const match = view.pattern.exec(path);
    if (!match) continue;
    const route = { name: view.name };
    view.keys.forEach((key, index) => (route[key] = view.hex.has(key) ? match[index + 1].toLowerCase() : Number(match[index + 1])));
    for (const key of view.query) route[key] = number(query.get(key));
    route.query = query;
    return route;
  }
  return { name: 'notFound', path, query };
}

/** Each view's URL by its name: its numbers in the order its path names them, then those of its query (left out
 *  when null): `urls.entry(id, seq, diff)`. */
export const urls = Object.fromEntries(
  views.map((view) => [
    view.name,
    (...values) => {
      let index = 0;
      const path = view.path.replace(/:\w+/g, () => values[index++]);
      const query = view.query
        .map((key, offset) => [key, values[view.keys.length + offset]])
        .filter(([, value]) => value !== null && value !== undefined)
        .map(([key, value]) => `${key}=${value}`);
      return query.length ? `${path}?${query.join('&')}` : path;
    },
  ]),
);

export function onRoute(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function dispatch() {
  const route = parse();
  for (const listener of listeners) listener(route);
}

/** Goes to `url` inside the page; `replace` for steps that should not each fill the back button's list. */
export function navigate(url, { replace = false } = {}) {
  const current = window.location.pathname + window.location.search;
  if (url === current) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatch();
}

export function start() {
  window.addEventListener('popstate', dispatch);
  // Same-origin links marked data-link are followed inside the page (plain clicks only: a middle click or
  // Ctrl-click still opens a tab).
  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = event.target instanceof Element ? event.target.closest('a[data-link]') : null;
    if (!link || link.target || link.hasAttribute('download')) return;
    const url = new URL(link.href, window.location.href);
    if (url.origin !== window.location.origin) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
  dispatch();
}
