// Traces: /traces lists recent ones (?session=N: those an app took part in); /traces/{id} shows one as a waterfall,
// each span a row indented under its parent with a bar placed by its start and as long as its duration, and the
// selected span (?span=N) in full beside it: attributes, status, events, links, and a way to the app's state at
// its start.
import { h, clear } from './dom.js';
import { api } from './api.js';
import { navigate, urls } from './router.js';
import { subscribe } from './live.js';
import { errorPanel } from './notify.js';
import { spanDetail } from './detail.js';
import { layoutWaterfall, axisTicks } from './waterfall.js';
import { formatDuration, fullNanos, nanosTitle, nanos, spanDuration } from './telemetry.js';
import { dateTime, count } from './format.js';

const MAX_DEPTH_INDENT = 24; // deeper spans are indented no further
const INDENT = 14; // px per level
const MAX_ROWS = 5000;
const RELIST_DELAY = 1000;

function sessionLinks(sessions) {
  const links = [];
  for (const id of sessions) {
    if (links.length) links.push(', ');
    links.push(h('a', { href: urls.session(id), 'data-link': '', text: `#${id}` }));
  }
  return links;
}

function shortTrace(id) {
  return `${id.slice(0, 8)}…`;
}

export class TracesView {
  constructor(route) {
    this.session = route.session;
    this.controller = new AbortController();
    this.table = h('tbody');
    this.status = h('p', { class: 'dim' });
    this.element = h(
      'div',
      { class: 'page traces-page' },
      h(
        'div',
        { class: 'page-head' },
        h('h1', { text: this.session !== null ? `Traces of session ${this.session}` : 'Traces' }),
        this.session !== null ? h('a', { href: urls.session(this.session), 'data-link': '', class: 'button small', text: '← the session' }) : null,
        this.session !== null ? h('a', { href: urls.traces(), 'data-link': '', class: 'button small', text: 'all sessions' }) : null,
      ),
      h(
        'table',
        { class: 'grid traces-grid' },
        h(
          'thead',
          null,
          h('tr', null, ['trace', 'name', 'started', 'duration', 'spans', 'errors', 'sessions'].map((name) => h('th', { text: name }))),
        ),
        this.table,
      ),
      this.status,
    );
    document.title = 'Traces · Parley';
    this.unsubscribe = subscribe('telemetry', (event) => {
      if (!event.spanCount || (this.session !== null && event.session !== this.session)) return;
      clearTimeout(this.relist);
      this.relist = setTimeout(() => this.load(), RELIST_DELAY);
    });
    this.load();
  }

  matches(route) {
    return route.name === 'traces' && route.session === this.session;
  }

  update() {}

  destroy() {
    this.controller.abort();
    clearTimeout(this.relist);
    this.unsubscribe();
  }

  async load() {
    let answer;
    try {
      answer = await api.traces({ session: this.session ?? undefined, limit: 200 }, this.controller.signal);
    } catch (error) {
      if (error.name === 'AbortError') return;
      clear(this.status).appendChild(errorPanel(error, 'Could not list the traces'));
      return;
    }
    clear(this.table);
    for (const trace of answer.traces) {
      const link = urls.trace(trace.traceId);
      this.table.appendChild(
        h(
          'tr',
          { class: `trace-row${trace.errorCount ? ' has-errors' : ''}`, dataset: { trace: trace.traceId } },
          h('td', { class: 'mono', 'data-label': 'trace' }, h('a', { href: link, 'data-link': '', title: trace.traceId, text: shortTrace(trace.traceId) })),
          h('td', { class: 'c-app', 'data-label': 'name' }, h('a', { href: link, 'data-link': '', text: trace.name || '(unnamed)' })),
          h('td', { 'data-label': 'started', title: nanosTitle(trace.startTimeUnixNano), text: dateTime(new Date(Number((nanos(trace.startTimeUnixNano) ?? 0n) / 1_000_000n)).toISOString()) }),
          h('td', { class: 'num', 'data-label': 'duration', text: formatDuration(trace.durationNanos) }),
          h('td', { class: 'num', 'data-label': 'spans', text: trace.spanCount.toLocaleString() }),
          h('td', { class: `num${trace.errorCount ? ' errors' : ''}`, 'data-label': 'errors', text: trace.errorCount.toLocaleString() }),
          h('td', { 'data-label': 'sessions' }, sessionLinks(trace.sessions)),
        ),
      );
    }
    this.status.textContent = answer.traces.length ? count(answer.traces.length, 'trace') : 'No traces yet: an app bootstrapped with ParleyTracer sends its finished spans here.';
  }
}

export class TraceView {
  constructor(route) {
    this.traceId = route.trace;
    this.selected = route.span;
    this.controller = new AbortController();
    this.element = h('div', { class: 'trace-view' }, h('p', { class: 'placeholder', text: `Loading trace ${this.traceId}…` }));
    document.title = `Trace ${shortTrace(this.traceId)} · Parley`;
    this.unsubscribe = subscribe('telemetry', (event) => {
      if (!event.spanCount) return;
      if (Array.isArray(event.items) && !event.items.some((item) => item.kind === 'span' && item.item.span.traceId === this.traceId)) return;
      clearTimeout(this.relist);
      this.relist = setTimeout(() => this.load(), RELIST_DELAY);
    });
    this.load();
  }

  matches(route) {
    return route.name === 'trace' && route.trace === this.traceId;
  }

  update(route) {
    this.select(route.span);
  }

  destroy() {
    this.controller.abort();
    clearTimeout(this.relist);
    this.unsubscribe();
  }

  async load() {
    let answer;
    try {
      answer = await api.trace(this.traceId, this.controller.signal);
    } catch (error) {
      if (error.name === 'AbortError') return;
      clear(this.element).append(errorPanel(error, `Trace ${this.traceId}`), h('p', null, h('a', { href: urls.traces(), 'data-link': '', text: '← all traces' })));
      return;
    }
    this.spans = answer.spans;
    this.layout = layoutWaterfall(answer.spans);
    this.render(answer.traceId);
  }

  render(fullId) {
    const { rows, duration, start } = this.layout;
    const root = rows[0]?.stored.span;
    const errors = rows.filter((row) => row.stored.span.status.code === 'error').length;
    const sessions = [...new Set(rows.map((row) => row.stored.session))].sort((a, b) => a - b);
    this.detail = h('aside', { class: 'trace-detail' });
    this.rowsElement = h(
      'div',
      { class: 'wf-rows', role: 'listbox', 'aria-label': 'Spans' },
      rows.slice(0, MAX_ROWS).map((row) => this.buildRow(row)),
    );
    this.rowsElement.addEventListener('click', (event) => {
      const element = event.target instanceof Element ? event.target.closest('.wf-row') : null;
      if (!element) return;
      navigate(urls.trace(this.traceId, Number(element.dataset.span)), { replace: true });
    });
    // About one tick per 90 px of the time axis (a phone's is a third as wide as a desktop's).
    const ticks = axisTicks(duration, Math.max(2, Math.min(8, Math.floor((window.innerWidth * 0.4) / 90))));
    clear(this.element).append(
      h(
        'header',
        { class: 'trace-head' },
        h(
          'div',
          { class: 'session-title' },
          sessions.length === 1
            ? h('a', { href: urls.traces(sessions[0]), 'data-link': '', class: 'back', title: 'The traces of this session', text: '←' })
            : h('a', { href: urls.traces(), 'data-link': '', class: 'back', title: 'All traces', text: '←' }),
          h('h1', { text: root ? root.name : 'Trace' }),
          errors ? h('span', { class: 'badge status-error', text: `${errors} error${errors === 1 ? '' : 's'}` }) : null,
        ),
        h(
          'dl',
          { class: 'session-meta' },
          h('dt', { text: 'trace' }),
          h('dd', { class: 'trace-id', text: fullId }),
          h('dt', { text: 'started' }),
          h('dd', { title: nanosTitle(start), text: fullNanos(start) }),
          h('dt', { text: 'took' }),
          h('dd', { class: 'trace-duration', text: formatDuration(duration) }),
          h('dt', { text: 'spans' }),
          h('dd', { text: rows.length.toLocaleString() }),
          h('dt', { text: sessions.length === 1 ? 'session' : 'sessions' }),
          h('dd', null, sessionLinks(sessions)),
        ),
      ),
      h(
        'div',
        { class: 'trace-body' },
        h(
          'section',
          { class: 'waterfall' },
          h(
            'div',
            { class: 'wf-axis' },
            h('span', { class: 'wf-name dim', text: 'span' }),
            h('span', { class: 'wf-scale' }, ticks.map((tick) => {
              const label = h('span', { class: tick.fraction > 0.85 ? 'wf-tick end' : 'wf-tick', text: tick.label });
              label.style.left = `${(tick.fraction * 100).toFixed(3)}%`;
              return label;
            })),
          ),
          this.rowsElement,
          rows.length > MAX_ROWS ? h('p', { class: 'dim', text: `The first ${MAX_ROWS.toLocaleString()} of ${rows.length.toLocaleString()} spans.` }) : null,
        ),
        this.detail,
      ),
    );
    this.select(this.selected, true);
  }

  buildRow(row) {
    const span = row.stored.span;
    const status = ['ok', 'error'].includes(span.status.code) ? span.status.code : 'unset';
    const name = h(
      'span',
      { class: 'wf-name' },
      h('span', { class: 'wf-kind', title: `${span.kind} span`, text: span.kind.slice(0, 3) }),
      row.orphan ? h('span', { class: 'wf-orphan', title: `Its parent span (${span.parentSpanId}) is not in the history`, text: '↰' }) : null,
      h('span', { class: 'wf-label', text: span.name }),
    );
    name.style.paddingLeft = `${4 + Math.min(row.depth, MAX_DEPTH_INDENT) * INDENT}px`;
    const bar = h('span', { class: 'wf-bar' });
    bar.style.left = `${(row.left * 100).toFixed(3)}%`;
    bar.style.width = `max(2px, ${(row.width * 100).toFixed(3)}%)`;
    const took = h('span', { class: 'wf-took', text: formatDuration(spanDuration(span)) });
    // The duration where it fits: inside a long bar, else after the bar, else before it.
    if (row.width >= 0.3) {
      took.classList.add('inside');
      took.style.left = `${(row.left * 100).toFixed(3)}%`;
    } else if (row.left + row.width <= 0.75) {
      took.style.left = `${((row.left + row.width) * 100).toFixed(3)}%`;
    } else {
      took.style.right = `${((1 - row.left) * 100).toFixed(3)}%`;
    }
    return h(
      'div',
      {
        class: `wf-row status-${status}`,
        role: 'option',
        tabindex: '-1',
        dataset: { span: row.stored.id, depth: row.depth },
        title: `${span.name} — ${formatDuration(spanDuration(span))}${span.status.message ? `\n${span.status.message}` : ''}`,
      },
      name,
      h('span', { class: 'wf-track' }, bar, took),
    );
  }

  select(id, initial = false) {
    this.selected = id;
    if (!this.rowsElement) return;
    for (const element of this.rowsElement.querySelectorAll('.wf-row.selected')) {
      element.classList.remove('selected');
      element.setAttribute('aria-selected', 'false');
    }
    const stored = id !== null ? this.spans.find((span) => span.id === id) : null;
    if (!stored) {
      clear(this.detail).appendChild(h('p', { class: 'placeholder', text: 'Select a span: its attributes, status and events show here.' }));
      return;
    }
    const element = this.rowsElement.querySelector(`.wf-row[data-span="${stored.id}"]`);
    if (element) {
      element.classList.add('selected');
      element.setAttribute('aria-selected', 'true');
      if (initial) element.scrollIntoView({ block: 'nearest' });
    }
    clear(this.detail).appendChild(spanDetail(stored, { trace: false, state: urls.span(stored.session, stored.id) }));
  }
}
