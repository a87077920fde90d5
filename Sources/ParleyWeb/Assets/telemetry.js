// Log levels, nanosecond times and durations as the timeline and the trace view show them. No DOM: unit-tested
// with node --test (Tests/web-unit/telemetry.test.js).
//
// The API writes times in nanoseconds since 1970 as decimal strings (a JavaScript number holds integers exactly
// only up to 2^53, these need 61 bits); here they are BigInts.

/** swift-log's levels, lowest first (OpenTelemetry's severities map onto the same seven). */
export const LEVELS = ['trace', 'debug', 'info', 'notice', 'warning', 'error', 'critical'];

const SHORT = { trace: 'TRC', debug: 'DBG', info: 'INF', notice: 'NTC', warning: 'WRN', error: 'ERR', critical: 'CRT' };

/** The level's place in LEVELS; -1 for a text that is no level. */
export function levelRank(level) {
  return LEVELS.indexOf(level);
}

/** Whether a record at `level` is shown when the timeline asks for `minimum` and up (none: all). */
export function atLeast(level, minimum) {
  if (!minimum) return true;
  return levelRank(level) >= levelRank(minimum);
}

/** Three letters in a fixed-width column: INF, WRN, ERR… ('???' for an unknown level). */
export function levelLabel(level) {
  return SHORT[level] ?? '???';
}

/** The level as a CSS class suffix: one of LEVELS, or 'unknown' (never remote text in a class name). */
export function levelClass(level) {
  return levelRank(level) === -1 ? 'unknown' : level;
}

/** Nanoseconds as a BigInt, from the API's decimal string (or a number, or a BigInt); null when it is none. */
export function nanos(value) {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? BigInt(Math.trunc(value)) : null;
  if (typeof value === 'string' && /^\d{1,20}$/.test(value)) return BigInt(value);
  return null;
}

/** -1, 0 or 1, as a sort comparator wants. */
export function compareNanos(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** An ISO 8601 time (how the API writes states' times) in nanoseconds; null when it is not a time. */
export function isoNanos(iso) {
  const milliseconds = Date.parse(iso);
  return Number.isNaN(milliseconds) ? null : BigInt(milliseconds) * 1_000_000n;
}

const pad = (n, width = 2) => String(n).padStart(width, '0');

/** `18:10:51.035` in local time; with `fraction` 6 or 9 the micro- or nanoseconds too (`18:10:51.035123`). */
export function clockNanos(value, fraction = 3) {
  const ns = nanos(value);
  if (ns === null) return String(value ?? '');
  const date = new Date(Number(ns / 1_000_000n));
  const sub = pad(ns % 1_000_000_000n, 9).slice(0, fraction);
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${fraction > 0 ? `.${sub}` : ''}`;
}

/** `2026-11-25 18:10:51.035123456` in local time: every digit the app sent. */
export function fullNanos(value) {
  const ns = nanos(value);
  if (ns === null) return String(value ?? '');
  const date = new Date(Number(ns / 1_000_000n));
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${clockNanos(ns, 9)}`;
}

/** A tooltip for a time: the local time in full and the nanoseconds since 1970 the API gave. */
export function nanosTitle(value) {
  const ns = nanos(value);
  return ns === null ? '' : `${fullNanos(ns)} local — ${new Date(Number(ns / 1_000_000n)).toISOString()} (${ns} ns since 1970)`;
}

// Three significant digits at most: 850 µs, 12.3 ms, 4.56 s.
function significant(whole, unit) {
  const digits = whole < 10 ? 2 : whole < 100 ? 1 : 0;
  const fixed = whole.toFixed(digits);
  const text = fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
  return `${text} ${unit}`;
}

/** A duration in nanoseconds as a person reads it: `850 ns`, `12.3 µs`, `4.56 ms`, `1.2 s`, `2 min 3 s`, `1 h 2 min`. */
export function formatDuration(value) {
  const ns = nanos(value);
  if (ns === null) return '';
  // Each unit up to what would round to 1000 of it (999.6 µs is 1 ms, not 1000 µs).
  if (ns < 1_000n) return `${ns} ns`;
  if (ns < 999_500n) return significant(Number(ns) / 1e3, 'µs');
  if (ns < 999_500_000n) return significant(Number(ns) / 1e6, 'ms');
  if (ns < 59_950_000_000n) return significant(Number(ns) / 1e9, 's');
  const seconds = (ns + 500_000_000n) / 1_000_000_000n; // rounded, as the units above are
  if (seconds < 3600n) return `${seconds / 60n} min ${seconds % 60n} s`;
  if (seconds < 86400n) return `${seconds / 3600n} h ${(seconds % 3600n) / 60n} min`;
  return `${seconds / 86400n} d ${(seconds % 86400n) / 3600n} h`;
}

/** How long a span took: its end less its start, zero when the end comes first. */
export function spanDuration(span) {
  const start = nanos(span.startTimeUnixNano);
  const end = nanos(span.endTimeUnixNano);
  if (start === null || end === null || end < start) return 0n;
  return end - start;
}

/** A duration's bar in the timeline, as a fraction of its column: logarithmic from `shortest` (nothing) to
 *  `longest` (the whole column), so that 1 ms and 1 s spans are both visible and told apart. */
export function durationFraction(value, { shortest = 1_000n, longest = 100_000_000_000n } = {}) {
  const ns = nanos(value);
  if (ns === null || ns <= shortest) return 0;
  if (ns >= longest) return 1;
  return Math.log(Number(ns) / Number(shortest)) / Math.log(Number(longest) / Number(shortest));
}

/** An attribute's or a metadata value as one line: strings as they are, anything else as JSON. */
export function valueText(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
