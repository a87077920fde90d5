// The timeline's rows (states, log records, spans) and its filter, as the URL and the API write them. No DOM:
// unit-tested with node --test (Tests/web-unit/items.test.js).
import { nanos, isoNanos, LEVELS } from './telemetry.js';

export const KINDS = ['state', 'log', 'span'];

/** One key per item: an entry's sequence, a log record's and a span's id are each unique only within their kind. */
export function itemKey(kind, id) {
  return `${kind}:${id}`;
}

/** A timeline row from the API's `{kind, time, item}`: its kind, id, key, time (BigInt ns) and the item itself. */
export function rowFromItem(answer) {
  const { kind, item } = answer;
  const id = kind === 'state' ? item.sequence : item.id;
  return { kind, id, key: itemKey(kind, id), time: nanos(answer.time) ?? 0n, item };
}

/** A row for an entry as GET …/entries and the live `entry` event give it. */
export function rowFromEntry(entry) {
  return { kind: 'state', id: entry.sequence, key: itemKey('state', entry.sequence), time: isoNanos(entry.time) ?? 0n, item: entry };
}

/** The filter that shows everything. */
export function emptyFilter() {
  return { filter: '', pattern: '', mode: 'show', kinds: [...KINDS], level: '', label: '', text: '' };
}

/** The filter a URL's query names: `kinds=log,span&level=warning&label=GLOB&q=TEXT`, and the action filters
 *  `filter=NAME&pattern=GLOB&mode=hide`. What is not a kind or a level is left out. */
export function filterFromQuery(query) {
  const filter = emptyFilter();
  const text = (name) => query.get(name) ?? '';
  filter.filter = text('filter');
  filter.pattern = text('pattern');
  filter.mode = text('mode') === 'hide' ? 'hide' : 'show';
  const kinds = text('kinds').split(',').filter((kind) => KINDS.includes(kind));
  if (kinds.length) filter.kinds = KINDS.filter((kind) => kinds.includes(kind));
  filter.level = LEVELS.includes(text('level')) ? text('level') : '';
  filter.label = text('label');
  filter.text = text('q');
  return filter;
}

/** The query parameters that give `filter` (only what narrows the list), in a fixed order: [[name, value], …]. */
export function filterParameters(filter) {
  const parameters = [];
  if (filter.kinds && filter.kinds.length && filter.kinds.length < KINDS.length) parameters.push(['kinds', KINDS.filter((kind) => filter.kinds.includes(kind)).join(',')]);
  if (filter.level) parameters.push(['level', filter.level]);
  if (filter.label) parameters.push(['label', filter.label]);
  if (filter.text) parameters.push(['q', filter.text]);
  if (filter.filter) parameters.push(['filter', filter.filter]);
  if (filter.pattern) parameters.push(['pattern', filter.pattern]);
  if (filter.mode === 'hide' && (filter.filter || filter.pattern)) parameters.push(['mode', 'hide']);
  return parameters;
}

/** `url` with the filter's parameters added to its query. */
export function withFilter(url, filter) {
  const [path, search = ''] = url.split('?');
  const query = new URLSearchParams(search);
  for (const name of ['kinds', 'level', 'label', 'q', 'filter', 'pattern', 'mode']) query.delete(name);
  for (const [name, value] of filterParameters(filter)) query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

export function sameFilter(a, b) {
  return JSON.stringify(filterParameters(a)) === JSON.stringify(filterParameters(b));
}

/** A named filter or an action glob: those select states by their action, and only the entries list applies
 *  them, so the timeline shows states alone while one is set. */
export function isActionFiltered(filter) {
  return Boolean(filter.filter || filter.pattern);
}

/** Whether anything is left out. */
export function isFiltered(filter) {
  return filterParameters(filter).length > 0;
}

/** The timeline API's parameters for `filter` (`kinds`, `level`, `label`, `q`; only those set). */
export function timelineParameters(filter) {
  const parameters = {};
  for (const [name, value] of filterParameters(filter)) if (['kinds', 'level', 'label', 'q'].includes(name)) parameters[name] = value;
  return parameters;
}
