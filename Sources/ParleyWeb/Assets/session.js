// A session: its header (app, host, peer, times, counts, export, traces, delete), the timeline on the left and
// what is selected on the right: an entry (its screenshot and state), or a log line or span above the state the app
// had at that moment. Serves /sessions/{id}, /sessions/{id}/entries/{seq}?diff=N, /sessions/{id}/logs/{log} and
// /sessions/{id}/spans/{span}, each with the timeline's filter in its query; moving between items of the same
// session keeps the view (and the timeline's place).
import { h, clear, isEditable } from './dom.js';
import { api } from './api.js';
import { bytes, dateTime, timeTitle, shortID, count, pathText } from './format.js';
import { navigate, urls } from './router.js';
import { subscribe, connected, staleMark } from './live.js';
import { Timeline } from './timeline.js';
import { EntryPane } from './entry.js';
import { ItemPane } from './detail.js';
import { itemKey, filterFromQuery, withFilter, sameFilter } from './items.js';
import { formatDuration, nanos, isoNanos } from './telemetry.js';
import { toast, showError, errorPanel, confirmAction } from './notify.js';

/** The timeline row a route selects: an entry, a log record or a span; null for the session alone. */
function routeKey(route) {
  if (route.name === 'entry') return itemKey('state', route.seq);
  if (route.name === 'log') return itemKey('log', route.log);
  if (route.name === 'span') return itemKey('span', route.span);
  return null;
}

function pinStorageKey(id) {
  return `parley.pin.${id}`;
}

export class SessionView {
  constructor(route) {
    this.id = route.id;
    this.route = route;
    this.filter = filterFromQuery(route.query);
    this.itemRequest = 0;
    this.session = null;
    this.unsubscribe = [];
    this.element = h('div', { class: 'session-view' }, h('p', { class: 'placeholder', text: 'Loading the session…' }));
    this.keydown = (event) => this.handleKey(event);
    this.load();
  }

  matches(route) {
    return ['session', 'entry', 'log', 'span'].includes(route.name) && route.id === this.id;
  }

  async load() {
    // The first page of entries is fetched while the session is: neither waits for the other.
    const timeline = new Timeline({
      sessionId: this.id,
      filter: this.filter,
      onActivate: (row, { replace }) => this.goTo(row, { replace }),
      onPickDiff: (entry) => {
        if (this.route.name !== 'entry') {
          toast('Select an entry first, then pick the one to compare it with (⇄).');
          return;
        }
        this.go(this.route.seq, entry.sequence === this.route.seq ? null : entry.sequence);
      },
      onFilter: (filter) => {
        this.filter = filter;
        navigate(withFilter(window.location.pathname + window.location.search, filter), { replace: true });
      },
    });
    timeline.selectedKey = routeKey(this.route);
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
    if (this.session.kind === 'otlp') timeline.withoutStates();
    this.timeline.setPin(this.pinnedPath);
    this.entryPane = new EntryPane({
      session: this.session,
      navigate: (seq, diff, options) => this.go(seq, diff, options),
      pin,
      onDiffBase: (seq) => this.timeline.setDiffBase(seq),
    });
    this.itemPane = new ItemPane();
    this.header = h('header', { class: 'session-head' });
    this.renderHeader();
    clear(this.element).append(
      this.header,
      h('div', { class: 'session-body' }, this.timeline.element, h('div', { class: 'detail-column' }, this.itemPane.element, this.entryPane.element)),
    );
    document.addEventListener('keydown', this.keydown);
    this.unsubscribe.push(
      subscribe('entry', (entry) => this.liveEntry(entry)),
      subscribe('telemetry', (event) => this.liveTelemetry(event)),
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
    navigate(withFilter(urls.entry(this.id, seq, diff), this.filter), { replace });
  }

  /** The timeline's row chosen: an entry keeps the diff asked for; a log line or span opens beside its state. */
  goTo(row, { replace = false } = {}) {
    if (row.kind === 'state') this.go(row.id, this.route.name === 'entry' ? (this.route.diff ?? null) : null, { replace });
    else navigate(withFilter(urls[row.kind](this.id, row.id), this.filter), { replace }); // the views 'log' and 'span'
  }

  update(route) {
    this.route = route;
    if (!this.timeline) return; // still loading; load() applies the route
    const filter = filterFromQuery(route.query);
    if (!sameFilter(filter, this.filter)) {
      this.filter = filter;
      this.timeline.setFilter(filter);
    }
    this.timeline.select(routeKey(route));
    if (route.name === 'log' || route.name === 'span') {
      this.showItem(route.name, route.name === 'log' ? route.log : route.span);
      document.title = `${route.name} ${route.name === 'log' ? route.log : route.span} · ${this.session.appName} · Parley`;
      return;
    }
    this.itemRequest += 1;
    this.itemPane.hide();
    this.entryPane.setContext(null);
    this.timeline.setShownState(null);
    const seq = route.name === 'entry' ? route.seq : null;
    this.entryPane.show(seq, route.name === 'entry' ? route.diff : null);
    if (seq === null) this.timeline.setDiffBase(null);
    document.title = seq !== null ? `#${seq} · ${this.session.appName} · Parley` : `${this.session.appName} · session ${this.id} · Parley`;
  }

  /** A log line or a span, above the newest state the app recorded before it (the state it was in then). */
  async showItem(kind, id) {
    const request = ++this.itemRequest;
    const current = () => request === this.itemRequest && !this.destroyed;
    const row = this.timeline.rowByKey(itemKey(kind, id));
    let stored = row ? row.item : null;
    if (!stored) {
      this.itemPane.loading(kind, id);
      try {
        stored = await (kind === 'log' ? api.log(id) : api.span(id));
      } catch (error) {
        if (!current() || error.name === 'AbortError') return;
        this.itemPane.error(error, `${kind === 'log' ? 'Log record' : 'Span'} ${id}`);
        this.entryPane.setContext(null);
        this.entryPane.showNone('Nothing to show beside it.');
        return;
      }
      if (!current()) return;
    }
    if (stored.session !== this.id) {
      this.itemPane.elsewhere(kind, stored);
      this.entryPane.setContext(null);
      this.entryPane.showNone('');
      return;
    }
    this.itemPane.show(kind, stored);
    const time = kind === 'log' ? stored.record.timeUnixNano : stored.span.startTimeUnixNano;
    const what = kind === 'log' ? 'this log line was written' : 'this span started';
    let answer;
    try {
      answer = await api.stateAt(this.id, time);
    } catch (error) {
      if (!current()) return;
      this.entryPane.setContext(errorPanel(error, 'Could not find the state at that moment'));
      this.entryPane.showNone('');
      return;
    }
    if (!current()) return;
    const entry = answer.entry;
    this.timeline.setShownState(entry ? entry.sequence : null);
    if (!entry) {
      this.entryPane.setContext(null);
      this.entryPane.showNone(`No state was recorded before ${what}: the app had not sent one yet.`);
      return;
    }
    const before = (nanos(time) ?? 0n) - (isoNanos(entry.time) ?? 0n);
    this.entryPane.setContext(
      h(
        'p',
        null,
        h('strong', { text: `The app’s state when ${what}: ` }),
        h('a', { href: withFilter(urls.entry(this.id, entry.sequence, null), this.filter), 'data-link': '', text: `#${entry.sequence}` }),
        `, the newest state recorded before it (${before > 0n ? `${formatDuration(before)} earlier` : 'at the same millisecond'}).`,
      ),
    );
    this.entryPane.show(entry.sequence, null);
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
        // An OpenTelemetry service records no states: nothing to count.
        s.kind === 'otlp'
          ? null
          : [h('dt', { text: 'entries' }), h('dd', { class: 'entry-count', text: `${s.entryCount.toLocaleString()} (${bytes(s.bytes)})` })],
        typeof s.logCount === 'number' ? [h('dt', { text: 'logs' }), h('dd', { class: 'log-count', text: s.logCount.toLocaleString() })] : null,
        typeof s.spanCount === 'number' ? [h('dt', { text: 'spans' }), h('dd', { class: 'span-count', text: s.spanCount.toLocaleString() })] : null,
      ),
      h(
        'div',
        { class: 'session-actions' },
        h('a', { class: 'button small', href: `${urls.traces(s.id)}`, 'data-link': '', title: 'The traces this app took part in', text: 'Traces' }),
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

  liveTelemetry(event) {
    if (event.session !== this.id) return;
    for (const [key, added] of [['logCount', event.logCount], ['spanCount', event.spanCount]]) {
      if (typeof this.session[key] === 'number') this.session[key] += added || 0;
    }
    const logs = this.header.querySelector('.log-count');
    if (logs) logs.textContent = this.session.logCount.toLocaleString();
    const spans = this.header.querySelector('.span-count');
    if (spans) spans.textContent = this.session.spanCount.toLocaleString();
    this.timeline.liveTelemetry(event);
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
