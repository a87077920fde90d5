// format.js: sizes, counts and state paths as the pages print them (the path text must be parleyd's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendPath, bytes, count, isPrefix, pathKey, pathText, shortID, shorten, dateTime } from '../../Sources/ParleyWeb/Assets/format.js';

test('sizes in bytes, then binary units with one decimal below 10', () => {
  assert.equal(bytes(null), '');
  assert.equal(bytes(1023), '1023 B');
  assert.equal(bytes(1536), '1.5 KiB');
  assert.equal(bytes(20 * 1024 * 1024), '20 MiB');
  assert.equal(bytes(5 * 1024 ** 5), '5120 TiB');
});

test('counts pick singular or plural', () => {
  assert.equal(count(1, 'entry', 'entries'), '1 entry');
  assert.equal(count(2, 'entry', 'entries'), '2 entries');
  assert.equal(count(0, 'peer'), '0 peers');
});

test('path text as parleyd prints it: bare names, indexes, quoted names that could be misread, (root)', () => {
  assert.equal(pathText([]), '(root)');
  assert.equal(pathText(['items', 2, 'title']), 'items[2].title');
  assert.equal(pathText(['window size', 'width']), '["window size"].width');
  assert.equal(pathText(['a.b', '']), '["a.b"][""]');
  assert.equal(appendPath('', 0), '[0]');
});

test('path keys, prefixes, previews and short ids', () => {
  assert.equal(pathKey(['a', 1]), '["a",1]');
  assert.ok(isPrefix(['a'], ['a', 1]));
  assert.ok(!isPrefix(['a', 1], ['a']));
  assert.ok(!isPrefix(['b'], ['a', 1]));
  assert.equal(shorten('abcdef', 4), 'abc…');
  assert.equal(shorten('abc', 4), 'abc');
  assert.equal(shortID('0123456789abcdef'), '01234567');
  assert.equal(shortID(null), '');
});

test('times: empty for none, the text itself when it is not a time', () => {
  assert.equal(dateTime(null), '');
  assert.equal(dateTime('not a time'), 'not a time');
  assert.match(dateTime('2025-11-24T16:00:00.000Z'), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
});
