// The live stream (GET /api/events, server-sent events): the events routes.js names (`entry`, `session`,
// `peers`, `drawer`), dispatched to whoever subscribed. After a reconnect, subscribers to 'resync' fetch again
// what they show, since events may have been missed meanwhile.
//
// Whether the stream is up is news too ('connection', and connected()): while it is down nothing says that an app
// is still connected, so views stop calling sessions and peers live, and the notice under the top bar says that
// parleyd cannot be reached. EventSource retries a dropped stream by itself, but gives up for good when an answer
// is not a stream (parleyd restarted behind a proxy, a 401 after a restart with a new token): then this module
// opens a new one itself, until one holds.

import routes from './routes.js';
import { h } from './dom.js';

const RETRY_MS = 3000; // as EventSource's own delay in Chromium and Firefox

const handlers = new Map(); // event name -> Set of functions
let source = null;
let retryTimer = null;
let wasOpen = false;
let state = 'connecting'; // 'connecting' (never open yet), 'open', 'lost'
let statusElement = null;
let noticeElement = null;

function emit(name, data) {
  for (const handler of handlers.get(name) ?? []) {
    try {
      handler(data);
    } catch (error) {
      console.warn(`live ${name} handler failed`, error);
    }
  }
}

function setState(next) {
  if (next === state) return;
  state = next;
  if (statusElement) {
    statusElement.dataset.state = next === 'open' ? 'open' : next === 'lost' ? 'reconnecting' : 'connecting';
    statusElement.textContent = next === 'open' ? 'live' : next === 'lost' ? 'reconnecting…' : 'connecting…';
  }
  if (noticeElement) noticeElement.hidden = next !== 'lost';
  document.documentElement.dataset.live = next;
  emit('connection', { connected: next === 'open' });
}

/** Whether the stream is up: only then is what parleyd said about live sessions and peers still known. */
export function connected() {
  return state === 'open';
}

/** In place of a live dot while the stream is down: live when parleyd was last heard of, not known now. */
export function staleMark(what = 'Was live') {
  return h('span', { class: 'live-dot stale', title: `${what} when parleyd was last reachable; not known now`, text: '◌' });
}

export function subscribe(name, handler) {
  if (!handlers.has(name)) handlers.set(name, new Set());
  handlers.get(name).add(handler);
  return () => handlers.get(name).delete(handler);
}

function open() {
  retryTimer = null;
  const stream = new EventSource('/api/events', { withCredentials: true });
  source = stream;
  stream.addEventListener('open', () => {
    setState('open');
    if (wasOpen) emit('resync', {});
    wasOpen = true;
  });
  stream.addEventListener('error', () => {
    setState('lost');
    if (stream.readyState === EventSource.CLOSED && source === stream) {
      source = null;
      retryTimer = setTimeout(open, RETRY_MS);
    }
  });
  for (const name of routes.liveEvents) {
    stream.addEventListener(name, (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        console.warn(`live: ${name} event with data that is not JSON`);
        return;
      }
      emit(name, data);
    });
  }
}

/** Opens the stream; `status` is the top bar's dot, `notice` the line shown while parleyd cannot be reached. */
export function start(status, notice) {
  statusElement = status;
  noticeElement = notice;
  if (source || retryTimer) return;
  open();
  window.addEventListener('pagehide', () => {
    clearTimeout(retryTimer);
    if (source) source.close();
  });
}
