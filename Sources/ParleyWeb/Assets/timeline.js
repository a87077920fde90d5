// A session's timeline: its states, log records and spans merged by time, in a virtually scrolled list (only the
// rows in view exist; rows are fetched in pages as they come into view), with a slider to scrub. Each kind shows at
// a glance: a state its number, action and size; a log line its level (three letters, in the level's colour, and a
// stripe of it), label and message; a span its name, a bar for its duration and the duration.
//
// Filters: the kinds shown, a lowest level (log lines), a label glob (log labels and span names) and text (parleyd's
// full-text search), all answered by GET /api/sessions/{id}/timeline; and the action filters of states (a named
// filter of parleyd's configuration, an action glob, show/hide), answered by the entries list: while one is set the
// timeline lists states alone. When a path is pinned, state rows whose entry changed that path (against the state
// above) are marked, from parleyd's diffs of the rows in view.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { bytes, isPrefix, count } from './format.js';
import { errorPanel } from './notify.js';
import { LEVELS, levelLabel, levelClass, clockNanos, nanosTitle, formatDuration, spanDuration, durationFraction, atLeast } from './telemetry.js';
import { KINDS, rowFromItem, rowFromEntry, emptyFilter, isActionFiltered, isFiltered, timelineParameters, sameFilter } from './items.js';

export const ROW_HEIGHT = 22; // matches --row-height in app.css
const PAGE = 200;
const OVERSCAN = 8;
const DIFF_CONCURRENCY = 2;
const TYPING_DELAY = 300;
// Rows that arrive out of order (a span is sent when it ends, but sits at its start) or under a filter only parleyd
// can apply: the rows in view are fetched again, at most this often.
const REFRESH_DELAY = 250;
// How far up a state row looks for the state before it (the pin's marks).
const PIN_LOOKBACK = 400;
const KIND_NAMES = { state: 'states', log: 'logs', span: 'spans' };

export class Timeline {
  /**
   * filter: the filter to start with (items.js); onFilter(filter): the user changed it.
   * onActivate(row, {replace}): the user chose a row (click, keys, slider); row = {kind, id, key, time, item}.
   * onPickDiff(entry): the user asked to diff the selected entry against this one.
   */
  constructor({ sessionId, filter, onActivate, onPickDiff, onFilter }) {
    this.sessionId = sessionId;
    this.onActivate = onActivate;
    this.onPickDiff = onPickDiff;
    this.onFilter = onFilter;
    this.filter = filter ?? emptyFilter();
    this.pages = new Map(); // page index -> {rows, promise}
    this.total = null;
    this.generation = 0;
    this.selectedKey = null;
    this.selectedIndex = null;
    this.diffBase = null;
    this.shownState = null;
    this.pin = null;
    this.pinMarks = new Map(); // "from>to" -> true/false (changed the pinned path)
    this.diffQueue = [];
    this.diffRunning = 0;
    this.renderQueued = false;
    this.refreshTimer = null;
    this.refreshing = null;
    this.refreshAgain = false;
    this.firstPaintReported = false;
    this.aborter = new AbortController();
    this.build();
  }

  build() {
    this.filterSelect = h('select', { class: 'tl-named', title: 'A named filter from parleyd\'s configuration', 'aria-label': 'Named filter' }, h('option', { value: '', text: 'all actions' }));
    this.patternInput = h('input', {
      type: 'search',
      class: 'tl-pattern',
      placeholder: 'action glob: add*  (/)',
      title: 'A glob on the action text: * any text, ? one character, \\ escapes (press / to get here)',
      'aria-label': 'Action pattern',
      spellcheck: 'false',
      autocomplete: 'off',
    });
    this.modeSelect = h('select', { class: 'tl-mode', 'aria-label': 'Show or hide matching entries' }, h('option', { value: 'show', text: 'show' }), h('option', { value: 'hide', text: 'hide' }));
    this.modeSelect.title = 'Show only the matching entries, or hide them';
    this.kindButtons = KINDS.map((kind) =>
      h('button', { type: 'button', class: `tl-kind small kind-${kind}`, dataset: { kind }, 'aria-pressed': 'true', title: `Show ${KIND_NAMES[kind]}`, text: KIND_NAMES[kind] }),
    );
    this.levelSelect = h(
      'select',
      { class: 'tl-level', 'aria-label': 'Lowest log level', title: 'Log lines at this level and above (states and spans are not affected)' },
      h('option', { value: '', text: 'any level' }),
      LEVELS.map((level) => h('option', { value: level, text: level === 'critical' ? level : `${level}+` })),
    );
    this.labelInput = h('input', {
      type: 'search',
      class: 'tl-label',
      placeholder: 'label glob: app.net*',
      title: 'A glob on log labels and span names: * any text, ? one character',
      'aria-label': 'Label pattern',
      spellcheck: 'false',
      autocomplete: 'off',
    });
    this.textInput = h('input', {
      type: 'search',
      class: 'tl-text',
      placeholder: 'text in messages',
      title: 'Words in log messages, span names and actions (parleyd\'s full-text search)',
      'aria-label': 'Search text',
      spellcheck: 'false',
      autocomplete: 'off',
    });
    this.note = h('div', { class: 'tl-note dim', hidden: true, text: 'An action filter selects states: log lines and spans are not listed while one is set.' });
    this.countLabel = h('span', { class: 'tl-count dim' });
    this.filterError = h('div', { class: 'tl-error', hidden: true });
    this.slider = h('input', { type: 'range', class: 'tl-slider', min: '0', max: '0', value: '0', step: '1', 'aria-label': 'Scrub through the timeline' });
    this.spacer = h('div', { class: 'tl-spacer' });
    this.window = h('div', { class: 'tl-window' });
    this.spacer.appendChild(this.window);
    this.viewport = h('div', { class: 'tl-viewport', tabindex: '0', role: 'listbox', 'aria-label': 'Timeline' }, this.spacer);
    this.empty = h('div', { class: 'tl-empty dim', hidden: true });
    this.actionFilters = h('div', { class: 'tl-filter' }, this.filterSelect, this.patternInput, this.modeSelect);
    this.element = h(
      'section',
      { class: 'timeline' },
      this.actionFilters,
      h('div', { class: 'tl-filter tl-filter-items' }, h('span', { class: 'tl-kinds', role: 'group', 'aria-label': 'Kinds shown' }, this.kindButtons), this.levelSelect, this.labelInput, this.textInput),
      this.note,
      this.filterError,
      h('div', { class: 'tl-scrub' }, this.slider, this.countLabel),
      h('div', { class: 'tl-head' }, h('span', { class: 'c-seq', text: '#' }), h('span', { class: 'c-time', text: 'time' }), h('span', { class: 'c-what', text: 'action · log line · span' }), h('span', { class: 'c-size', text: 'size' })),
      this.viewport,
      this.empty,
    );
    this.showFilter();

    let typingTimer = null;
    const applyFilter = () => {
      clearTimeout(typingTimer);
      const next = this.filterFromControls();
      if (sameFilter(next, this.filter)) return;
      this.filter = next;
      this.showFilter();
      if (this.onFilter) this.onFilter(this.filter);
      this.reload();
    };
    const typed = () => {
      clearTimeout(typingTimer);
      typingTimer = setTimeout(applyFilter, TYPING_DELAY);
    };
    for (const select of [this.filterSelect, this.modeSelect, this.levelSelect]) select.addEventListener('change', applyFilter);
    for (const input of [this.patternInput, this.labelInput, this.textInput]) {
      input.addEventListener('input', typed);
      input.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') applyFilter();
        if (event.key === 'Escape') {
          input.blur();
          this.viewport.focus();
        }
      });
    }
    for (const button of this.kindButtons) {
      button.addEventListener('click', () => {
        const pressed = this.kindButtons.filter((other) => other.getAttribute('aria-pressed') === 'true');
        // At least one kind stays shown.
        if (pressed.length === 1 && pressed[0] === button) return;
        button.setAttribute('aria-pressed', button.getAttribute('aria-pressed') === 'true' ? 'false' : 'true');
        applyFilter();
      });
    }
    this.slider.addEventListener('input', () => this.moveTo(Number(this.slider.value)));
    this.viewport.addEventListener('scroll', () => this.scheduleRender(), { passive: true });
    this.viewport.addEventListener('click', (event) => this.handleClick(event));
    this.resizeObserver = new ResizeObserver(() => this.scheduleRender());
    this.resizeObserver.observe(this.viewport);
  }

  filterFromControls() {
    return {
      filter: this.filterSelect.value,
      pattern: this.patternInput.value,
      mode: this.modeSelect.value,
      kinds: this.kindButtons.filter((button) => button.getAttribute('aria-pressed') === 'true').map((button) => button.dataset.kind),
      level: this.levelSelect.value,
      label: this.labelInput.value,
      text: this.textInput.value,
    };
  }

  /** The controls say what this.filter is; those the entries list does not apply wait while an action filter is set. */
  showFilter() {
    const f = this.filter;
    if (this.filterSelect.value !== f.filter) this.filterSelect.value = f.filter;
    if (this.patternInput.value !== f.pattern) this.patternInput.value = f.pattern;
    this.modeSelect.value = f.mode;
    for (const button of this.kindButtons) button.setAttribute('aria-pressed', f.kinds.includes(button.dataset.kind) ? 'true' : 'false');
    this.levelSelect.value = f.level;
    if (this.labelInput.value !== f.label) this.labelInput.value = f.label;
    if (this.textInput.value !== f.text) this.textInput.value = f.text;
    const waiting = isActionFiltered(f);
    for (const control of [...this.kindButtons, this.levelSelect, this.labelInput, this.textInput]) control.disabled = waiting;
    this.note.hidden = !waiting;
  }

  /** The route names a filter (back, forward, a link): show it, and list what it selects. */
  setFilter(filter) {
    if (sameFilter(filter, this.filter)) return;
    this.filter = filter;
    this.showFilter();
    this.reload();
  }

  setFilters(filters) {
    for (const filter of filters) this.filterSelect.appendChild(h('option', { value: filter.name, text: `filter: ${filter.name}` }));
    this.filterSelect.value = this.filter.filter;
  }

  focusPattern() {
    this.patternInput.focus();
    this.patternInput.select();
  }

  /** For a session that records no states (an OpenTelemetry service's): neither their button nor the action
   *  filters, which select states only. */
  withoutStates() {
    this.actionFilters.hidden = true;
    const states = this.kindButtons.find((button) => button.dataset.kind === 'state');
    if (states) states.hidden = true;
  }

  destroy() {
    this.aborter.abort();
    this.resizeObserver.disconnect();
    clearTimeout(this.refreshTimer);
    this.generation += 1;
  }

  // Data

  get filtered() {
    return isFiltered(this.filter);
  }

  /** While an action filter is set, the entries list is asked (it applies those filters), and lists states. */
  get byEntries() {
    return isActionFiltered(this.filter);
  }

  rowAt(index) {
    const page = this.pages.get(Math.floor(index / PAGE));
    return page && page.rows ? page.rows[index % PAGE] : undefined;
  }

  indexOfKey(key) {
    for (const [pageIndex, page] of this.pages) {
      if (!page.rows) continue;
      const at = page.rows.findIndex((row) => row.key === key);
      if (at !== -1) return pageIndex * PAGE + at;
    }
    return null;
  }

  /** A row already fetched, by key (the item pane takes it from here instead of asking parleyd again). */
  rowByKey(key) {
    const index = this.indexOfKey(key);
    return index === null ? null : this.rowAt(index);
  }

  async fetchRows(offset, limit) {
    if (this.byEntries) {
      const { filter, pattern, mode } = this.filter;
      const answer = await api.entries(this.sessionId, { offset, limit, filter, pattern, mode }, this.aborter.signal);
      return { rows: answer.entries.map(rowFromEntry), total: answer.total };
    }
    const answer = await api.timeline(this.sessionId, { offset, limit, ...timelineParameters(this.filter) }, this.aborter.signal);
    return { rows: answer.items.map(rowFromItem), total: answer.total };
  }

  /** {offset, matches} of the row with `key` in the list, or null when it cannot be in it. */
  async fetchPosition(key) {
    const [kind, id] = key.split(':');
    if (this.byEntries) {
      if (kind !== 'state') return null;
      const { filter, pattern, mode } = this.filter;
      return api.position(this.sessionId, Number(id), { filter, pattern, mode }, this.aborter.signal);
    }
    return api.timelinePosition(this.sessionId, kind, Number(id), timelineParameters(this.filter), this.aborter.signal);
  }

  /** Fetches the page holding `index` (once); resolves when it is there. */
  loadPage(pageIndex) {
    const existing = this.pages.get(pageIndex);
    if (existing) return existing.promise;
    const generation = this.generation;
    const page = { rows: null, promise: null };
    page.promise = this.fetchRows(pageIndex * PAGE, PAGE)
      .then(({ rows, total }) => {
        if (generation !== this.generation) return;
        this.hideFilterError();
        // Rows that arrived live may have been put in this page while it was on its way.
        const merged = new Map();
        for (const row of rows) merged.set(row.key, row);
        for (const row of page.rows ?? []) if (!merged.has(row.key)) merged.set(row.key, row);
        page.rows = [...merged.values()].slice(0, PAGE);
        this.setTotal(this.total === null ? total : Math.max(total, pageIndex * PAGE + page.rows.length));
        if (this.selectedKey !== null && this.selectedIndex === null) this.selectedIndex = this.indexOfKey(this.selectedKey);
        this.scheduleRender();
      })
      .catch((error) => {
        if (error.name === 'AbortError' || generation !== this.generation) return;
        this.pages.delete(pageIndex);
        this.showFilterError(error);
      });
    this.pages.set(pageIndex, page);
    return page.promise;
  }

  async rowAtIndex(index) {
    if (this.rowAt(index) === undefined) await this.loadPage(Math.floor(index / PAGE));
    return this.rowAt(index);
  }

  setTotal(total) {
    if (total === this.total) return;
    this.total = total;
    this.spacer.style.height = `${total * ROW_HEIGHT}px`;
    this.slider.max = String(Math.max(0, total - 1));
    this.slider.disabled = total === 0;
    this.updateCount();
  }

  updateCount() {
    if (this.total === null) return;
    const position = this.selectedIndex !== null ? `${(this.selectedIndex + 1).toLocaleString()} / ` : '';
    this.countLabel.textContent = `${position}${count(this.total, this.filtered ? 'match' : 'entry', this.filtered ? 'matches' : 'entries')}`;
    this.empty.hidden = this.total !== 0;
    this.empty.textContent = this.filtered ? 'Nothing matches the filter.' : 'No entries yet.';
  }

  showFilterError(error) {
    clear(this.filterError).appendChild(errorPanel(error, this.byEntries ? 'Could not list the entries' : 'Could not list the timeline'));
    this.filterError.hidden = false;
  }

  hideFilterError() {
    if (!this.filterError.hidden) {
      this.filterError.hidden = true;
      clear(this.filterError);
    }
  }

  /** Loads the first page, or the page around the selected row. */
  async start() {
    await this.reload();
  }

  async reload() {
    this.generation += 1;
    clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    this.pages.clear();
    this.rows = null;
    this.window.replaceChildren();
    this.countLabel.textContent = '';
    this.total = null;
    this.selectedIndex = null;
    this.pinMarks.clear();
    const generation = this.generation;
    let offset = 0;
    if (this.selectedKey !== null) {
      try {
        const answer = await this.fetchPosition(this.selectedKey);
        if (answer) {
          offset = answer.offset;
          // A row the filter leaves out: the list opens where it would be.
          this.selectedIndex = answer.matches === false ? null : offset;
        }
      } catch (error) {
        if (error.name === 'AbortError') return;
        offset = 0; // not in the list (404): start at the top
        if (error.status !== 404) this.showFilterError(error);
      }
    }
    if (generation !== this.generation) return;
    await this.loadPage(Math.floor(offset / PAGE));
    if (generation !== this.generation || this.total === null) return;
    const at = this.selectedIndex ?? Math.min(offset, this.total - 1);
    this.scrollToIndex(at, true);
    this.slider.value = String(Math.max(0, at));
    this.render();
    this.updateCount();
  }

  // Selection

  /** The route selected the row with `key` (or none): highlight it and bring it into view. */
  async select(key) {
    if (key === this.selectedKey && (key === null || this.selectedIndex !== null)) return;
    this.selectedKey = key;
    this.selectedIndex = key === null ? null : this.indexOfKey(key);
    if (key !== null && this.selectedIndex === null && this.total !== null) {
      const generation = this.generation;
      try {
        const answer = await this.fetchPosition(key);
        if (generation !== this.generation || key !== this.selectedKey) return;
        if (answer) {
          this.selectedIndex = answer.matches === false ? null : answer.offset;
          await this.loadPage(Math.floor(answer.offset / PAGE));
          if (this.selectedIndex === null) this.scrollToIndex(Math.min(answer.offset, this.total - 1), true);
        }
      } catch (error) {
        if (error.name === 'AbortError') return;
        this.selectedIndex = null; // not in the list
      }
    }
    if (this.selectedIndex !== null) {
      this.scrollToIndex(this.selectedIndex);
      this.slider.value = String(this.selectedIndex);
    }
    this.updateCount();
    this.render();
  }

  setDiffBase(seq) {
    this.diffBase = seq;
    this.render();
  }

  /** The state shown beside a selected log line or span (outlined), or none. */
  setShownState(seq) {
    this.shownState = seq;
    this.render();
  }

  scrollToIndex(index, center = false) {
    const top = index * ROW_HEIGHT;
    const height = this.viewport.clientHeight || 400;
    const scrollTop = this.viewport.scrollTop;
    if (center || top < scrollTop || top + ROW_HEIGHT > scrollTop + height) {
      this.viewport.scrollTop = center ? top - height / 2 + ROW_HEIGHT / 2 : top < scrollTop ? top : top + ROW_HEIGHT - height;
    }
  }

  async moveTo(index, { replace = true } = {}) {
    if (this.total === null || this.total === 0) return;
    const target = Math.max(0, Math.min(this.total - 1, index));
    const row = await this.rowAtIndex(target);
    if (!row) return;
    this.selectedIndex = target;
    this.selectedKey = row.key;
    this.slider.value = String(target);
    this.scrollToIndex(target);
    this.updateCount();
    this.render();
    this.onActivate(row, { replace });
  }

  move(delta) {
    if (this.selectedIndex === null) return this.moveTo(delta > 0 ? 0 : (this.total ?? 1) - 1);
    return this.moveTo(this.selectedIndex + delta);
  }

  moveToStart() {
    return this.moveTo(0);
  }

  moveToEnd() {
    return this.moveTo((this.total ?? 1) - 1);
  }

  handleClick(event) {
    const target = event.target instanceof Element ? event.target : null;
    const element = target ? target.closest('.tl-row') : null;
    if (!element || element.dataset.key === undefined) return;
    const index = Number(element.dataset.index);
    const row = this.rowAt(index);
    if (!row) return;
    if (target.closest('.tl-diff')) {
      event.stopPropagation();
      this.onPickDiff(row.item);
      return;
    }
    this.selectedIndex = index;
    this.selectedKey = row.key;
    this.slider.value = String(index);
    this.updateCount();
    this.render();
    this.viewport.focus({ preventScroll: true });
    this.onActivate(row, { replace: false });
  }

  // Live

  /** An entry parleyd stored (the live `entry` event). */
  liveEntry(entry) {
    if (entry.session !== this.sessionId) return;
    this.liveRows([rowFromEntry(entry)]);
  }

  /** Log records and spans parleyd stored (the live `telemetry` event): their rows, or only their counts. */
  liveTelemetry(event) {
    if (event.session !== this.sessionId) return;
    if (!Array.isArray(event.items)) {
      if (!this.byEntries) this.scheduleRefresh();
      return;
    }
    this.liveRows(event.items.map(rowFromItem));
  }

  /** Whether the filter could show `row`, as far as the page can tell (kinds and levels it knows). */
  mayShow(row) {
    if (this.byEntries) return row.kind === 'state';
    if (!this.filter.kinds.includes(row.kind)) return false;
    return row.kind !== 'log' || atLeast(row.item.record.severity, this.filter.level);
  }

  liveRows(rows) {
    if (this.total === null) return;
    const shown = rows.filter((row) => this.mayShow(row) && this.indexOfKey(row.key) === null);
    if (shown.length === 0) return;
    // What a glob, a text search or an action filter select is parleyd's to say.
    if (this.byEntries || this.filter.label || this.filter.text) {
      this.scheduleRefresh();
      return;
    }
    const atBottom = this.isAtBottom();
    for (const row of shown) {
      // A row that belongs before the rows already listed (a span sits at its start, but arrives when it ends)
      // moves the rows after it: those in view are fetched again.
      const latest = this.latestLoadedRow();
      if (latest && row.time < latest.time) {
        this.scheduleRefresh();
        return;
      }
      const index = this.total;
      const pageIndex = Math.floor(index / PAGE);
      const page = this.pages.get(pageIndex);
      if (page && page.rows) page.rows.push(row);
      else if (!page && index % PAGE === 0) this.pages.set(pageIndex, { rows: [row], promise: Promise.resolve() });
      else if (page) (page.rows = page.rows ?? []).push(row); // merged when the page's answer arrives
      this.setTotal(index + 1);
    }
    if (atBottom) this.viewport.scrollTop = this.viewport.scrollHeight;
    this.scheduleRender();
  }

  latestLoadedRow() {
    let latest = null;
    let latestIndex = -1;
    for (const [pageIndex, page] of this.pages) {
      if (!page.rows || page.rows.length === 0 || pageIndex * PAGE < latestIndex) continue;
      latestIndex = pageIndex * PAGE + page.rows.length - 1;
      latest = page.rows[page.rows.length - 1];
    }
    return latest;
  }

  isAtBottom() {
    return this.viewport.scrollTop + this.viewport.clientHeight >= this.viewport.scrollHeight - ROW_HEIGHT;
  }

  scheduleRefresh() {
    if (this.refreshTimer !== null || this.total === null) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      this.refresh();
    }, REFRESH_DELAY);
  }

  /** Fetches the rows in view again (rows may have been put before them), and forgets the others. */
  async refresh() {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.generation += 1;
    const generation = this.generation;
    const atBottom = this.isAtBottom();
    const first = Math.max(0, Math.floor(this.viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const pageIndex = Math.floor(first / PAGE);
    this.refreshing = this.fetchRows(pageIndex * PAGE, 2 * PAGE)
      .then(({ rows, total }) => {
        if (generation !== this.generation) return;
        this.pages.clear();
        for (let part = 0; part * PAGE < rows.length; part += 1) {
          this.pages.set(pageIndex + part, { rows: rows.slice(part * PAGE, (part + 1) * PAGE), promise: Promise.resolve() });
        }
        this.setTotal(total);
        this.selectedIndex = this.selectedKey === null ? null : this.indexOfKey(this.selectedKey);
        if (atBottom) this.viewport.scrollTop = this.viewport.scrollHeight;
        this.updateCount();
        this.scheduleRender();
      })
      .catch((error) => {
        if (error.name !== 'AbortError' && generation === this.generation) this.showFilterError(error);
      })
      .finally(() => {
        this.refreshing = null;
        if (this.refreshAgain) {
          this.refreshAgain = false;
          this.scheduleRefresh();
        }
      });
  }

  // Pin

  setPin(path) {
    this.pin = path;
    this.pinMarks.clear();
    this.diffQueue = [];
    this.render();
  }

  /** The state row before `index` among the rows fetched; null when there is none close by. */
  previousState(index) {
    for (let at = index - 1; at >= 0 && at >= index - PIN_LOOKBACK; at -= 1) {
      const row = this.rowAt(at);
      if (!row) return null;
      if (row.kind === 'state') return row;
    }
    return null;
  }

  pinMark(index, row) {
    if (!this.pin || row.kind !== 'state') return undefined;
    const previous = this.previousState(index);
    if (!previous) return undefined;
    const key = `${previous.id}>${row.id}`;
    if (this.pinMarks.has(key)) return this.pinMarks.get(key);
    if (!this.diffQueue.some((item) => item.key === key)) this.diffQueue.push({ key, from: previous.id, to: row.id, index });
    this.pumpDiffs();
    return undefined;
  }

  pumpDiffs() {
    while (this.diffRunning < DIFF_CONCURRENCY && this.diffQueue.length) {
      const item = this.diffQueue.shift();
      if (!this.isIndexInView(item.index)) continue;
      const pin = this.pin;
      this.diffRunning += 1;
      api
        .diff({ from: item.from, to: item.to }, this.aborter.signal)
        .then((answer) => {
          if (pin !== this.pin) return;
          const changed = answer.changes.some((change) => isPrefix(pin, change.path) || isPrefix(change.path, pin));
          this.pinMarks.set(item.key, changed);
          this.scheduleRender();
        })
        .catch((error) => {
          if (error.name !== 'AbortError' && pin === this.pin) this.pinMarks.set(item.key, null);
        })
        .finally(() => {
          this.diffRunning -= 1;
          this.pumpDiffs();
        });
    }
  }

  isIndexInView(index) {
    const first = Math.floor(this.viewport.scrollTop / ROW_HEIGHT) - OVERSCAN;
    const last = Math.ceil((this.viewport.scrollTop + this.viewport.clientHeight) / ROW_HEIGHT) + OVERSCAN;
    return index >= first && index <= last;
  }

  // Rendering

  scheduleRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.render();
    });
  }

  /** The timeline is in the page now (it loads before): show the selected row. */
  attached() {
    if (this.total === null) return;
    const at = this.selectedIndex;
    if (at !== null) {
      this.scrollToIndex(at, true);
      this.slider.value = String(at);
    }
    this.updateCount();
    this.render();
  }

  render() {
    if (this.total === null || !this.viewport.isConnected) return;
    const height = this.viewport.clientHeight || 600;
    const first = Math.max(0, Math.floor(this.viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.total - 1, Math.ceil((this.viewport.scrollTop + height) / ROW_HEIGHT) + OVERSCAN);
    this.window.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    // Rows are kept by index while their item stays the same (only their marks are updated), so scrolling
    // builds only the rows coming into view.
    const elements = [];
    const kept = new Map();
    for (let index = first; index <= last; index += 1) {
      const row = this.rowAt(index);
      const previous = this.rows ? this.rows.get(index) : undefined;
      let shown;
      if (!row) {
        this.loadPage(Math.floor(index / PAGE));
        shown = previous && previous.row === null ? previous : { row: null, element: h('div', { class: 'tl-row loading', dataset: { index } }, h('span', { class: 'c-seq dim', text: '…' })) };
      } else {
        shown = previous && previous.row === row ? previous : { row, element: this.buildRow(index, row) };
        this.updateRow(shown.element, index, row);
      }
      kept.set(index, shown);
      elements.push(shown.element);
    }
    this.rows = kept;
    const children = this.window.children;
    if (children.length !== elements.length || elements.some((element, i) => children[i] !== element)) this.window.replaceChildren(...elements);
    if (!this.firstPaintReported && last >= first) {
      this.firstPaintReported = true;
      requestAnimationFrame(() => performance.mark('parley:timeline-first-paint'));
    }
  }

  buildRow(index, row) {
    switch (row.kind) {
      case 'log':
        return this.buildLogRow(index, row);
      case 'span':
        return this.buildSpanRow(index, row);
      default:
        return this.buildStateRow(index, row);
    }
  }

  buildStateRow(index, row) {
    const entry = row.item;
    return h(
      'div',
      {
        class: 'tl-row kind-state',
        role: 'option',
        dataset: { index, key: row.key, seq: entry.sequence },
        title: `#${entry.sequence} ${entry.action}\n${nanosTitle(row.time)}\nstate ${bytes(entry.stateSize)}, screenshot ${entry.screenshotSize ? bytes(entry.screenshotSize) : 'none'}`,
      },
      h('span', { class: 'c-seq', text: entry.sequence }),
      h('span', { class: 'c-time', text: clockNanos(row.time) }),
      h('span', { class: 'c-what c-action', text: entry.action }),
      h('span', { class: 'c-size', text: bytes(entry.stateSize) }),
      h('span', { class: 'c-mark' }),
      h('button', { type: 'button', class: 'tl-diff', title: 'Diff the selected entry against this one', text: '⇄' }),
    );
  }

  buildLogRow(index, row) {
    const record = row.item.record;
    const level = levelClass(record.severity);
    return h(
      'div',
      {
        class: `tl-row kind-log level-${level}`,
        role: 'option',
        dataset: { index, key: row.key, log: row.id },
        title: `${record.severity} ${record.label}\n${record.message.slice(0, 500)}\n${nanosTitle(row.time)}`,
      },
      h('span', { class: 'c-seq c-level', text: levelLabel(record.severity) }),
      h('span', { class: 'c-time', text: clockNanos(row.time) }),
      // The message takes the columns a state's size and marks use.
      h('span', { class: 'c-what c-message' }, record.label ? h('span', { class: 'c-label', text: record.label }) : null, h('span', { class: 'c-text', text: record.message })),
    );
  }

  buildSpanRow(index, row) {
    const span = row.item.span;
    const duration = spanDuration(span);
    const status = ['ok', 'error'].includes(span.status.code) ? span.status.code : 'unset';
    const fill = h('span', { class: 'c-bar' });
    fill.style.width = `${Math.max(2, Math.round(durationFraction(duration) * 100))}%`;
    return h(
      'div',
      {
        class: `tl-row kind-span status-${status}`,
        role: 'option',
        dataset: { index, key: row.key, span: row.id },
        title: `${span.name} (${span.kind} span${status === 'unset' ? '' : `, ${status}`}) took ${formatDuration(duration)}\n${nanosTitle(row.time)}`,
      },
      h('span', { class: 'c-seq c-kind', text: 'SPAN' }),
      h('span', { class: 'c-time', text: clockNanos(row.time) }),
      h('span', { class: 'c-what c-span' }, h('span', { class: 'c-track' }, fill), h('span', { class: 'c-name', text: span.name })),
      h('span', { class: 'c-size c-duration', text: formatDuration(duration) }),
    );
  }

  updateRow(element, index, row) {
    const selected = row.key === this.selectedKey;
    element.dataset.index = index;
    element.classList.toggle('selected', selected);
    element.setAttribute('aria-selected', selected ? 'true' : 'false');
    if (row.kind !== 'state') return;
    const mark = this.pinMark(index, row);
    element.classList.toggle('diff-base', row.id === this.diffBase);
    element.classList.toggle('state-shown', row.id === this.shownState);
    element.classList.toggle('pin-changed', mark === true);
    const markCell = element.querySelector('.c-mark');
    const markText = mark === true ? '●' : '';
    if (markCell.textContent !== markText) {
      markCell.textContent = markText;
      markCell.title = mark === true ? 'The pinned value changed here' : '';
    }
  }
}
