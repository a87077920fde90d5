// A log record or a span in full: what the timeline's row has no room for. A log line: its level, label, time to the
// nanosecond, message, metadata, where in the code it was written and the trace it belongs to. A span: its name,
// kind, status (and why), start, end and duration, attributes, events (each at its offset into the span) and links,
// and what the app or parleyd dropped of it. Used beside the timeline (ItemPane) and in the trace view.
import { h, clear } from './dom.js';
import { errorPanel } from './notify.js';
import { levelLabel, levelClass, fullNanos, nanosTitle, formatDuration, spanDuration, nanos, valueText } from './telemetry.js';

const MAX_ATTRIBUTES = 500;

/** Metadata or attributes as a two-column table, keys sorted (at most MAX_ATTRIBUTES rows). */
export function attributeTable(attributes, caption) {
  const keys = Object.keys(attributes ?? {}).sort();
  if (keys.length === 0) return null;
  const rows = keys.slice(0, MAX_ATTRIBUTES).map((key) =>
    h('tr', null, h('th', { class: 'attr-key', scope: 'row', text: key }), h('td', { class: 'attr-value', text: valueText(attributes[key]) })),
  );
  return h(
    'section',
    { class: 'detail-section' },
    h('h3', { text: `${caption} (${keys.length})` }),
    h('table', { class: 'attrs' }, h('tbody', null, rows)),
    keys.length > MAX_ATTRIBUTES ? h('p', { class: 'dim', text: `… and ${keys.length - MAX_ATTRIBUTES} more` }) : null,
  );
}

function field(name, value, options = {}) {
  if (value === null || value === undefined || value === '') return null;
  return [h('dt', { text: name }), h('dd', options, value instanceof Node ? value : String(value))];
}

function traceLink(traceId, spanStoredId, text = traceId) {
  const query = spanStoredId !== undefined && spanStoredId !== null ? `?span=${spanStoredId}` : '';
  return h('a', { href: `/traces/${traceId}${query}`, 'data-link': '', class: 'mono', title: 'Open the trace as a waterfall', text });
}

/** A log record (as GET /api/logs/{id} answers it). */
export function logDetail(stored) {
  const record = stored.record;
  const level = levelClass(record.severity);
  return h(
    'div',
    { class: `item-detail kind-log level-${level}`, dataset: { log: stored.id } },
    h(
      'div',
      { class: 'detail-title' },
      h('span', { class: `level-badge level-${level}`, title: record.severity, text: levelLabel(record.severity) }),
      record.label ? h('code', { class: 'detail-label', text: record.label }) : null,
      h('span', { class: 'dim detail-time', title: nanosTitle(record.timeUnixNano), text: fullNanos(record.timeUnixNano) }),
    ),
    h('pre', { class: 'detail-message', text: record.message }),
    h(
      'dl',
      { class: 'detail-fields' },
      field('level', record.severity),
      field('source', record.source),
      field('file', record.file ? `${record.file}${record.line ? `:${record.line}` : ''}` : ''),
      field('function', record.function),
      field('trace', record.traceId ? traceLink(record.traceId) : null),
      field('span', record.spanId, { class: 'mono' }),
      field('log record', `#${stored.id}`),
      field('dropped', record.droppedMetadataCount ? `${record.droppedMetadataCount} metadata entries (past the limits)` : ''),
    ),
    attributeTable(record.metadata, 'Metadata'),
  );
}

/** A span (as GET /api/spans/{id} answers it); `links`: {trace: show the trace link, state: URL of the span beside
 *  the state at its start}. */
export function spanDetail(stored, { trace = true, state = null } = {}) {
  const span = stored.span;
  const status = ['ok', 'error'].includes(span.status.code) ? span.status.code : 'unset';
  const start = nanos(span.startTimeUnixNano) ?? 0n;
  const events = (span.events ?? []).map((event) => {
    const at = nanos(event.timeUnixNano);
    const offset = at === null ? '' : at >= start ? `+${formatDuration(at - start)}` : `−${formatDuration(start - at)}`;
    return h(
      'li',
      { class: 'span-event' },
      h('div', null, h('span', { class: 'event-offset mono', title: nanosTitle(event.timeUnixNano), text: offset }), h('strong', { class: 'event-name', text: event.name })),
      attributeTable(event.attributes, 'Attributes'),
    );
  });
  const links = (span.links ?? []).map((link) => h('li', null, traceLink(link.traceId, null), h('span', { class: 'dim mono', text: ` span ${link.spanId}` })));
  const dropped = [
    span.droppedAttributesCount ? `${span.droppedAttributesCount} attributes` : '',
    span.droppedEventsCount ? `${span.droppedEventsCount} events` : '',
    span.droppedLinksCount ? `${span.droppedLinksCount} links` : '',
  ].filter(Boolean);
  return h(
    'div',
    { class: `item-detail kind-span status-${status}`, dataset: { span: stored.id } },
    h(
      'div',
      { class: 'detail-title' },
      h('span', { class: 'kind-badge', text: 'SPAN' }),
      h('strong', { class: 'detail-name', text: span.name }),
      h('span', { class: 'badge', text: span.kind }),
      status !== 'unset' ? h('span', { class: `badge status-${status}`, text: status }) : null,
    ),
    span.status.message ? h('pre', { class: 'detail-message status-message', text: span.status.message }) : null,
    h(
      'dl',
      { class: 'detail-fields' },
      field('duration', formatDuration(spanDuration(span)), { class: 'detail-duration' }),
      field('start', fullNanos(span.startTimeUnixNano), { title: nanosTitle(span.startTimeUnixNano) }),
      field('end', fullNanos(span.endTimeUnixNano), { title: nanosTitle(span.endTimeUnixNano) }),
      field('trace', trace ? traceLink(span.traceId, stored.id) : span.traceId, { class: 'mono' }),
      field('span id', span.spanId, { class: 'mono' }),
      field('parent', span.parentSpanId ?? '(root)', { class: 'mono' }),
      field('dropped', dropped.length ? `${dropped.join(', ')} (past the limits)` : ''),
      state ? field('state', h('a', { href: state, 'data-link': '', text: 'the app\u2019s state when it started ▸' })) : null,
    ),
    attributeTable(span.attributes, 'Attributes'),
    events.length ? h('section', { class: 'detail-section' }, h('h3', { text: `Events (${events.length})` }), h('ol', { class: 'span-events' }, events)) : null,
    links.length ? h('section', { class: 'detail-section' }, h('h3', { text: `Links (${links.length})` }), h('ul', { class: 'span-links' }, links)) : null,
  );
}

/** Beside the timeline: the selected log line or span, above the state the app had then. */
export class ItemPane {
  constructor() {
    this.element = h('section', { class: 'item-pane', hidden: true, 'aria-label': 'Selected log line or span' });
  }

  hide() {
    this.element.hidden = true;
    clear(this.element);
  }

  loading(kind, id) {
    this.element.hidden = false;
    clear(this.element).appendChild(h('p', { class: 'placeholder', text: `${kind === 'log' ? 'Log record' : 'Span'} #${id}: loading…` }));
  }

  error(error, title) {
    this.element.hidden = false;
    clear(this.element).appendChild(errorPanel(error, title));
  }

  /** The record belongs to another session than the one shown. */
  elsewhere(kind, stored) {
    this.element.hidden = false;
    clear(this.element).appendChild(
      h(
        'div',
        { class: 'error-panel' },
        h('strong', { text: `${kind === 'log' ? 'Log record' : 'Span'} ${stored.id} belongs to session ${stored.session}.` }),
        ' ',
        h('a', { href: `/sessions/${stored.session}/${kind === 'log' ? 'logs' : 'spans'}/${stored.id}`, 'data-link': '', text: 'Open it there' }),
      ),
    );
  }

  show(kind, stored) {
    this.element.hidden = false;
    clear(this.element).appendChild(kind === 'log' ? logDetail(stored) : spanDetail(stored));
  }
}
