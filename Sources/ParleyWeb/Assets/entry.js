// One entry: its screenshot beside its state as a tree, the diff against the previous entry (or any entry
// picked), search in the state, a pinned subtree, copying, and replay to the app (time travel).
import { h, clear } from './dom.js';
import { api } from './api.js';
import { bytes, fullTime, timeTitle, pathText, pathKey, isPrefix, shorten, count } from './format.js';
import { parseState, valueAt, stringify, ExactNumber } from './json.js';
import { JsonTree } from './tree.js';
import { searchState } from './search.js';
import { changeList } from './diffview.js';
import { copyText } from './clipboard.js';
import { toast, showError, errorPanel, confirmAction } from './notify.js';
import { connected } from './live.js';

const KEEP_EXPANDED = 400;

export class EntryPane {
  /**
   * session: the session object (appName, live); navigate(seq, diff, {replace}); pin: {get(), set(path)}.
   */
  constructor({ session, navigate, pin, onDiffBase }) {
    this.session = session;
    this.navigate = navigate;
    this.pin = pin;
    this.onDiffBase = onDiffBase;
    this.seq = null;
    this.diffSeq = null;
    this.info = null;
    this.state = undefined;
    this.changes = null;
    this.controller = null;
    this.diffController = null;
    this.tree = new JsonTree({
      onPin: (path) => this.pin.set(path),
      onCopyPath: (path) => copyText(pathText(path), 'the path'),
      onCopyValue: (path, value) => copyText(stringify(value, 2), `the value of ${shorten(pathText(path), 60)}`),
    });
    this.build();
    this.showPlaceholder();
  }

  build() {
    this.head = h('header', { class: 'entry-head' });
    this.shot = h('figure', { class: 'shot' });
    this.searchInput = h('input', { type: 'search', class: 'search-input', placeholder: 'Search the state: path or value', 'aria-label': 'Search the state', spellcheck: 'false', autocomplete: 'off' });
    this.searchResults = h('div', { class: 'search-results', hidden: true });
    this.pinPanel = h('section', { class: 'pin-panel', hidden: true });
    this.changesPanel = h('details', { class: 'changes-panel', open: true });
    this.treeStatus = h('div', { class: 'tree-status dim' });
    this.stateColumn = h(
      'div',
      { class: 'state-column' },
      h(
        'div',
        { class: 'state-tools' },
        this.searchInput,
        h('button', { type: 'button', class: 'small', text: 'Collapse all', onclick: () => this.tree.collapseAll() }),
        h('button', { type: 'button', class: 'small', text: 'Copy state', title: 'Copy the state exactly as the app sent it', onclick: () => this.copyState() }),
      ),
      this.searchResults,
      this.pinPanel,
      this.changesPanel,
      this.treeStatus,
      h('div', { class: 'tree-box' }, this.tree.element),
    );
    this.body = h('div', { class: 'entry-body' }, this.shot, this.stateColumn);
    // Beside a log line or a span: which state this is (the newest recorded before it).
    this.context = h('div', { class: 'state-context', role: 'note', hidden: true });
    this.element = h('section', { class: 'entry-pane' }, this.context, this.head, this.body);

    let searchTimer = null;
    this.searchInput.addEventListener('input', () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => this.runSearch(), 200);
    });
    this.searchInput.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        clearTimeout(searchTimer);
        this.runSearch();
      } else if (event.key === 'Escape') {
        this.searchInput.value = '';
        this.runSearch();
      }
    });
  }

  showPlaceholder() {
    this.seq = null;
    clear(this.head).appendChild(h('p', { class: 'placeholder', text: 'Select an entry, a log line or a span in the timeline (click, ↑/↓ or j/k, Home/End).' }));
    this.body.hidden = true;
  }

  /** A note above the entry saying why this state is shown (null: none). */
  setContext(content) {
    clear(this.context);
    this.context.hidden = !content;
    if (content) this.context.append(content);
  }

  /** No entry to show, and why. */
  showNone(text) {
    this.destroy();
    this.seq = null;
    this.info = null;
    clear(this.head).appendChild(h('p', { class: 'placeholder', text }));
    this.body.hidden = true;
  }

  setSession(session) {
    this.session = session;
    if (this.info) this.renderHead();
  }

  destroy() {
    if (this.controller) this.controller.abort();
    if (this.diffController) this.diffController.abort();
  }

  /** Shows entry `seq`, diffed against `diffSeq` (null: the previous entry). */
  async show(seq, diffSeq) {
    if (seq === null) {
      this.destroy();
      this.showPlaceholder();
      return;
    }
    if (seq === this.seq) {
      if (diffSeq !== this.diffSeq) {
        this.diffSeq = diffSeq;
        this.renderHead();
        this.loadDiff();
      }
      return;
    }
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    const { signal } = controller;
    const started = performance.now();
    const expanded = this.expandedPaths();
    this.seq = seq;
    this.diffSeq = diffSeq;
    this.info = null;
    this.changes = null;
    this.body.hidden = false;
    this.element.classList.add('loading');
    clear(this.head).appendChild(h('div', { class: 'entry-title' }, h('span', { class: 'seq', text: `#${seq}` }), h('span', { class: 'dim', text: ' loading…' })));
    const statePromise = api.stateText(seq, signal);
    statePromise.catch(() => {}); // handled below; keeps an early failure from being reported as unhandled
    try {
      this.info = await api.entry(seq, signal);
    } catch (error) {
      if (error.name === 'AbortError') return;
      this.element.classList.remove('loading');
      clear(this.head).appendChild(errorPanel(error, `Entry ${seq}`));
      this.body.hidden = true;
      return;
    }
    if (this.info.entry.session !== this.session.id) {
      controller.abort();
      this.element.classList.remove('loading');
      clear(this.head).appendChild(
        h(
          'div',
          { class: 'error-panel' },
          h('strong', { text: `Entry ${seq} belongs to session ${this.info.entry.session}, not ${this.session.id}.` }),
          ' ',
          h('a', { href: `/sessions/${this.info.entry.session}/entries/${seq}`, 'data-link': '', text: 'Open it there' }),
        ),
      );
      this.body.hidden = true;
      return;
    }
    this.renderHead();
    this.renderShot();
    this.loadDiff();
    let textValue;
    try {
      textValue = await statePromise;
    } catch (error) {
      if (error.name === 'AbortError') return;
      this.element.classList.remove('loading');
      this.tree.setValue(undefined);
      clear(this.treeStatus).appendChild(errorPanel(error, 'Could not load the state'));
      return;
    }
    if (signal.aborted) return;
    try {
      this.state = parseState(textValue);
    } catch (error) {
      this.element.classList.remove('loading');
      this.state = undefined;
      clear(this.treeStatus).appendChild(errorPanel(error, 'The state is not JSON'));
      return;
    }
    this.stateText = textValue;
    this.tree.setPinned(this.pin.get());
    this.tree.setValue(this.state);
    for (const path of expanded) this.tree.expandTo(path);
    if (this.changes) this.tree.setChanges(this.changes, { reveal: true });
    this.element.classList.remove('loading');
    const elapsed = performance.now() - started;
    this.treeStatus.textContent = `${bytes(textValue.length)} of JSON, shown in ${Math.round(elapsed)} ms`;
    performance.mark('parley:tree-ready', { detail: { seq, bytes: textValue.length, elapsed } });
    this.renderPin();
    if (this.searchInput.value.trim()) this.runSearch();
  }

  expandedPaths() {
    const paths = [];
    for (const node of this.tree.nodes.values()) {
      if (node.expanded && node.parent) paths.push(node.path);
      if (paths.length >= KEEP_EXPANDED) break;
    }
    return paths;
  }

  renderHead() {
    const { entry, previous, next } = this.info;
    const diffInput = h('input', {
      type: 'text',
      inputmode: 'numeric',
      class: 'diff-input',
      placeholder: previous !== null ? `${previous}` : 'entry #',
      value: this.diffSeq !== null ? String(this.diffSeq) : '',
      'aria-label': 'Diff against entry number',
      title: 'The entry to diff against (any entry, any session); empty: the previous one',
    });
    const applyDiff = () => {
      const value = diffInput.value.trim().replace(/^#/, '');
      if (value === '') this.navigate(entry.sequence, null);
      else if (/^\d+$/.test(value)) this.navigate(entry.sequence, Number(value));
      else toast('An entry number, please', { kind: 'error', detail: `“${shorten(value, 40)}” is not one.` });
    };
    diffInput.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') applyDiff();
    });
    // While the stream is down, whether the app is still connected is not known: the button waits for it.
    const live = Boolean(this.session.live) && connected();
    const stale = Boolean(this.session.live) && !connected();
    clear(this.head).append(
      h(
        'div',
        { class: 'entry-title' },
        h('span', { class: 'seq', text: `#${entry.sequence}` }),
        h('code', { class: 'action', text: entry.action }),
      ),
      h(
        'div',
        { class: 'entry-meta' },
        h('span', { title: timeTitle(entry.time), text: fullTime(entry.time) }),
        h('span', { text: `state ${bytes(entry.stateSize)}` }),
        h('span', { text: entry.screenshotSize ? `screenshot ${bytes(entry.screenshotSize)}` : 'no screenshot' }),
        h('span', { class: 'spacer' }),
        h('a', { class: previous !== null ? 'button small' : 'button small disabled', href: previous !== null ? `/sessions/${this.session.id}/entries/${previous}${this.diffSeq !== null ? `?diff=${this.diffSeq}` : ''}` : null, 'data-link': '', 'aria-disabled': previous === null ? 'true' : null, title: 'Previous entry (↑ or k)', text: '◀ prev' }),
        h('a', { class: next !== null ? 'button small' : 'button small disabled', href: next !== null ? `/sessions/${this.session.id}/entries/${next}${this.diffSeq !== null ? `?diff=${this.diffSeq}` : ''}` : null, 'data-link': '', 'aria-disabled': next === null ? 'true' : null, title: 'Next entry (↓ or j)', text: 'next ▶' }),
      ),
      h(
        'div',
        { class: 'entry-actions' },
        h('label', { class: 'diff-control' }, h('span', { text: 'diff vs #' }), diffInput),
        h('button', { type: 'button', class: 'small', text: 'apply', onclick: applyDiff }),
        this.diffSeq !== null ? h('button', { type: 'button', class: 'small', text: 'vs previous', onclick: () => this.navigate(entry.sequence, null) }) : null,
        h('span', { class: 'spacer' }),
        h('button', {
          type: 'button',
          class: 'small primary',
          disabled: !live,
          title: live ? `Send this state to ${this.session.appName}` : stale ? 'parleyd cannot be reached' : 'The session\u2019s app is not connected',
          text: 'Replay to app',
          onclick: () => this.replay({}),
        }),
        h('button', { type: 'button', class: 'small', title: 'Send this state to every connected app', text: 'Replay to all…', onclick: () => this.replay({ all: true }) }),
      ),
    );
  }

  renderShot() {
    const { entry } = this.info;
    clear(this.shot);
    if (!entry.screenshotSize) {
      this.shot.appendChild(h('div', { class: 'no-shot', text: 'no screenshot' }));
      return;
    }
    const caption = h('figcaption', { class: 'dim' });
    const image = h('img', { class: 'screenshot', alt: `Screenshot of entry ${entry.sequence}`, decoding: 'async' });
    image.addEventListener('load', () => {
      caption.textContent = `${image.naturalWidth} × ${image.naturalHeight}, ${bytes(entry.screenshotSize)}`;
    });
    image.addEventListener('error', () => {
      caption.textContent = 'the screenshot could not be loaded';
    });
    image.src = api.screenshotURL(entry.sequence);
    this.shot.append(h('a', { href: api.screenshotURL(entry.sequence), target: '_blank', rel: 'noopener', title: 'Open the screenshot at full size' }, image), caption);
  }

  async loadDiff() {
    if (this.diffController) this.diffController.abort();
    const controller = new AbortController();
    this.diffController = controller;
    const { entry, previous } = this.info;
    const from = this.diffSeq;
    this.changes = null;
    this.tree.setChanges([]);
    if (this.onDiffBase) this.onDiffBase(from ?? previous);
    if (from === null && previous === null) {
      this.renderChanges(null, 'The first entry of its session: nothing before it to compare with.');
      this.renderPin();
      return;
    }
    this.renderChanges(null, 'Comparing…');
    try {
      const answer = await api.diff({ from: from ?? undefined, to: entry.sequence }, controller.signal);
      if (controller.signal.aborted) return;
      this.changes = answer.changes;
      this.diffFrom = answer.from;
      if (this.state !== undefined && this.tree.root) this.tree.setChanges(this.changes, { reveal: true });
      this.renderChanges(answer);
      this.renderPin();
      performance.mark('parley:diff-ready', { detail: { seq: entry.sequence, changes: answer.changes.length } });
    } catch (error) {
      if (error.name === 'AbortError') return;
      clear(this.changesPanel).append(h('summary', { text: 'Changes' }), errorPanel(error, 'Could not compare'));
    }
  }

  renderChanges(answer, message = '') {
    clear(this.changesPanel);
    if (!answer) {
      this.changesPanel.append(h('summary', { text: 'Changes' }), h('p', { class: 'dim', text: message }));
      return;
    }
    const base = answer.from;
    const summary = h(
      'summary',
      null,
      h('span', { text: `Changes vs #${base.sequence}` }),
      h('code', { class: 'dim', text: ` ${shorten(base.action, 60)}` }),
      h('span', { class: 'count-badge', text: answer.changes.length.toLocaleString() }),
    );
    this.changesPanel.appendChild(summary);
    if (answer.changes.length === 0) {
      this.changesPanel.appendChild(h('p', { class: 'dim', text: 'The two states are equal.' }));
      return;
    }
    this.changesPanel.appendChild(
      changeList(answer.changes, (change) => {
        if (!this.tree.reveal(change.path, { removed: change.kind === 'removed' })) toast(`${change.pathText} is not in this state`);
      }),
    );
  }

  renderPin() {
    const path = this.pin.get();
    this.tree.setPinned(path);
    if (!path || this.state === undefined) {
      this.pinPanel.hidden = true;
      return;
    }
    this.pinPanel.hidden = false;
    const value = valueAt(this.state, path);
    let status = '';
    let statusClass = 'dim';
    if (this.changes) {
      const changed = this.changes.some((change) => isPrefix(path, change.path) || isPrefix(change.path, path));
      const base = this.diffSeq ?? this.info.previous;
      status = changed ? `changed since #${base}` : `unchanged since #${base}`;
      statusClass = changed ? 'pin-status changed' : 'pin-status';
    }
    const subtree = new JsonTree({
      rootLabel: pathText(path),
      onCopyPath: (p) => copyText(pathText(p), 'the path'),
      onCopyValue: (p, v) => copyText(stringify(v, 2), `the value of ${shorten(pathText(p), 60)}`),
      onPin: (p) => this.pin.set(p),
    });
    if (value !== undefined) {
      subtree.setValue(value, { rootPath: path });
      if (this.changes) subtree.setChanges(this.changes.filter((change) => isPrefix(path, change.path) || isPrefix(change.path, path)), { reveal: true });
    }
    clear(this.pinPanel).append(
      h(
        'div',
        { class: 'pin-head' },
        h('span', { class: 'pin-label', text: 'Pinned' }),
        h('code', { text: pathText(path) }),
        h('span', { class: statusClass, text: status }),
        h('span', { class: 'spacer' }),
        h('button', { type: 'button', class: 'small', text: 'show in tree', onclick: () => this.tree.reveal(path) }),
        h('button', { type: 'button', class: 'small', text: 'unpin', onclick: () => this.pin.set(null) }),
      ),
      value === undefined ? h('p', { class: 'dim', text: 'Not in this state.' }) : subtree.element,
    );
  }

  runSearch() {
    const query = this.searchInput.value;
    clear(this.searchResults);
    if (!query.trim() || this.state === undefined) {
      this.searchResults.hidden = true;
      return;
    }
    const started = performance.now();
    const { results, truncated } = searchState(this.state, query);
    const elapsed = Math.round(performance.now() - started);
    this.searchResults.hidden = false;
    const head = h('div', { class: 'search-head dim', text: results.length ? `${count(results.length, 'result')}${truncated ? ' (the first ones)' : ''} · ${elapsed} ms` : `Nothing found · ${elapsed} ms` });
    const list = h('ul', { class: 'search-list' });
    for (const result of results) {
      const shown = result.value !== null && typeof result.value === 'object' && !(result.value instanceof ExactNumber) ? (Array.isArray(result.value) ? `[${result.value.length}]` : '{…}') : stringify(result.value);
      list.appendChild(
        h(
          'li',
          null,
          h('button', {
            type: 'button',
            class: 'search-hit',
            dataset: { path: pathKey(result.path) },
            onclick: () => this.tree.reveal(result.path),
          }, h('span', { class: 'hit-path', text: pathText(result.path) }), h('span', { class: 'hit-value', text: shorten(shown, 100) })),
        ),
      );
    }
    this.searchResults.append(head, list);
  }

  copyState() {
    if (this.stateText !== undefined) copyText(this.stateText, 'the state');
  }

  async replay(target) {
    const seq = this.seq;
    const toAll = Boolean(target.all);
    const ok = await confirmAction({
      title: toAll ? 'Replay to every connected app?' : `Replay to ${this.session.appName}?`,
      message: toAll
        ? `Entry #${seq}'s state will be sent to every connected app that takes states; each applies it at once.`
        : `Entry #${seq}'s state will be sent to ${this.session.appName}, which applies it at once (time travel).`,
      ok: 'Replay',
    });
    if (!ok) return;
    try {
      const answer = await api.replay(seq, target);
      const names = answer.sentTo.map((app) => `${app.name} (${String(app.id).slice(0, 8)})`);
      toast(`Entry #${seq} sent to ${names.join(', ') || 'no app'}`, { kind: 'success' });
    } catch (error) {
      showError(error, 'Replay failed');
    }
  }
}
