// A session's timeline: the entries in recording order, filtered by a named filter and/or an action glob, in a
// virtually scrolled list (only the rows in view exist; entries are fetched in pages as they come into view),
// with a slider to scrub. When a path is pinned, rows whose entry changed that path (against the row above)
// are marked, from parleyd's diffs of the rows in view.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { bytes, clockTime, timeTitle, isPrefix, count } from './format.js';
import { errorPanel } from './notify.js';

export const ROW_HEIGHT = 22; // matches --row-height in app.css
const PAGE = 200;
const OVERSCAN = 8;
const DIFF_CONCURRENCY = 2;

export class Timeline {
  /**
   * onActivate(entry, {replace}): the user chose an entry (click, keys, slider).
   * onPickDiff(entry): the user asked to diff the selected entry against this one.
   */
  constructor({ sessionId, onActivate, onPickDiff, onTotal }) {
    this.sessionId = sessionId;
    this.onActivate = onActivate;
    this.onPickDiff = onPickDiff;
    this.onTotal = onTotal;
    this.filter = { filter: '', pattern: '', mode: 'show' };
    this.pages = new Map(); // page index -> {entries, promise}
    this.total = null;
    this.generation = 0;
    this.selectedSeq = null;
    this.selectedIndex = null;
    this.diffBase = null;
    this.pin = null;
    this.pinMarks = new Map(); // "from>to" -> true/false (changed the pinned path)
    this.diffQueue = [];
    this.diffRunning = 0;
    this.renderQueued = false;
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
    this.countLabel = h('span', { class: 'tl-count dim' });
    this.filterError = h('div', { class: 'tl-error', hidden: true });
    this.slider = h('input', { type: 'range', class: 'tl-slider', min: '0', max: '0', value: '0', step: '1', 'aria-label': 'Scrub through the entries' });
    this.spacer = h('div', { class: 'tl-spacer' });
    this.window = h('div', { class: 'tl-window' });
    this.spacer.appendChild(this.window);
    this.viewport = h('div', { class: 'tl-viewport', tabindex: '0', role: 'listbox', 'aria-label': 'Entries' }, this.spacer);
    this.empty = h('div', { class: 'tl-empty dim', hidden: true });
    this.element = h(
      'section',
      { class: 'timeline' },
      h('div', { class: 'tl-filter' }, this.filterSelect, this.patternInput, this.modeSelect),
      this.filterError,
      h('div', { class: 'tl-scrub' }, this.slider, this.countLabel),
      h('div', { class: 'tl-head' }, h('span', { class: 'c-seq', text: '#' }), h('span', { class: 'c-time', text: 'time' }), h('span', { class: 'c-action', text: 'action' }), h('span', { class: 'c-size', text: 'state' })),
      this.viewport,
      this.empty,
    );

    let patternTimer = null;
    const applyFilter = () => {
      clearTimeout(patternTimer);
      const next = { filter: this.filterSelect.value, pattern: this.patternInput.value, mode: this.modeSelect.value };
      if (next.filter === this.filter.filter && next.pattern === this.filter.pattern && next.mode === this.filter.mode) return;
      this.filter = next;
      this.reload();
    };
    this.filterSelect.addEventListener('change', applyFilter);
    this.modeSelect.addEventListener('change', applyFilter);
    this.patternInput.addEventListener('input', () => {
      clearTimeout(patternTimer);
      patternTimer = setTimeout(applyFilter, 300);
    });
    this.patternInput.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') applyFilter();
      if (event.key === 'Escape') {
        this.patternInput.blur();
        this.viewport.focus();
      }
    });
    this.slider.addEventListener('input', () => this.moveTo(Number(this.slider.value)));
    this.viewport.addEventListener('scroll', () => this.scheduleRender(), { passive: true });
    this.viewport.addEventListener('click', (event) => this.handleClick(event));
    this.resizeObserver = new ResizeObserver(() => this.scheduleRender());
    this.resizeObserver.observe(this.viewport);
  }

  setFilters(filters) {
    for (const filter of filters) this.filterSelect.appendChild(h('option', { value: filter.name, text: `filter: ${filter.name}` }));
  }

  focusPattern() {
    this.patternInput.focus();
    this.patternInput.select();
  }

  destroy() {
    this.aborter.abort();
    this.resizeObserver.disconnect();
    this.generation += 1;
  }

  // Data

  get filtered() {
    return Boolean(this.filter.filter || this.filter.pattern);
  }

  entryAt(index) {
    const page = this.pages.get(Math.floor(index / PAGE));
    return page && page.entries ? page.entries[index % PAGE] : undefined;
  }

  indexOfSeq(seq) {
    for (const [pageIndex, page] of this.pages) {
      if (!page.entries) continue;
      const at = page.entries.findIndex((entry) => entry.sequence === seq);
      if (at !== -1) return pageIndex * PAGE + at;
    }
    return null;
  }

  /** Fetches the page holding `index` (once); resolves when it is there. */
  loadPage(pageIndex) {
    const existing = this.pages.get(pageIndex);
    if (existing) return existing.promise;
    const generation = this.generation;
    const page = { entries: null, promise: null };
    page.promise = api
      .entries(this.sessionId, { offset: pageIndex * PAGE, limit: PAGE, ...this.filter }, this.aborter.signal)
      .then((answer) => {
        if (generation !== this.generation) return;
        this.hideFilterError();
        // Live entries may have been put in this page while it was on its way.
        const merged = new Map();
        for (const entry of answer.entries) merged.set(entry.sequence, entry);
        for (const entry of page.entries ?? []) merged.set(entry.sequence, entry);
        page.entries = [...merged.values()].sort((a, b) => a.sequence - b.sequence).slice(0, PAGE);
        this.setTotal(this.total === null ? answer.total : Math.max(this.total, answer.total, pageIndex * PAGE + page.entries.length));
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

  async entryAtIndex(index) {
    if (this.entryAt(index) === undefined) await this.loadPage(Math.floor(index / PAGE));
    return this.entryAt(index);
  }

  setTotal(total) {
    if (total === this.total) return;
    this.total = total;
    this.spacer.style.height = `${total * ROW_HEIGHT}px`;
    this.slider.max = String(Math.max(0, total - 1));
    this.slider.disabled = total === 0;
    this.updateCount();
    if (this.onTotal) this.onTotal(total, this.filtered);
  }

  updateCount() {
    if (this.total === null) return;
    const position = this.selectedIndex !== null ? `${(this.selectedIndex + 1).toLocaleString()} / ` : '';
    this.countLabel.textContent = `${position}${count(this.total, this.filtered ? 'match' : 'entry', this.filtered ? 'matches' : 'entries')}`;
    this.empty.hidden = this.total !== 0;
    this.empty.textContent = this.filtered ? 'No entry matches the filter.' : 'No entries yet.';
  }

  showFilterError(error) {
    clear(this.filterError).appendChild(errorPanel(error, 'Could not list the entries'));
    this.filterError.hidden = false;
  }

  hideFilterError() {
    if (!this.filterError.hidden) {
      this.filterError.hidden = true;
      clear(this.filterError);
    }
  }

  /** Loads the first page, or the page around the selected entry. */
  async start() {
    await this.reload();
  }

  async reload() {
    this.generation += 1;
    this.pages.clear();
    this.rows = null;
    this.window.replaceChildren();
    this.countLabel.textContent = '';
    this.total = null;
    this.selectedIndex = null;
    this.pinMarks.clear();
    const generation = this.generation;
    let offset = 0;
    if (this.selectedSeq !== null) {
      try {
        const answer = await api.position(this.sessionId, this.selectedSeq, this.filter, this.aborter.signal);
        offset = answer.offset;
        // An entry the filter leaves out: the list opens where it would be.
        this.selectedIndex = answer.matches === false ? null : offset;
      } catch (error) {
        if (error.name === 'AbortError') return;
        offset = 0; // not among the matching entries (404): start at the top
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

  /** The route selected `seq` (or null): highlight it and bring it into view. */
  async select(seq) {
    if (seq === this.selectedSeq && (seq === null || this.selectedIndex !== null)) return;
    this.selectedSeq = seq;
    this.selectedIndex = seq === null ? null : this.indexOfSeq(seq);
    if (seq !== null && this.selectedIndex === null && this.total !== null) {
      const generation = this.generation;
      try {
        const answer = await api.position(this.sessionId, seq, this.filter, this.aborter.signal);
        if (generation !== this.generation || seq !== this.selectedSeq) return;
        this.selectedIndex = answer.matches === false ? null : answer.offset;
        await this.loadPage(Math.floor(answer.offset / PAGE));
        if (this.selectedIndex === null) this.scrollToIndex(Math.min(answer.offset, this.total - 1), true);
      } catch (error) {
        if (error.name === 'AbortError') return;
        this.selectedIndex = null; // not among the matching entries
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
    const entry = await this.entryAtIndex(target);
    if (!entry) return;
    this.selectedIndex = target;
    this.selectedSeq = entry.sequence;
    this.slider.value = String(target);
    this.scrollToIndex(target);
    this.updateCount();
    this.render();
    this.onActivate(entry, { replace });
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
    const row = target ? target.closest('.tl-row') : null;
    if (!row || row.dataset.seq === undefined) return;
    const index = Number(row.dataset.index);
    const entry = this.entryAt(index);
    if (!entry) return;
    if (target.closest('.tl-diff')) {
      event.stopPropagation();
      this.onPickDiff(entry);
      return;
    }
    this.selectedIndex = index;
    this.selectedSeq = entry.sequence;
    this.slider.value = String(index);
    this.updateCount();
    this.render();
    this.viewport.focus({ preventScroll: true });
    this.onActivate(entry, { replace: false });
  }

  // Live

  liveEntry(entry) {
    if (entry.session !== this.sessionId || this.total === null) return;
    if (this.filtered) {
      this.refreshTail();
      return;
    }
    if (this.indexOfSeq(entry.sequence) !== null) return;
    const atBottom = this.isAtBottom();
    const index = this.total;
    const pageIndex = Math.floor(index / PAGE);
    const page = this.pages.get(pageIndex);
    if (page && page.entries) page.entries.push(entry);
    else if (!page && index % PAGE === 0) this.pages.set(pageIndex, { entries: [entry], promise: Promise.resolve() });
    else if (page) (page.entries = page.entries ?? []).push(entry); // merged when the page's answer arrives
    this.setTotal(index + 1);
    if (atBottom) this.viewport.scrollTop = this.viewport.scrollHeight;
    this.scheduleRender();
  }

  isAtBottom() {
    return this.viewport.scrollTop + this.viewport.clientHeight >= this.viewport.scrollHeight - ROW_HEIGHT;
  }

  /** With a filter, which new entries match is parleyd's to say: fetch what follows the known ones. */
  async refreshTail() {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    const generation = this.generation;
    const atBottom = this.isAtBottom();
    this.refreshing = api
      .entries(this.sessionId, { offset: this.total, limit: 1000, ...this.filter }, this.aborter.signal)
      .then((answer) => {
        if (generation !== this.generation) return;
        answer.entries.forEach((entry, i) => {
          const index = answer.offset + i;
          const pageIndex = Math.floor(index / PAGE);
          let page = this.pages.get(pageIndex);
          if (!page && index % PAGE === 0) {
            page = { entries: [], promise: Promise.resolve() };
            this.pages.set(pageIndex, page);
          }
          if (page && page.entries && page.entries.length === index % PAGE) page.entries.push(entry);
        });
        this.setTotal(Math.max(this.total, answer.total));
        if (atBottom) this.viewport.scrollTop = this.viewport.scrollHeight;
        this.scheduleRender();
      })
      .catch(() => {})
      .finally(() => {
        this.refreshing = null;
        if (this.refreshAgain) {
          this.refreshAgain = false;
          this.refreshTail();
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

  pinMark(index, entry) {
    if (!this.pin || index === 0) return undefined;
    const previous = this.entryAt(index - 1);
    if (!previous) return undefined;
    const key = `${previous.sequence}>${entry.sequence}`;
    if (this.pinMarks.has(key)) return this.pinMarks.get(key);
    if (!this.diffQueue.some((item) => item.key === key)) this.diffQueue.push({ key, from: previous.sequence, to: entry.sequence, index });
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

  /** The timeline is in the page now (it loads before): show the selected entry. */
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
    // Rows are kept by index while their entry stays the same (only their marks are updated), so scrolling
    // builds only the rows coming into view.
    const rows = [];
    const kept = new Map();
    for (let index = first; index <= last; index += 1) {
      const entry = this.entryAt(index);
      const previous = this.rows ? this.rows.get(index) : undefined;
      let row;
      if (!entry) {
        this.loadPage(Math.floor(index / PAGE));
        row = previous && previous.entry === null ? previous : { entry: null, element: h('div', { class: 'tl-row loading', dataset: { index } }, h('span', { class: 'c-seq dim', text: '…' })) };
      } else {
        row = previous && previous.entry === entry ? previous : { entry, element: this.buildRow(index, entry) };
        this.updateRow(row.element, index, entry);
      }
      kept.set(index, row);
      rows.push(row.element);
    }
    this.rows = kept;
    const children = this.window.children;
    if (children.length !== rows.length || rows.some((element, i) => children[i] !== element)) this.window.replaceChildren(...rows);
    if (!this.firstPaintReported && last >= first) {
      this.firstPaintReported = true;
      requestAnimationFrame(() => performance.mark('parley:timeline-first-paint'));
    }
  }

  buildRow(index, entry) {
    return h(
      'div',
      {
        class: 'tl-row',
        role: 'option',
        dataset: { index, seq: entry.sequence },
        title: `#${entry.sequence} ${entry.action}\n${timeTitle(entry.time)}\nstate ${bytes(entry.stateSize)}, screenshot ${entry.screenshotSize ? bytes(entry.screenshotSize) : 'none'}`,
      },
      h('span', { class: 'c-seq', text: entry.sequence }),
      h('span', { class: 'c-time', text: clockTime(entry.time) }),
      h('span', { class: 'c-action', text: entry.action }),
      h('span', { class: 'c-size', text: bytes(entry.stateSize) }),
      h('span', { class: 'c-mark' }),
      h('button', { type: 'button', class: 'tl-diff', title: 'Diff the selected entry against this one', text: '⇄' }),
    );
  }

  updateRow(element, index, entry) {
    const selected = entry.sequence === this.selectedSeq;
    const mark = this.pinMark(index, entry);
    element.classList.toggle('selected', selected);
    element.setAttribute('aria-selected', selected ? 'true' : 'false');
    element.classList.toggle('diff-base', entry.sequence === this.diffBase);
    element.classList.toggle('pin-changed', mark === true);
    const markCell = element.querySelector('.c-mark');
    const markText = mark === true ? '●' : '';
    if (markCell.textContent !== markText) {
      markCell.textContent = markText;
      markCell.title = mark === true ? 'The pinned value changed here' : '';
    }
  }
}
