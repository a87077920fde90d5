// The Parley web debugger: routes URLs to views, keeps the live stream open, reports what fails.
import { h, clear } from './dom.js';
import * as router from './router.js';
import * as live from './live.js';
import { showError } from './notify.js';
import { api } from './api.js';
import { SessionsView } from './sessions.js';
import { SessionView } from './session.js';
import { PeersView } from './peers.js';
import { DrawerView } from './drawer.js';
import { TracesView, TraceView } from './traces.js';

const container = document.getElementById('view');
let current = null;

function notFound(route) {
  return {
    element: h('div', { class: 'page' }, h('h1', { text: 'Not found' }), h('p', null, 'There is no page at ', h('code', { text: route.path }), '. ', h('a', { href: '/', 'data-link': '', text: 'See the sessions.' }))),
    matches: () => false,
    update() {},
    destroy() {},
  };
}

function show(route) {
  for (const link of document.querySelectorAll('[data-nav]')) {
    const section = { peers: 'peers', drawers: 'drawers', traces: 'traces', trace: 'traces' }[route.name] ?? 'sessions';
    const active = link.dataset.nav === section;
    link.classList.toggle('active', active);
    if (active) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (current && current.matches(route)) {
    current.update(route);
    return;
  }
  if (current) current.destroy();
  switch (route.name) {
    case 'sessions':
      current = new SessionsView();
      break;
    case 'session':
    case 'entry':
    case 'log':
    case 'span':
      current = new SessionView(route);
      break;
    case 'traces':
      current = new TracesView(route);
      break;
    case 'trace':
      current = new TraceView(route);
      break;
    case 'peers':
      current = new PeersView();
      break;
    case 'drawers':
      current = new DrawerView();
      break;
    default:
      current = notFound(route);
      document.title = 'Not found · Parley';
  }
  clear(container).appendChild(current.element);
}

// A token given in the address (`/?token=…`, as `parleyctl web` prints it) has done its work once the page is
// loaded (parleyd set the session cookie): keep it out of the history and of anything copied from the bar.
const params = new URLSearchParams(window.location.search);
if (params.has('token')) {
  params.delete('token');
  const rest = params.toString();
  history.replaceState(null, '', window.location.pathname + (rest ? `?${rest}` : ''));
}

window.addEventListener('unhandledrejection', (event) => {
  const reason = event.reason;
  if (reason && reason.name === 'AbortError') {
    event.preventDefault();
    return;
  }
  // Left in the console too (not prevented): a bug should be seen, not only toasted.
  showError(reason, 'Unexpected error');
});

live.start(document.getElementById('live-status'), document.getElementById('live-notice'));
// Say up front when this page may only read, rather than only when a change is refused.
api.access().then((access) => {
  document.getElementById('access-notice').hidden = access.canChange;
  document.body.classList.toggle('read-only', !access.canChange);
}, (error) => showError(error, 'Cannot ask parleyd what this page may do'));
router.onRoute(show);
router.start();
