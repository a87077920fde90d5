// Client-side routing with the History API. Every view has its own URL:
//   /                                     sessions
//   /sessions/{id}                        a session's timeline
//   /sessions/{id}/entries/{seq}?diff=N   an entry (diffed against N, else the previous entry)
//   /peers                                peers
//   /drawers                              connected apps' debug drawers

const listeners = new Set();

export function parse(location = window.location) {
  const path = location.pathname.replace(/\/+$/, '') || '/';
  const query = new URLSearchParams(location.search);
  let match;
  if (path === '/') return { name: 'sessions', query };
  if (path === '/peers') return { name: 'peers', query };
  if (path === '/drawers') return { name: 'drawers', query };
  if ((match = /^\/sessions\/(\d+)$/.exec(path))) return { name: 'session', id: Number(match[1]), query };
  if ((match = /^\/sessions\/(\d+)\/entries\/(\d+)$/.exec(path))) {
    const diff = query.get('diff');
    return {
      name: 'entry',
      id: Number(match[1]),
      seq: Number(match[2]),
      diff: diff !== null && /^\d+$/.test(diff) ? Number(diff) : null,
      query,
    };
  }
  return { name: 'notFound', path, query };
}

export const urls = {
  sessions: () => '/',
  peers: () => '/peers',
  drawers: () => '/drawers',
  session: (id) => `/sessions/${id}`,
  entry: (id, seq, diff = null) => `/sessions/${id}/entries/${seq}${diff !== null && diff !== undefined ? `?diff=${diff}` : ''}`,
};

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
