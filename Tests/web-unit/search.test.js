// search.js: search in a state by path text or shown value, case-insensitively, in document order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExactNumber } from '../../Sources/ParleyWeb/Assets/json.js';
import { searchState } from '../../Sources/ParleyWeb/Assets/search.js';

const state = { items: [{ title: 'Milk' }, { title: 'Bread', price: new ExactNumber(1.1, '1.10') }], done: false, note: null };
const found = (query, options) => searchState(state, query, options).results.map((result) => [result.path, result.on]);

test('matches on path text and on shown values, in document order', () => {
  assert.deepEqual(found('milk'), [[['items', 0, 'title'], 'value']]);
  assert.deepEqual(found('title'), [
    [['items', 0, 'title'], 'path'],
    [['items', 1, 'title'], 'path'],
  ]);
  assert.deepEqual(found('1.10'), [[['items', 1, 'price'], 'value']]);
  assert.deepEqual(found('null'), [[['note'], 'value']]);
  assert.deepEqual(found('items[1]'), [
    [['items', 1], 'path'],
    [['items', 1, 'title'], 'path'],
    [['items', 1, 'price'], 'path'],
  ]);
});

test('an empty query finds nothing; a limit truncates and says so', () => {
  assert.deepEqual(searchState(state, '   '), { results: [], truncated: false });
  const limited = searchState(state, 'i', { limit: 2 });
  assert.equal(limited.results.length, 2);
  assert.equal(limited.truncated, true);
  // The last node found at the limit: nothing is left to search.
  assert.equal(searchState(state, 'note', { limit: 1 }).truncated, false);
});
