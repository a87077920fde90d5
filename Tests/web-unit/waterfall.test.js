// waterfall.js: a trace's spans in tree order, indented by depth, bars placed by start and scaled by duration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layoutWaterfall, axisTicks } from '../../Sources/ParleyWeb/Assets/waterfall.js';

const T0 = 1764000000000000000n;
let nextId = 1;
function span(spanId, parentSpanId, startMs, endMs, name = spanId) {
  return {
    id: nextId++,
    session: 1,
    span: {
      spanId, parentSpanId, name,
      startTimeUnixNano: String(T0 + BigInt(Math.round(startMs * 1e6))),
      endTimeUnixNano: String(T0 + BigInt(Math.round(endMs * 1e6))),
      status: { code: 'unset', message: null },
    },
  };
}
const names = (layout) => layout.rows.map((row) => `${'  '.repeat(row.depth)}${row.stored.span.name}`);

test('each span right after its parent, children by start, indented by depth, whatever order they arrived in', () => {
  const layout = layoutWaterfall([
    span('c2', 'b', 40, 60, 'db.write'),
    span('b', 'a', 10, 90, 'handler'),
    span('a', null, 0, 100, 'GET /items'),
    span('c1', 'b', 20, 30, 'db.read'),
    span('d', 'a', 95, 99, 'encode'),
  ]);
  assert.deepEqual(names(layout), ['GET /items', '  handler', '    db.read', '    db.write', '  encode']);
  assert.equal(layout.duration, 100_000_000n);
  assert.ok(layout.rows.every((row) => !row.orphan));
});

test('bars: left at the start, width the duration, both as fractions of the whole trace', () => {
  const { rows, start, end } = layoutWaterfall([span('a', null, 0, 200), span('b', 'a', 50, 100)]);
  assert.equal(start, T0);
  assert.equal(end, T0 + 200_000_000n);
  assert.deepEqual(rows.map((row) => [row.left, row.width]), [[0, 1], [0.25, 0.25]]);
});

test('a span whose parent is not there is a root marked orphan; its own children stay under it', () => {
  const layout = layoutWaterfall([span('x', 'missing', 5, 10, 'client call'), span('y', 'x', 6, 7, 'child'), span('a', null, 0, 20, 'root')]);
  assert.deepEqual(names(layout), ['root', 'client call', '  child']);
  assert.deepEqual(layout.rows.map((row) => row.orphan), [false, true, false]);
});

test('parents that loop, a span its own parent, ids sent twice: every span once, and the layout ends', () => {
  const layout = layoutWaterfall([span('p', 'q', 0, 10, 'p'), span('q', 'p', 1, 9, 'q'), span('s', 's', 2, 3, 'self'), span('d', null, 4, 5, 'twice'), span('d', null, 6, 7, 'twice again')]);
  assert.equal(layout.rows.length, 5);
  assert.deepEqual(new Set(layout.rows.map((row) => row.stored.span.name)), new Set(['p', 'q', 'self', 'twice', 'twice again']));
});

test('a chain a hundred thousand deep is laid out without recursion', () => {
  const spans = [span('s0', null, 0, 100000)];
  for (let i = 1; i < 100000; i += 1) spans.push(span(`s${i}`, `s${i - 1}`, i, 100000));
  const layout = layoutWaterfall(spans);
  assert.equal(layout.rows.length, 100000);
  assert.equal(layout.rows.at(-1).depth, 99999);
});

test('a trace of one instant, an end before the start, no spans', () => {
  const instant = layoutWaterfall([span('a', null, 5, 5), span('b', 'a', 5, 4)]);
  assert.equal(instant.duration, 0n);
  assert.deepEqual(instant.rows.map((row) => [row.left, row.width]), [[0, 0], [0, 0]]);
  assert.deepEqual(layoutWaterfall([]).rows, []);
});

test('axis ticks at round durations from zero', () => {
  assert.deepEqual(axisTicks(100_000_000n).map((tick) => tick.label), ['0', '20 ms', '40 ms', '60 ms', '80 ms', '100 ms']);
  assert.deepEqual(axisTicks(100_000_000n).map((tick) => tick.fraction), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(axisTicks(3_000n).map((tick) => tick.label), ['0', '1 µs', '2 µs', '3 µs']);
  assert.deepEqual(axisTicks(500_000n, 6).map((tick) => tick.label), ['0', '100 µs', '200 µs', '300 µs', '400 µs', '500 µs']);
  assert.deepEqual(axisTicks(500_000n, 2).map((tick) => tick.label), ['0', '500 µs']);
  assert.deepEqual(axisTicks(7n, 3).map((tick) => tick.label), ['0', '5 ns']);
  for (const count of [1, 2, 3, 5, 8]) assert.ok(axisTicks(123_456_789n, count).length <= count + 1, `${count}`);
  assert.deepEqual(axisTicks(0n), [{ fraction: 0, label: '0' }]);
});
