// A trace's spans laid out as a waterfall: one row per span in tree order (each span right after its parent,
// siblings by start), indented by depth, its bar placed by its start and scaled by its duration within the trace's
// time. No DOM: unit-tested with node --test (Tests/web-unit/waterfall.test.js).
//
// What apps send is not trusted to form a tree: a span whose parent has not arrived (or never will: the parent is in
// an app that does not trace) is a root marked `orphan`; spans whose parents form a loop are shown as roots too, once
// each; a span id sent twice is two rows.
import { nanos, compareNanos, formatDuration } from './telemetry.js';

const SCALE = 1_000_000n; // fractions in millionths: exact in BigInt, then one division in floating point

/**
 * spans: stored spans as GET /api/traces/{id} lists them ({id, session, span: {spanId, parentSpanId,
 * startTimeUnixNano, endTimeUnixNano, …}}). Answers {start, end, duration (BigInt ns), rows: [{stored, depth,
 * left, width, orphan}]}, left and width fractions of the trace's duration (0…1).
 */
export function layoutWaterfall(spans) {
  const items = spans.map((stored, index) => {
    const start = nanos(stored.span.startTimeUnixNano) ?? 0n;
    const endValue = nanos(stored.span.endTimeUnixNano) ?? start;
    return { stored, index, start, end: endValue < start ? start : endValue };
  });
  if (items.length === 0) return { start: 0n, end: 0n, duration: 0n, rows: [] };
  let start = items[0].start;
  let end = items[0].end;
  for (const item of items) {
    if (item.start < start) start = item.start;
    if (item.end > end) end = item.end;
  }
  const duration = end - start;
  const byStart = (a, b) => compareNanos(a.start, b.start) || a.index - b.index;

  const present = new Set(items.map((item) => item.stored.span.spanId));
  const children = new Map(); // parent span id -> items
  const roots = [];
  for (const item of items) {
    const parent = item.stored.span.parentSpanId;
    if (parent && parent !== item.stored.span.spanId && present.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(item);
    } else {
      roots.push(item);
    }
  }
  for (const list of children.values()) list.sort(byStart);
  roots.sort(byStart);

  const rows = [];
  const placed = new Set();
  const total = duration > 0n ? duration : 1n;
  const fraction = (value) => Number((value * SCALE) / total) / Number(SCALE);
  const visit = (root) => {
    // Depth first without recursion: a deep (or hostile) chain of parents cannot overflow the stack.
    const stack = [{ item: root, depth: 0 }];
    while (stack.length) {
      const { item, depth } = stack.pop();
      if (placed.has(item.index)) continue;
      placed.add(item.index);
      const parent = item.stored.span.parentSpanId;
      rows.push({
        stored: item.stored,
        depth,
        left: fraction(item.start - start),
        width: fraction(item.end - item.start),
        orphan: Boolean(parent) && depth === 0,
      });
      const below = children.get(item.stored.span.spanId) ?? [];
      for (let i = below.length - 1; i >= 0; i -= 1) stack.push({ item: below[i], depth: depth + 1 });
    }
  };
  for (const root of roots) visit(root);
  // Spans whose parents form a loop were reached from no root: each starts a tree of its own.
  if (placed.size < items.length) for (const item of [...items].sort(byStart)) if (!placed.has(item.index)) visit(item);
  return { start, end, duration, rows };
}

/** At most `count` + 1 ticks for the time axis at round durations (1, 2 or 5 × a power of ten nanoseconds):
 *  [{fraction, label}], the first at 0. */
export function axisTicks(duration, count = 5) {
  const total = nanos(duration) ?? 0n;
  if (total <= 0n) return [{ fraction: 0, label: '0' }];
  const parts = BigInt(Math.max(1, count));
  const rough = (total + parts - 1n) / parts;
  // The smallest round step that makes no more than `count` parts.
  let step = 1n;
  while (step < rough) {
    if (step * 2n >= rough) step *= 2n;
    else if (step * 5n >= rough) step *= 5n;
    else step *= 10n;
  }
  const ticks = [];
  for (let at = 0n; at <= total; at += step) {
    ticks.push({ fraction: Number((at * SCALE) / total) / Number(SCALE), label: at === 0n ? '0' : formatDuration(at) });
  }
  return ticks;
}
