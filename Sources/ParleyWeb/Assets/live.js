// The live stream (GET /api/events, server-sent events): the events routes.js names (`entry`, `session`,
// `peers`, `drawer`), dispatched to whoever subscribed. EventSource reconnects by itself; after a reconnect,
// subscribers to 'resync' fetch again what they show, since events may have been missed meanwhile.

import routes from './routes.js';

const handlers = new Map(); // event name -> Set of functions
let source = null;
let wasOpen = false;
let statusElement = null;

function emit(name, data) {
  for (const handler of handlers.get(name) ?? []) {
    try {
      handler(data);
    } catch (error) {
      console.warn(`live ${name} handler failed`, error);
    }
  }
}

function setStatus(state, textValue) {
  if (!statusElement) return;
  statusElement.dataset.state = state;
  statusElement.textContent = textValue;
}

export function subscribe(name, handler) {
  if (!handlers.has(name)) handlers.set(name, new Set());
  handlers.get(name).add(handler);
  return () => handlers.get(name).delete(handler);
}

export function start(element) {
  statusElement = element;
  if (source) return;
  source = new EventSource('/api/events', { withCredentials: true });
  source.addEventListener('open', () => {
    setStatus('open', 'live');
    if (wasOpen) emit('resync', {});
    wasOpen = true;
  });
  source.addEventListener('error', () => {
    setStatus(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting', source.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting…');
  });
  for (const name of routes.liveEvents) {
    source.addEventListener(name, (event) => {
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
  window.addEventListener('pagehide', () => source && source.close());
}
