// telemetry.js: log levels, nanosecond times and durations as the timeline and the trace view print them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LEVELS, levelRank, atLeast, levelLabel, levelClass, nanos, compareNanos, isoNanos, clockNanos, fullNanos, formatDuration, spanDuration,
  durationFraction, valueText,
} from '../../Sources/ParleyWeb/Assets/telemetry.js';

test('levels in swift-log order, each with three letters; a minimum level keeps it and those above', () => {
  assert.deepEqual(LEVELS, ['trace', 'debug', 'info', 'notice', 'warning', 'error', 'critical']);
  assert.ok(levelRank('debug') < levelRank('info') && levelRank('error') < levelRank('critical'));
  assert.equal(levelRank('loud'), -1);
  assert.deepEqual(LEVELS.map(levelLabel), ['TRC', 'DBG', 'INF', 'NTC', 'WRN', 'ERR', 'CRT']);
  assert.equal(levelLabel('<b>'), '???');
  assert.ok(atLeast('warning', 'warning') && atLeast('critical', 'warning') && !atLeast('notice', 'warning'));
  assert.ok(atLeast('trace', '') && atLeast('trace', null));
  assert.equal(levelClass('error'), 'error');
  assert.equal(levelClass('x" onclick="y'), 'unknown', 'remote text never becomes a class name');
});

test('nanoseconds from the API\'s decimal strings keep every digit (past 2^53)', () => {
  assert.equal(nanos('1764000010500000123'), 1764000010500000123n);
  assert.equal(nanos(5), 5n);
  assert.equal(nanos(7n), 7n);
  for (const bad of ['-1', '1e9', '', 'twelve', null, undefined, {}, -3, Number.NaN, '123456789012345678901']) assert.equal(nanos(bad), null, String(bad));
  assert.equal(compareNanos(1764000010500000123n, 1764000010500000124n), -1);
  assert.equal(compareNanos(2n, 2n), 0);
  assert.equal(isoNanos('2025-11-24T16:00:10.500Z'), 1764000010500000000n);
  assert.equal(isoNanos('not a time'), null);
});

test('clock times to the millisecond, or to the micro- and nanosecond', () => {
  const ns = BigInt(new Date(2026, 10, 25, 18, 10, 51, 35).getTime()) * 1_000_000n + 123_456n;
  assert.equal(clockNanos(ns), '18:10:51.035');
  assert.equal(clockNanos(ns, 6), '18:10:51.035123');
  assert.equal(clockNanos(String(ns), 9), '18:10:51.035123456');
  assert.equal(fullNanos(ns), '2026-11-25 18:10:51.035123456');
  assert.equal(clockNanos('soon'), 'soon');
});

test('durations with three significant digits and the unit that fits', () => {
  const cases = [
    [0n, '0 ns'], [850n, '850 ns'], [1_000n, '1 µs'], [12_345n, '12.3 µs'], [999_999n, '1 ms'], [4_560_000n, '4.56 ms'],
    [100_000_000n, '100 ms'], [1_200_000_000n, '1.2 s'], [59_900_000_000n, '59.9 s'], [59_990_000_000n, '1 min 0 s'], [123_000_000_000n, '2 min 3 s'],
    [3_720_000_000_000n, '1 h 2 min'], [90_000_000_000_000n, '1 d 1 h'],
  ];
  for (const [value, text] of cases) assert.equal(formatDuration(value), text, String(value));
  assert.equal(formatDuration('250000'), '250 µs');
  assert.equal(formatDuration('x'), '');
});

test('a span\'s duration, none when its end is before its start', () => {
  assert.equal(spanDuration({ startTimeUnixNano: '1764000010200000000', endTimeUnixNano: '1764000010800000001' }), 600_000_001n);
  assert.equal(spanDuration({ startTimeUnixNano: '20', endTimeUnixNano: '10' }), 0n);
  assert.equal(spanDuration({ startTimeUnixNano: 'x', endTimeUnixNano: '10' }), 0n);
});

test('a duration\'s bar grows with the logarithm of the duration, from nothing at 1 µs to the whole column at 100 s', () => {
  assert.equal(durationFraction(0n), 0);
  assert.equal(durationFraction(1_000n), 0);
  assert.equal(durationFraction(100_000_000_000n), 1);
  assert.equal(durationFraction(10n ** 15n), 1);
  const ms = durationFraction(1_000_000n);
  const s = durationFraction(1_000_000_000n);
  assert.ok(ms > 0 && ms < s && s < 1);
  assert.ok(Math.abs(ms - 3 / 8) < 1e-9, 'a thousandth of the range per decade: 1 ms is three of eight decades');
});

test('values as one line: strings as they are, the rest as JSON', () => {
  assert.equal(valueText('a "quoted" <b>'), 'a "quoted" <b>');
  assert.equal(valueText(12), '12');
  assert.equal(valueText(true), 'true');
  assert.equal(valueText({ b: [1, 'x'] }), '{"b":[1,"x"]}');
});
