// The sessions: newest first, with a live marker for apps still connected; import, export, delete.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { bytes, dateTime, timeTitle, shortID, count } from './format.js';
import { navigate, urls } from './router.js';
import { subscribe, connected, staleMark } from './live.js';
import { toast, showError, errorPanel, confirmAction } from './notify.js';

const PAGE = 100;

export class SessionsView {
  constructor() {
    this.sessions = [];
    this.nextAfter = null;
    this.unsubscribe = [];
    this.refreshing = null;
    this.refreshAgain = false;
    this.fileInput = h('input', { type: 'file', accept: '.jsonl,.ndjson,.json,application/x-ndjson', class: 'offscreen', 'aria-label': 'Session file to import' });
    this.fileInput.addEventListener('change', () => this.importFile());
    this.table = h('table', { class: 'grid sessions' });
    this.footer = h('div', { class: 'grid-footer' });
    this.status = h('div', { class: 'view-status' });
    this.element = h(
      'div',
      { class: 'page sessions-view' },
      h(
        'div',
        { class: 'page-head' },
        h('h1', { text: 'Sessions' }),
        h('span', { class: 'spacer' }),
        h('button', { type: 'button', class: 'small', text: 'Import…', title: 'Import a session exported before (JSON lines)', onclick: () => this.fileInput.click() }),
        this.fileInput,
      ),
      this.status,
      this.table,
      this.footer,
    );
    this.element.addEventListener('click', (event) => this.handleClick(event));
    this.unsubscribe.push(
      subscribe('session', () => this.refresh()),
      subscribe('resync', () => this.refresh()),
      subscribe('entry', (entry) => this.liveEntry(entry)),
      subscribe('connection', () => this.render()),
    );
    document.title = 'Sessions · Parley';
    this.refresh();
  }

  matches(route) {
    return route.name === 'sessions';
  }

  update() {}

  destroy() {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  /** Fetches the first page again (as many rows as shown, so "load more" is not undone). */
  async refresh() {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = (async () => {
      try {
        const answer = await api.sessions({ limit: Math.min(500, Math.max(PAGE, this.sessions.length)) });
        this.sessions = answer.sessions;
        this.nextAfter = answer.nextAfter;
        clear(this.status);
        this.render();
      } catch (error) {
        clear(this.status).appendChild(errorPanel(error, 'Could not list the sessions'));
      }
    })();
    await this.refreshing;
    this.refreshing = null;
    if (this.refreshAgain) {
      this.refreshAgain = false;
      this.refresh();
    }
  }

  async loadMore() {
    try {
      const answer = await api.sessions({ after: this.nextAfter, limit: PAGE });
      this.sessions = this.sessions.concat(answer.sessions);
      this.nextAfter = answer.nextAfter;
      this.render();
    } catch (error) {
      showError(error, 'Could not list more sessions');
    }
  }

  liveEntry(entry) {
    const session = this.sessions.find((s) => s.id === entry.session);
    if (!session) return;
    session.entryCount += 1;
    session.bytes += (entry.stateSize || 0) + (entry.screenshotSize || 0);
    const row = this.table.querySelector(`tr[data-id="${session.id}"]`);
    if (row) {
      row.querySelector('.c-entries').textContent = session.entryCount.toLocaleString();
      row.querySelector('.c-bytes').textContent = bytes(session.bytes);
    }
  }

  render() {
    // Each cell carries its column's name (data-label): on a phone the rows are cards that name their fields.
    clear(this.table);
    this.table.appendChild(
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['', 'id', 'app', 'kind', 'host', 'peer', 'started', 'ended', 'entries', 'size', ''].map((label) => h('th', { text: label })),
        ),
      ),
    );
    const body = h('tbody');
    // Without the stream, "live" is only what parleyd said before it went: shown as a stale mark, not a claim.
    const known = connected();
    for (const s of this.sessions) {
      const live = Boolean(s.live) && known;
      const stale = Boolean(s.live) && !known;
      body.appendChild(
        h(
          'tr',
          { class: live ? 'session-row live' : 'session-row', dataset: { id: s.id } },
          h('td', { class: 'c-live' }, live ? h('span', { class: 'live-dot', title: 'Live: the app is connected', text: '●' }) : stale ? staleMark() : null),
          h('td', { class: 'num', 'data-label': 'id', text: s.id }),
          h('td', { class: 'c-app', 'data-label': 'app' }, h('a', { href: urls.session(s.id), 'data-link': '', text: s.appName || '(no name)' })),
          h('td', { 'data-label': 'kind' }, h('span', { class: 'badge', text: s.kind }), s.imported ? h('span', { class: 'badge', text: 'imported' }) : null),
          h('td', { class: 'mono', 'data-label': 'host', text: s.host || '—' }),
          h('td', { class: 'mono', 'data-label': 'peer', title: s.peerID, text: shortID(s.peerID) }),
          h('td', { class: 'mono', 'data-label': 'started', title: timeTitle(s.started), text: dateTime(s.started) }),
          h('td', { class: 'mono', 'data-label': 'ended', title: timeTitle(s.ended), text: s.ended ? dateTime(s.ended) : live ? 'open' : stale ? '?' : '—' }),
          h('td', { class: 'num c-entries', 'data-label': 'entries', text: s.entryCount.toLocaleString() }),
          h('td', { class: 'num c-bytes', 'data-label': 'size', text: bytes(s.bytes) }),
          h(
            'td',
            { class: 'c-actions' },
            h('a', { class: 'button small', href: api.exportURL(s.id), download: `parley-session-${s.id}.jsonl`, title: 'Download the session (JSON lines)', text: 'Export' }),
            h('button', {
              type: 'button',
              class: 'small danger',
              disabled: live || stale,
              title: live ? 'The app still records into this session' : stale ? 'Not known whether the app still records into this session' : 'Delete this session',
              dataset: { delete: s.id },
              text: 'Delete…',
            }),
          ),
        ),
      );
    }
    this.table.appendChild(body);
    if (this.sessions.length === 0) {
      this.table.appendChild(h('tbody', null, h('tr', null, h('td', { colspan: '11', class: 'empty dim', text: 'No sessions yet. Apps appear here when they connect to parleyd and send their first state.' }))));
    }
    clear(this.footer);
    if (this.nextAfter !== null && this.nextAfter !== undefined) {
      this.footer.appendChild(h('button', { type: 'button', class: 'small', text: 'Load more', onclick: () => this.loadMore() }));
    }
  }

  handleClick(event) {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    const del = target.closest('button[data-delete]');
    if (del) {
      this.remove(Number(del.dataset.delete));
      return;
    }
    // A click anywhere on a row opens the session (links and buttons do their own thing).
    const row = target.closest('tr.session-row');
    if (row && !target.closest('a, button')) navigate(urls.session(Number(row.dataset.id)));
  }

  async remove(id) {
    const s = this.sessions.find((session) => session.id === id);
    if (!s) return;
    const ok = await confirmAction({
      title: `Delete session ${id}?`,
      message: `${s.appName}: ${count(s.entryCount, 'entry', 'entries')} will be deleted for good.`,
      ok: 'Delete',
      danger: true,
    });
    if (!ok) return;
    try {
      await api.deleteSession(id);
      toast(`Session ${id} deleted`, { kind: 'success' });
      this.refresh();
    } catch (error) {
      showError(error, 'Could not delete the session');
    }
  }

  async importFile() {
    const file = this.fileInput.files && this.fileInput.files[0];
    this.fileInput.value = '';
    if (!file) return;
    try {
      const answer = await api.import(file);
      const s = answer.session;
      toast(answer.alreadyInHistory ? `${file.name} is already in the history: session ${s.id}` : `Imported ${file.name} as session ${s.id}`, {
        kind: 'success',
        detail: `${s.appName}, ${count(s.entryCount, 'entry', 'entries')}`,
      });
      navigate(urls.session(s.id));
    } catch (error) {
      showError(error, `Could not import ${file.name}`);
    }
  }
}
