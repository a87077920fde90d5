// A session: its header (app, host, peer, times, counts, export, delete), the timeline on the left and the
// selected entry on the right. Serves /sessions/{id} and /sessions/{id}/entries/{seq}?diff=N; moving between
// entries of the same session keeps the view (and the timeline's place).
import { h, clear, isEditable } from './dom.js';
import { api } from './api.js';
import { bytes, dateTime, timeTitle, shortID, count, pathText } from './format.js';
import { navigate, urls } from './router.js';
import { subscribe, connected, staleMark } from './live.js';
import { Timeline } from './timeline.js';
import { EntryPane } from './entry.js';
import { toast, showError, errorPanel, confirmAction } from './notify.js';

function pinStorageKey(id) {
  return `parley.pin.${id}`;
}

export class SessionView {
  constructor(route) {
    this.id = route.id;
    this.route = route;
    this.session = null;
    this.unsubscribe = [];
    this.element = h('div', { class: 'session-view' }, h('p', { class: 'placeholder', text: 'Loading the session…' }));
    this.keydown = (event) => this.handleKey(event);
    this.load();
  }

  matches(route) {
    return (route.name === 'session' || route.name === 'entry') && route.id === this.id;
  }

  async load() {
    // The first page of entries is fetched while the session is: neither waits for the other.
    const timeline = new Timeline({
      sessionId: this.id,
      onActivate: (entry, { replace }) => this.go(entry.sequence, this.route.diff ?? null, { replace }),
      onPickDiff: (entry) => {
        if (this.route.seq === undefined) {
          toast('Select an entry first, then pick the one to compare it with (⇄).');
          return;
        }
        this.go(this.route.seq, entry.sequence === this.route.seq ? null : entry.sequence);
      },
      onTotal: (total, filtered) => {
        if (!filtered && this.session && this.header && total > this.session.entryCount) {
          this.session.entryCount = total;
          this.renderHeader();
        }
      },
    });
    timeline.selectedSeq = this.route.seq ?? null;
    const started = timeline.start();
    const filters = api.filters();
    filters.catch(() => {}); // reported below, once the view is there
    try {
      this.session = await api.session(this.id);
    } catch (error) {
      timeline.destroy();
      clear(this.element).append(errorPanel(error, `Session ${this.id}`), h('p', null, h('a', { href: '/', 'data-link': '', text: '← all sessions' })));
      return;
    }
    if (this.destroyed) {
      timeline.destroy();
      return;
    }
    document.title = `${this.session.appName} · session ${this.id} · Parley`;
    const pin = {
      get: () => this.pinnedPath,
      set: (path) => this.setPin(path),
    };
    try {
      const stored = sessionStorage.getItem(pinStorageKey(this.id));
      this.pinnedPath = stored ? JSON.parse(stored) : null;
    } catch {
      this.pinnedPath = null;
    }
    this.timeline = timeline;
    this.timeline.setPin(this.pinnedPath);
    this.entryPane = new EntryPane({
      session: this.session,
      navigate: (seq, diff, options) => this.go(seq, diff, options),
      pin,
      onDiffBase: (seq) => this.timeline.setDiffBase(seq),
    });
    this.header = h('header', { class: 'session-head' });
    this.renderHeader();
    clear(this.element).append(this.header, h('div', { class: 'session-body' }, this.timeline.element, this.entryPane.element));
    document.addEventListener('keydown', this.keydown);
    this.unsubscribe.push(
      subscribe('entry', (entry) => this.liveEntry(entry)),
      subscribe('session', (event) => this.liveSession(event)),
      subscribe('resync', () => this.resync()),
      subscribe('connection', () => {
        this.renderHeader();
        this.entryPane.setSession(this.session);
      }),
    );
    filters.then(({ filters: named }) => this.timeline.setFilters(named), (error) => showError(error, 'Could not load the named filters'));
    await started;
    if (this.destroyed) return;
    this.timeline.attached();
    this.update(this.route);
  }

  go(seq, diff, { replace = false } = {}) {
    navigate(urls.entry(this.id, seq, diff), { replace });
  }

  update(route) {
    this.route = route;
    if (!this.timeline) return; // still loading; load() applies the route
    const seq = route.name === 'entry' ? route.seq : null;
    this.timeline.select(seq);
    this.entryPane.show(seq, route.name === 'entry' ? route.diff : null);
    if (seq === null) this.timeline.setDiffBase(null);
    document.title = seq !== null ? `#${seq} · ${this.session.appName} · Parley` : `${this.session.appName} · session ${this.id} · Parley`;
  }

  setPin(path) {
    this.pinnedPath = path;
    try {
      if (path) sessionStorage.setItem(pinStorageKey(this.id), JSON.stringify(path));
      else sessionStorage.removeItem(pinStorageKey(this.id));
    } catch {
      // storage unavailable: the pin lasts as long as the page
    }
    this.timeline.setPin(path);
    this.entryPane.renderPin();
    if (path) toast(`Pinned ${pathText(path)}: the timeline marks (●) the entries that change it.`);
  }

  renderHeader() {
    const s = this.session;
    // Without the stream, that the app is connected is what parleyd said before it went: not claimed.
    const live = Boolean(s.live) && connected();
    const stale = Boolean(s.live) && !connected();
    clear(this.header).append(
      h(
        'div',
        { class: 'session-title' },
        h('a', { href: '/', 'data-link': '', class: 'back', title: 'All sessions', text: '←' }),
        live ? h('span', { class: 'live-dot', title: 'Live: the app is connected', text: '●' }) : stale ? staleMark() : null,
        h('h1', { text: s.appName || '(no name)' }),
        h('span', { class: 'badge', text: s.kind }),
        s.imported ? h('span', { class: 'badge', text: 'imported' }) : null,
        live ? h('span', { class: 'badge live', text: 'live' }) : null,
        stale ? h('span', { class: 'badge stale', title: 'parleyd cannot be reached: whether the app still records is not known', text: 'live?' }) : null,
      ),
      h(
        'dl',
        { class: 'session-meta' },
        h('dt', { text: 'session' }),
        h('dd', { text: s.id }),
        h('dt', { text: 'host' }),
        h('dd', { text: s.host || '—' }),
        h('dt', { text: 'peer' }),
        h('dd', { title: s.peerID, text: shortID(s.peerID) || '—' }),
        h('dt', { text: 'started' }),
        h('dd', { title: timeTitle(s.started), text: dateTime(s.started) }),
        h('dt', { text: 'ended' }),
        h('dd', { title: timeTitle(s.ended), text: s.ended ? dateTime(s.ended) : live ? 'open' : stale ? '?' : '—' }),
        h('dt', { text: 'entries' }),
        h('dd', { class: 'entry-count', text: `${s.entryCount.toLocaleString()} (${bytes(s.bytes)})` }),
      ),
      h(
        'div',
        { class: 'session-actions' },
        h('a', { class: 'button small', href: api.exportURL(s.id), download: `parley-session-${s.id}.jsonl`, title: 'Download the session (JSON lines)', text: 'Export' }),
        h('button', {
          type: 'button',
          class: 'small danger',
          disabled: live || stale,
          title: live ? 'The app still records into this session' : stale ? 'Not known whether the app still records into this session' : 'Delete this session and its entries',
          text: 'Delete…',
          onclick: () => this.remove(),
        }),
      ),
    );
  }

  async remove() {
    const s = this.session;
    const ok = await confirmAction({
      title: `Delete session ${s.id}?`,
      message: `${s.appName}: ${count(s.entryCount, 'entry', 'entries')} will be deleted for good.`,
      ok: 'Delete',
      danger: true,
    });
    if (!ok) return;
    try {
      await api.deleteSession(s.id);
      toast(`Session ${s.id} deleted`, { kind: 'success' });
      navigate(urls.sessions());
    } catch (error) {
      showError(error, 'Could not delete the session');
    }
  }

  liveEntry(entry) {
    if (entry.session !== this.id) return;
    this.session.entryCount += 1;
    this.session.bytes += (entry.stateSize || 0) + (entry.screenshotSize || 0);
    const cell = this.header.querySelector('.entry-count');
    if (cell) cell.textContent = `${this.session.entryCount.toLocaleString()} (${bytes(this.session.bytes)})`;
    this.timeline.liveEntry(entry);
  }

  liveSession(event) {
    if (!event.session || event.session.id !== this.id) return;
    if (event.change === 'deleted') {
      toast(`Session ${this.id} was deleted`, { kind: 'error' });
      return;
    }
    this.session = { ...this.session, ...event.session };
    this.renderHeader();
    this.entryPane.setSession(this.session);
  }

  async resync() {
    try {
      this.session = await api.session(this.id);
      this.renderHeader();
      this.entryPane.setSession(this.session);
      await this.timeline.reload();
    } catch (error) {
      showError(error, 'Could not refresh the session');
    }
  }

  handleKey(event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return;
    if (document.querySelector('dialog[open]')) return;
    if (isEditable(event.target)) return;
    const keys = {
      ArrowDown: () => this.timeline.move(1),
      j: () => this.timeline.move(1),
      ArrowUp: () => this.timeline.move(-1),
      k: () => this.timeline.move(-1),
      Home: () => this.timeline.moveToStart(),
      End: () => this.timeline.moveToEnd(),
      '/': () => this.timeline.focusPattern(),
    };
    const action = keys[event.key];
    if (!action) return;
    // Arrow keys inside the entry pane scroll it, unless the timeline has the focus.
    if ((event.key === 'ArrowDown' || event.key === 'ArrowUp') && event.target instanceof Element && event.target.closest('.entry-pane')) return;
    event.preventDefault();
    action();
  }

  destroy() {
    this.destroyed = true;
    document.removeEventListener('keydown', this.keydown);
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    if (this.timeline) this.timeline.destroy();
    if (this.entryPane) this.entryPane.destroy();
  }
}
